package webhookverify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"unhold/docs/webhookverify"
	"unhold/jobs"
)

// block is the n-th fenced block of lang in docs/webhooks.md.
func block(t *testing.T, lang string, n int) string {
	t.Helper()
	raw, err := os.ReadFile("../webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(raw), "```"+lang+"\n")
	if len(parts) <= n+1 {
		t.Fatalf("docs/webhooks.md has no %d-th %s block", n+1, lang)
	}
	code, _, ok := strings.Cut(parts[n+1], "```\n")
	if !ok {
		t.Fatalf("docs/webhooks.md: the %s block is not closed", lang)
	}
	return code
}

const secret = "whsec-test-0123456789"

var body = []byte(`{"id":7,"type":"order.closed","occurred_at":"2026-12-05T10:41:00Z","order_no":"A1001","data":{"order_no":"A1001"}}`)

// TestGoExample: the page's Go example is this package, and it accepts
// what the sender signs and refuses a changed body, another secret and an
// old timestamp.
func TestGoExample(t *testing.T) {
	src, err := os.ReadFile("verify.go")
	if err != nil {
		t.Fatal(err)
	}
	if got := block(t, "go", 0); got != string(src) {
		t.Fatalf("docs/webhooks.md's Go example is not docs/webhookverify/verify.go:\n%s", got)
	}
	now := time.Date(2026, 12, 5, 10, 41, 0, 0, time.UTC)
	header := jobs.Signature(secret, now, body)
	for _, tc := range []struct {
		name, secret string
		body         []byte
		at           time.Time
		ok           bool
	}{
		{"as sent", secret, body, now.Add(time.Minute), true},
		{"changed body", secret, []byte(strings.Replace(string(body), "A1001", "A1002", 1)), now, false},
		{"another secret", secret + "x", body, now, false},
		{"replayed later", secret, body, now.Add(6 * time.Minute), false},
	} {
		err := webhookverify.Verify(tc.secret, header, tc.body, tc.at, 5*time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
}

// TestShellExample runs the page's openssl example on what the sender
// signs: it accepts the body as sent and refuses a changed one.
func TestShellExample(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	script := block(t, "sh", 1)
	header := jobs.Signature(secret, time.Now(), body)
	run := func(b []byte) (string, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "body.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SECRET="+secret, "HEADER="+header)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(body); err != nil || !strings.Contains(out, "signature OK") {
		t.Fatalf("the body as sent: %v\n%s", err, out)
	}
	if out, err := run([]byte(strings.Replace(string(body), "A1001", "A1002", 1))); err == nil {
		t.Fatalf("a changed body passed:\n%s", out)
	}
}
