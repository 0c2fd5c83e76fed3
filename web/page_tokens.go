package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/views"
)

// tokensPage is GET /admin/tokens: the API tokens of integrations.
func (s *server) tokensPage(c *echo.Context) error {
	return s.renderTokens(c, http.StatusOK, nil)
}

func (s *server) renderTokens(c *echo.Context, status int, secret *views.Secret) error {
	tokens, err := s.auth.APITokens(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.TokensView{Roles: roleNames(), Secret: secret}
	for _, t := range tokens {
		v.Tokens = append(v.Tokens, views.TokenRow{ID: t.ID, Name: t.Name, Role: string(t.Role), Prefix: t.Prefix,
			CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt,
			RevokeURL: "/admin/tokens/" + strconv.FormatInt(t.ID, 10) + "/revoke"})
	}
	return render(c, status, views.TokensPage(s.page(c, "tokens.title", "tokens"), v))
}

// tokenCreate is POST /admin/tokens. The secret is shown on the page this
// answers with, and never again: only its hash is kept.
func (s *server) tokenCreate(c *echo.Context) error {
	t := flashPage(c)
	name := c.FormValue("name")
	role, err := parseRole(c.FormValue("role"))
	if err != nil {
		return s.refusal(c, "/admin/tokens", "token_create", "token:"+name, err)
	}
	tok, secret, err := s.auth.CreateAPIToken(c.Request().Context(), name, role, actor(c))
	if err != nil {
		return s.refusal(c, "/admin/tokens", "token_create", "token:"+name, err)
	}
	return s.renderTokens(c, http.StatusOK, &views.Secret{Title: t.T("tokens.secret.created"), For: tok.Name, Value: secret})
}

// tokenRevoke is POST /admin/tokens/:id/revoke.
func (s *server) tokenRevoke(c *echo.Context) error {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return invalidf("a token id is a positive whole number, not %q", raw)
	}
	if err := s.auth.RevokeAPIToken(c.Request().Context(), id, actor(c)); err != nil {
		return s.refusal(c, "/admin/tokens", "token_revoke", fmt.Sprintf("token:#%d", id), err)
	}
	return redirectWithFlash(c, "/admin/tokens", true, flashPage(c).T("tokens.flash.revoked"))
}
