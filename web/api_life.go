package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// The order's life after placement (docs/order-life.md): line cancels,
// shipments, refunds, returns and the warehouse's inbound. Each is
// idempotent by its id: the same request again answers the same
// (repeat: true) and changes nothing; the same id with another body is
// refused, 409 ID_REUSED.

// lineBody is one line of a shipment, refund, return or inbound.
type lineBody struct {
	SkuID string `json:"sku_id"`
	Qty   int64  `json:"qty"`
	// Restock is an inbound line's: true back to stock, false written off.
	Restock *bool `json:"restock,omitempty"`
}

func asLineQty(ls []lineBody) []models.LineQty {
	out := make([]models.LineQty, len(ls))
	for i, l := range ls {
		out[i] = models.LineQty{SkuID: l.SkuID, Qty: l.Qty, Restock: l.Restock}
	}
	return out
}

type cancelLineBody struct {
	Qty    int64  `json:"qty"`
	Reason string `json:"reason,omitempty"`
	// Version is the line version the caller saw (the chain's lines say
	// it): the cancel applies only to it. CancelID is the caller's own id
	// of the cancel instead, unique on the line. One of the two is
	// required: with either, the same cancel sent again is answered the
	// same and changes nothing.
	Version  *int64 `json:"version,omitempty"`
	CancelID string `json:"cancel_id,omitempty"`
}

// cancelLine gives back part of a PENDING order's line.
func (s *server) cancelLine(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	sku := c.Param("sku_id")
	if !models.ValidKey(sku) {
		return invalidf("sku_id must be 1-64 letters, digits, _ . : or -, not %q", sku)
	}
	var b cancelLineBody
	if err := readJSON(c, &b, true); err != nil {
		return err
	}
	version := int64(-1)
	if b.Version != nil {
		version = *b.Version
		if version < 0 {
			return invalidf("version must be 0 or more")
		}
	}
	res, err := s.store.CancelLine(c.Request().Context(), no, sku, b.Qty, version, b.CancelID, b.Reason, actor(c))
	if err != nil {
		return err
	}
	if res.Status == models.OrderClosed && !res.Repeat {
		s.wakeWorker()
	}
	return c.JSON(http.StatusOK, res)
}

type shipBody struct {
	ShipmentID string     `json:"shipment_id"`
	Lines      []lineBody `json:"lines"`
}

// shipOrder records goods shipped.
func (s *server) shipOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	var b shipBody
	if err := readJSON(c, &b, true); err != nil {
		return err
	}
	res, err := s.store.Ship(c.Request().Context(), no, b.ShipmentID, asLineQty(b.Lines), actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

type refundBody struct {
	RefundID string `json:"refund_id"`
	// Lines are the paid, unshipped quantities refunded; none: all of them.
	Lines  []lineBody `json:"lines,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// refundOrder gives paid, unshipped goods back to stock, and the whole
// order's other holds when nothing of it is left.
func (s *server) refundOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	var b refundBody
	if err := readJSON(c, &b, true); err != nil {
		return err
	}
	res, err := s.store.Refund(c.Request().Context(), no, b.RefundID, asLineQty(b.Lines), b.Reason, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

type returnBody struct {
	ReturnID string     `json:"return_id"`
	Lines    []lineBody `json:"lines"`
	Reason   string     `json:"reason,omitempty"`
}

// returnOrder records shipped goods on their way back.
func (s *server) returnOrder(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	var b returnBody
	if err := readJSON(c, &b, true); err != nil {
		return err
	}
	res, err := s.store.Return(c.Request().Context(), no, b.ReturnID, asLineQty(b.Lines), b.Reason, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

type inboundBody struct {
	Lines []lineBody `json:"lines"`
}

// returnInbound is the warehouse's confirmation of a return.
func (s *server) returnInbound(c *echo.Context) error {
	id := c.Param("return_id")
	if !models.ValidKey(id) {
		return invalidf("return_id must be 1-64 letters, digits, _ . : or -, not %q", id)
	}
	var b inboundBody
	if err := readJSON(c, &b, true); err != nil {
		return err
	}
	res, err := s.store.Inbound(c.Request().Context(), id, asLineQty(b.Lines), actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}
