package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type couponView struct {
	ID       int64               `json:"id"`
	UserID   string              `json:"user_id"`
	Owner    models.CouponOwner  `json:"owner"`
	Status   models.CouponStatus `json:"status"`
	OrderNo  *string             `json:"order_no"`
	ExpireAt time.Time           `json:"expire_at"`
}

func newCouponView(cp *models.Coupon) couponView {
	return couponView{ID: cp.ID, UserID: cp.UserID, Owner: cp.Owner, Status: cp.Status, OrderNo: cp.OrderNo, ExpireAt: cp.ExpireAt}
}

type createCouponBody struct {
	UserID   string `json:"user_id"`
	Owner    string `json:"owner"`
	ExpireAt string `json:"expire_at"`
}

// createCoupon issues an UNUSED coupon to a user.
func (s *server) createCoupon(c *echo.Context) error {
	var body createCouponBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	owner, err := models.ParseCouponOwner(body.Owner)
	if err != nil {
		return err
	}
	if body.ExpireAt == "" {
		return invalidf("expire_at is required")
	}
	expireAt, err := time.Parse(time.RFC3339, body.ExpireAt)
	if err != nil {
		return invalidf("expire_at must be an RFC 3339 time such as 2026-12-31T23:59:59Z, not %q", body.ExpireAt)
	}
	cp, err := s.store.CreateCoupon(c.Request().Context(), body.UserID, owner, expireAt, actor(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/coupons/"+strconv.FormatInt(cp.ID, 10))
	return c.JSON(http.StatusCreated, newCouponView(cp))
}

func (s *server) getCoupon(c *echo.Context) error {
	raw := c.Param("coupon_id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return invalidf("coupon id must be a positive integer, not %q", raw)
	}
	cp, err := s.store.GetCoupon(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newCouponView(cp))
}
