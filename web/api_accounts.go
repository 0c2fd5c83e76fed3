package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type accountView struct {
	UID    string                     `json:"uid"`
	Assets map[models.Asset]assetView `json:"assets"`
}

type assetView struct {
	Available int64 `json:"available"`
	Frozen    int64 `json:"frozen"`
	Spent     int64 `json:"spent"`
	// ExpireAt is when the points expire; absent when they never do, and
	// always for the balance.
	ExpireAt *time.Time `json:"expire_at,omitempty"`
}

// newAccountView shows every asset, with zeros for one the account lacks.
func newAccountView(uid string, assets map[models.Asset]models.AccountAsset) accountView {
	v := accountView{UID: uid, Assets: map[models.Asset]assetView{}}
	for _, a := range []models.Asset{models.AssetBalance, models.AssetPoints} {
		got := assets[a]
		v.Assets[a] = assetView{Available: got.Available, Frozen: got.Frozen, Spent: got.Spent, ExpireAt: got.ExpireAt}
	}
	return v
}

type creditBody struct {
	Asset  string `json:"asset"`
	Amount int64  `json:"amount"`
	// ExpireAt (RFC 3339, POINTS only) is when the credited points expire:
	// the account's expiry moves to it if that is later.
	ExpireAt string `json:"expire_at,omitempty"`
}

// creditAccount adds to a user's available balance or points.
func (s *server) creditAccount(c *echo.Context) error {
	uid, err := keyParam(c, "uid")
	if err != nil {
		return err
	}
	var body creditBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	asset, err := models.ParseAsset(body.Asset)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if body.ExpireAt == "" {
		_, err = s.store.Credit(ctx, uid, asset, body.Amount, actor(c))
	} else {
		until, perr := time.Parse(time.RFC3339, body.ExpireAt)
		if perr != nil {
			return invalidf("expire_at must be an RFC 3339 time such as 2026-12-31T23:59:59Z, not %q", body.ExpireAt)
		}
		_, err = s.store.CreditUntil(ctx, uid, asset, body.Amount, until, actor(c))
	}
	if err != nil {
		return err
	}
	assets, err := s.store.GetAccount(ctx, uid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newAccountView(uid, assets))
}

func (s *server) getAccount(c *echo.Context) error {
	uid, err := keyParam(c, "uid")
	if err != nil {
		return err
	}
	assets, err := s.store.GetAccount(c.Request().Context(), uid)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newAccountView(uid, assets))
}
