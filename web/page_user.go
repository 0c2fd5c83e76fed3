package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// userPage is GET /users/:id: one shop user (the id orders, accounts and
// coupons carry; not a dashboard user) with their accounts, their coupons
// and their orders, a keyset page at a time, each with its release state.
// An id no order, account or coupon carries is a 404 that says so; an id
// that cannot be one (see models.ValidKey) is a 400.
func (s *server) userPage(c *echo.Context) error {
	id := c.Param("id")
	if !models.ValidKey(id) {
		return invalidf("user %q is not a user id: 1-64 letters, digits or - _ . :", id)
	}
	after, err := models.ParseCursor(c.QueryParam("after"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	orders, err := s.store.ListOrders(ctx, models.OrderQuery{UserID: id, After: after, Count: models.OrderCountCap})
	if err != nil {
		return err
	}
	assets, err := s.store.AccountAssets(ctx, id)
	if err != nil {
		return err
	}
	coupons, more, err := s.store.UserCoupons(ctx, id, ledgerPageSize)
	if err != nil {
		return err
	}
	if orders.Total == 0 && len(assets) == 0 && len(coupons) == 0 {
		return render(c, http.StatusNotFound, views.UserNotFound(s.page(c, "links.user.notfound.title", ""), id))
	}
	v := views.UserView{ID: id, Accounts: accountRows(assets), MoreCoupons: more, Orders: orderRows(orders),
		Total: orders.Total, Over: orders.Over}
	for _, cp := range coupons {
		now := views.CouponNow{ID: cp.ID, Owner: string(cp.Owner), Status: string(cp.Status), ExpireAt: cp.ExpireAt}
		if cp.OrderNo != nil {
			now.OrderNo = *cp.OrderNo
		}
		v.Coupons = append(v.Coupons, now)
	}
	path := views.UserURL(id)
	if after.ID != 0 {
		v.FirstURL = path
	}
	if orders.Next.ID != 0 {
		v.NextURL = views.Query(path, "after", orders.Next.String())
	}
	return render(c, http.StatusOK, views.UserPage(s.page(c, "links.user.title", ""), v))
}
