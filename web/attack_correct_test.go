package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"unhold/models"
)

// An account holds up to MaxBalance, far past one credit (MaxAmount): its
// correction form takes what was counted up to that, in the browser (the
// field's max) and on the server.
func TestAttackCorrectBalancePastOneCredit(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		for range 3 {
			_, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, models.MaxAmount, "test")
			try(t, "credit", err)
		}
		try(t, "side door", b.s.W.Exec("UPDATE accounts SET available = available - 7 WHERE uid = 'u1' AND asset = 'BALANCE'").Error)
		counted := strconv.FormatInt(3*models.MaxAmount, 10)
		page := getPage(t, b, "/balances?user=u1&asset=BALANCE", true, http.StatusOK)
		if most, err := strconv.ParseInt(attrOf(testidTag(page, "fix-available"), "max"), 10, 64); err != nil || most < 3*models.MaxAmount {
			t.Errorf("the form's field takes at most %d (%v), less than the account holds", most, err)
		}
		_, body := followPost(t, b, postForm(b, "/resources/balance/u1/correct",
			url.Values{"available": {counted}, "reason": {"counted"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "Corrected") {
			t.Errorf("correcting an account of %s: flash %q", counted, flash)
		}
	})
}
