package web

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// placeOrderBody is the JSON of POST /api/v1/orders.
type placeOrderBody struct {
	OrderNo     string       `json:"order_no,omitempty"`
	UserID      string       `json:"user_id"`
	Items       []itemBody   `json:"items"`
	CouponIDs   []int64      `json:"coupon_ids,omitempty"`
	Freeze      []freezeBody `json:"freeze,omitempty"`
	ActivityID  string       `json:"activity_id,omitempty"`
	SlotID      string       `json:"slot_id,omitempty"`
	Holds       []holdBody   `json:"holds,omitempty"`
	PayTimeoutS *int64       `json:"pay_timeout_s,omitempty"`
}

// holdBody is one hold of any registered type; items, coupon_ids, freeze,
// activity_id and slot_id are shorthands for the built-in types.
type holdBody struct {
	Type string `json:"type"`
	Key  string `json:"key"`
	Qty  int64  `json:"qty"`
}

type itemBody struct {
	SkuID string `json:"sku_id"`
	Qty   int64  `json:"qty"`
}

type freezeBody struct {
	Asset  string `json:"asset"`
	Amount int64  `json:"amount"`
}

// decodePlaceOrder turns a place-order body into a request. It checks the
// JSON's shape, the asset names and the pay timeout; keys and quantities
// are checked by models.PlaceOrder. Every error wraps models.ErrInvalid.
func decodePlaceOrder(r io.Reader) (models.PlaceRequest, error) {
	var b placeOrderBody
	if err := decodeJSON(r, &b); err != nil {
		return models.PlaceRequest{}, err
	}
	req := models.PlaceRequest{OrderNo: b.OrderNo, UserID: b.UserID, ActivityID: b.ActivityID, SlotID: b.SlotID}
	for _, it := range b.Items {
		req.Items = append(req.Items, models.Item{SkuID: it.SkuID, Qty: it.Qty})
	}
	if len(b.CouponIDs) > 0 {
		req.CouponIDs = b.CouponIDs
	}
	for _, f := range b.Freeze {
		a, err := models.ParseAsset(f.Asset)
		if err != nil {
			return models.PlaceRequest{}, err
		}
		req.Freeze = append(req.Freeze, models.Freeze{Asset: a, Amount: f.Amount})
	}
	for _, h := range b.Holds {
		req.Holds = append(req.Holds, models.HoldRequest{Type: models.ResourceType(h.Type), Key: h.Key, Qty: h.Qty})
	}
	if b.PayTimeoutS != nil {
		// Bounded before the multiplication, which could overflow.
		maxS := int64(models.MaxPayTimeout / time.Second)
		if *b.PayTimeoutS < 1 || *b.PayTimeoutS > maxS {
			return models.PlaceRequest{}, invalidf("pay_timeout_s must be from 1 to %d", maxS)
		}
		req.PayTimeout = time.Duration(*b.PayTimeoutS) * time.Second
	}
	return req, nil
}

type placeOrderView struct {
	Order *models.Order `json:"order"`
	Holds []models.Hold `json:"holds"`
}

// placeOrder creates a PENDING order holding everything it asks for, or
// nothing at all.
func (s *server) placeOrder(c *echo.Context) error {
	b, err := readBody(c, true)
	if err != nil {
		return err
	}
	req, err := decodePlaceOrder(bytes.NewReader(b))
	if err != nil {
		return err
	}
	o, holds, err := s.store.PlaceOrder(c.Request().Context(), req)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/orders/"+o.OrderNo)
	return c.JSON(http.StatusCreated, placeOrderView{Order: o, Holds: holds})
}

type payBody struct {
	ChannelTxnID string `json:"channel_txn_id"`
}

// payOrder records the payment channel's callback; a repeat is harmless.
func (s *server) payOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	var body payBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	res, err := s.store.PayOrder(c.Request().Context(), no, body.ChannelTxnID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

type closeBody struct {
	Reason string `json:"reason"`
}

// closeOrder closes a PENDING order; closing it again answers the same.
// Only the close that flipped the order wakes the worker.
func (s *server) closeOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	var body closeBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	reason, err := models.ParseCloseReason(body.Reason)
	if err != nil {
		return err
	}
	res, err := s.store.CloseOrder(c.Request().Context(), no, reason, actor(c))
	if err != nil {
		return err
	}
	if res.Won {
		s.wakeWorker()
	}
	return c.JSON(http.StatusOK, res)
}

// getOrder shows an order's whole release chain.
func (s *server) getOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	chain, err := s.store.OrderChain(c.Request().Context(), no)
	if err != nil {
		return err
	}
	chain.Audit = s.auditShown(c, chain.Audit)
	return c.JSON(http.StatusOK, chain)
}
