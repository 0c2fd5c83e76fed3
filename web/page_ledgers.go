package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// What the ledger pages (inventory, coupons, balances, daily report) share.

// ledgerPageSize is how many rows a ledger page shows.
const ledgerPageSize = models.DefaultPageSize

// ledgerDayLayout is how a day is written in a URL: 2026-11-29.
const ledgerDayLayout = "2006-01-02"

// ledgerParam is a query parameter with the spaces of a paste trimmed.
func ledgerParam(c *echo.Context, name string) string {
	return strings.TrimSpace(c.QueryParam(name))
}

// ledgerDay is the day named YYYY-MM-DD in loc as [start, end): a day in a
// zone with daylight saving may last 23 or 25 hours.
func ledgerDay(name, value string, loc *time.Location) (start, end time.Time, err error) {
	d, err := time.Parse(ledgerDayLayout, value)
	if err != nil {
		return time.Time{}, time.Time{}, invalidf("%s must be a date like 2026-11-29, not %q", name, value)
	}
	return models.DayStart(d.Year(), d.Month(), d.Day(), loc), models.DayStart(d.Year(), d.Month(), d.Day()+1, loc), nil
}

// ledgerAfterID reads the id a ledger page continues below; "" is the first page.
func ledgerAfterID(c *echo.Context) (int64, error) {
	v := c.QueryParam("after")
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("after %q is not a ledger row id; use the page links", v)
	}
	return id, nil
}

// ledgerUser reads the user filter.
func ledgerUser(c *echo.Context) (string, error) {
	u := ledgerParam(c, "user")
	if u != "" && !models.ValidKey(u) {
		return "", invalidf("user %q is not a user id: 1-64 letters, digits or - _ . :", u)
	}
	return u, nil
}

// ledgerFlowRows maps counter ledger rows (stock, accounts) to the view.
func (s *server) ledgerFlowRows(flows []models.Flow) []views.LedgerFlowRow {
	out := make([]views.LedgerFlowRow, 0, len(flows))
	for _, f := range flows {
		r := views.LedgerFlowRow{
			ID: f.ID, At: f.CreatedAt, Type: string(f.Type), Trigger: string(f.Trigger), Qty: f.Qty,
			AvailBefore: f.AvailBefore, AvailAfter: f.AvailAfter, HeldBefore: f.HeldBefore, HeldAfter: f.HeldAfter,
			SpentBefore: f.SpentBefore, SpentAfter: f.SpentAfter, Actor: f.Actor,
		}
		if f.OrderNo != nil {
			r.OrderNo = *f.OrderNo
		}
		r.Asset = s.store.Side(f.ResourceType)
		r.ExpireBefore, r.ExpireAfter, r.Expires = f.ExpireBefore, f.ExpireAfter, f.ResourceType == models.ResPoints
		out = append(out, r)
	}
	return out
}
