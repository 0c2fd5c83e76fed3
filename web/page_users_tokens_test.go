package web_test

import (
	"net/http"
	"strings"
	"testing"

	"unhold/auth"
)

// A leaver's admin token that wrote stock gets 401 once the leaver is
// disabled: the users page says beforehand how many tokens disabling
// revokes, and the flash afterwards how many it did.
func TestDisableRevokesLeaversTokens(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		lea, err := b.signIn("lea", auth.RoleAdmin)
		try(t, "lea", err)
		_, secret, err := b.a.CreateAPIToken(b.ctx, "lea-erp", auth.RoleAdmin, "lea")
		try(t, "lea's token", err)
		leaver := b.as(&identity{name: "lea-erp", role: auth.RoleAdmin, token: secret})
		if rec := leaver.call(http.MethodPut, "/api/v1/skus/sku-9", `{"available": 5}`); rec.Code != http.StatusOK {
			t.Fatalf("the leaver's token writing stock = %d %s", rec.Code, rec.Body)
		}

		body := getPage(t, b, "/admin/users", false, http.StatusOK)
		row := testidRow(body, "lea")
		if !strings.Contains(row, "其创建的 1 个 API 令牌将被吊销") {
			t.Errorf("the disable button of lea does not say it revokes 1 token: %s", row)
		}
		checkText(t, row, "user-disable-tokens", "停用将吊销其创建的 1 个 API 令牌")

		rec := postForm(b, userPath(userNamed(t, b, lea.name).ID, "disable"), nil, false)
		wantFlash(t, b, rec, false, "/admin/users", true, "用户已停用，其会话已结束，其创建的 1 个 API 令牌已吊销")
		wantError(t, leaver.call(http.MethodPut, "/api/v1/skus/sku-9", `{"available": 6}`), http.StatusUnauthorized, "UNAUTHENTICATED")
		if e := auditOf(t, b, "token_revoke"); len(e) != 1 || e[0].Target != "token:lea-erp" || e[0].Actor != "root" {
			t.Fatalf("token_revoke audit rows = %+v", e)
		}
	})
}

// testidRow is the users-table row whose user-name is name.
func testidRow(body, name string) string {
	i := strings.Index(body, `data-testid="user-name">`+name+`<`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	end := strings.Index(body[i:], "</tr>")
	return body[start : i+end]
}
