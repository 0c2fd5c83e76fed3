package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the resources file allows but weakens is logged as a warning at
// every start, naming the file, the entry and the key: a token over plain
// http (insecure_http: true) and answers taken unverified (strict: false).
// Breaks if the loader's warnings were dropped.
func TestStartWarnsOfWeakenedRemoteTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "resources.yaml")
	yaml := `resources:
  - {type: giftcard, kind: remote, label: {zh: 礼品卡, en: Gift card}, url: "http://gift.internal:9400",
     token_env: GIFTCARD_TOKEN, insecure_http: true}
  - {type: voucher, kind: remote, label: {zh: 代金券, en: Voucher}, url: "https://voucher.internal", strict: false}
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "GIFTCARD_TOKEN" {
			return "s3cret"
		}
		return ""
	}
	args := []string{"migrate", "-db", filepath.Join(dir, "unhold.db"), "-resources", file, "-log-format", "json"}
	for start := 1; start <= 2; start++ {
		var log strings.Builder
		if err := run(context.Background(), args, env, nil, io.Discard, &log); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			file + `: resources[0] (giftcard): url: http://gift.internal:9400 is plain http`,
			file + `: resources[1] (voucher): strict: false`,
		} {
			if !strings.Contains(log.String(), `"level":"WARN","msg":"resources file: `+want) {
				t.Errorf("start %d: no warning %q in\n%s", start, want, log.String())
			}
		}
		if strings.Contains(log.String(), "s3cret") {
			t.Errorf("start %d: the log shows the token", start)
		}
	}
}
