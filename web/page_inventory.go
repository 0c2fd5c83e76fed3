package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// inventoryList lists SKUs by id, optionally those starting with a prefix,
// and flags the ones whose locked or total stock does not reconcile.
func (s *server) inventoryList(c *echo.Context) error {
	prefix := ledgerParam(c, "prefix")
	if prefix != "" && !models.ValidKey(prefix) {
		return invalidf("SKU prefix %q may hold only letters, digits and - _ . : (at most 64)", prefix)
	}
	after := c.QueryParam("after")
	if after != "" && !models.ValidKey(after) {
		return invalidf("after %q is not a SKU id; use the page links", after)
	}
	page, err := s.store.ListSKUs(c.Request().Context(), models.SKUQuery{Prefix: prefix, After: after,
		Limit: ledgerPageSize, Count: models.OrderCountCap})
	if err != nil {
		return err
	}
	v := views.InventoryView{Prefix: prefix, Total: page.Total, Over: page.Over,
		Rows: make([]views.InventoryRow, 0, len(page.SKUs))}
	for _, k := range page.SKUs {
		v.Rows = append(v.Rows, inventoryRow(k))
	}
	if after != "" {
		v.Pager.FirstURL = views.Query("/inventory", "prefix", prefix)
	}
	if page.Next != "" {
		v.Pager.NextURL = views.Query("/inventory", "prefix", prefix, "after", page.Next)
	}
	return render(c, http.StatusOK, views.InventoryPage(s.page(c, "inv.title", "inventory"), v))
}

// skuLedger shows one SKU: its numbers, both checks, and its ledger.
func (s *server) skuLedger(c *echo.Context) error {
	id := c.Param("sku_id")
	if !models.ValidKey(id) {
		return fmt.Errorf("%w: sku %q", models.ErrNotFound, id)
	}
	after, err := ledgerAfterID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sku, err := s.store.SKUStatusOf(ctx, id)
	if err != nil {
		return err
	}
	flows, err := s.store.SKUFlows(ctx, id, after, ledgerPageSize)
	if err != nil {
		return err
	}
	k, err := s.store.GetSKU(ctx, id)
	if err != nil {
		return err
	}
	fix, err := s.counterFix(c, models.ResInventory, id, string(models.ResInventory))
	if err != nil {
		return err
	}
	v := views.SKUView{SKU: inventoryRow(*sku), Flows: s.ledgerFlowRows(flows.Flows), Fix: fix,
		Model: views.StockModel{DeductAt: string(k.DeductAt), PerUserOrders: k.PerUserOrders, WindowS: k.WindowS}}
	path := "/inventory/" + id
	if after != 0 {
		v.Pager.FirstURL = path
	}
	if flows.Next != 0 {
		v.Pager.NextURL = views.Query(path, "after", strconv.FormatInt(flows.Next, 10))
	}
	p := s.page(c, "sku.title", "inventory")
	return render(c, http.StatusOK, views.SKUPage(p, v))
}

func inventoryRow(k models.SKUStatus) views.InventoryRow {
	return views.InventoryRow{
		SkuID: k.SkuID, Available: k.Available, Locked: k.Locked, Sold: k.Sold, ReleaseDelayS: k.ReleaseDelayS,
		UpdatedAt: k.UpdatedAt, PendingHeld: k.PendingHeld, TaskHeld: k.TaskHeld, Adjusted: k.Adjusted,
	}
}
