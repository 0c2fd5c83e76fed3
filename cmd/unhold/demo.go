package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"unhold/auth"
	"unhold/config"
	"unhold/jobs"
	"unhold/models"
)

// demoOrders is how many orders the demo shop places.
const demoOrders = 3000

// seedDemo fills an empty database with a living demo shop, and gives it
// demo users in a. A database that already has orders is left alone.
func seedDemo(ctx context.Context, cfg config.Config, s *models.Store, a *auth.Store, log *slog.Logger, out io.Writer) error {
	var n int64
	if err := s.R.WithContext(ctx).Model(&models.Order{}).Count(&n).Error; err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if n > 0 {
		// Demo users only come with demo data: a real database run with
		// --demo by mistake must not get accounts with printed passwords.
		fmt.Fprintf(out, "demo: %s already has %d orders; not adding demo data or demo users\n", cfg.DB, n)
		return nil
	}
	start := time.Now()
	opt, err := storeOptions(cfg, log)
	if err != nil {
		return err
	}
	st, err := demoShop(ctx, cfg.DB, opt, demoOrders, time.Now(), log)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: %d orders (%s) in %s\n", st.orders, st.summary(), time.Since(start).Round(time.Millisecond))
	return demoUsers(ctx, a, out)
}

// demoUsers gives a database without users one user per role, with made-up
// passwords it prints, so a newcomer can sign in at once.
func demoUsers(ctx context.Context, a *auth.Store, out io.Writer) error {
	users, err := a.Users(ctx)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if len(users) > 0 {
		fmt.Fprintf(out, "demo: %d users exist already; \"unhold user reset NAME\" sets a new password\n", len(users))
		return nil
	}
	fmt.Fprintln(out, "demo: sign in with one of these (shown only now):")
	for _, d := range []struct {
		name string
		role auth.Role
	}{{"admin", auth.RoleAdmin}, {"ops", auth.RoleOperator}, {"cs", auth.RoleViewer}} {
		pw := auth.NewPassword()
		if _, err := a.CreateUser(ctx, d.name, d.role, pw, "demo"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		fmt.Fprintf(out, "demo:   %-8s name %-6s password %s\n", d.role, d.name, pw)
	}
	return nil
}

// demoClock walks the demo from three days ago up to now.
type demoClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *demoClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *demoClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type demoStats struct {
	orders   int
	statuses map[models.OrderStatus]int64
	tasks    map[models.TaskStatus]int64
}

func (d demoStats) summary() string {
	return fmt.Sprintf("orders %v, release tasks %v", d.statuses, d.tasks)
}

// demoShop builds the shop on its own store, whose clock starts three days
// before now and whose fault hook makes some releases fail, so the shop has
// history: paid and closed orders, releases done, late payments, flaky
// releases in RETRY and MANUAL, and a few planted reconciliation diffs.
// With the demo's own types in opt, some orders hold gift wrap and a gift
// card, whose service's failures abort placements and retry calls.
func demoShop(ctx context.Context, dsn string, opt models.Options, orders int, now time.Time, log *slog.Logger) (demoStats, error) {
	span := 72 * time.Hour
	clock := &demoClock{t: now.Add(-span).UTC()}
	rng := rand.New(rand.NewPCG(2026, 11))
	flaky := map[string]bool{}
	var fmu sync.Mutex
	opt.Now = clock.Now
	opt.Faults = func(point string, t *models.ReleaseTask) error {
		fmu.Lock()
		defer fmu.Unlock()
		if point == models.FaultAfterLedger && flaky[t.OrderNo] && t.ResourceType == models.ResInventory {
			return &models.TransientError{Class: models.ClassTimeout, Err: errors.New("warehouse stock service timed out")}
		}
		return nil
	}
	s, err := models.Open(ctx, dsn, opt)
	if err != nil {
		return demoStats{}, fmt.Errorf("demo: %w", err)
	}
	defer s.Close()
	const actor = "demo"
	var skus []string
	for i := range 30 {
		id := fmt.Sprintf("SKU-%d", 1001+i)
		delay := int64(0)
		if i%8 == 0 {
			delay = 180 // flash-sale SKUs
		}
		if _, err := s.SetStock(ctx, id, int64(200+rng.IntN(1800)), delay, actor); err != nil {
			return demoStats{}, err
		}
		skus = append(skus, id)
	}
	var users []string
	coupons := map[string][]int64{}
	for i := range 120 {
		u := fmt.Sprintf("user-%03d", i+1)
		users = append(users, u)
		if _, err := s.Credit(ctx, u, models.AssetBalance, int64(50_000+rng.IntN(150_000)), actor); err != nil {
			return demoStats{}, err
		}
		if _, err := s.Credit(ctx, u, models.AssetPoints, int64(1_000+rng.IntN(19_000)), actor); err != nil {
			return demoStats{}, err
		}
		for j := range 3 {
			owner := models.CouponPlatform
			if (i+j)%3 == 0 {
				owner = models.CouponMerchant
			}
			exp := clock.Now().Add(time.Duration(1+rng.IntN(30*24)) * time.Hour)
			c, err := s.CreateCoupon(ctx, u, owner, exp, actor)
			if err != nil {
				return demoStats{}, err
			}
			coupons[u] = append(coupons[u], c.ID)
		}
	}
	for id, total := range map[string]int64{"ACT-DOUBLE11": 400, "ACT-NEWUSER": 150} {
		if _, err := s.SetActivity(ctx, id, total, actor); err != nil {
			return demoStats{}, err
		}
	}
	var slots []string
	for i := range 40 {
		id := fmt.Sprintf("SLOT-%02d", i+1)
		if _, _, err := s.PutSlot(ctx, id, actor); err != nil {
			return demoStats{}, err
		}
		slots = append(slots, id)
	}

	// The demo's own types, when this store has them (serve --demo adds
	// them): gift wrap, a declared counter, and gift cards, kept by the
	// demo's flaky gift-card service.
	var wraps []string
	if r := s.Resource(demoGiftWrap); r != nil && r.Kind() == models.KindCounter {
		for _, id := range []string{"WRAP-RED", "WRAP-GOLD", "WRAP-KRAFT"} {
			if _, err := s.SetDeclared(ctx, demoGiftWrap, id, int64(150+rng.IntN(150)), actor); err != nil {
				return demoStats{}, err
			}
			wraps = append(wraps, id)
		}
	}
	r := s.Resource(demoGiftCard)
	giftCards := r != nil && r.Kind() == models.KindRemote

	w := jobs.NewWorker(s, "demo-worker", 100, 30*time.Second, log)
	step := span / time.Duration(orders+1)
	var placed []string
	for i := range orders {
		clock.advance(step)
		u := users[rng.IntN(len(users))]
		no := fmt.Sprintf("D%s%04d", clock.Now().Format("0102"), i)
		req := models.PlaceRequest{OrderNo: no, UserID: u}
		for j := range 1 + rng.IntN(3) {
			req.Items = append(req.Items, models.Item{SkuID: skus[(rng.IntN(len(skus))+j*7)%len(skus)], Qty: int64(1 + rng.IntN(3))})
		}
		if len(req.Items) > 1 && req.Items[0].SkuID == req.Items[1].SkuID {
			req.Items = req.Items[:1]
		}
		if rng.IntN(4) == 0 {
			req.CouponIDs = []int64{coupons[u][rng.IntN(len(coupons[u]))]}
		}
		if rng.IntN(5) < 2 {
			req.Freeze = append(req.Freeze, models.Freeze{Asset: models.AssetBalance, Amount: int64(100 + rng.IntN(5000))})
		}
		if rng.IntN(5) == 0 {
			req.Freeze = append(req.Freeze, models.Freeze{Asset: models.AssetPoints, Amount: int64(50 + rng.IntN(500))})
		}
		if rng.IntN(10) == 0 {
			req.ActivityID = "ACT-DOUBLE11"
		}
		if rng.IntN(20) == 0 {
			req.SlotID = slots[rng.IntN(len(slots))]
		}
		if len(wraps) > 0 && rng.IntN(12) == 0 {
			req.Holds = append(req.Holds, models.HoldRequest{Type: demoGiftWrap, Key: wraps[rng.IntN(len(wraps))], Qty: 1})
		}
		if giftCards && rng.IntN(15) == 0 {
			req.Holds = append(req.Holds, models.HoldRequest{Type: demoGiftCard, Key: demoCardKey(rng.IntN(demoGiftCards)),
				Qty: int64(500 + rng.IntN(20_000))})
		}
		if _, _, err := s.PlaceOrder(ctx, req); err != nil {
			var be *models.Error
			if errors.As(err, &be) {
				continue // sold out, coupon used: a real shop refuses these too
			}
			return demoStats{}, err
		}
		placed = append(placed, no)
		if i%97 == 0 {
			fmu.Lock()
			flaky[no] = true
			fmu.Unlock()
		}
		switch roll := rng.IntN(100); {
		case roll < 55:
			if _, err := s.PayOrder(ctx, no, "WX"+no); err != nil {
				return demoStats{}, err
			}
		case roll < 80:
			reason := models.TriggerUserCancel
			if roll >= 75 {
				reason = models.TriggerAdmin
			}
			if _, err := s.CloseOrder(ctx, no, reason, "user:"+u); err != nil {
				return demoStats{}, err
			}
		}
		if i%50 == 49 {
			if _, err := s.CloseExpired(ctx, 1000); err != nil {
				return demoStats{}, err
			}
			w.Drain(ctx)
			// A payment that arrives after the close.
			if len(placed) > 100 && rng.IntN(3) == 0 {
				late := placed[len(placed)-60-rng.IntN(40)]
				if _, err := s.PayOrder(ctx, late, "WX"+late); err != nil && !errors.As(err, new(*models.Error)) {
					return demoStats{}, err
				}
			}
		}
	}
	if err := refundOne(ctx, s); err != nil {
		return demoStats{}, err
	}
	if err := plantDiffs(ctx, s, rng); err != nil {
		return demoStats{}, err
	}
	if gap := now.Sub(clock.Now()); gap > 0 {
		clock.advance(gap)
	}
	w.Drain(ctx)
	// The planted diffs show up as tickets, as after a nightly run.
	if _, err := s.RunReconciliation(ctx, models.ReconByCLI, "demo"); err != nil {
		return demoStats{}, err
	}
	return demoCount(ctx, s, len(placed))
}

// refundOne shows a late payment that cannot take its stock back: the SKU
// sells out after the release, the money arrives, the order goes to
// REFUND_PENDING, and the stock is put back afterwards.
func refundOne(ctx context.Context, s *models.Store) error {
	var t models.ReleaseTask
	err := s.R.WithContext(ctx).Joins("JOIN orders o ON o.order_no = release_tasks.order_no").
		Where("release_tasks.resource_type = ? AND release_tasks.status = ? AND o.status = ?", models.ResInventory, models.TaskDone, models.OrderClosed).
		Order("release_tasks.id DESC").Take(&t).Error
	if err != nil {
		return fmt.Errorf("demo refund: %w", err)
	}
	sku, err := s.GetSKU(ctx, t.BizKey)
	if err != nil {
		return err
	}
	if _, err := s.SetStock(ctx, t.BizKey, 0, sku.ReleaseDelayS, "demo"); err != nil {
		return err
	}
	if _, err := s.PayOrder(ctx, t.OrderNo, "WX"+t.OrderNo); err != nil {
		return err
	}
	now, err := s.GetSKU(ctx, t.BizKey)
	if err != nil {
		return err
	}
	_, err = s.SetStock(ctx, t.BizKey, now.Available+sku.Available, sku.ReleaseDelayS, "demo")
	return err
}

// plantDiffs makes a few inconsistencies for reconciliation to find, the way
// they happen in real shops: a hand edit of locked stock, and a coupon put
// back to LOCKED by hand after its order was closed and released.
func plantDiffs(ctx context.Context, s *models.Store, rng *rand.Rand) error {
	db := s.W.WithContext(ctx)
	var skus []string
	if err := db.Model(&models.SKU{}).Where("locked > 2").Order("sku_id").Limit(2).Pluck("sku_id", &skus).Error; err != nil {
		return err
	}
	for _, id := range skus {
		if err := db.Exec("UPDATE inventory SET locked = locked - 1, available = available + 1 WHERE sku_id = ?", id).Error; err != nil {
			return err
		}
	}
	var closed []string
	err := db.Raw(`SELECT t.order_no FROM release_tasks t WHERE t.resource_type = 'coupon' AND t.status = 'DONE'
		ORDER BY t.id LIMIT 3`).Scan(&closed).Error
	if err != nil || len(closed) == 0 {
		return err
	}
	no := closed[rng.IntN(len(closed))]
	return db.Exec(`UPDATE user_coupons SET status = 'LOCKED', order_no = ?
		WHERE id = (SELECT CAST(biz_key AS INTEGER) FROM release_tasks WHERE order_no = ? AND resource_type = 'coupon' LIMIT 1)`, no, no).Error
}

func demoCount(ctx context.Context, s *models.Store, orders int) (demoStats, error) {
	c, err := s.StatusCounts(ctx)
	return demoStats{orders: orders, statuses: c.Orders, tasks: c.Tasks}, err
}
