package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// TestPropertyRandomOperations runs thousands of random operations — place,
// pay, close, late pay, line cancels, shipments, refunds, returns and
// their inbound, rerun, worker drains with injected transient errors and
// crashes — from several goroutines over a small shop, then lets the work
// go quiet and checks every invariant of DESIGN.md.
func TestPropertyRandomOperations(t *testing.T) {
	t.Parallel()
	ops := 2400
	if testing.Short() {
		ops = 400
	}
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		var faultsOn atomic.Bool
		faultsOn.Store(true)
		var fmu sync.Mutex
		frng := rand.New(rand.NewPCG(seed, 1))
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if !faultsOn.Load() {
				return nil
			}
			fmu.Lock()
			p := frng.Float64()
			fmu.Unlock()
			switch {
			case p < 0.03:
				panic("injected crash")
			case p < 0.20:
				return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("injected")}
			}
			return nil
		}})
		ctx := context.Background()
		sh := newShop(t, s, clock)
		workers := []*jobs.Worker{
			jobs.NewWorker(s, "w1", 5, 20*time.Second, modelstest.QuietLog()),
			jobs.NewWorker(s, "w2", 5, 20*time.Second, modelstest.QuietLog()),
		}
		const goroutines = 4
		var wg sync.WaitGroup
		var counts sync.Map
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(g)+2))
				for i := range ops / goroutines {
					name := sh.step(ctx, rng, workers[rng.IntN(2)], fmt.Sprintf("g%d-%d", g, i))
					v, _ := counts.LoadOrStore(name, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
			}()
		}
		wg.Wait()
		counts.Range(func(k, v any) bool { t.Logf("%s: %d", k, v.(*atomic.Int64).Load()); return true })
		if err := sh.failure(); err != nil {
			t.Fatal(err)
		}

		// Quiesce: no more faults; leases expire, retries come due, MANUAL
		// tasks are rerun by "ops", until nothing is left to do.
		faultsOn.Store(false)
		for round := 0; ; round++ {
			clock.Advance(time.Hour)
			for _, w := range workers {
				if st := w.Drain(ctx); st["ERROR"] > 0 {
					t.Fatalf("a release failed outside the retry rules: %v", st)
				}
			}
			var open []models.ReleaseTask
			if err := s.R.Where("status IN ?", []string{"PENDING", "RETRY", "MANUAL"}).Find(&open).Error; err != nil {
				t.Fatal(err)
			}
			if len(open) == 0 {
				break
			}
			if round > 20 {
				t.Fatalf("%d tasks still open after %d rounds: %+v", len(open), round, open[0])
			}
			for _, tk := range open {
				switch {
				case tk.Status != models.TaskManual:
				case s.NeedsApproval(tk):
					// Money goes back only on a second person's word.
					r, err := s.RequestApproval(ctx, tk.ID, models.ApprovalRerun, models.Decider{Name: "ops"}, "quiesce")
					if err == nil {
						_, err = s.ApproveRequest(ctx, r.ID, models.Decider{Name: "ops2"}, "quiesce")
					}
					if err != nil {
						t.Fatal(err)
					}
				default:
					if _, err := s.Rerun(ctx, tk.OrderNo, tk.ResourceType, "ops", "quiesce"); err != nil && !errors.Is(err, models.ErrNothingToRerun) {
						t.Fatal(err)
					}
				}
			}
		}
		modelstest.CheckInvariants(t, s)
		sh.checkStatuses(t)
	})
}

// shop is the small world the property test acts on.
type shop struct {
	s     *models.Store
	clock *modelstest.Clock
	mu    sync.Mutex
	users []string
	coup  map[string][]int64
	nos   []string
	// skus are each order's lines; paid the orders a payment reached,
	// which the operations after payment draw from.
	skus map[string][]string
	paid []string
	// rets are the returns recorded, with their lines, for inbounds.
	rets map[string]returned
	err  error
}

type returned struct {
	no    string
	lines []models.LineQty
}

func newShop(t *testing.T, s *models.Store, clock *modelstest.Clock) *shop {
	ctx := context.Background()
	sh := &shop{s: s, clock: clock, users: []string{"u1", "u2", "u3"}, coup: map[string][]int64{}, rets: map[string]returned{},
		skus: map[string][]string{}}
	for i, delay := range []int64{0, 0, 0, 60} {
		if _, err := s.SetStock(ctx, fmt.Sprintf("sku-%d", i), 300, delay, "test"); err != nil {
			t.Fatal(err)
		}
	}
	// sku-2 is deducted at payment: its lines hold nothing until paid.
	if _, err := s.SetSKU(ctx, "sku-2", 300, models.SKUSettings{DeductAt: models.DeductAtPayment}, "test"); err != nil {
		t.Fatal(err)
	}
	for _, u := range sh.users {
		for _, a := range []models.Asset{models.AssetBalance, models.AssetPoints} {
			if _, err := s.Credit(ctx, u, a, 5000, "test"); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 6 {
			owner := models.CouponPlatform
			if i%2 == 1 {
				owner = models.CouponMerchant
			}
			// Some coupons expire during the run.
			c, err := s.CreateCoupon(ctx, u, owner, clock.Now().Add(time.Duration(i+1)*10*time.Minute), "test")
			if err != nil {
				t.Fatal(err)
			}
			sh.coup[u] = append(sh.coup[u], c.ID)
		}
	}
	if _, err := s.SetActivity(ctx, "act-1", 25, "test"); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, _, err := s.PutSlot(ctx, fmt.Sprintf("seat-%d", i), "test"); err != nil {
			t.Fatal(err)
		}
	}
	return sh
}

// businessOK tells an expected refusal from a real failure.
func businessOK(err error) bool {
	var be *models.Error
	return err == nil || errors.As(err, &be)
}

func (sh *shop) fail(err error) {
	sh.mu.Lock()
	if sh.err == nil {
		sh.err = err
	}
	sh.mu.Unlock()
}

func (sh *shop) failure() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.err
}

func (sh *shop) pick(rng *rand.Rand) (string, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.nos) == 0 {
		return "", false
	}
	return sh.nos[rng.IntN(len(sh.nos))], true
}

// step does one random operation and names it.
func (sh *shop) step(ctx context.Context, rng *rand.Rand, w *jobs.Worker, id string) string {
	p := rng.IntN(100)
	switch {
	case p < 30:
		u := sh.users[rng.IntN(len(sh.users))]
		req := models.PlaceRequest{OrderNo: "o-" + id, UserID: u, PayTimeout: time.Duration(1+rng.IntN(20)) * time.Minute}
		for i := range 1 + rng.IntN(2) {
			req.Items = append(req.Items, models.Item{SkuID: fmt.Sprintf("sku-%d", (rng.IntN(4)+i)%4), Qty: int64(1 + rng.IntN(3))})
		}
		if req.Items[0].SkuID == req.Items[len(req.Items)-1].SkuID {
			req.Items = req.Items[:1]
		}
		if rng.IntN(4) == 0 {
			cs := sh.coup[u]
			req.CouponIDs = []int64{cs[rng.IntN(len(cs))]}
		}
		if rng.IntN(2) == 0 {
			req.Freeze = append(req.Freeze, models.Freeze{Asset: models.AssetBalance, Amount: int64(1 + rng.IntN(400))})
		}
		if rng.IntN(3) == 0 {
			req.Freeze = append(req.Freeze, models.Freeze{Asset: models.AssetPoints, Amount: int64(1 + rng.IntN(200))})
		}
		if rng.IntN(3) == 0 {
			req.ActivityID = "act-1"
		}
		if rng.IntN(8) == 0 {
			req.SlotID = fmt.Sprintf("seat-%d", rng.IntN(6))
		}
		_, _, err := sh.s.PlaceOrder(ctx, req)
		if !businessOK(err) {
			sh.fail(err)
		}
		if err == nil {
			sh.mu.Lock()
			sh.nos = append(sh.nos, req.OrderNo)
			for _, it := range req.Items {
				sh.skus[req.OrderNo] = append(sh.skus[req.OrderNo], it.SkuID)
			}
			sh.mu.Unlock()
			return "place"
		}
		var be *models.Error
		errors.As(err, &be)
		return "place refused " + be.Code
	case p < 42:
		no, ok := sh.pick(rng)
		if !ok {
			return "skip"
		}
		r, err := sh.s.PayOrder(ctx, no, "txn-"+no)
		if !businessOK(err) {
			sh.fail(err)
		}
		if err == nil {
			sh.mu.Lock()
			sh.paid = append(sh.paid, no)
			sh.mu.Unlock()
		}
		if r.Late {
			return "pay late " + string(r.Status)
		}
		return "pay"
	case p < 56:
		no, ok := sh.pick(rng)
		if !ok {
			return "skip"
		}
		reasons := []models.Trigger{models.TriggerUserCancel, models.TriggerTimeout, models.TriggerAdmin}
		if _, err := sh.s.CloseOrder(ctx, no, reasons[rng.IntN(3)], "test"); !businessOK(err) {
			sh.fail(err)
		}
		return "close"
	case p < 77:
		return sh.lifeStep(ctx, rng, id, p)
	case p < 80:
		no, ok := sh.pick(rng)
		if !ok {
			return "skip"
		}
		t := models.ResourceTypes[rng.IntN(len(models.ResourceTypes))]
		if _, err := sh.s.Rerun(ctx, no, t, "ops", "random"); !businessOK(err) {
			sh.fail(err)
		}
		return "rerun"
	case p < 84:
		closed, err := sh.s.CloseExpired(ctx, 20)
		if err != nil {
			sh.fail(err)
		}
		if len(closed) > 0 {
			return "timeout close"
		}
		return "timeout scan"
	case p < 96:
		if st := w.Drain(ctx); st["ERROR"] > 0 {
			sh.fail(fmt.Errorf("a release failed outside the retry rules: %v", st))
		}
		return "drain"
	default:
		sh.clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
		return "tick"
	}
}

// lifeStep is one operation of an order's life after placement, on a
// random order and line: most are refused (the order is not in the
// status, the line has not that much), which is part of the test.
func (sh *shop) lifeStep(ctx context.Context, rng *rand.Rand, id string, p int) string {
	no, ok := sh.pick(rng)
	sh.mu.Lock()
	if p >= 60 && len(sh.paid) > 0 && rng.IntN(4) > 0 {
		no, ok = sh.paid[rng.IntN(len(sh.paid))], true
	}
	sku := fmt.Sprintf("sku-%d", rng.IntN(4))
	if ss := sh.skus[no]; len(ss) > 0 && rng.IntN(5) > 0 {
		sku = ss[rng.IntN(len(ss))]
	}
	sh.mu.Unlock()
	if !ok {
		return "skip"
	}
	ls := []models.LineQty{{SkuID: sku, Qty: int64(1 + rng.IntN(2))}}
	var res models.LifeResult
	var err error
	name := ""
	switch {
	case p < 60:
		name = "line cancel"
		res, err = sh.s.CancelLine(ctx, no, ls[0].SkuID, ls[0].Qty, -1, "lc-"+id, "", "user")
	case p < 65:
		name = "ship"
		res, err = sh.s.Ship(ctx, no, "sh-"+id, ls, "wms")
	case p < 70:
		name = "refund"
		if rng.IntN(3) == 0 {
			ls = nil
		}
		res, err = sh.s.Refund(ctx, no, "rf-"+id, ls, "", "cs")
	case p < 74:
		name = "return"
		res, err = sh.s.Return(ctx, no, "ret-"+id, ls, "", "cs")
		if err == nil {
			sh.mu.Lock()
			sh.rets["ret-"+id] = returned{no: no, lines: ls}
			sh.mu.Unlock()
		}
	default:
		name = "inbound"
		sh.mu.Lock()
		var ids []string
		for k := range sh.rets {
			ids = append(ids, k)
		}
		sh.mu.Unlock()
		if len(ids) == 0 {
			return "skip"
		}
		slices.Sort(ids)
		rid := ids[rng.IntN(len(ids))]
		sh.mu.Lock()
		r := sh.rets[rid]
		sh.mu.Unlock()
		var in []models.LineQty
		for _, l := range r.lines {
			restock := rng.IntN(3) > 0
			in = append(in, models.LineQty{SkuID: l.SkuID, Qty: l.Qty, Restock: &restock})
		}
		res, err = sh.s.Inbound(ctx, rid, in, "wms")
	}
	if !businessOK(err) {
		sh.fail(err)
	}
	if err != nil {
		var be *models.Error
		errors.As(err, &be)
		return name + " refused " + be.Code
	}
	if res.Repeat {
		return name + " repeat"
	}
	return name + " " + string(res.Status)
}

// checkStatuses: every order ended in a state the state machine allows, and
// no order is back in PENDING after being closed.
func (sh *shop) checkStatuses(t *testing.T) {
	t.Helper()
	var rows []models.Order
	if err := sh.s.R.Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, o := range rows {
		if o.Status == models.OrderPending && (o.ClosedAt != nil || o.PaidAt != nil) {
			t.Fatalf("order %s is PENDING after close or payment", o.OrderNo)
		}
		if o.LatePaid && o.ClosedAt == nil {
			t.Fatalf("order %s is late-paid but was never closed", o.OrderNo)
		}
		if o.Status != models.OrderPending && o.Status != models.OrderClosed && o.PaidAt == nil {
			t.Fatalf("order %s is %s but was never paid", o.OrderNo, o.Status)
		}
	}
}
