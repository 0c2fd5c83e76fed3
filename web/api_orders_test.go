package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

type placeJSON struct {
	Order models.Order  `json:"order"`
	Holds []models.Hold `json:"holds"`
}

// drain releases every due task through the store, as the worker would.
func drain(t *testing.T, b bundle) {
	t.Helper()
	for {
		tasks, err := b.s.ClaimTasks(b.ctx, "w", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			return
		}
		for _, tk := range tasks {
			if _, err := b.s.ReleaseTask(b.ctx, tk, "w"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// seedShopAPI sets up a shop for u1 through the API and returns its coupon.
func seedShopAPI(t *testing.T, b bundle) int64 {
	t.Helper()
	must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":10}`)
	must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-2", `{"available":5}`)
	cp := must[couponJSON](t, b, http.StatusCreated, "POST", "/api/v1/coupons", `{"user_id":"u1","owner":"PLATFORM","expire_at":"2027-01-31T00:00:00Z"}`)
	must[accountJSON](t, b, http.StatusOK, "POST", "/api/v1/accounts/u1/credit", `{"asset":"BALANCE","amount":1000}`)
	must[accountJSON](t, b, http.StatusOK, "POST", "/api/v1/accounts/u1/credit", `{"asset":"POINTS","amount":500}`)
	must[activityJSON](t, b, http.StatusOK, "PUT", "/api/v1/activities/act-1", `{"total":3}`)
	must[slotJSON](t, b, http.StatusCreated, "PUT", "/api/v1/slots/seat-1", ``)
	must[slotJSON](t, b, http.StatusCreated, "PUT", "/api/v1/slots/seat-2", ``)
	return cp.ID
}

func TestPlacePayGet(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := seedShopAPI(t, b)
		body := `{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":2},{"sku_id":"sku-2","qty":1}],
			"coupon_ids":[` + strconv.FormatInt(cp, 10) + `],"freeze":[{"asset":"BALANCE","amount":300},{"asset":"POINTS","amount":100}],
			"activity_id":"act-1","slot_id":"seat-1","pay_timeout_s":600}`
		rec := b.call("POST", "/api/v1/orders", body)
		if rec.Code != http.StatusCreated {
			t.Fatalf("place = %d %s", rec.Code, rec.Body)
		}
		if loc := rec.Header().Get("Location"); loc != "/api/v1/orders/o-1" {
			t.Fatalf("Location = %q", loc)
		}
		placed := decodeStrict[placeJSON](t, rec)
		o := placed.Order
		if o.OrderNo != "o-1" || o.UserID != "u1" || o.Status != models.OrderPending ||
			!o.PayDeadline.Equal(b.clock.Now().Add(10*time.Minute)) || len(placed.Holds) != 7 {
			t.Fatalf("placed %+v with %d holds", o, len(placed.Holds))
		}
		if sku := must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", ""); sku.Locked != 2 || sku.Available != 8 {
			t.Fatalf("sku-1 after place = %+v", sku)
		}
		if sl := must[slotJSON](t, b, http.StatusOK, "GET", "/api/v1/slots/seat-1", ""); sl.Status != "HELD" || sl.OrderNo == nil || *sl.OrderNo != "o-1" {
			t.Fatalf("seat-1 after place = %+v", sl)
		}
		if c := must[couponJSON](t, b, http.StatusOK, "GET", "/api/v1/coupons/"+strconv.FormatInt(cp, 10), ""); c.Status != "LOCKED" {
			t.Fatalf("coupon after place = %+v", c)
		}
		if a := must[accountJSON](t, b, http.StatusOK, "GET", "/api/v1/accounts/u1", ""); a.Assets["BALANCE"] != (assetJSON{Available: 700, Frozen: 300}) {
			t.Fatalf("account after place = %+v", a)
		}
		if q := must[activityJSON](t, b, http.StatusOK, "GET", "/api/v1/activities/act-1", ""); q.Locked != 1 || q.Available != 2 {
			t.Fatalf("act-1 after place = %+v", q)
		}

		for i := 0; i < 2; i++ { // the second payment callback changes nothing
			paid := must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/pay", `{"channel_txn_id":"txn-1"}`)
			if paid != (models.PayResult{Status: models.OrderPaid}) {
				t.Fatalf("pay #%d = %+v", i+1, paid)
			}
		}
		chain := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-1", "")
		if chain.Order.Status != models.OrderPaid || chain.Order.ChannelTxnID != "txn-1" || len(chain.Holds) != 7 || len(chain.Tasks) != 0 {
			t.Fatalf("chain = %+v", chain)
		}
		for _, h := range chain.Holds {
			if h.Deducted != h.Qty {
				t.Fatalf("hold %+v not deducted", h)
			}
		}
		var locks, deducts int
		for _, f := range chain.Flows {
			switch f.Type {
			case models.FlowLock:
				locks++
			case models.FlowDeduct:
				deducts++
			}
		}
		if locks != 7 || deducts != 7 {
			t.Fatalf("chain has %d LOCK and %d DEDUCT flows, want 7 and 7", locks, deducts)
		}
		if sku := must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", ""); sku.Sold != 2 || sku.Locked != 0 {
			t.Fatalf("sku-1 after pay = %+v", sku)
		}

		// Without order_no the store numbers the order.
		auto := must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders", `{"user_id":"u1","items":[{"sku_id":"sku-2","qty":1}]}`)
		if !models.ValidOrderNo(auto.Order.OrderNo) || !auto.Order.PayDeadline.Equal(b.clock.Now().Add(models.DefaultPayTimeout)) {
			t.Fatalf("auto-numbered order = %+v", auto.Order)
		}
	})
}

func TestCloseAndLatePayment(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShopAPI(t, b)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-late","user_id":"u1","items":[{"sku_id":"sku-1","qty":3}],"freeze":[{"asset":"POINTS","amount":50}]}`)
		for i := 0; i < 2; i++ { // the repeat answers the same and does not wake the worker again
			res := must[models.CloseResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-late/close", `{"reason":"USER_CANCEL"}`)
			if res.Status != models.OrderClosed || res.Tasks != 2 {
				t.Fatalf("close #%d = %+v, want CLOSED with 2 tasks", i+1, res)
			}
			if n := b.wakes.Load(); n != 1 {
				t.Fatalf("after close #%d Wake was called %d times, want 1", i+1, n)
			}
		}
		chain := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-late", "")
		if chain.Order.Status != models.OrderClosed || chain.Order.CloseReason != "USER_CANCEL" || len(chain.Tasks) != 2 {
			t.Fatalf("chain after close = %+v", chain)
		}
		for _, tk := range chain.Tasks {
			if tk.Status != models.TaskPending || tk.Trigger != models.TriggerUserCancel || tk.AttemptLog == nil {
				t.Fatalf("task after close = %+v", tk)
			}
		}
		// Money arrives before the worker released anything: the order is paid late.
		late := must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-late/pay", `{"channel_txn_id":"txn-late"}`)
		if late != (models.PayResult{Status: models.OrderPaid, Late: true}) {
			t.Fatalf("late pay = %+v", late)
		}
		if sku := must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", ""); sku.Sold != 3 || sku.Locked != 0 || sku.Available != 7 {
			t.Fatalf("sku-1 after late pay = %+v", sku)
		}

		// The slot went back and another order took it: the late money
		// cannot buy it back, so the order waits for a refund.
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders", `{"order_no":"o-refund","user_id":"u1","items":[{"sku_id":"sku-2","qty":1}],"slot_id":"seat-2"}`)
		must[models.CloseResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-refund/close", `{"reason":"TIMEOUT"}`)
		drain(t, b)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders", `{"order_no":"o-other","user_id":"u2","items":[{"sku_id":"sku-2","qty":1}],"slot_id":"seat-2"}`)
		refund := must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-refund/pay", `{"channel_txn_id":"txn-refund"}`)
		if refund.Status != models.OrderRefundPending || !refund.Late || !strings.Contains(refund.Note, "seat-2") {
			t.Fatalf("late pay of a re-sold slot = %+v", refund)
		}
		if again := must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-refund/pay", `{"channel_txn_id":"txn-refund"}`); again != refund {
			t.Fatalf("repeat = %+v, want %+v", again, refund)
		}
		if n := b.wakes.Load(); n != 2 {
			t.Fatalf("Wake called %d times, want 2 (one per winning close)", n)
		}
	})
}

// A release that fails for good leaves a MANUAL task; a rerun makes it due
// again with trigger RERUN and wakes the worker; a second rerun finds
// nothing to do.
func TestCloseThenRerun(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":10}`)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders", `{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":4}]}`)
		res := must[models.CloseResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/close", `{"reason":"ADMIN"}`)
		if res.Tasks != 1 || b.wakes.Load() != 1 {
			t.Fatalf("close = %+v with %d wakes, want 1 task and 1 wake", res, b.wakes.Load())
		}
		must[models.CloseResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/close", `{"reason":"ADMIN"}`)
		if n := b.wakes.Load(); n != 1 {
			t.Fatalf("repeat close woke the worker: %d wakes", n)
		}

		// Someone took the locked stock away: the release is short.
		if err := b.s.W.WithContext(b.ctx).Exec("UPDATE inventory SET locked = 1 WHERE sku_id = 'sku-1'").Error; err != nil {
			t.Fatal(err)
		}
		tasks, err := b.s.ClaimTasks(b.ctx, "w", 10, time.Minute)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claimed %d, %v; want 1", len(tasks), err)
		}
		if _, err := b.s.ReleaseTask(b.ctx, tasks[0], "w"); err != nil {
			t.Fatal(err)
		}
		chain := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-1", "")
		if tk := chain.Tasks[0]; tk.Status != models.TaskManual || tk.ErrorClass != models.ClassLockedShort || len(tk.AttemptLog) != 1 {
			t.Fatalf("task after the short release = %+v", tk)
		}

		b.clock.Advance(time.Minute)
		rec := b.call("POST", "/api/v1/orders/o-1/resources/inventory/rerun", `{"reason":"stock fixed by hand"}`)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("rerun = %d %s, want 202", rec.Code, rec.Body)
		}
		if got := decodeStrict[struct {
			Tasks int64 `json:"tasks"`
		}](t, rec); got.Tasks != 1 {
			t.Fatalf("rerun made %d tasks due, want 1", got.Tasks)
		}
		if n := b.wakes.Load(); n != 2 {
			t.Fatalf("after rerun Wake was called %d times, want 2", n)
		}
		chain = must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-1", "")
		tk := chain.Tasks[0]
		if tk.Status != models.TaskPending || tk.Trigger != models.TriggerRerun || !tk.NextAt.Equal(b.clock.Now()) || tk.Failures != 0 {
			t.Fatalf("task after rerun = %+v", tk)
		}
		if len(chain.Audit) != 1 || chain.Audit[0].Actor != "token:root" || chain.Audit[0].Reason != "stock fixed by hand" ||
			chain.Audit[0].Outcome != "ok" {
			t.Fatalf("audit after rerun = %+v", chain.Audit)
		}

		rec = b.call("POST", "/api/v1/orders/o-1/resources/inventory/rerun", `{"reason":"again"}`)
		wantError(t, rec, http.StatusConflict, "NOTHING_TO_RERUN")
		if n := b.wakes.Load(); n != 2 {
			t.Fatalf("a refused rerun woke the worker: %d wakes", n)
		}
	})
}

// An order placed with the generic holds list holds what it names, of any
// type, and its chain shows them.
func TestPlaceWithHoldsList(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := seedShopAPI(t, b)
		body := `{"order_no":"o-h","user_id":"u1","holds":[{"type":"inventory","key":"sku-1","qty":2},
			{"type":"coupon","key":"` + strconv.FormatInt(cp, 10) + `"},{"type":"balance","key":"u1","qty":300},
			{"type":"slot","key":"seat-1","qty":1}]}`
		rec := b.call("POST", "/api/v1/orders", body)
		if rec.Code != http.StatusCreated {
			t.Fatalf("place = %d %s", rec.Code, rec.Body)
		}
		if placed := decodeStrict[placeJSON](t, rec); len(placed.Holds) != 4 {
			t.Fatalf("placed %d holds, want 4: %+v", len(placed.Holds), placed.Holds)
		}
		if sku := must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", ""); sku.Locked != 2 || sku.Available != 8 {
			t.Fatalf("sku-1 after place = %+v", sku)
		}
		if a := must[accountJSON](t, b, http.StatusOK, "GET", "/api/v1/accounts/u1", ""); a.Assets["BALANCE"].Frozen != 300 {
			t.Fatalf("account after place = %+v", a)
		}
		if sl := must[slotJSON](t, b, http.StatusOK, "GET", "/api/v1/slots/seat-1", ""); sl.Status != "HELD" {
			t.Fatalf("seat-1 after place = %+v", sl)
		}
	})
}
