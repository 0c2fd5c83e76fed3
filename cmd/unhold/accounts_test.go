package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// The first admin comes from the command line, with the password on
// standard input; an API token is printed alone on stdout for scripts.
func TestUserAndTokenCommands(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "accounts.db")
	env := func(string) string { return "" }
	ctx := context.Background()
	cmd := func(stdin string, args ...string) (string, string, error) {
		var out, errOut strings.Builder
		err := run(ctx, append(args, "-db", db), env, strings.NewReader(stdin), &out, &errOut)
		return out.String(), errOut.String(), err
	}

	out, _, err := cmd("first admin password\n", "user", "add", "--role", "admin", "王 管理员")
	if err != nil || !strings.Contains(out, `user "王 管理员" (admin) created`) {
		t.Fatalf("user add = %q, %v", out, err)
	}
	out, stderr, err := cmd("", "token", "add", "--role=operator", "erp")
	if err != nil {
		t.Fatalf("token add: %v", err)
	}
	if !regexp.MustCompile(`^uh_[A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Fatalf("token add printed %q on stdout, want the token alone", out)
	}
	if !strings.Contains(stderr, "shown only this once") {
		t.Errorf("token add said %q on stderr", stderr)
	}
	out2, _, err := cmd("new password, long enough\n", "user", "reset", "王 管理员")
	if err != nil || !strings.Contains(out2, "reset") {
		t.Fatalf("user reset = %q, %v", out2, err)
	}

	s, err := models.Open(ctx, db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := auth.New(s, auth.Options{})
	tok, err := a.AuthenticateToken(ctx, strings.TrimSpace(out))
	if err != nil || tok.Name != "erp" || tok.Role != auth.RoleOperator {
		t.Fatalf("the printed token = %+v, %v", tok, err)
	}
	if _, _, err := a.Login(ctx, auth.LoginRequest{Name: "王 管理员", Password: "new password, long enough"}); err != nil {
		t.Fatalf("login with the reset password: %v", err)
	}
	var audit int64
	s.R.Model(&models.AuditEntry{}).Where("actor LIKE 'cli:%' AND action IN ('user_create', 'token_create', 'user_reset_password')").Count(&audit)
	if audit != 3 {
		t.Errorf("CLI actions audited = %d, want 3", audit)
	}

	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"no role", "pw pw pw pw pw\n", []string{"user", "add", "bob"}, "needs --role"},
		{"bad role", "pw pw pw pw pw\n", []string{"user", "add", "--role", "root", "bob"}, "role"},
		{"role without value", "", []string{"token", "add", "bob", "--role"}, "--role needs a value"},
		{"no name", "pw pw pw pw pw\n", []string{"user", "add", "--role", "viewer"}, "exactly one NAME"},
		{"two names", "pw pw pw pw pw\n", []string{"user", "add", "--role", "viewer", "a", "b"}, "exactly one NAME"},
		{"no password", "", []string{"user", "add", "--role", "viewer", "bob"}, "no password"},
		{"short password", "short\n", []string{"user", "add", "--role", "viewer", "bob"}, "password"},
		{"duplicate", "another long password\n", []string{"user", "add", "--role", "viewer", "王 管理员"}, "already taken"},
		{"reset unknown", "another long password\n", []string{"user", "reset", "nobody"}, "not found"},
		{"reset with role", "another long password\n", []string{"user", "reset", "--role", "admin", "王 管理员"}, "takes no --role"},
		{"unknown verb", "", []string{"user", "delete", "bob"}, "unknown command"},
		{"no verb", "", []string{"token"}, "say what to do"},
	} {
		out, _, err := cmd(c.stdin, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v (out %q), want %q", c.name, err, out, c.want)
		}
	}
	users, err := a.Users(ctx)
	if err != nil || len(users) != 1 {
		t.Fatalf("users after the refusals = %d, %v; want only the admin", len(users), err)
	}
}

// The demo prints one user per role whose password signs in, once; a
// second run leaves them alone.
func TestDemoUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	a := auth.New(s, auth.Options{})
	var out strings.Builder
	if err := demoUsers(ctx, a, &out); err != nil {
		t.Fatal(err)
	}
	lines := regexp.MustCompile(`(?m)^demo:\s+(\w+)\s+name (\w+)\s+password (\S+)$`).FindAllStringSubmatch(out.String(), -1)
	if len(lines) != 3 {
		t.Fatalf("demo printed:\n%s", out.String())
	}
	for _, l := range lines {
		_, u, err := a.Login(ctx, auth.LoginRequest{Name: l[2], Password: l[3]})
		if err != nil || string(u.Role) != l[1] {
			t.Errorf("demo user %s: %+v, %v", l[2], u, err)
		}
	}
	out.Reset()
	if err := demoUsers(ctx, a, &out); err != nil || !strings.Contains(out.String(), "exist already") {
		t.Fatalf("second demo: %q, %v", out.String(), err)
	}
}
