package auth_test

import (
	"errors"
	"testing"

	"unhold/auth"
)

// Attack (fails on main 84f401e): an admin's request to create an API
// token is authenticated when it arrives and written later; a disable that
// commits in between revokes the tokens the admin had, and then the new
// one is written live, with the disabled admin as its creator, and stays
// live for good. The token must be refused once its creator is disabled
// (and, on PostgreSQL, wait for a disable in progress), so that a disabled
// user never has a live token.
func TestAttackTokenCreatedAfterCreatorDisabled(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "root", auth.RoleAdmin)
		lea := b.addUser(t, "lea", auth.RoleAdmin)
		if _, err := b.a.SetUserDisabled(b.ctx, lea.ID, true, "root"); err != nil {
			t.Fatal(err)
		}
		// What the token form's handler does next, with the name its
		// session was authenticated as.
		_, _, err := b.a.CreateAPIToken(b.ctx, "lea-late", auth.RoleAdmin, "lea")
		if !errors.Is(err, auth.ErrNoSession) {
			t.Errorf("a disabled user's token creation = %v, want NO_SESSION", err)
		}
		live, err := b.a.LiveTokensByCreator(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if live["lea"] != 0 {
			t.Fatalf("disabled lea has %d live token(s)", live["lea"])
		}
	})
}
