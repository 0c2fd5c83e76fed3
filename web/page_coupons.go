package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// couponTotalsMaxDays is the longest date range whose totals a page view
// counts when no user, coupon or order narrows the coupon ledger.
const couponTotalsMaxDays = 7

// couponLedger is the coupon ledger: every flow with its cost bearer,
// totals by bearer and type, and with a user filter that user's coupons now.
func (s *server) couponLedger(c *echo.Context) error {
	p := s.page(c, "coupons.title", "coupons")
	f, q, err := parseCouponQuery(c, p.ShopLoc)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	page, err := s.store.ListCouponFlows(ctx, q)
	if err != nil {
		return err
	}
	v := views.CouponsView{Filter: f, TotalsDays: couponTotalsMaxDays, Partial: page.Partial, Scanned: page.Scanned}
	for _, r := range page.Flows {
		row := views.CouponFlowRow{
			ID: r.ID, At: r.CreatedAt, CouponID: r.CouponID, UserID: r.UserID, Owner: string(r.Owner),
			Type: string(r.Type), Trigger: string(r.Trigger), StatusBefore: r.StatusBefore, StatusAfter: r.StatusAfter,
			StatusNow: r.StatusNow, ExpireAfter: r.ExpireAfter, Actor: r.Actor,
		}
		if r.OrderNo != nil {
			row.OrderNo = *r.OrderNo
		}
		v.Rows = append(v.Rows, row)
	}
	// Totals count every row the filter selects, so they run only when the
	// filter bounds those rows: a user, coupon or order, or a short range.
	to := q.To
	if to.IsZero() {
		to = p.Now
	}
	if q.Narrow() || (!q.From.IsZero() && to.Sub(q.From) <= couponTotalsMaxDays*24*time.Hour) {
		totals, err := s.store.CouponTotals(ctx, q)
		if err != nil {
			return err
		}
		t := &views.CouponTotals{N: map[string]map[string]int64{}, Scope: p.T("coupons.scope.all")}
		if f.From != "" || f.To != "" {
			t.Scope = p.Tf("coupons.scope.range", ledgerOrDots(f.From), ledgerOrDots(f.To), p.ShopLoc.String())
		}
		for _, r := range totals {
			if t.N[string(r.Owner)] == nil {
				t.N[string(r.Owner)] = map[string]int64{}
			}
			t.N[string(r.Owner)][string(r.Type)] += r.N
		}
		v.Totals = t
	}
	// Today is the shop's, the day the filter reads.
	today := p.Now.In(p.ShopLoc).Format(ledgerDayLayout)
	v.TodayURL = couponURL(f, "from", today, "to", today)
	if q.After.ID != 0 {
		v.Pager.FirstURL = couponURL(f)
	}
	if page.Next.ID != 0 {
		v.Pager.NextURL = couponURL(f, "after", page.Next.String())
	}
	if q.UserID != "" {
		coupons, more, err := s.store.UserCoupons(ctx, q.UserID, ledgerPageSize)
		if err != nil {
			return err
		}
		v.MoreUserCoupons = more
		for _, cp := range coupons {
			now := views.CouponNow{ID: cp.ID, Owner: string(cp.Owner), Status: string(cp.Status), ExpireAt: cp.ExpireAt}
			if cp.OrderNo != nil {
				now.OrderNo = *cp.OrderNo
			}
			v.UserCoupons = append(v.UserCoupons, now)
		}
	}
	if q.CouponID != 0 {
		if v.Fix, err = s.couponFix(c, q.CouponID); err != nil {
			return err
		}
	}
	return render(c, http.StatusOK, views.CouponsPage(p, v))
}

// parseCouponQuery reads the coupon ledger's filter; dates are days in loc,
// the shop's business zone, to inclusive.
func parseCouponQuery(c *echo.Context, loc *time.Location) (views.CouponFilter, models.CouponQuery, error) {
	f := views.CouponFilter{
		User: ledgerParam(c, "user"), Order: ledgerParam(c, "order"), Coupon: ledgerParam(c, "coupon"),
		Status: c.QueryParam("status"), Owner: c.QueryParam("owner"), From: ledgerParam(c, "from"), To: ledgerParam(c, "to"),
	}
	q := models.CouponQuery{Limit: ledgerPageSize}
	var err error
	if q.UserID, err = ledgerUser(c); err != nil {
		return f, q, err
	}
	if f.Order != "" {
		if !models.ValidOrderNo(f.Order) {
			return f, q, invalidf("order %q is not an order number: 1-40 letters, digits, - or _", f.Order)
		}
		q.OrderNo = f.Order
	}
	if f.Coupon != "" {
		id, err := strconv.ParseInt(f.Coupon, 10, 64)
		if err != nil || id <= 0 {
			return f, q, invalidf("coupon %q is not a coupon number", f.Coupon)
		}
		q.CouponID = id
	}
	if f.Status != "" {
		if q.Status, err = models.ParseCouponStatus(f.Status); err != nil {
			return f, q, err
		}
	}
	if f.Owner != "" {
		if q.Owner, err = models.ParseCouponOwner(f.Owner); err != nil {
			return f, q, err
		}
	}
	if f.From != "" {
		if q.From, _, err = ledgerDay("from", f.From, loc); err != nil {
			return f, q, err
		}
	}
	if f.To != "" {
		if _, q.To, err = ledgerDay("to", f.To, loc); err != nil {
			return f, q, err
		}
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return f, q, invalidf("from %s is after to %s", f.From, f.To)
	}
	if q.After, err = models.ParseCursor(c.QueryParam("after")); err != nil {
		return f, q, err
	}
	return f, q, nil
}

// couponURL is the coupon ledger with filter f; extra pairs override it.
func couponURL(f views.CouponFilter, extra ...string) string {
	kv := []string{"user", f.User, "order", f.Order, "coupon", f.Coupon, "status", f.Status, "owner", f.Owner, "from", f.From, "to", f.To}
	return views.Query("/coupons", append(kv, extra...)...)
}

func ledgerOrDots(s string) string {
	if s == "" {
		return "…"
	}
	return s
}
