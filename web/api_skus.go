package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type skuView struct {
	SkuID         string            `json:"sku_id"`
	Available     int64             `json:"available"`
	Locked        int64             `json:"locked"`
	Sold          int64             `json:"sold"`
	ReleaseDelayS int64             `json:"release_delay_s"`
	DeductAt      models.DeductAt   `json:"deduct_at"`
	UserLimit     *models.UserLimit `json:"user_limit,omitempty"`
}

func newSKUView(k *models.SKU) skuView {
	return skuView{SkuID: k.SkuID, Available: k.Available, Locked: k.Locked, Sold: k.Sold, ReleaseDelayS: k.ReleaseDelayS,
		DeductAt: k.DeductAt, UserLimit: limitView(k.PerUserOrders, k.WindowS)}
}

// limitView is a SKU's or an activity's per-user limit as the API shows it:
// absent when there is none.
func limitView(perUser, windowS int64) *models.UserLimit {
	if perUser == 0 {
		return nil
	}
	return &models.UserLimit{PerUserOrders: perUser, WindowS: windowS}
}

type putSKUBody struct {
	Available     *int64            `json:"available"`
	ReleaseDelayS int64             `json:"release_delay_s"`
	DeductAt      string            `json:"deduct_at"`
	UserLimit     *models.UserLimit `json:"user_limit"`
}

// putSKU sets a SKU's available stock, release delay, stock model and
// per-user limit, creating the SKU when new. A missing release_delay_s
// means 0, a missing deduct_at "order", a missing user_limit none.
func (s *server) putSKU(c *echo.Context) error {
	id, err := keyParam(c, "sku_id")
	if err != nil {
		return err
	}
	var body putSKUBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	if body.Available == nil {
		return invalidf("available is required")
	}
	set := models.SKUSettings{ReleaseDelayS: body.ReleaseDelayS, DeductAt: models.DeductAtOrder}
	if body.DeductAt != "" {
		if set.DeductAt, err = models.ParseDeductAt(body.DeductAt); err != nil {
			return err
		}
	}
	if body.UserLimit != nil {
		set.Limit = *body.UserLimit
	}
	sku, err := s.store.SetSKU(c.Request().Context(), id, *body.Available, set, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newSKUView(sku))
}

func (s *server) getSKU(c *echo.Context) error {
	id, err := keyParam(c, "sku_id")
	if err != nil {
		return err
	}
	sku, err := s.store.GetSKU(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newSKUView(sku))
}
