package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// Read keeps the linker's build time and the schema, and the Go version
// of the running binary; the text says what was not recorded, a dirty
// checkout, and a database's schema only when one was read.
func TestReadAndWriteText(t *testing.T) {
	t.Parallel()
	in := Read("2026-12-05T10:00:00Z", 37)
	if in.BuildTime != "2026-12-05T10:00:00Z" || in.Schema != 37 || in.GoVersion != runtime.Version() {
		t.Fatalf("Read = %+v", in)
	}
	var b strings.Builder
	if err := (Info{Commit: "abc123", Modified: true, Schema: 37}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"commit:     abc123 (with uncommitted changes)\n", "built:      unknown", "schema:     37 "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "db schema") {
		t.Errorf("text names a database schema none was read of:\n%s", b.String())
	}
	db := int64(36)
	b.Reset()
	if err := (Info{Schema: 37, DBSchema: &db}).WriteText(&b); err != nil || !strings.HasSuffix(b.String(), "db schema:  36\n") {
		t.Errorf("text with a database schema = %v:\n%s", err, b.String())
	}
}
