package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type skuView struct {
	SkuID         string `json:"sku_id"`
	Available     int64  `json:"available"`
	Locked        int64  `json:"locked"`
	Sold          int64  `json:"sold"`
	ReleaseDelayS int64  `json:"release_delay_s"`
}

func newSKUView(k *models.SKU) skuView {
	return skuView{SkuID: k.SkuID, Available: k.Available, Locked: k.Locked, Sold: k.Sold, ReleaseDelayS: k.ReleaseDelayS}
}

type putSKUBody struct {
	Available     *int64 `json:"available"`
	ReleaseDelayS int64  `json:"release_delay_s"`
}

// putSKU sets a SKU's available stock and release delay, creating the SKU
// when new. A missing release_delay_s means 0.
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
	sku, err := s.store.SetStock(c.Request().Context(), id, *body.Available, body.ReleaseDelayS, actor(c))
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
