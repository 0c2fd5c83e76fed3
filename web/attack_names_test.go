package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"unhold/auth"
)

// Attack (fails on main 84f401e): names that read as another user's, or as
// an actor word the logs reserve, are created through the users form.
// Mathematical and fullwidth letters are of the Common script (or Latin),
// so the one-script rule lets them through; a decomposed "é" is a second
// user beside the precomposed one; two spaces show as one in HTML. Each
// would make the audit log name two people alike.
func TestAttackConfusableUserNames(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, name := range []string{"alice", "josé"} {
			if rec := postForm(b, "/admin/users", url.Values{"name": {name}, "role": {"viewer"}, "password": {goodPassword}}, false); rec.Code != http.StatusSeeOther {
				t.Fatalf("create %q = %d %s", name, rec.Code, rec.Body)
			}
		}
		for _, c := range []struct{ name, why string }{
			{"\U0001D5BAlice", "MATHEMATICAL SANS-SERIF SMALL A reads as alice"},
			{"\U0001D41A\U0001D425\U0001D422\U0001D41C\U0001D41E", "mathematical bold alice"},
			{"ａｌｉｃｅ", "fullwidth alice"},
			{"jose\u0301", "decomposed josé beside the precomposed one"},
			{"ｓｙｓｔｅｍ", "fullwidth reserved word system"},
			{"\U0001D5CCystem", "reserved word system with a mathematical s"},
			{"ali\uFB01", "a ligature fi"},
			{"a  b", "two spaces, which HTML shows as one"},
		} {
			rec := postForm(b, "/admin/users", url.Values{"name": {c.name}, "role": {"viewer"}, "password": {goodPassword}}, false)
			if userNamed(t, b, c.name) != nil {
				t.Errorf("%s: %q was created (%d)", c.why, c.name, rec.Code)
			}
			if err := auth.ValidUserName(c.name); err == nil {
				t.Errorf("%s: ValidUserName(%q) accepts it", c.why, c.name)
			}
		}
	})
}
