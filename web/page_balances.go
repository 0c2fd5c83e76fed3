package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// balanceLedger shows one user's balance and points — available, frozen,
// spent — and the account ledger behind them; without a user, the accounts
// that changed last.
func (s *server) balanceLedger(c *echo.Context) error {
	user, err := ledgerUser(c)
	if err != nil {
		return err
	}
	var asset models.Asset
	if a := c.QueryParam("asset"); a != "" {
		if asset, err = models.ParseAsset(a); err != nil {
			return err
		}
	}
	after, err := ledgerAfterID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := s.page(c, "bal.title", "balances")
	v := views.BalancesView{User: user, Asset: string(asset)}
	if user == "" {
		recent, err := s.store.RecentAccounts(ctx, ledgerPageSize)
		if err != nil {
			return err
		}
		v.Recent = accountRows(recent)
		return render(c, http.StatusOK, views.BalancesPage(p, v))
	}
	assets, err := s.store.AccountAssets(ctx, user)
	if err != nil {
		return err
	}
	v.Assets = accountRows(assets)
	flows, err := s.store.AccountFlows(ctx, user, asset, after, ledgerPageSize)
	if err != nil {
		return err
	}
	v.Flows = s.ledgerFlowRows(flows.Flows)
	if asset != "" {
		t := models.ResBalance
		if asset == models.AssetPoints {
			t = models.ResPoints
		}
		if v.Fix, err = s.counterFix(c, t, user, string(asset)); err != nil {
			return err
		}
	}
	if after != 0 {
		v.Pager.FirstURL = views.Query("/balances", "user", user, "asset", string(asset))
	}
	if flows.Next != 0 {
		v.Pager.NextURL = views.Query("/balances", "user", user, "asset", string(asset), "after", strconv.FormatInt(flows.Next, 10))
	}
	return render(c, http.StatusOK, views.BalancesPage(p, v))
}

func accountRows(as []models.AccountAsset) []views.AccountRow {
	out := make([]views.AccountRow, 0, len(as))
	for _, a := range as {
		out = append(out, views.AccountRow{UID: a.UID, Asset: string(a.Asset), Available: a.Available,
			Frozen: a.Frozen, Spent: a.Spent, ExpireAt: a.ExpireAt, UpdatedAt: a.UpdatedAt})
	}
	return out
}
