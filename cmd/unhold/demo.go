package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"unhold/auth"
	"unhold/config"
	"unhold/jobs"
	"unhold/models"
)

// demoOrders is how many orders the demo shop places over its week, the
// flash sale's included.
const demoOrders = 1600

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

// demoClock walks the demo from a week ago up to now.
type demoClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *demoClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// advanceTo moves the clock to t, never back.
func (c *demoClock) advanceTo(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t
	}
	c.mu.Unlock()
}

// demoSpan is how far back the demo shop's history starts.
const demoSpan = 7 * 24 * time.Hour

// The flash sale: on the fourth day of the week, at 20:00 shop time, a
// seventh of the orders in twenty minutes on the flash SKUs.
const (
	demoFlashDay    = 3
	demoFlashHour   = 20
	demoFlashWindow = 20 * time.Minute
)

// demoTimes spreads n orders over the week from start by the hour's
// weight in the shop's time zone (China's: quiet nights, a morning rise,
// lunch, the evening peak; weekends a third busier), and puts flash of
// them in the flash sale; it says which are the sale's. Sorted,
// deterministic for rng.
func demoTimes(rng *rand.Rand, start time.Time, n, flash int) ([]time.Time, []bool) {
	zone := time.FixedZone("CST", 8*3600)
	hourly := [24]int{3, 2, 1, 1, 1, 1, 2, 4, 7, 9, 11, 12, 12, 10, 9, 9, 9, 10, 12, 15, 18, 17, 12, 6}
	first := start.Truncate(time.Hour)
	hours := int(demoSpan/time.Hour) + 1
	weights := make([]float64, hours)
	var total float64
	for h := range weights {
		local := first.Add(time.Duration(h) * time.Hour).In(zone)
		w := float64(hourly[local.Hour()])
		if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
			w *= 4.0 / 3
		}
		weights[h] = w
		total += w
	}
	type at struct {
		t     time.Time
		flash bool
	}
	var all []at
	for h, w := range weights {
		exact := float64(n-flash) * w / total
		k := int(exact)
		if rng.Float64() < exact-float64(k) {
			k++
		}
		for range k {
			t := first.Add(time.Duration(h)*time.Hour + time.Duration(rng.Int64N(int64(time.Hour))))
			if t.After(start) && t.Before(start.Add(demoSpan)) {
				all = append(all, at{t: t})
			}
		}
	}
	day := start.In(zone).AddDate(0, 0, demoFlashDay)
	sale := time.Date(day.Year(), day.Month(), day.Day(), demoFlashHour, 0, 0, 0, zone)
	for range flash {
		all = append(all, at{t: sale.Add(time.Duration(rng.Int64N(int64(demoFlashWindow)))), flash: true})
	}
	// The last orders still wait for their payment when the demo ends.
	end := start.Add(demoSpan)
	for _, ago := range []time.Duration{20 * time.Minute, 10 * time.Minute, 2 * time.Minute} {
		all = append(all, at{t: end.Add(-ago)})
	}
	slices.SortFunc(all, func(a, b at) int { return a.t.Compare(b.t) })
	times, flashes := make([]time.Time, len(all)), make([]bool, len(all))
	for i, a := range all {
		times[i], flashes[i] = a.t.UTC(), a.flash
	}
	return times, flashes
}

type demoStats struct {
	orders   int
	statuses map[models.OrderStatus]int64
	tasks    map[models.TaskStatus]int64
}

func (d demoStats) summary() string {
	return fmt.Sprintf("orders %v, release tasks %v", d.statuses, d.tasks)
}

// demoShop builds the shop on its own store, whose clock starts a week
// before now and whose fault hook makes some releases fail, so the shop has
// a week of history with the rhythm of a real one (demoTimes: days,
// hours, a flash sale): paid and closed orders, releases done, late
// payments, flaky releases retried on the real schedule (RetrySchedule)
// until they succeed or run out of tries, releases that found their stock
// lock or their coupon changed by hand (MANUAL), and a few planted
// reconciliation diffs. With the demo's own types in opt, some orders hold
// gift wrap and a gift card, whose service's failures abort placements and
// retry calls.
func demoShop(ctx context.Context, dsn string, opt models.Options, orders int, now time.Time, log *slog.Logger) (demoStats, error) {
	clock := &demoClock{t: now.Add(-demoSpan).UTC()}
	rng := rand.New(rand.NewPCG(2026, 11))
	// flaky counts the inventory releases of an order that will still
	// time out: a few, then it succeeds; MaxFailures or more, it ends
	// MANUAL with its tries exhausted.
	// A try counts once however often the worker runs it (a batch that
	// fails runs again task by task, under the same try): failedTry is
	// the try of the order's release that last failed.
	flaky := map[string]int{}
	failedTry := map[string]int{}
	var fmu sync.Mutex
	opt.Now = clock.Now
	opt.Faults = func(point string, t *models.ReleaseTask) error {
		fmu.Lock()
		defer fmu.Unlock()
		if point != models.FaultAfterLedger || t.ResourceType != models.ResInventory {
			return nil
		}
		if try, ok := failedTry[t.OrderNo]; flaky[t.OrderNo] > 0 && (!ok || try != t.Attempts) {
			flaky[t.OrderNo]--
			failedTry[t.OrderNo] = t.Attempts
		} else if !ok || try != t.Attempts {
			return nil
		}
		return &models.TransientError{Class: models.ClassTimeout, Err: errors.New("warehouse stock service timed out")}
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
	// Two SKUs made to order take their stock at payment: an unpaid
	// order holds none of it.
	for _, id := range demoAtPayment {
		sku, err := s.GetSKU(ctx, id)
		if err != nil {
			return demoStats{}, err
		}
		if _, err := s.SetSKU(ctx, id, sku.Available, models.SKUSettings{DeductAt: models.DeductAtPayment}, actor); err != nil {
			return demoStats{}, err
		}
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
	for id, total := range map[string]int64{"ACT-DOUBLE11": 600, "ACT-NEWUSER": 150} {
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
	// tick is the shop's background every demoTick of its clock: the
	// timeout close and the worker, so due tasks and retries run when
	// their time comes, up to a tick late.
	const demoTick = 20 * time.Minute
	lastTick := clock.Now()
	tick := func(until time.Time) error {
		for next := lastTick.Add(demoTick); next.Before(until); next = next.Add(demoTick) {
			clock.advanceTo(next)
			if _, err := s.CloseExpired(ctx, 1000); err != nil {
				return err
			}
			w.Drain(ctx)
			lastTick = next
		}
		return nil
	}
	times, flashes := demoTimes(rng, clock.Now(), orders, orders/7)
	var flashSKUs []string
	for i, id := range skus {
		if i%8 == 0 {
			flashSKUs = append(flashSKUs, id)
		}
	}
	var placed []string
	var couponOrders int
	life := newDemoLife(s)
	for i, at := range times {
		if err := tick(at); err != nil {
			return demoStats{}, err
		}
		clock.advanceTo(at)
		if err := life.due(ctx, at); err != nil {
			return demoStats{}, err
		}
		u := users[rng.IntN(len(users))]
		no := fmt.Sprintf("D%s%04d", clock.Now().Format("0102"), i)
		req := models.PlaceRequest{OrderNo: no, UserID: u}
		if flashes[i] {
			req.Items = []models.Item{{SkuID: flashSKUs[rng.IntN(len(flashSKUs))], Qty: 1}}
			req.ActivityID = "ACT-DOUBLE11"
		} else {
			for j := range 1 + rng.IntN(3) {
				req.Items = append(req.Items, models.Item{SkuID: skus[(rng.IntN(len(skus))+j*7)%len(skus)], Qty: int64(1 + rng.IntN(3))})
			}
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
		if !flashes[i] && rng.IntN(10) == 0 {
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
		// An order cancelled in the demo's last hour and a half whose
		// stock release times out is still retrying when the demo ends:
		// the schedule takes hours to run out of tries.
		// Every try of another's times out, so it ends MANUAL, its tries
		// exhausted; some time out twice, then succeed.
		retrying := now.Sub(at) < 90*time.Minute && i%4 == 0
		exhausting := i%(97*3) == 0
		fmu.Lock()
		switch {
		case retrying || exhausting:
			flaky[no] = models.MaxFailures
		case i%97 == 0:
			flaky[no] = 2
		}
		fmu.Unlock()
		if len(req.CouponIDs) > 0 {
			couponOrders++
		}
		// The orders planted to fail are cancelled by the buyer at once.
		cancelNow := retrying || exhausting
		switch {
		case cancelNow:
		case i%601 == 300:
			// Someone moved the stock lock by hand: the release will find
			// it short and stop (MANUAL, LOCKED_SHORT).
			it := req.Items[0]
			if err := s.W.WithContext(ctx).Exec("UPDATE inventory SET locked = locked - ?, available = available + ? WHERE sku_id = ? AND locked >= ?",
				it.Qty, it.Qty, it.SkuID, it.Qty).Error; err != nil {
				return demoStats{}, fmt.Errorf("demo: %w", err)
			}
			cancelNow = true
		case len(req.CouponIDs) > 0 && couponOrders%150 == 75:
			// Customer service gave the coupon back by hand: the release
			// will find it not held by the order (MANUAL, STATE_MISMATCH).
			if err := s.W.WithContext(ctx).Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?",
				req.CouponIDs[0]).Error; err != nil {
				return demoStats{}, fmt.Errorf("demo: %w", err)
			}
			cancelNow = true
		}
		if cancelNow {
			if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "user:"+u); err != nil {
				return demoStats{}, err
			}
			continue
		}
		if now.Sub(at) < 30*time.Minute {
			continue // still within its time to pay
		}
		if err := life.cancelLine(ctx, no); err != nil {
			return demoStats{}, err
		}
		switch roll := rng.IntN(100); {
		case roll < 55:
			pr, err := s.PayOrder(ctx, no, "WX"+no)
			if err != nil {
				return demoStats{}, err
			}
			if pr.Status == models.OrderPaid {
				life.paid(no, at)
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
			// A payment that arrives after the close.
			if len(placed) > 100 && rng.IntN(3) == 0 {
				late := placed[len(placed)-60-rng.IntN(40)]
				if _, err := s.PayOrder(ctx, late, "WX"+late); err != nil && !errors.As(err, new(*models.Error)) {
					return demoStats{}, err
				}
			}
		}
	}
	if err := life.due(ctx, now); err != nil {
		return demoStats{}, err
	}
	if err := refundOne(ctx, s); err != nil {
		return demoStats{}, err
	}
	if err := plantDiffs(ctx, s, rng); err != nil {
		return demoStats{}, err
	}
	if err := tick(now); err != nil {
		return demoStats{}, err
	}
	clock.advanceTo(now)
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
