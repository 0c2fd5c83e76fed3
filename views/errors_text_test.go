package views

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// errShop is a small shop on a real database whose rows the cases change
// by hand, as an operator or a bug would, before its releases: what the
// models then store is what a page shows.
type errShop struct {
	s     *models.Store
	clock *modelstest.Clock
	ctx   context.Context
	d     models.Dialect
}

func newErrShop(t *testing.T, d models.Dialect) errShop {
	t.Helper()
	clock := modelstest.NewClock()
	e := errShop{s: modelstest.Open(t, d, models.Options{Now: clock.Now}), clock: clock, ctx: context.Background(), d: d}
	for sku, n := range map[string]int64{"sku-1": 100, "sku-s": 5, "sku-h": 10, "sku-few": 2} {
		_, err := e.s.SetStock(e.ctx, sku, n, 0, "test")
		e.must(t, "stock "+sku, err)
	}
	// Coupons 1 to 4 of u1, so the cases can name them.
	for want := int64(1); want <= 4; want++ {
		cp, err := e.s.CreateCoupon(e.ctx, "u1", models.CouponPlatform, clock.Now().Add(48*time.Hour), "test")
		e.must(t, "coupon", err)
		if cp.ID != want {
			t.Fatalf("coupon id %d, want %d", cp.ID, want)
		}
	}
	for _, c := range []struct {
		uid    string
		asset  models.Asset
		amount int64
	}{{"u1", models.AssetBalance, 1000}, {"u-bal", models.AssetBalance, 1000}, {"u-poor", models.AssetBalance, 990}, {"u-poor", models.AssetPoints, 490}} {
		_, err := e.s.Credit(e.ctx, c.uid, c.asset, c.amount, "test")
		e.must(t, "credit "+c.uid, err)
	}
	for act, n := range map[string]int64{"act-m": 5, "act-one": 1} {
		_, err := e.s.SetActivity(e.ctx, act, n, "test")
		e.must(t, "activity "+act, err)
	}
	for _, slot := range []string{"seat-1", "seat-2"} {
		_, _, err := e.s.PutSlot(e.ctx, slot, "test")
		e.must(t, "slot "+slot, err)
	}
	return e
}

func (e errShop) must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// request is r for u1 unless it names a user, and with one of sku-1
// unless it names items: an order holds goods.
func (e errShop) request(r models.PlaceRequest) models.PlaceRequest {
	if r.UserID == "" {
		r.UserID = "u1"
	}
	if len(r.Items) == 0 {
		r.Items = []models.Item{{SkuID: "sku-1", Qty: 1}}
	}
	return r
}

// place places an order that must be placed.
func (e errShop) place(t *testing.T, r models.PlaceRequest) {
	t.Helper()
	r = e.request(r)
	_, _, err := e.s.PlaceOrder(e.ctx, r)
	e.must(t, "place "+r.OrderNo, err)
}

// refused is the error text of a placement the models refuse, as the API
// answers it.
func (e errShop) refused(t *testing.T, r models.PlaceRequest) string {
	t.Helper()
	r = e.request(r)
	_, _, err := e.s.PlaceOrder(e.ctx, r)
	if err == nil {
		t.Fatalf("place %s: placed, want refused", r.OrderNo)
	}
	return err.Error()
}

// close closes order no at the user's request.
func (e errShop) close(t *testing.T, no string) {
	t.Helper()
	_, err := e.s.CloseOrder(e.ctx, no, models.TriggerUserCancel, "u1")
	e.must(t, "close "+no, err)
}

// exec is a hand edit behind the ledger's back.
func (e errShop) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	e.must(t, "hand edit", e.s.W.Exec(sql, args...).Error)
}

// release tries every due task once, as a worker does.
func (e errShop) release(t *testing.T) {
	t.Helper()
	for {
		tasks, err := e.s.ClaimTasks(e.ctx, "w1", 100, time.Minute)
		e.must(t, "claim", err)
		if len(tasks) == 0 {
			return
		}
		_, err = e.s.ReleaseBatch(e.ctx, tasks, "w1")
		e.must(t, "release", err)
	}
}

// lastError is the stored error of order no's task of type typ, which
// must have gone MANUAL; its one attempt says the same.
func (e errShop) lastError(t *testing.T, no string, typ models.ResourceType) string {
	t.Helper()
	c, err := e.s.OrderChain(e.ctx, no)
	e.must(t, "chain "+no, err)
	for _, tk := range c.Tasks {
		if tk.ResourceType != typ {
			continue
		}
		if tk.Status != models.TaskManual || len(tk.AttemptLog) != 1 || tk.AttemptLog[0].Error != tk.LastError {
			t.Fatalf("%s %s: task %s with attempts %+v, want MANUAL after one try", no, typ, tk.Status, tk.AttemptLog)
		}
		return tk.LastError
	}
	t.Fatalf("order %s has no %s task", no, typ)
	return ""
}

// errCases make, through the models, each refused release and lock that
// ErrText knows, and say how a Chinese page shows it (in UTC+8).
var errCases = []struct {
	name string
	make func(t *testing.T, e errShop) string
	zh   string
}{
	{"coupon given back by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "cpn-1", CouponIDs: []int64{1}})
		e.close(t, "cpn-1")
		e.exec(t, "UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = 1")
		e.release(t)
		return e.lastError(t, "cpn-1", models.ResCoupon)
	}, "优惠券 1 状态为「未使用」，未被任何订单占用；释放要求它由订单 cpn-1 占用"},
	{"coupon moved to another order by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "cpn-2", CouponIDs: []int64{2}})
		e.close(t, "cpn-2")
		e.exec(t, "UPDATE user_coupons SET order_no = 'other' WHERE id = 2")
		e.release(t)
		return e.lastError(t, "cpn-2", models.ResCoupon)
	}, "优惠券 2 状态为「已锁定」，却由订单 other 占用；释放要求它由订单 cpn-2 占用"},
	{"seat freed by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "seat-o", SlotID: "seat-1"})
		e.close(t, "seat-o")
		e.exec(t, "UPDATE slot_holds SET status = 'FREE', order_no = NULL WHERE slot_id = 'seat-1'")
		e.release(t)
		return e.lastError(t, "seat-o", models.ResSlot)
	}, "座位/时段 seat-1 状态为「空闲」，未被任何订单占用；释放要求它由订单 seat-o 占用"},
	{"task asks more than its order holds", func(t *testing.T, e errShop) string {
		for _, no := range []string{"hold-1", "hold-2"} {
			e.place(t, models.PlaceRequest{OrderNo: no, Items: []models.Item{{SkuID: "sku-h", Qty: 3}}})
		}
		e.close(t, "hold-1")
		e.exec(t, "UPDATE release_tasks SET qty = 5 WHERE order_no = 'hold-1'")
		e.release(t)
		return e.lastError(t, "hold-1", models.ResInventory)
	}, "订单 hold-1 在库存 sku-h 上的占用不足 5，与释放的数量不符"},
	{"stock lock taken away by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "short-1", Items: []models.Item{{SkuID: "sku-s", Qty: 2}}})
		e.close(t, "short-1")
		e.exec(t, "UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-s'")
		e.release(t)
		return e.lastError(t, "short-1", models.ResInventory)
	}, "库存 sku-s 当前占用少于订单 short-1 要释放的 2"},
	{"frozen balance taken away by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "bal-1", UserID: "u-bal", Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 300}}})
		e.close(t, "bal-1")
		e.exec(t, "UPDATE accounts SET frozen = 0 WHERE uid = 'u-bal' AND asset = 'BALANCE'")
		e.release(t)
		return e.lastError(t, "bal-1", models.ResBalance)
	}, "余额 u-bal 当前占用少于订单 bal-1 要释放的 3.00 元"},
	{"activity deleted by hand", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "quota-1", ActivityID: "act-m"})
		e.close(t, "quota-1")
		e.exec(t, "DELETE FROM activity_quotas WHERE activity_id = 'act-m'")
		e.release(t)
		return e.lastError(t, "quota-1", models.ResQuota)
	}, "活动名额 act-m 的记录已不存在"},
	{"type no longer declared", func(t *testing.T, e errShop) string {
		// The store that placed and closed the order declared gift_wrap;
		// the store that releases it does not.
		dsn := modelstest.MigratedDSN(t, e.d)
		open := func(opt models.Options) *models.Store {
			opt.Now = e.clock.Now
			s, err := models.Open(e.ctx, dsn, opt)
			e.must(t, "open", err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		before := open(models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}}})
		_, err := before.SetDeclared(e.ctx, "gift_wrap", "box", 5, "test")
		e.must(t, "declare", err)
		_, _, err = before.PlaceOrder(e.ctx, models.PlaceRequest{OrderNo: "gift-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: "gift_wrap", Key: "box", Qty: 2}}})
		e.must(t, "place gift-1", err)
		_, err = before.CloseOrder(e.ctx, "gift-1", models.TriggerUserCancel, "u1")
		e.must(t, "close gift-1", err)
		after := open(models.Options{})
		tasks, err := after.ClaimTasks(e.ctx, "w1", 10, time.Minute)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
		_, err = after.ReleaseBatch(e.ctx, tasks, "w1")
		e.must(t, "release", err)
		tk, err := after.Task(e.ctx, tasks[0].ID)
		e.must(t, "task", err)
		return tk.LastError
	}, "资源类型 gift_wrap 未注册：资源声明文件里还有它吗？"},
	{"placement short of stock", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "many-1", Items: []models.Item{{SkuID: "sku-few", Qty: 100}}})
	}, "订单 many-1 下单失败：库存不足：库存 sku-few 可用 2，订单 many-1 需要 100"},
	{"placement short of balance", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "poor-1", UserID: "u-poor", Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 10000}}})
	}, "订单 poor-1 下单失败：余额不足：余额 u-poor 可用 9.90 元，订单 poor-1 需要 100.00 元"},
	{"placement short of points", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "poor-2", UserID: "u-poor", Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 10000}}})
	}, "订单 poor-2 下单失败：积分不足：积分 u-poor 可用 490 积分，订单 poor-2 需要 10,000 积分"},
	{"placement past the activity's quota", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "q-1", ActivityID: "act-one"})
		return e.refused(t, models.PlaceRequest{OrderNo: "q-2", ActivityID: "act-one"})
	}, "订单 q-2 下单失败：活动名额已满：活动名额 act-one 可用 0，订单 q-2 需要 1"},
	{"placement of an unknown SKU", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "none-1", Items: []models.Item{{SkuID: "sku-none", Qty: 1}}})
	}, "订单 none-1 下单失败：资源不存在：库存 sku-none 无记录"},
	{"placement of an unknown seat", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "none-2", SlotID: "seat-none"})
	}, "订单 none-2 下单失败：资源不存在：座位/时段 seat-none 无记录"},
	{"placement by a user without a balance", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "none-3", UserID: "u-none", Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}})
	}, "订单 none-3 下单失败：余额不足：余额 u-none 无记录"},
	{"placement by a user without points", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "none-4", UserID: "u-none", Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 1}}})
	}, "订单 none-4 下单失败：积分不足：积分 u-none 无记录"},
	{"placement with a coupon another order holds", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "cl-1", CouponIDs: []int64{3}})
		return e.refused(t, models.PlaceRequest{OrderNo: "cl-2", CouponIDs: []int64{3}})
	}, "订单 cl-2 下单失败：优惠券不可用：优惠券 3 状态为「已锁定」，到期时间 2026-12-01 18:00:00"},
	{"placement with an unknown coupon", func(t *testing.T, e errShop) string {
		return e.refused(t, models.PlaceRequest{OrderNo: "cl-3", CouponIDs: []int64{999}})
	}, "订单 cl-3 下单失败：优惠券不可用：优惠券 999 不存在"},
	{"placement of a taken seat", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "st-1", SlotID: "seat-2"})
		return e.refused(t, models.PlaceRequest{OrderNo: "st-2", SlotID: "seat-2"})
	}, "订单 st-2 下单失败：座位/时段已被占用：座位/时段 seat-2 状态为「占用中」"},
	{"late payment finds its coupon taken", func(t *testing.T, e errShop) string {
		e.place(t, models.PlaceRequest{OrderNo: "lp-1", CouponIDs: []int64{4}})
		e.close(t, "lp-1")
		e.release(t)
		e.place(t, models.PlaceRequest{OrderNo: "lp-2", CouponIDs: []int64{4}})
		res, err := e.s.PayOrder(e.ctx, "lp-1", "txn-lp-1")
		e.must(t, "pay lp-1", err)
		c, err := e.s.OrderChain(e.ctx, "lp-1")
		e.must(t, "chain lp-1", err)
		if res.Status != models.OrderRefundPending || c.Order.Note != res.Note {
			t.Fatalf("late payment = %+v, note %q; want REFUND_PENDING with its note", res, c.Order.Note)
		}
		return c.Order.Note
	}, "迟到支付未能取回全部占用：优惠券不可用：优惠券 4 状态为「已锁定」"},
	// Last: it moves the clock.
	{"placement of expired points", func(t *testing.T, e errShop) string {
		_, err := e.s.CreditUntil(e.ctx, "u-exp", models.AssetPoints, 100, e.clock.Now().Add(time.Hour), "test")
		e.must(t, "credit u-exp", err)
		e.clock.Advance(2 * time.Hour)
		return e.refused(t, models.PlaceRequest{OrderNo: "exp-1", UserID: "u-exp", Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 50}}})
	}, "订单 exp-1 下单失败：积分已过期：积分 u-exp 已于 2026-11-29 19:00:00 过期，订单 exp-1 需要 50 积分"},
}

// Each refused release and lock the models word, made through the models
// on both engines, is of a shape ErrText knows, and a Chinese page shows
// it in Chinese: rewording a message in the models fails here instead of
// leaving pages in English. Each shape's English text, filled with the
// parts as captured, gives the stored text back, and every shape has a
// case.
func TestErrTextKnowsModelsErrors(t *testing.T) {
	t.Parallel()
	zh := Page{Lang: LangZH, Loc: time.FixedZone("UTC+8", 8*3600)}
	en := Page{Lang: LangEN, Loc: zh.Loc}
	var mu sync.Mutex
	hit := map[string]bool{}
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newErrShop(t, d)
		for _, c := range errCases {
			t.Run(c.name, func(t *testing.T) {
				stored := c.make(t, e)
				keys := errShapesOf(t, en, stored)
				if len(keys) == 0 {
					t.Fatalf("%q is of no known shape", stored)
				}
				mu.Lock()
				for _, k := range keys {
					hit[k] = true
				}
				mu.Unlock()
				if got := zh.ErrText(stored); got != c.zh {
					t.Errorf("ErrText(%q)\n = %q\nwant %q", stored, got, c.zh)
				}
				if got := en.ErrText(stored); got != stored {
					t.Errorf("English ErrText(%q) = %q, want it as stored", stored, got)
				}
			})
		}
	})
	// After both engines' subtests, which run in parallel once this
	// function returns.
	t.Cleanup(func() {
		if len(hit) == 0 {
			return // every engine skipped or failed before its cases
		}
		for _, sh := range errShapes {
			if !hit[sh.key] {
				t.Errorf("shape %s has no case", sh.key)
			}
		}
	})
}

// errShapesOf returns the keys of the error shapes stored is made of, the
// shapes of its inner error texts included (a late payment's note is a
// Say sentence around one), and checks that each shape's English text,
// filled with the parts as captured, is the text it matched.
func errShapesOf(t *testing.T, en Page, stored string) []string {
	t.Helper()
	for _, sh := range errShapes {
		m := sh.re.FindStringSubmatch(stored)
		if m == nil {
			continue
		}
		keys := []string{sh.key}
		args := make([]any, len(m)-1)
		for i, part := range m[1:] {
			args[i] = part
			if i < len(sh.parts) && sh.parts[i] == partErr {
				keys = append(keys, errShapesOf(t, en, part)...)
			}
		}
		if back := en.Tf(sh.key, args...); back != stored {
			t.Errorf("%s in English = %q, stored %q", sh.key, back, stored)
		}
		return keys
	}
	for _, sh := range shapes {
		m := sh.re.FindStringSubmatch(stored)
		if m == nil {
			continue
		}
		var keys []string
		for i, part := range m[1:] {
			if i < len(sh.kinds) && sh.kinds[i] == argSay {
				keys = append(keys, errShapesOf(t, en, part)...)
			}
		}
		return keys
	}
	return nil
}

// A text of no known shape is shown as Say shows it, and one whose inner
// error is of no known shape is not half translated; where ErrorText
// translates, the text as stored is its title.
func TestErrTextFallsBack(t *testing.T) {
	t.Parallel()
	zh := Page{Lang: LangZH}
	for _, c := range []struct{ stored, want string }{
		{"something nobody wrote down", "something nobody wrote down"},
		{"place order o-1: something nobody wrote down", "place order o-1: something nobody wrote down"},
		{"resource is not in the state the release expects: order o-1 changed under its payment",
			"资源不在释放所要求的状态: order o-1 changed under its payment"},
		{"TIMEOUT: warehouse stock service timed out", "超时：仓库库存服务超时"},
	} {
		if got := zh.ErrText(c.stored); got != c.want {
			t.Errorf("ErrText(%q) = %q, want %q", c.stored, got, c.want)
		}
	}
	render := func(raw string) string {
		var b strings.Builder
		if err := ErrorText(zh, raw).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	raw := "resource row does not exist: inventory sku-1"
	if got, want := render(raw), `<span title="原文：`+raw+`">库存 sku-1 的记录已不存在</span>`; got != want {
		t.Errorf("ErrorText(%q) = %q, want %q", raw, got, want)
	}
	if got := render("something nobody wrote down"); got != "something nobody wrote down" {
		t.Errorf("ErrorText of an unknown text = %q, want it as stored", got)
	}
}
