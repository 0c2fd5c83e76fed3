package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// heldOrders places three orders of user u1, each holding one of sku-1 and
// a coupon of its own, a second apart from 10:00 UTC on 2026-11-29:
// back-1 is closed five minutes later and its coupon comes back; stuck-1
// is closed a day after that, and its coupon, freed by hand meanwhile, is
// refused to its release and goes MANUAL; open-1 stays PENDING. It returns
// the coupons by order.
func heldOrders(t *testing.T, b bundle) map[string]int64 {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	try(t, "stock", err)
	coupons := map[string]int64{}
	for _, no := range []string{"back-1", "stuck-1", "open-1"} {
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(72*time.Hour), "test")
		try(t, "coupon", err)
		coupons[no] = cp.ID
		b.clock.Advance(time.Second)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{cp.ID}})
		try(t, "place "+no, err)
	}
	b.clock.Advance(5 * time.Minute)
	_, err = b.s.CloseOrder(b.ctx, "back-1", models.TriggerUserCancel, "user:u1")
	try(t, "close back-1", err)
	b.clock.Advance(24 * time.Hour)
	_, err = b.s.CloseOrder(b.ctx, "stuck-1", models.TriggerUserCancel, "user:u1")
	try(t, "close stuck-1", err)
	try(t, "free the coupon by hand", b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", coupons["stuck-1"]).Error)
	drain(t, b)
	return coupons
}

// orderRowOf is the list row of order no, "" when the page has none.
func orderRowOf(body, no string) string {
	i := strings.Index(body, `data-testid="order-row" data-order="`+no+`"`)
	if i < 0 {
		return ""
	}
	row := body[i:]
	return row[:strings.Index(row, "</tr>")]
}

// The orders list answers "did my coupon come back?" on the row: each type
// an order held, marked by where its holds stand in colour and symbol,
// its title naming the keys and their states. The held and close-date
// filters narrow the list and the API alike, and the API says each
// order's holds; a bad filter is a 400 that says why.
func TestOrdersListHeld(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		coupons := heldOrders(t, b)
		back, stuck := strconv.FormatInt(coupons["back-1"], 10), strconv.FormatInt(coupons["stuck-1"], 10)
		type mark struct{ state, class, text, title string }
		for _, c := range []struct {
			en   bool
			want map[string]map[string]mark
		}{
			{false, map[string]map[string]mark{
				"back-1": {"coupon": {"RELEASED", "ok-text", "券↩", "优惠券 " + back + "：已退回"},
					"inventory": {"RELEASED", "ok-text", "库存↩", "库存 sku-1：已退回"}},
				"stuck-1": {"coupon": {"MANUAL", "bad", "券⚠", "优惠券 " + stuck + "：释放失败，需人工处理"},
					"inventory": {"RELEASED", "ok-text", "库存↩", "库存 sku-1：已退回"}},
				"open-1": {"coupon": {"HOLDING", "warn", "券●", "优惠券 " + strconv.FormatInt(coupons["open-1"], 10) + "：仍占用"}},
			}},
			{true, map[string]map[string]mark{
				"back-1":  {"coupon": {"RELEASED", "ok-text", "coupon↩", "Coupon " + back + ": released: came back"}},
				"stuck-1": {"coupon": {"MANUAL", "bad", "coupon⚠", "Coupon " + stuck + ": MANUAL: its release needs ops"}},
			}},
		} {
			body := getPage(t, b, "/orders", c.en, http.StatusOK)
			for no, types := range c.want {
				row := orderRowOf(body, no)
				for typ, w := range types {
					tag := testidTag(row, "held-"+typ)
					text, _ := testidText(row, "held-"+typ)
					if !strings.Contains(tag, `data-state="`+w.state+`"`) || !strings.Contains(tag, w.class) ||
						!strings.Contains(tag, `title="`+w.title+`"`) || text != w.text {
						t.Errorf("en=%v %s %s: %s %q, want state %s, class %s, title %q, text %q", c.en, no, typ, tag, text, w.state, w.class, w.title, w.text)
					}
				}
			}
		}
		cases := []struct{ query, want string }{
			{"held_type=coupon", "open-1 stuck-1 back-1"},
			{"held_type=coupon&held_key=" + stuck, "stuck-1"},
			{"held_type=coupon&held_key=" + url.QueryEscape("\u3000"+stuck+" \t"), "stuck-1"},
			{"held_type=inventory&held_key=sku-1&closed_to=2026-11-29", "back-1"},
			{"held_type=slot", ""},
			{"closed_from=2026-11-30", "stuck-1"},
			{"closed_from=2026-11-29&closed_to=2026-11-30", "stuck-1 back-1"},
			{"closed_to=2026-11-28", ""},
		}
		for _, c := range cases {
			body := getPage(t, b, "/orders?"+c.query, false, http.StatusOK)
			if got := strings.Join(ordRows(body), " "); got != c.want {
				t.Errorf("%s: rows %q, want %q", c.query, got, c.want)
			}
			api := must[readPage[orderJSON]](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders?"+c.query, "")
			var nos []string
			for _, o := range api.Items {
				nos = append(nos, o.OrderNo)
			}
			if got := strings.Join(nos, " "); got != c.want {
				t.Errorf("API %s: orders %q, want %q", c.query, got, c.want)
			}
		}
		form := testidElement(getPage(t, b, "/orders?held_type=coupon&held_key="+stuck+"&closed_from=2026-11-30&closed_to=2026-12-01", false, http.StatusOK), "orders-filters")
		for _, want := range []string{`value="coupon" selected`, `name="held_key" value="` + stuck + `"`,
			`name="closed_from" value="2026-11-30"`, `name="closed_to" value="2026-12-01"`} {
			if !strings.Contains(form, want) {
				t.Errorf("form lacks %s", want)
			}
		}
		one := must[readPage[orderJSON]](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders?held_type=coupon&held_key="+stuck, "")
		want := []models.HeldKey{
			{Type: models.ResInventory, Key: "sku-1", State: models.ReleaseReleased, Qty: 1, Released: 1, Task: models.TaskDone},
			{Type: models.ResCoupon, Key: stuck, State: models.ReleaseManual, Qty: 1, Task: models.TaskManual},
		}
		if len(one.Items) != 1 || fmt.Sprint(one.Items[0].Holds) != fmt.Sprint(want) {
			t.Errorf("API holds = %+v, want %+v", one.Items, want)
		}
		audited := func() (n int64) {
			try(t, "count audit", b.s.R.Raw("SELECT COUNT(*) FROM audit_log").Scan(&n).Error)
			return n
		}
		before := audited()
		for _, bad := range []struct{ query, says string }{
			{"held_key=sku-1", "held_type"},
			{"held_type=giftcard", "giftcard"},
			{"held_type=inventory&held_key=" + strings.Repeat("k", models.MaxTaskKeyLen+1), "at most"},
			{"closed_from=30/11/2026", "closed_from"},
			{"closed_from=2026-11-30&closed_to=2026-11-29", "closed_from 2026-11-30 is after closed_to 2026-11-29"},
		} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, "/orders?"+bad.query, en, http.StatusBadRequest)
				msg := testidElement(body, "error-message")
				if !strings.Contains(msg, map[bool]string{false: "请求有误", true: "not valid"}[en]) || !strings.Contains(msg, bad.says) {
					t.Errorf("%s (en=%v): error %q does not say %q", bad.query, en, msg, bad.says)
				}
				if len(ordRows(body)) != 0 {
					t.Errorf("%s: a refused search lists orders", bad.query)
				}
			}
			wantBad(t, b, "/api/v1/orders?"+bad.query)
		}
		if after := audited(); after != before {
			t.Errorf("refused searches wrote %d audit entries", after-before)
		}
	})
}
