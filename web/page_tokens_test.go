package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

var apiSecretRE = regexp.MustCompile(`^uh_[A-Za-z0-9_-]{43}$`)

// getSKUWith sends GET /api/v1/skus/x with an Authorization header.
func getSKUWith(b bundle, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/skus/x", nil)
	req.Header.Set("Authorization", auth)
	return b.as(nil).serve(req)
}

// tokenRowOf is the list row of the token named name, or "".
func tokenRowOf(body, name string) string {
	i := strings.Index(body, `data-testid="token-name">`+name+`<`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	return body[start : i+strings.Index(body[i:], "</tr>")]
}

// An admin creates a token: the answer shows the secret once, the secret
// opens the API, the list afterwards shows only its prefix; revoked, the
// secret stops working. Each action is one audit row.
func TestTokensCreateUseRevoke(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := postForm(b, "/admin/tokens", url.Values{"name": {"erp"}, "role": {"operator"}}, false)
		body := wantPage(t, rec, "create token", http.StatusOK)
		vals := secretValues(body)
		if len(vals) != 1 || !apiSecretRE.MatchString(vals[0]) {
			t.Fatalf("secret values %q, want one uh_ + 43 characters", vals)
		}
		secret := vals[0]
		if n := strings.Count(body, secret); n != 1 {
			t.Errorf("the secret appears %d times on its page", n)
		}
		checkText(t, body, "secret-for", "属于：erp")
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the page with the secret has Cache-Control %q", cc)
		}
		created := oneAudit(t, b, "token_create")
		wantAuditBy(t, created, "root", "admin", "token:erp", "ok")
		if created.Detail != "operator, "+secret[3:11]+"…" || strings.Contains(created.Detail, secret) {
			t.Errorf("token_create detail %q", created.Detail)
		}
		var tok auth.APIToken
		try(t, "token row", b.s.R.Where("name = ?", "erp").Take(&tok).Error)
		if tok.Role != auth.RoleOperator || tok.CreatedBy != "root" || tok.TokenHash != sha256Hex(secret) || tok.Prefix != secret[3:11] {
			t.Fatalf("token row %+v", tok)
		}

		// The secret opens the API: the handler answers, not the gate.
		wantError(t, getSKUWith(b, "Bearer "+secret), http.StatusNotFound, "NOT_FOUND")
		for _, en := range []bool{false, true} {
			list := getPage(t, b, "/admin/tokens", en, http.StatusOK)
			if strings.Contains(list, secret) || strings.Contains(list, secret[3:20]) {
				t.Fatalf("the list shows the secret (en=%v)", en)
			}
			if _, ok := testidText(list, "secret"); ok {
				t.Fatalf("the list has a secret box (en=%v)", en)
			}
			row := tokenRowOf(list, "erp")
			if row == "" {
				t.Fatalf("erp not listed:\n%s", list)
			}
			checkText(t, row, "token-prefix", "uh_"+secret[3:11]+"…")
			if used, _ := testidText(row, "token-last-used"); used == "从未" || used == "Never" || used == "" {
				t.Errorf("last used = %q after a call", used)
			}
		}
		list := getPage(t, b, "/admin/tokens", false, http.StatusOK)
		checkText(t, tokenRowOf(list, "erp"), "token-status", "有效")
		action := mustAction(t, tokenRowOf(list, "erp"), "token-revoke-form")
		if action != "/admin/tokens/"+itoa(tok.ID)+"/revoke" {
			t.Fatalf("revoke form posts to %q", action)
		}

		wantFlash(t, b, postForm(b, action, nil, false), false, "/admin/tokens", true, "令牌已吊销")
		wantError(t, getSKUWith(b, "Bearer "+secret), http.StatusUnauthorized, "UNAUTHENTICATED")
		wantAuditBy(t, oneAudit(t, b, "token_revoke"), "root", "admin", "token:erp", "ok")
		row := tokenRowOf(getPage(t, b, "/admin/tokens", true, http.StatusOK), "erp")
		if got := markupText(testidElement(row, "token-status")); !strings.HasPrefix(got, "Revoked") {
			t.Errorf("status after revoke = %q", got)
		}
		if strings.Contains(row, "token-revoke-form") {
			t.Error("a revoked token still offers Revoke")
		}
		// Revoking again finds no live token: refused, and audited as such.
		wantFlash(t, b, postForm(b, action, nil, false), false, "/admin/tokens", false, "不存在")
		var revokes []models.AuditEntry
		try(t, "revokes", b.s.R.Where("action = ?", "token_revoke").Order("id").Find(&revokes).Error)
		if len(revokes) != 2 || revokes[0].Outcome != "ok" || revokes[1].Outcome != "refused" {
			t.Errorf("token_revoke rows after a second revoke: %+v", revokes)
		}
		// The name is free again once revoked.
		again := wantPage(t, postForm(b, "/admin/tokens", url.Values{"name": {"erp"}, "role": {"viewer"}}, true), "recreate", http.StatusOK)
		if v := secretValues(again); len(v) != 1 || v[0] == secret {
			t.Fatalf("recreated secret %q", v)
		}
		if n := countAudit(t, b, "token_create"); n != 2 {
			t.Errorf("%d token_create rows, want 2", n)
		}
	})
}

// mustAction is the action of the form whose data-testid is id.
func mustAction(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`action="([^"]*)"`).FindStringSubmatch(testidTag(body, id))
	if m == nil {
		t.Fatalf("no form %q in:\n%s", id, body)
	}
	return m[1]
}

// Refused token creations say why and create nothing.
func TestTokensCreateRefused(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, _, err := b.a.CreateAPIToken(b.ctx, "crm", auth.RoleViewer, "test")
		try(t, "crm", err)
		for _, c := range []struct {
			name string
			form url.Values
			en   bool
			want string
		}{
			{"live name taken", url.Values{"name": {"crm"}, "role": {"viewer"}}, false, "已有同名的 API 令牌"},
			{"live name taken, English", url.Values{"name": {"crm"}, "role": {"admin"}}, true, "An API token with this name exists"},
			{"bad role", url.Values{"name": {"bi"}, "role": {"owner"}}, false, "没有这种角色，未做任何更改"},
		} {
			tokens := rowCount(t, b, "api_tokens")
			wantFlash(t, b, postForm(b, "/admin/tokens", c.form, c.en), c.en, "/admin/tokens", false, c.want)
			if got := rowCount(t, b, "api_tokens"); got != tokens {
				t.Errorf("%s: tokens %d → %d", c.name, tokens, got)
			}
		}
		ok, text := flashAfter(t, b, postForm(b, "/admin/tokens", url.Values{"name": {""}, "role": {"viewer"}}, false), false, "/admin/tokens")
		if ok || !strings.HasSuffix(text, "name must be 1 to 64 characters") {
			t.Errorf("empty name: flash ok %v %q", ok, text)
		}
		var creates []models.AuditEntry
		try(t, "creates", b.s.R.Where("action = ?", "token_create").Order("id").Find(&creates).Error)
		if len(creates) != 5 || creates[0].Outcome != "ok" {
			t.Fatalf("token_create rows: %+v", creates)
		}
		for _, e := range creates[1:] {
			if e.Outcome != "refused" || e.Actor != "root" {
				t.Errorf("a refused creation is audited as %+v", e)
			}
		}
		if rec := postForm(b, "/admin/tokens/abc/revoke", nil, false); rec.Code != http.StatusBadRequest {
			t.Errorf("revoke token abc = %d, want 400", rec.Code)
		}
	})
}

// A viewer token reads but may not write: POST /api/v1/orders is 403 and
// one "denied" row in the token's name and role. Only admins see the
// tokens page.
func TestTokensViewerDenied(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		body := wantPage(t, postForm(b, "/admin/tokens", url.Values{"name": {"reports"}, "role": {"viewer"}}, false), "create", http.StatusOK)
		secret := secretValues(body)[0]
		wantError(t, getSKUWith(b, "Bearer "+secret), http.StatusNotFound, "NOT_FOUND")
		req := httptest.NewRequest(http.MethodPost, "/api/v1/orders",
			strings.NewReader(`{"order_no":"v-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":1}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		wantError(t, b.as(nil).serve(req), http.StatusForbidden, "FORBIDDEN")
		e := oneAudit(t, b, "denied")
		wantAuditBy(t, e, "token:reports", "viewer", "route:POST /api/v1/orders", "denied")
		if e.Detail != "needs operator, has viewer" {
			t.Errorf("denied detail %q", e.Detail)
		}
		if n := rowCount(t, b, "orders"); n != 0 {
			t.Errorf("a viewer token placed %d orders", n)
		}

		op, err := b.signIn("olga", auth.RoleOperator)
		try(t, "olga", err)
		getPage(t, b.as(op), "/admin/tokens", false, http.StatusForbidden)
		if rec := postForm(b.as(op), "/admin/tokens", url.Values{"name": {"sneaky"}, "role": {"admin"}}, false); rec.Code != http.StatusForbidden {
			t.Errorf("an operator creating a token = %d", rec.Code)
		}
		var n int64
		try(t, "count", b.s.R.Model(&auth.APIToken{}).Where("name = ?", "sneaky").Count(&n).Error)
		if n != 0 {
			t.Error("an operator created a token")
		}
		getPageBoth(t, b, "/admin/tokens", "", http.StatusOK)
	})
}
