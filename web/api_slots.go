package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type slotView struct {
	SlotID  string            `json:"slot_id"`
	Status  models.SlotStatus `json:"status"`
	OrderNo *string           `json:"order_no"`
}

func newSlotView(sl *models.Slot) slotView {
	return slotView{SlotID: sl.SlotID, Status: sl.Status, OrderNo: sl.OrderNo}
}

// putSlotBody is empty: a slot has nothing to set yet, but a body, when
// sent, must still be a JSON object without unknown fields.
type putSlotBody struct{}

// putSlot creates a FREE slot (201) or answers an existing one as it is (200).
func (s *server) putSlot(c *echo.Context) error {
	id, err := keyParam(c, "slot_id")
	if err != nil {
		return err
	}
	var body putSlotBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	sl, created, err := s.store.PutSlot(c.Request().Context(), id, actor(c))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, newSlotView(sl))
}

func (s *server) getSlot(c *echo.Context) error {
	id, err := keyParam(c, "slot_id")
	if err != nil {
		return err
	}
	sl, err := s.store.GetSlot(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newSlotView(sl))
}
