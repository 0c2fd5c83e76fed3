package auth_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"golang.org/x/crypto/argon2"

	"unhold/auth"
	"unhold/models"
)

// Argon2 at 19 MiB takes up to a second under -race: these tests create few
// users and log in few times.

const goodPW = "correct horse battery"

// addUser creates a user with the password goodPW.
func (b bundle) addUser(t *testing.T, name string, role auth.Role) *auth.User {
	t.Helper()
	u, err := b.a.CreateUser(b.ctx, name, role, goodPW, "admin:setup")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// login logs in and returns the session token.
func (b bundle) login(t *testing.T, name, pw string) string {
	t.Helper()
	tok, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: name, Password: pw, IP: "192.0.2.1", UserAgent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// audits counts the audit rows a condition keeps ("1 = 1": all).
func (b bundle) audits(t *testing.T, cond string, args ...any) int64 {
	t.Helper()
	var n int64
	must(t, func() error { return b.s.R.Model(&models.AuditEntry{}).Where(cond, args...).Count(&n).Error })
	return n
}

// lastAudit reads the newest audit row.
func (b bundle) lastAudit(t *testing.T) models.AuditEntry {
	t.Helper()
	var e models.AuditEntry
	must(t, func() error { return b.s.R.Order("id DESC").Take(&e).Error })
	return e
}

// oneAudit runs fn and checks that it wrote exactly one audit row, with
// the action and outcome given, and returns that row.
func (b bundle) oneAudit(t *testing.T, action, outcome string, fn func() error) models.AuditEntry {
	t.Helper()
	before := b.audits(t, "1 = 1")
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	if after := b.audits(t, "1 = 1"); after != before+1 {
		t.Fatalf("%s wrote %d audit rows, want 1", action, after-before)
	}
	e := b.lastAudit(t)
	if e.Action != action || e.Outcome != outcome {
		t.Fatalf("audit row = %+v, want %s %s", e, action, outcome)
	}
	return e
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	h, err := auth.HashPassword(goodPW)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Count(h, "$") != 5 {
		t.Fatalf("hash %q does not name argon2id with OWASP's parameters", h)
	}
	if ok, err := auth.VerifyPassword(h, goodPW); !ok || err != nil {
		t.Fatalf("verify the right password = %v, %v", ok, err)
	}
	if ok, err := auth.VerifyPassword(h, goodPW+"!"); ok || err != nil {
		t.Fatalf("verify a wrong password = %v, %v", ok, err)
	}
	parts := strings.Split(h, "$")
	for _, bad := range []string{
		"",
		"plain",
		"$argon2i$v=19$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=16$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$t=2,m=19456,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=19456,t=0,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=0$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=4294967295,t=2,p=1$" + parts[4] + "$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "$",
		"$argon2id$v=19$m=19456,t=2,p=1$$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "==$" + parts[5],
		"$argon2id$v=19$m=19456,t=2,p=1$" + parts[4] + "$" + parts[5] + "$",
		"$argon2id$v=19$m=+19456,t=2,p=1$" + parts[4] + "$" + parts[5],
	} {
		if ok, err := auth.VerifyPassword(bad, goodPW); ok || err == nil {
			t.Errorf("verify against %q = %v, %v; want an error", bad, ok, err)
		}
	}
}

// cheapHash is an argon2id PHC string with tiny parameters, which
// VerifyPassword reads from the string: fast enough to fuzz.
func cheapHash(pw string) string {
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(pw), salt, 1, 8, 1, 32)
	b64 := base64.RawStdEncoding
	return "$argon2id$v=19$m=8,t=1,p=1$" + b64.EncodeToString(salt) + "$" + b64.EncodeToString(key)
}

func FuzzVerifyPassword(f *testing.F) {
	f.Add(cheapHash("pw"), "pw")
	f.Add(cheapHash("pw"), "other")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$$", "")
	f.Add("$argon2id$v=19$m=99999999999,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "x")
	f.Add("$$$$$", "x")
	f.Fuzz(func(t *testing.T, encoded, pw string) {
		ok, err := auth.VerifyPassword(encoded, pw)
		if ok && err != nil {
			t.Fatalf("verify = true with error %v", err)
		}
		if encoded == cheapHash(pw) && !ok {
			t.Fatalf("the right password for %q did not verify: %v", encoded, err)
		}
	})
}

func TestValidUserName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"Zhāng 张伟", true},
		{`x'); DROP TABLE users;--<script>alert(1)</script>`, true},
		{`"quoted" & 'single'`, true},
		{strings.Repeat("界", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{" alice", false},
		{"alice ", false},
		{"\u00a0alice", false},
		{"ali\nce", false},
		{"ali\x00ce", false},
		{"ali\x7fce", false},
		{"ali\u202ece", false},
		{"ali\xffce", false},
		{"token:erp", false},
		{"cli:host", false},
		{"ops-wang_2.b", true},
		{"Ирина", true},
		{"Σοφία", true},
		{"山田はなこ", true},        // Han with Hiragana: Japanese
		{"김민준", true},          // Hangul
		{"Kim 金민준", true},      // Latin, Han and Hangul: Korean
		{"ㄓㄤ 张", true},         // Bopomofo with Han
		{"Zoë", true},          // Latin with a diacritic
		{"q\u0308lice", true},  // a combining mark goes with its letter
		{"a\u0308lice", false}, // decomposed: reads as the precomposed "\u00e4lice"
		{"\u00e4lice", true},
		{"аlice", false},           // Cyrillic а with Latin
		{"pаypal", false},          // the same inside
		{"Σalice", false},          // Greek with Latin
		{"Ирина山", false},          // Cyrillic with Han
		{"김山田はな", false},           // Hangul with kana
		{"ali\u200bce", false},     // zero-width space
		{"ali\u200dce", false},     // zero-width joiner
		{"ali\ufeffce", false},     // byte order mark
		{"ali\u00adce", false},     // soft hyphen
		{"ali\u2066ce", false},     // bidi isolate
		{"ali\u3164ce", false},     // Hangul filler
		{"ali\ufe0fce", false},     // variation selector
		{"ali\u00a0ce", false},     // no-break space
		{"ali\u3000ce", false},     // ideographic space
		{"ali\u2028ce", false},     // line separator
		{"ali\ue000ce", false},     // private use
		{"ali\U000e0001ce", false}, // language tag
		{"unknown", false},
		{"Unknown", false},
		{"SYSTEM", false},
		{"anonymous", false},
		{"channel", false},
		{"worker", false},
		{"mine", false},
		{"Nobody", false},
		{"worker:w1", false},
		{"system:timeout", false},
		{"anonymous:10.0.0.1", false},
		{"unknown-alice", true},
	} {
		err := auth.ValidUserName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, models.ErrInvalid)) {
			t.Errorf("ValidUserName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pw string
		ok bool
	}{
		{"123456789", false},
		{"1234567890", true},
		{"密码密码密码密码密码", true}, // ten characters, thirty bytes
		{strings.Repeat("x", 256), true},
		{strings.Repeat("x", 257), false},
	} {
		err := auth.ValidPassword(tc.pw)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, models.ErrInvalid)) {
			t.Errorf("ValidPassword(%d bytes) = %v, want ok=%v", len(tc.pw), err, tc.ok)
		}
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for _, r := range auth.Roles {
		if got, err := auth.ParseRole(string(r)); got != r || err != nil {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Admin", "root", " admin"} {
		if _, err := auth.ParseRole(s); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("ParseRole(%q) = %v, want ErrInvalid", s, err)
		}
	}
	v, o, a := auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin
	for _, tc := range []struct {
		r, need auth.Role
		want    bool
	}{
		{v, v, true}, {v, o, false}, {v, a, false},
		{o, v, true}, {o, o, true}, {o, a, false},
		{a, v, true}, {a, o, true}, {a, a, true},
		{"", v, false}, {"root", v, false}, {a, "", false}, {a, "root", false},
	} {
		if got := tc.r.Allows(tc.need); got != tc.want {
			t.Errorf("%q.Allows(%q) = %v, want %v", tc.r, tc.need, got, tc.want)
		}
	}
}

// Every account change writes exactly one audit row, in its transaction.
func TestUserLifecycle(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ctx := models.WithRequestMeta(b.ctx, models.RequestMeta{Role: "admin", RequestID: "req-1", IP: "192.0.2.9", UserAgent: "ua"})
		var u *auth.User
		e := b.oneAudit(t, "user_create", "ok", func() (err error) {
			u, err = b.a.CreateUser(ctx, "alice", auth.RoleViewer, goodPW, "root")
			return err
		})
		if e.Actor != "root" || e.Target != "user:alice" || e.Role != "admin" || e.RequestID != "req-1" || e.IP != "192.0.2.9" {
			t.Fatalf("create audit = %+v", e)
		}
		if u.ID == 0 || u.Role != auth.RoleViewer || u.Disabled || !strings.HasPrefix(u.PasswordHash, "$argon2id$") ||
			!u.CreatedAt.Equal(b.clock.Now()) || !u.PasswordChangedAt.Equal(b.clock.Now()) || u.LastLoginAt != nil {
			t.Fatalf("created %+v", u)
		}
		before := b.audits(t, "1 = 1")
		if _, err := b.a.CreateUser(ctx, "alice", auth.RoleAdmin, goodPW, "root"); !errors.Is(err, auth.ErrUserExists) {
			t.Fatalf("duplicate create = %v, want ErrUserExists", err)
		}
		var me *models.Error
		if _, err := b.a.CreateUser(ctx, "alice", auth.RoleAdmin, goodPW, "root"); !errors.As(err, &me) || me.Code != "USER_EXISTS" {
			t.Fatalf("duplicate create = %v, want code USER_EXISTS", err)
		}
		for _, bad := range []struct{ name, role, pw string }{
			{"", "viewer", goodPW}, {"bob", "root", goodPW}, {"bob", "viewer", "short"},
		} {
			if _, err := b.a.CreateUser(ctx, bad.name, auth.Role(bad.role), bad.pw, "root"); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("create %+v = %v, want ErrInvalid", bad, err)
			}
		}
		if n := b.audits(t, "1 = 1"); n != before {
			t.Fatalf("refused creates wrote %d audit rows", n-before)
		}

		e = b.oneAudit(t, "user_role", "ok", func() error { return b.a.SetUserRole(ctx, u.ID, auth.RoleAdmin, "root") })
		if e.Detail != "viewer→admin" || e.Target != "user:alice" {
			t.Fatalf("role audit = %+v", e)
		}
		b.addUser(t, "carol", auth.RoleAdmin) // alice is not the last admin
		b.oneAudit(t, "user_disable", "ok", func() error { _, err := b.a.SetUserDisabled(ctx, u.ID, true, "root"); return err })
		b.oneAudit(t, "user_enable", "ok", func() error { _, err := b.a.SetUserDisabled(ctx, u.ID, false, "root"); return err })
		b.oneAudit(t, "user_reset_password", "ok", func() error { return b.a.ResetPassword(ctx, u.ID, "a new password", "root") })
		got, err := b.a.UserByID(b.ctx, u.ID)
		if err != nil || got.Role != auth.RoleAdmin || got.Disabled || got.PasswordHash == u.PasswordHash {
			t.Fatalf("user after changes = %+v, %v", got, err)
		}
		if byName, err := b.a.UserByName(b.ctx, "alice"); err != nil || byName.ID != u.ID {
			t.Fatalf("by name = %+v, %v", byName, err)
		}
		if _, err := b.a.UserByID(b.ctx, 999); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("missing user = %v", err)
		}
		if _, err := b.a.UserByName(b.ctx, "Alice"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("names are exact: Alice = %v", err)
		}
		if err := b.a.SetUserRole(ctx, 999, auth.RoleViewer, "root"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("role of a missing user = %v", err)
		}
		users, err := b.a.Users(b.ctx)
		if err != nil || len(users) != 2 || users[0].Name != "alice" || users[1].Name != "carol" {
			t.Fatalf("users = %+v, %v", users, err)
		}
		// No change, no row.
		before = b.audits(t, "1 = 1")
		must(t, func() error { return b.a.SetUserRole(ctx, u.ID, auth.RoleAdmin, "root") })
		must(t, func() error { _, err := b.a.SetUserDisabled(ctx, u.ID, false, "root"); return err })
		if n := b.audits(t, "1 = 1"); n != before {
			t.Fatalf("changes to the same value wrote %d audit rows", n-before)
		}
	})
}

// The last enabled admin can be neither disabled nor demoted, also by
// themselves; with another admin, either is allowed.
func TestLastAdmin(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		a := b.addUser(t, "ann", auth.RoleAdmin)
		v := b.addUser(t, "vic", auth.RoleViewer)
		before := b.audits(t, "1 = 1")
		var me *models.Error
		if err := b.a.SetUserRole(b.ctx, a.ID, auth.RoleOperator, "ann"); !errors.As(err, &me) || me.Code != "LAST_ADMIN" {
			t.Fatalf("demote the last admin = %v", err)
		}
		if _, err := b.a.SetUserDisabled(b.ctx, a.ID, true, "ann"); !errors.Is(err, auth.ErrLastAdmin) {
			t.Fatalf("disable the last admin = %v", err)
		}
		if n := b.audits(t, "1 = 1"); n != before {
			t.Fatalf("refusals wrote %d audit rows", n-before)
		}
		// A disabled admin does not count.
		must(t, func() error { return b.a.SetUserRole(b.ctx, v.ID, auth.RoleAdmin, "ann") })
		must(t, func() error { _, err := b.a.SetUserDisabled(b.ctx, v.ID, true, "ann"); return err })
		if _, err := b.a.SetUserDisabled(b.ctx, a.ID, true, "ann"); !errors.Is(err, auth.ErrLastAdmin) {
			t.Fatalf("disable the last enabled admin = %v", err)
		}
		// Demoting a disabled admin is fine; so is ann leaving once vic is back.
		must(t, func() error { return b.a.SetUserRole(b.ctx, v.ID, auth.RoleOperator, "ann") })
		must(t, func() error { return b.a.SetUserRole(b.ctx, v.ID, auth.RoleAdmin, "ann") })
		must(t, func() error { _, err := b.a.SetUserDisabled(b.ctx, v.ID, false, "ann"); return err })
		must(t, func() error { return b.a.SetUserRole(b.ctx, a.ID, auth.RoleViewer, "ann") })
		if _, err := b.a.SetUserDisabled(b.ctx, v.ID, true, "vic"); !errors.Is(err, auth.ErrLastAdmin) {
			t.Fatalf("vic disabling himself as the last admin = %v", err)
		}

		// Two admins disabling each other at once: one wins.
		must(t, func() error { return b.a.SetUserRole(b.ctx, a.ID, auth.RoleAdmin, "vic") })
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, id := range []int64{a.ID, v.ID} {
			wg.Go(func() { _, errs[i] = b.a.SetUserDisabled(b.ctx, id, true, "race") })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], auth.ErrLastAdmin) || errors.Is(errs[1], auth.ErrLastAdmin)) {
			t.Fatalf("concurrent disables = %v; want exactly one ErrLastAdmin", errs)
		}
		var enabled int64
		must(t, func() error {
			return b.s.R.Model(&auth.User{}).Where("role = ? AND disabled = ?", auth.RoleAdmin, false).Count(&enabled).Error
		})
		if enabled != 1 {
			t.Fatalf("%d enabled admins after the race, want 1", enabled)
		}
	})
}

// Disabling a user revokes, in the same transaction, the live API tokens
// they created, each audited; tokens others created live on, and enabling
// the user again does not bring them back.
func TestDisableRevokesTokens(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "lea", auth.RoleAdmin)
		b.addUser(t, "ann", auth.RoleAdmin)
		_, leas, err := b.a.CreateAPIToken(b.ctx, "lea-erp", auth.RoleAdmin, "lea")
		must(t, func() error { return err })
		_, old, err := b.a.CreateAPIToken(b.ctx, "lea-old", auth.RoleViewer, "lea")
		must(t, func() error { return err })
		_, anns, err := b.a.CreateAPIToken(b.ctx, "ann-crm", auth.RoleOperator, "ann")
		must(t, func() error { return err })
		oldTok, err := b.a.AuthenticateToken(b.ctx, old)
		must(t, func() error { return err })
		must(t, func() error { return b.a.RevokeAPIToken(b.ctx, oldTok.ID, "lea") })
		if n, err := b.a.LiveTokensByCreator(b.ctx); err != nil || n["lea"] != 1 || n["ann"] != 1 {
			t.Fatalf("live tokens by creator = %v, %v", n, err)
		}
		before := b.audits(t, "action = 'token_revoke'")
		n, err := b.a.SetUserDisabled(b.ctx, u.ID, true, "ann")
		if err != nil || n != 1 {
			t.Fatalf("disable = %d revoked, %v; want 1", n, err)
		}
		if _, err := b.a.AuthenticateToken(b.ctx, leas); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("the disabled user's token = %v, want NO_SESSION", err)
		}
		if _, err := b.a.AuthenticateToken(b.ctx, anns); err != nil {
			t.Fatalf("another user's token = %v", err)
		}
		if got := b.audits(t, "action = 'token_revoke' AND target = 'token:lea-erp' AND actor = 'ann'"); got != 1 ||
			b.audits(t, "action = 'token_revoke'") != before+1 {
			t.Fatalf("%d token_revoke rows for lea-erp, want 1 and no other", got)
		}
		if e := b.lastAudit(t); e.Action != "user_disable" || e.Detail != "0 session(s) ended; 1 API token(s) revoked" {
			t.Fatalf("disable audit = %+v", e)
		}
		if n, err := b.a.SetUserDisabled(b.ctx, u.ID, false, "ann"); err != nil || n != 0 {
			t.Fatalf("enable = %d, %v", n, err)
		}
		if _, err := b.a.AuthenticateToken(b.ctx, leas); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("the token after the user was enabled again = %v", err)
		}
	})
}

// Disabling a user and resetting their password end all their sessions.
func TestDisableAndResetEndSessions(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "otto", auth.RoleOperator)
		t1, t2 := b.login(t, "otto", goodPW), b.login(t, "otto", goodPW)
		if n, err := b.a.UserSessions(b.ctx, u.ID); n != 2 || err != nil {
			t.Fatalf("sessions = %d, %v", n, err)
		}
		e := b.oneAudit(t, "user_disable", "ok", func() error { _, err := b.a.SetUserDisabled(b.ctx, u.ID, true, "root"); return err })
		if e.Detail != "2 session(s) ended" {
			t.Fatalf("disable audit = %+v", e)
		}
		for _, tok := range []string{t1, t2} {
			if _, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
				t.Fatalf("session of a disabled user = %v", err)
			}
		}
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "otto", Password: goodPW}); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("login of a disabled user = %v", err)
		}
		must(t, func() error { _, err := b.a.SetUserDisabled(b.ctx, u.ID, false, "root"); return err })
		t3 := b.login(t, "otto", goodPW)
		must(t, func() error { return b.a.ResetPassword(b.ctx, u.ID, "reset by root", "root") })
		if _, _, _, err := b.a.SessionUser(b.ctx, t3, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session after a reset = %v", err)
		}
		if n, err := b.a.UserSessions(b.ctx, u.ID); n != 0 || err != nil {
			t.Fatalf("sessions = %d, %v", n, err)
		}
	})
}

// Changing one's password needs the current one and ends every other
// session.
func TestChangePassword(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "pia", auth.RoleViewer)
		keep, other := b.login(t, "pia", goodPW), b.login(t, "pia", goodPW)
		e := b.oneAudit(t, "password_change", "refused", func() error {
			if err := b.a.ChangePassword(b.ctx, u.ID, "not the password", "new password 1", keep); !errors.Is(err, auth.ErrBadCredentials) {
				return fmt.Errorf("wrong old password = %v", err)
			}
			return nil
		})
		if e.Actor != "pia" || e.Target != "user:pia" {
			t.Fatalf("refused audit = %+v", e)
		}
		if err := b.a.ChangePassword(b.ctx, u.ID, goodPW, "short", keep); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("short new password = %v", err)
		}
		b.clock.Advance(time.Minute)
		e = b.oneAudit(t, "password_change", "ok", func() error {
			return b.a.ChangePassword(b.ctx, u.ID, goodPW, "new password 1", keep)
		})
		if e.Actor != "pia" || e.Detail != "1 other session(s) ended" {
			t.Fatalf("change audit = %+v", e)
		}
		if _, _, _, err := b.a.SessionUser(b.ctx, keep, auth.SessionPolicy{}); err != nil {
			t.Fatalf("the kept session = %v", err)
		}
		if _, _, _, err := b.a.SessionUser(b.ctx, other, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("the other session = %v", err)
		}
		got, _ := b.a.UserByID(b.ctx, u.ID)
		if !got.PasswordChangedAt.Equal(b.clock.Now()) {
			t.Fatalf("password_changed_at = %v", got.PasswordChangedAt)
		}
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "pia", Password: goodPW}); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("login with the old password = %v", err)
		}
		b.login(t, "pia", "new password 1")
	})
}

// An admin's reset lifts every login lock on the user's name: the lock at
// the address they locked themselves out from, and the name-wide one; the
// user signs in with the new password at once, from there too. A lock of
// another name that ends in "|rosa" stays.
func TestResetLiftsLoginLock(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, auth.Options{Throttle: auth.ThrottlePolicy{NameFailures: 7}}, func(t *testing.T, b bundle) {
		u := b.addUser(t, "rosa", auth.RoleViewer)
		const home, other = "203.0.113.9", "203.0.113.10"
		for i := range 7 {
			ip := home
			if i >= 5 {
				ip = other
			}
			b.wantBad(t, "rosa", "not it at all", ip)
		}
		for range 5 {
			b.wantBad(t, "ip:"+home+"|rosa", "x", home)
		}
		b.wantThrottled(t, "rosa", goodPW, home, 15*time.Minute)
		if wait, err := b.attempt("rosa", goodPW, "198.51.100.7"); !errors.Is(err, auth.ErrLoginThrottled) || wait <= 0 {
			t.Fatalf("name-wide lock = %v", err)
		}
		if err := b.a.ResetPassword(b.ctx, u.ID, "a brand new password", "admin"); err != nil {
			t.Fatal(err)
		}
		b.wantOK(t, "rosa", "a brand new password", home)
		if _, err := b.attempt("ip:"+home+"|rosa", "x", home); !errors.Is(err, auth.ErrLoginThrottled) {
			t.Fatalf("the lock of another name was lifted too: %v", err)
		}
	})
}

// Guessing the current password through the change form counts against
// the login throttle: the 6th try within the window is refused unchecked,
// even with the right password, and writes one throttled row.
func TestChangePasswordThrottled(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "quinn", auth.RoleViewer)
		keep := b.login(t, "quinn", goodPW)
		for i := range 5 {
			if err := b.a.ChangePassword(b.ctx, u.ID, fmt.Sprintf("guess number %d", i), "new password 1", keep); !errors.Is(err, auth.ErrBadCredentials) {
				t.Fatalf("guess %d = %v", i, err)
			}
		}
		b.oneAudit(t, "password_change", "throttled", func() error {
			err := b.a.ChangePassword(b.ctx, u.ID, goodPW, "new password 1", keep)
			var te *auth.ThrottledError
			if !errors.As(err, &te) || te.RetryAfter <= 0 {
				return fmt.Errorf("6th try = %v, want throttled", err)
			}
			return nil
		})
		b.clock.Advance(2 * time.Minute)
		if err := b.a.ChangePassword(b.ctx, u.ID, goodPW, "new password 1", keep); err != nil {
			t.Fatalf("after the lock: %v", err)
		}
		b.login(t, "quinn", "new password 1")
	})
}

func TestLoginAndSession(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "lea", auth.RoleOperator)
		var tok string
		e := b.oneAudit(t, "login", "ok", func() (err error) {
			tok, _, err = b.a.Login(b.ctx, auth.LoginRequest{Name: "lea", Password: goodPW, IP: "192.0.2.7", UserAgent: "Firefox"})
			return err
		})
		if e.Actor != "lea" || e.Target != "user:lea" || e.IP != "192.0.2.7" || e.UserAgent != "Firefox" || e.Role != "operator" {
			t.Fatalf("login audit = %+v", e)
		}
		if raw, err := base64.RawURLEncoding.DecodeString(tok); err != nil || len(raw) != 32 {
			t.Fatalf("token %q is not 32 bytes of base64url: %v", tok, err)
		}
		var n int64
		must(t, func() error { return b.s.R.Model(&auth.Session{}).Where("token_hash = ?", tok).Count(&n).Error })
		if n != 0 {
			t.Fatal("the raw token is stored")
		}
		got, sess, renewed, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{})
		if err != nil || got.ID != u.ID || renewed != "" || sess.Role != auth.RoleOperator || sess.IP != "192.0.2.7" ||
			sess.UserAgent != "Firefox" || !sess.ExpiresAt.Equal(b.clock.Now().Add(12*time.Hour)) || got.LastLoginAt == nil {
			t.Fatalf("session = %+v %+v %q %v", got, sess, renewed, err)
		}
		for _, bad := range []string{"", "nope", tok + "x", strings.Repeat("a", 10000)} {
			if _, _, _, err := b.a.SessionUser(b.ctx, bad, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
				t.Fatalf("session of %.20q = %v", bad, err)
			}
		}
		// Failures all look alike.
		for _, r := range []auth.LoginRequest{
			{Name: "lea", Password: "wrong password"},
			{Name: "nobody", Password: goodPW},
			{Name: "lea", Password: strings.Repeat("x", 300)},
			{Name: "\xff\xfe", Password: goodPW},
		} {
			e := b.oneAudit(t, "login", "failed", func() error {
				_, _, err := b.a.Login(b.ctx, r)
				var me *models.Error
				if !errors.As(err, &me) || me.Code != "BAD_CREDENTIALS" {
					return fmt.Errorf("login %+v = %v, want BAD_CREDENTIALS", r.Name, err)
				}
				return nil
			})
			// A name that is no user's is masked: it may be a password
			// typed into the wrong field.
			want := "lea"
			if r.Name != "lea" {
				want = "unknown"
			}
			if e.Actor != want || e.Target != "user:"+want {
				t.Fatalf("failed login audit actor = %q target %q, want %s…", e.Actor, e.Target, want)
			}
		}

		e = b.oneAudit(t, "logout", "ok", func() error { return b.a.Logout(b.ctx, tok, "lea") })
		if e.Target != "user:lea" || e.Actor != "lea" {
			t.Fatalf("logout audit = %+v", e)
		}
		if _, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session after logout = %v", err)
		}
		before := b.audits(t, "1 = 1")
		if err := b.a.Logout(b.ctx, tok, "lea"); err != nil {
			t.Fatalf("second logout = %v", err)
		}
		if err := b.a.Logout(b.ctx, "", "lea"); err != nil {
			t.Fatalf("logout without a token = %v", err)
		}
		if n := b.audits(t, "1 = 1"); n != before {
			t.Fatal("a logout of no session was audited")
		}
	})
}

// A session ends after Idle without a request, and Absolute after the
// login whatever the requests; an ended session's row is deleted.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "ida", auth.RoleViewer)
		p := auth.SessionPolicy{Idle: 30 * time.Minute, Absolute: 2 * time.Hour}
		alive := func(tok string) error { _, _, _, err := b.a.SessionUser(b.ctx, tok, p); return err }

		idle := b.login(t, "ida", goodPW)
		for range 2 { // requests keep it alive past Idle after the login
			b.clock.Advance(29 * time.Minute)
			if err := alive(idle); err != nil {
				t.Fatalf("idle session with requests every 29m: %v", err)
			}
		}
		b.clock.Advance(30 * time.Minute)
		if err := alive(idle); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session after 30m without a request = %v", err)
		}

		abs, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "ida", Password: goodPW, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		end := b.clock.Now().Add(2 * time.Hour)
		for b.clock.Now().Add(20 * time.Minute).Before(end) {
			b.clock.Advance(20 * time.Minute)
			if err := alive(abs); err != nil {
				t.Fatalf("session at %s before its end = %v", end.Sub(b.clock.Now()), err)
			}
		}
		b.clock.Advance(end.Sub(b.clock.Now()) - time.Microsecond)
		if err := alive(abs); err != nil {
			t.Fatalf("session 1µs before its end = %v", err)
		}
		b.clock.Advance(time.Microsecond)
		if err := alive(abs); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session at its absolute end = %v", err)
		}
		var n int64
		must(t, func() error { return b.s.R.Model(&auth.Session{}).Count(&n).Error })
		if n != 0 {
			t.Fatalf("%d ended sessions left", n)
		}
	})
}

// last_seen_at is written at most once a minute, and the idle limit counts
// from it exactly.
func TestSessionTouch(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "tom", auth.RoleViewer)
		tok := b.login(t, "tom", goodPW)
		seen := func() time.Time {
			var s auth.Session
			must(t, func() error { return b.s.R.Take(&s).Error })
			return s.LastSeenAt
		}
		start := b.clock.Now()
		b.clock.Advance(30 * time.Second)
		_, sess, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{})
		if err != nil || !seen().Equal(start) || !sess.LastSeenAt.Equal(start) {
			t.Fatalf("touched after 30s: %v, %v", seen(), err)
		}
		b.clock.Advance(30 * time.Second)
		must(t, func() error { _, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); return err })
		if !seen().Equal(start) {
			t.Fatalf("touched at exactly one minute: %v", seen())
		}
		b.clock.Advance(time.Second)
		_, sess, _, err = b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{})
		if err != nil || !seen().Equal(b.clock.Now()) || !sess.LastSeenAt.Equal(b.clock.Now()) {
			t.Fatalf("not touched after 61s: %v, %v", seen(), err)
		}
		// The idle limit counts from the last touch, not from the login.
		touched := seen()
		b.clock.Advance(30*time.Minute - time.Microsecond)
		must(t, func() error { _, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); return err })
		if !seen().After(touched) {
			t.Fatal("last_seen_at did not move")
		}
		b.clock.Advance(30 * time.Minute)
		if _, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session 30m after its last touch = %v", err)
		}
	})
}

// A short idle limit is refreshed often enough: with a one-minute limit,
// a session used every 20 s stays signed in, and one left alone for the
// minute ends.
func TestSessionShortIdle(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "tia", auth.RoleViewer)
		p := auth.SessionPolicy{Idle: time.Minute, Absolute: time.Hour}
		tok := b.login(t, "tia", goodPW)
		for i := range 12 {
			b.clock.Advance(20 * time.Second)
			if _, _, _, err := b.a.SessionUser(b.ctx, tok, p); err != nil {
				t.Fatalf("request %d, %s after the login: %v", i+1, time.Duration(i+1)*20*time.Second, err)
			}
		}
		b.clock.Advance(time.Minute)
		if _, _, _, err := b.a.SessionUser(b.ctx, tok, p); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("session a minute after its last request = %v", err)
		}
	})
}

// A role change renews the session: a new token with the new role and the
// same end; the old token stops working.
func TestSessionRenewOnRoleChange(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "rita", auth.RoleViewer)
		old := b.login(t, "rita", goodPW)
		_, first, _, err := b.a.SessionUser(b.ctx, old, auth.SessionPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(5 * time.Minute)
		must(t, func() error { return b.a.SetUserRole(b.ctx, u.ID, auth.RoleOperator, "root") })
		before := b.audits(t, "1 = 1")
		got, sess, renewed, err := b.a.SessionUser(b.ctx, old, auth.SessionPolicy{})
		if err != nil || renewed == "" || renewed == old || got.Role != auth.RoleOperator || sess.Role != auth.RoleOperator ||
			!sess.ExpiresAt.Equal(first.ExpiresAt) {
			t.Fatalf("after the role change: %+v %+v %q %v", got, sess, renewed, err)
		}
		// A request racing the renewal with the old token goes through with
		// the new role, is not renewed again, and leaves the cookie alone;
		// a minute later the old token is gone.
		_, racing, again, err := b.a.SessionUser(b.ctx, old, auth.SessionPolicy{})
		if err != nil || again != "" || racing.Role != auth.RoleOperator {
			t.Fatalf("the old token within the grace = %+v %q %v", racing, again, err)
		}
		_, sess, again, err = b.a.SessionUser(b.ctx, renewed, auth.SessionPolicy{})
		if err != nil || again != "" || sess.Role != auth.RoleOperator {
			t.Fatalf("the renewed token = %+v %q %v", sess, again, err)
		}
		b.clock.Advance(time.Minute)
		if _, _, _, err := b.a.SessionUser(b.ctx, old, auth.SessionPolicy{}); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("the old token after the grace = %v", err)
		}
		if _, _, _, err := b.a.SessionUser(b.ctx, renewed, auth.SessionPolicy{}); err != nil {
			t.Fatalf("the renewed token after the grace = %v", err)
		}
		if n, _ := b.a.UserSessions(b.ctx, u.ID); n != 1 {
			t.Fatalf("%d sessions after a renewal", n)
		}
		if n := b.audits(t, "1 = 1"); n != before {
			t.Fatal("a renewal was audited")
		}
	})
}

// Requests racing with the old token after a role change all go through;
// exactly one renews the session.
func TestSessionRenewRace(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "ruth", auth.RoleViewer)
		old := b.login(t, "ruth", goodPW)
		must(t, func() error { return b.a.SetUserRole(b.ctx, u.ID, auth.RoleAdmin, "root") })
		renewed := make([]string, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range renewed {
			wg.Go(func() { _, _, renewed[i], errs[i] = b.a.SessionUser(b.ctx, old, auth.SessionPolicy{}) })
		}
		wg.Wait()
		n := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("request %d with the old token = %v", i, err)
			}
			if renewed[i] != "" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d requests renewed the session, want 1", n)
		}
	})
}

func TestPruneSessions(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := b.addUser(t, "pat", auth.RoleViewer)
		short := auth.SessionPolicy{Absolute: time.Hour}
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "pat", Password: goodPW, Policy: short}); err != nil {
			t.Fatal(err)
		}
		b.login(t, "pat", goodPW)
		// A failure leaves throttle rows for the address and the name.
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "ghost", Password: "x", IP: "198.51.100.1"}); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatal(err)
		}
		n, err := b.a.PruneSessions(b.ctx, b.clock.Now().Add(10*time.Minute))
		if err != nil || n != 0 {
			t.Fatalf("prune within the throttle window = %d, %v", n, err)
		}
		// The short session, and the throttle rows ip:192.0.2.1, user:pat,
		// ip:198.51.100.1, user:ghost and ghost's pair with 198.51.100.1 (a
		// success deletes its pair row).
		n, err = b.a.PruneSessions(b.ctx, b.clock.Now().Add(time.Hour))
		if err != nil || n != 6 {
			var rows []map[string]any
			_ = b.s.R.Raw("SELECT * FROM login_throttle").Scan(&rows).Error
			t.Fatalf("prune at 1h = %d, %v; throttle %v", n, err, rows)
		}
		if c, _ := b.a.UserSessions(b.ctx, u.ID); c != 1 {
			t.Fatalf("%d sessions left, want 1", c)
		}
	})
}

// A name with quotes, SQL and markup is a name like any other.
func TestUserNameStoredVerbatim(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		name := `x'); DROP TABLE users;--<script>alert("é")</script>`
		u := b.addUser(t, name, auth.RoleViewer)
		got, err := b.a.UserByName(b.ctx, name)
		if err != nil || got.ID != u.ID || got.Name != name {
			t.Fatalf("by name = %+v, %v", got, err)
		}
		users, err := b.a.Users(b.ctx)
		if err != nil || len(users) != 1 || users[0].Name != name {
			t.Fatalf("users = %+v, %v", users, err)
		}
		tok := b.login(t, name, goodPW)
		if got, _, _, err := b.a.SessionUser(b.ctx, tok, auth.SessionPolicy{}); err != nil || got.Name != name {
			t.Fatalf("session user = %+v, %v", got, err)
		}
		rows, _, err := b.s.AuditLog(b.ctx, models.AuditFilter{Target: "user:" + name})
		if err != nil || len(rows) != 2 || rows[0].Actor != name {
			t.Fatalf("audit of the name = %+v, %v", rows, err)
		}
	})
}

func TestAPITokens(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		var tok *auth.APIToken
		var secret string
		e := b.oneAudit(t, "token_create", "ok", func() (err error) {
			tok, secret, err = b.a.CreateAPIToken(b.ctx, "ci deploy", auth.RoleOperator, "ann")
			return err
		})
		if e.Target != "token:ci deploy" || e.Actor != "ann" || strings.Contains(e.Detail, secret) {
			t.Fatalf("create audit = %+v", e)
		}
		if !strings.HasPrefix(secret, "uh_") || len(secret) != 46 || tok.Prefix != secret[3:11] || tok.CreatedBy != "ann" {
			t.Fatalf("token %+v, secret %q", tok, secret)
		}
		// The row holds the hash, not the secret.
		var raw []map[string]any
		must(t, func() error { return b.s.R.Raw("SELECT * FROM api_tokens").Scan(&raw).Error })
		for col, v := range raw[0] {
			if s, ok := v.(string); ok && strings.Contains(s, secret[3:]) {
				t.Fatalf("column %s holds the secret", col)
			}
		}
		if _, _, err := b.a.CreateAPIToken(b.ctx, "ci deploy", auth.RoleViewer, "ann"); !errors.Is(err, auth.ErrTokenExists) {
			t.Fatalf("duplicate name = %v", err)
		}
		if _, _, err := b.a.CreateAPIToken(b.ctx, " padded", auth.RoleViewer, "ann"); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("bad name = %v", err)
		}

		got, err := b.a.AuthenticateToken(b.ctx, secret)
		if err != nil || got.ID != tok.ID || got.Role != auth.RoleOperator || got.LastUsedAt == nil || !got.LastUsedAt.Equal(b.clock.Now()) {
			t.Fatalf("authenticate = %+v, %v", got, err)
		}
		lastUsed := func() time.Time {
			var x auth.APIToken
			must(t, func() error { return b.s.R.Where("id = ?", tok.ID).Take(&x).Error })
			return *x.LastUsedAt
		}
		used := b.clock.Now()
		b.clock.Advance(time.Minute)
		must(t, func() error { _, err := b.a.AuthenticateToken(b.ctx, secret); return err })
		if !lastUsed().Equal(used) {
			t.Fatal("last_used_at written twice in a minute")
		}
		b.clock.Advance(time.Second)
		must(t, func() error { _, err := b.a.AuthenticateToken(b.ctx, secret); return err })
		if !lastUsed().Equal(b.clock.Now()) {
			t.Fatal("last_used_at not written after a minute")
		}
		for _, bad := range []string{"", "uh_", secret[:45], secret + "A", "xx" + secret[2:], "uh_" + strings.Repeat("A", 43)} {
			if _, err := b.a.AuthenticateToken(b.ctx, bad); !errors.Is(err, auth.ErrNoSession) {
				t.Fatalf("authenticate %q = %v", bad, err)
			}
		}

		e = b.oneAudit(t, "token_revoke", "ok", func() error { return b.a.RevokeAPIToken(b.ctx, tok.ID, "ann") })
		if e.Target != "token:ci deploy" {
			t.Fatalf("revoke audit = %+v", e)
		}
		if _, err := b.a.AuthenticateToken(b.ctx, secret); !errors.Is(err, auth.ErrNoSession) {
			t.Fatalf("revoked token = %v", err)
		}
		if err := b.a.RevokeAPIToken(b.ctx, tok.ID, "ann"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("revoke twice = %v", err)
		}
		// The name is free again; live tokens list first.
		again, secret2, err := b.a.CreateAPIToken(b.ctx, "ci deploy", auth.RoleViewer, "ann")
		if err != nil || secret2 == secret {
			t.Fatalf("reuse the name = %v", err)
		}
		_, _, err = b.a.CreateAPIToken(b.ctx, "backup", auth.RoleAdmin, "ann")
		if err != nil {
			t.Fatal(err)
		}
		list, err := b.a.APITokens(b.ctx)
		if err != nil || len(list) != 3 || list[0].Name != "backup" || list[1].ID != again.ID || list[2].ID != tok.ID || list[2].RevokedAt == nil {
			t.Fatalf("tokens = %+v, %v", list, err)
		}
	})
}

// The migration goes down and up again cleanly, and the audit log stays
// append-only through it.
func TestAuthMigrationDownUp(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "mia", auth.RoleAdmin)
		db, err := b.s.W.DB()
		if err != nil {
			t.Fatal(err)
		}
		d := goose.DialectSQLite3
		if b.s.Dialect == models.Postgres {
			d = goose.DialectPostgres
		}
		p, err := goose.NewProvider(d, db, os.DirFS("../models/migrations/"+string(b.s.Dialect)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(b.ctx, 8); err != nil {
			t.Fatalf("down: %v", err)
		}
		if err := b.s.W.Exec("SELECT role FROM audit_log").Error; err == nil {
			t.Fatal("audit_log.role survived the down migration")
		}
		if _, err := p.Up(b.ctx); err != nil {
			t.Fatalf("up again: %v", err)
		}
		b.addUser(t, "mia", auth.RoleAdmin)
		if err := b.s.W.Exec("UPDATE audit_log SET role = 'x'").Error; err == nil {
			t.Fatal("audit_log is no longer append-only")
		}
	})
}

// A site secret is made once, by whichever caller comes first, and every
// caller (every instance on the database) reads the same one.
func TestSiteSecretShared(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		keys := make([][]byte, 8)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i], errs[i] = b.a.SiteSecret(b.ctx, "csrf") })
		}
		wg.Wait()
		for i := range keys {
			if errs[i] != nil || len(keys[i]) != 32 || !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("call %d = %x, %v; want the 32 bytes of call 0, %x", i, keys[i], errs[i], keys[0])
			}
		}
		other, err := b.a.SiteSecret(b.ctx, "other")
		if err != nil || bytes.Equal(other, keys[0]) {
			t.Fatalf("another secret = %x, %v", other, err)
		}
	})
}

// An account change's audit row takes the request's metadata from the
// context, as every audit row does (see models' TestAuditRequestMeta).
func TestAccountAuditTakesRequestMeta(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.ctx = models.WithRequestMeta(b.ctx, models.RequestMeta{Role: "operator", RequestID: "req-7", IP: "192.0.2.44", UserAgent: "ua"})
		b.addUser(t, "bob", auth.RoleViewer)
		if e := b.lastAudit(t); e.Action != "user_create" || e.RequestID != "req-7" {
			t.Fatalf("user audit = %+v", e)
		}
	})
}
