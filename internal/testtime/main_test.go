package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fullRun is a hand-written go test -json stream: unhold/fast passes;
// unhold/slow has a parent with two parallel subtests, a failed test and a
// skipped test, so the package fails; unhold/broken does not build and, as
// before Go 1.24, its compiler errors arrive as plain text.
const fullRun = `{"Time":"2026-01-02T10:00:00Z","Action":"start","Package":"unhold/slow"}
{"Time":"2026-01-02T10:00:00.01Z","Action":"start","Package":"unhold/fast"}
# unhold/broken
broken/broken.go:3:1: syntax error: unexpected }
{"Time":"2026-01-02T10:00:00.02Z","Action":"start","Package":"unhold/broken"}
{"Time":"2026-01-02T10:00:00.02Z","Action":"output","Package":"unhold/broken","Output":"FAIL\tunhold/broken [build failed]\n"}
{"Time":"2026-01-02T10:00:00.02Z","Action":"fail","Package":"unhold/broken","Elapsed":0}
{"Time":"2026-01-02T10:00:00.1Z","Action":"run","Package":"unhold/fast","Test":"TestQuick"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"output","Package":"unhold/fast","Test":"TestQuick","Output":"=== RUN   TestQuick\n"}
{"Time":"2026-01-02T10:00:00.2Z","Action":"output","Package":"unhold/fast","Test":"TestQuick","Output":"--- PASS: TestQuick (0.10s)\n"}
{"Time":"2026-01-02T10:00:00.2Z","Action":"pass","Package":"unhold/fast","Test":"TestQuick","Elapsed":0.1}
{"Time":"2026-01-02T10:00:00.3Z","Action":"output","Package":"unhold/fast","Output":"ok  \tunhold/fast\t0.300s\n"}
{"Time":"2026-01-02T10:00:00.3Z","Action":"pass","Package":"unhold/fast","Elapsed":0.3}
{"Time":"2026-01-02T10:00:00.1Z","Action":"run","Package":"unhold/slow","Test":"TestStore"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"run","Package":"unhold/slow","Test":"TestStore/sqlite"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"pause","Package":"unhold/slow","Test":"TestStore/sqlite"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"run","Package":"unhold/slow","Test":"TestStore/postgres"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"pause","Package":"unhold/slow","Test":"TestStore/postgres"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"cont","Package":"unhold/slow","Test":"TestStore/sqlite"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"cont","Package":"unhold/slow","Test":"TestStore/postgres"}
{"Time":"2026-01-02T10:00:01.6Z","Action":"pass","Package":"unhold/slow","Test":"TestStore/sqlite","Elapsed":1.5}
{"Time":"2026-01-02T10:00:04.1Z","Action":"pass","Package":"unhold/slow","Test":"TestStore/postgres","Elapsed":4}
{"Time":"2026-01-02T10:00:04.6Z","Action":"pass","Package":"unhold/slow","Test":"TestStore","Elapsed":4.5}
{"Time":"2026-01-02T10:00:04.6Z","Action":"run","Package":"unhold/slow","Test":"TestBroken"}
{"Time":"2026-01-02T10:00:06.6Z","Action":"output","Package":"unhold/slow","Test":"TestBroken","Output":"    slow_test.go:9: want 2, got 3\n"}
{"Time":"2026-01-02T10:00:06.6Z","Action":"fail","Package":"unhold/slow","Test":"TestBroken","Elapsed":2}
{"Time":"2026-01-02T10:00:06.6Z","Action":"run","Package":"unhold/slow","Test":"TestLater"}
{"Time":"2026-01-02T10:00:06.6Z","Action":"skip","Package":"unhold/slow","Test":"TestLater","Elapsed":0}
{"Time":"2026-01-02T10:00:07Z","Action":"output","Package":"unhold/slow","Output":"FAIL\tunhold/slow\t7.000s\n"}
{"Time":"2026-01-02T10:00:07Z","Action":"fail","Package":"unhold/slow","Elapsed":7}
`

// fastOnly is the passing package alone.
const fastOnly = `{"Time":"2026-01-02T10:00:00Z","Action":"start","Package":"unhold/fast"}
{"Time":"2026-01-02T10:00:00.1Z","Action":"run","Package":"unhold/fast","Test":"TestQuick"}
{"Time":"2026-01-02T10:00:00.2Z","Action":"pass","Package":"unhold/fast","Test":"TestQuick","Elapsed":0.1}
{"Time":"2026-01-02T10:00:00.3Z","Action":"pass","Package":"unhold/fast","Elapsed":0.3}
`

// collect feeds a stream through the collector as run does.
func collect(t *testing.T, stream string) (c *collector, progress, diag string) {
	t.Helper()
	var p, d strings.Builder
	c = newCollector(&p, &d)
	if err := c.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	c.finalize()
	return c, p.String(), d.String()
}

func TestCollect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		stream   string
		packages []string // slowest first: name status seconds
		tests    []string // slowest first: package test outcome seconds
		total    string
		problems []string // empty: exit status 0
		progress string
		diag     []string // each must appear in the diagnostics
	}{{
		name:     "full run",
		stream:   fullRun,
		packages: []string{"unhold/slow FAIL 7.00", "unhold/fast ok 0.30", "unhold/broken build failed 0.00"},
		tests: []string{
			"unhold/slow TestStore pass 4.50",
			"unhold/slow TestStore/postgres pass 4.00",
			"unhold/slow TestBroken fail 2.00",
			"unhold/slow TestStore/sqlite pass 1.50",
			"unhold/fast TestQuick pass 0.10",
			"unhold/slow TestLater skip 0.00",
		},
		total: "total: tests 4 (2 passed, 1 failed, 1 skipped), subtests 2 (2 passed, 0 failed, 0 skipped); " +
			"packages 3 (1 ok, 1 FAIL, 1 build failed); wall 7.0s",
		problems: []string{"failed: unhold/slow, unhold/broken"},
		progress: "FAIL unhold/broken [build failed]\nok   unhold/fast 0.3s\nFAIL unhold/slow 7.0s\n",
		diag:     []string{"# unhold/broken\n", "syntax error: unexpected }\n"},
	}, {
		name:     "all pass",
		stream:   fastOnly,
		packages: []string{"unhold/fast ok 0.30"},
		tests:    []string{"unhold/fast TestQuick pass 0.10"},
		total: "total: tests 1 (1 passed, 0 failed, 0 skipped), subtests 0 (0 passed, 0 failed, 0 skipped); " +
			"packages 1 (1 ok); wall 0.3s",
		progress: "ok   unhold/fast 0.3s\n",
	}, {
		name: "count=2 gives a row per run",
		stream: `{"Time":"2026-01-02T10:00:00Z","Action":"run","Package":"p","Test":"TestA"}
{"Time":"2026-01-02T10:00:01Z","Action":"pass","Package":"p","Test":"TestA","Elapsed":1}
{"Time":"2026-01-02T10:00:01Z","Action":"run","Package":"p","Test":"TestA"}
{"Time":"2026-01-02T10:00:03Z","Action":"pass","Package":"p","Test":"TestA","Elapsed":2}
{"Time":"2026-01-02T10:00:03Z","Action":"pass","Package":"p","Elapsed":3}
`,
		packages: []string{"p ok 3.00"},
		tests:    []string{"p TestA pass 2.00", "p TestA pass 1.00"},
		total: "total: tests 2 (2 passed, 0 failed, 0 skipped), subtests 0 (0 passed, 0 failed, 0 skipped); " +
			"packages 1 (1 ok); wall 3.0s",
		progress: "ok   p 3.0s\n",
	}, {
		// A timeout panic ends the package without ending its tests.
		name: "timeout leaves tests unfinished",
		stream: `{"Time":"2026-01-02T10:00:00Z","Action":"start","Package":"unhold/hang"}
{"Time":"2026-01-02T10:00:00.5Z","Action":"run","Package":"unhold/hang","Test":"TestHang"}
{"Time":"2026-01-02T10:00:00.6Z","Action":"run","Package":"unhold/hang","Test":"TestHang/forever"}
{"Time":"2026-01-02T10:00:10.6Z","Action":"output","Package":"unhold/hang","Output":"panic: test timed out after 10s\n"}
{"Time":"2026-01-02T10:00:10.6Z","Action":"fail","Package":"unhold/hang","Elapsed":10.6}
`,
		packages: []string{"unhold/hang FAIL 10.60"},
		tests:    []string{"unhold/hang TestHang unfinished 10.10", "unhold/hang TestHang/forever unfinished 10.00"},
		total: "total: tests 1 (0 passed, 0 failed, 0 skipped, 1 unfinished), " +
			"subtests 1 (0 passed, 0 failed, 0 skipped, 1 unfinished); packages 1 (1 FAIL); wall 10.6s",
		problems: []string{"failed: unhold/hang"},
		progress: "FAIL unhold/hang 10.6s\n",
	}, {
		name: "truncated file",
		stream: fastOnly + `{"Time":"2026-01-02T10:00:01Z","Action":"run","Package":"unhold/cut","Test":"TestCut"}
{"Time":"2026-01-02T10:00:03Z","Action":"output","Package":"unhold/cut","Test":"TestCut","Output":"still going\n"}
{"Time":"2026-01-02T10:00:04Z","Action":"pa`,
		packages: []string{"unhold/cut unfinished 2.00", "unhold/fast ok 0.30"},
		tests:    []string{"unhold/cut TestCut unfinished 2.00", "unhold/fast TestQuick pass 0.10"},
		total: "total: tests 2 (1 passed, 0 failed, 0 skipped, 1 unfinished), " +
			"subtests 0 (0 passed, 0 failed, 0 skipped); packages 2 (1 ok, 1 unfinished); wall 3.0s",
		problems: []string{"did not finish: unhold/cut", "1 line(s) could not be parsed"},
		progress: "ok   unhold/fast 0.3s\n",
		diag:     []string{"testtime: line 7: unexpected end of JSON input\n"},
	}, {
		// Since Go 1.24 build errors are events, and the package's fail
		// event names the build; that failure is reported once.
		name: "build failure as events",
		stream: `{"ImportPath":"unhold/x [unhold/x.test]","Action":"build-output","Output":"# unhold/x [unhold/x.test]\n"}
{"ImportPath":"unhold/x [unhold/x.test]","Action":"build-output","Output":"x_test.go:3:27: undefined: nope\n"}
{"ImportPath":"unhold/x [unhold/x.test]","Action":"build-fail"}
{"ImportPath":"unhold/y","Action":"build-fail"}
{"Time":"2026-01-02T10:00:00Z","Action":"start","Package":"unhold/x"}
{"Time":"2026-01-02T10:00:00Z","Action":"fail","Package":"unhold/x","Elapsed":0,"FailedBuild":"unhold/x [unhold/x.test]"}
{"Time":"2026-01-02T10:00:00Z","Action":"skip","Package":"unhold/none","Elapsed":0}
`,
		packages: []string{"unhold/none no tests 0.00", "unhold/x build failed 0.00"},
		total: "total: tests 0 (0 passed, 0 failed, 0 skipped), subtests 0 (0 passed, 0 failed, 0 skipped); " +
			"packages 2 (1 build failed, 1 no tests); wall 0.0s",
		problems: []string{"failed: unhold/x", "build failed: unhold/y"},
		progress: "FAIL unhold/x [build failed]\n?    unhold/none [no test files]\n",
		diag:     []string{"# unhold/x [unhold/x.test]\nx_test.go:3:27: undefined: nope\n"},
	}, {
		name:     "no events",
		stream:   "go: no packages to test\n",
		total:    "total: tests 0 (0 passed, 0 failed, 0 skipped), subtests 0 (0 passed, 0 failed, 0 skipped); packages 0 (); wall 0.0s",
		problems: []string{"no go test -json events in the input"},
		diag:     []string{"go: no packages to test\n"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, progress, diag := collect(t, tt.stream)
			var pkgs []string
			for _, p := range c.sortedPackages() {
				pkgs = append(pkgs, fmt.Sprintf("%s %s %.2f", p.name, p.status, p.seconds))
			}
			var tests []string
			for _, r := range c.sortedTests() {
				tests = append(tests, fmt.Sprintf("%s %s %s %.2f", r.pkg, r.name, r.outcome, r.seconds))
			}
			check(t, "packages", strings.Join(pkgs, "\n"), strings.Join(tt.packages, "\n"))
			check(t, "tests", strings.Join(tests, "\n"), strings.Join(tt.tests, "\n"))
			check(t, "total", totalLine(c, c.span()), tt.total)
			check(t, "problems", strings.Join(c.problems(), "\n"), strings.Join(tt.problems, "\n"))
			check(t, "progress", progress, tt.progress)
			for _, want := range tt.diag {
				if !strings.Contains(diag, want) {
					t.Errorf("diagnostics lack %q:\n%s", want, diag)
				}
			}
		})
	}
}

func TestPackageRows(t *testing.T) {
	t.Parallel()
	c, _, _ := collect(t, fullRun)
	got := fmt.Sprint(packageRows(c.sortedPackages()))
	want := "[[7.00 FAIL 3 2 3 1 1 unhold/slow] [0.30 ok 1 0 1 0 0 unhold/fast] [0.00 build failed 0 0 0 0 0 unhold/broken]]"
	check(t, "rows", got, want)
}

// TestRun drives the command from its arguments on a saved stream, so no
// go test runs.
func TestRun(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.json")
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // exact; empty: not checked
		stderr []string
	}{{
		name:  "report",
		args:  []string{"-json", "-", "-top", "3"},
		stdin: fullRun,
		code:  1,
		stdout: `packages, slowest first (3):
seconds  status        tests  subtests  pass  fail  skip  package
   7.00  FAIL              3         2     3     1     1  unhold/slow
   0.30  ok                1         0     1     0     0  unhold/fast
   0.00  build failed      0         0     0     0     0  unhold/broken

slowest tests and subtests (3 of 6):
seconds  outcome  package      test
   4.50  pass     unhold/slow  TestStore
   4.00  pass     unhold/slow  TestStore/postgres
   2.00  fail     unhold/slow  TestBroken

total: tests 4 (2 passed, 1 failed, 1 skipped), subtests 2 (2 passed, 0 failed, 0 skipped); packages 3 (1 ok, 1 FAIL, 1 build failed); wall 7.0s
`,
		stderr: []string{"FAIL unhold/slow 7.0s\n", "testtime: failed: unhold/slow, unhold/broken\n"},
	}, {
		name: "markdown",
		args: []string{"-md", "-json", "-"},
		stdin: fastOnly + `{"Time":"2026-01-02T10:00:00Z","Action":"run","Package":"unhold/fast","Test":"TestPipe/a|b"}
{"Time":"2026-01-02T10:00:00Z","Action":"pass","Package":"unhold/fast","Test":"TestPipe/a|b","Elapsed":0.05}
`,
		code: 0,
		stdout: `packages, slowest first (1):

| seconds | status | tests | subtests | pass | fail | skip | package     |
|    ---: | ---    |  ---: |     ---: | ---: | ---: | ---: | ---         |
|    0.30 | ok     |     1 |        1 |    2 |    0 |    0 | unhold/fast |

slowest tests and subtests (2 of 2):

| seconds | outcome | package     | test          |
|    ---: | ---     | ---         | ---           |
|    0.10 | pass    | unhold/fast | TestQuick     |
|    0.05 | pass    | unhold/fast | TestPipe/a\|b |

total: tests 1 (1 passed, 0 failed, 0 skipped), subtests 1 (1 passed, 0 failed, 0 skipped); packages 1 (1 ok); wall 0.3s
`,
	}, {
		name:   "negative top",
		args:   []string{"-top", "-1"},
		code:   2,
		stderr: []string{"-top must be 0 or more"},
	}, {
		name:   "json with go test args",
		args:   []string{"-json", "run.json", "--", "./..."},
		code:   2,
		stderr: []string{"-json reads a saved run"},
	}, {
		name:   "missing file",
		args:   []string{"-json", missing},
		code:   2,
		stderr: []string{"missing.json"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if tt.stdout != "" {
				check(t, "stdout", stdout.String(), tt.stdout)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// TestSave checks that -save keeps the stream byte for byte, plain-text
// lines included, so the saved run reports the same again.
func TestSave(t *testing.T) {
	t.Parallel()
	saved := filepath.Join(t.TempDir(), "run.json")
	var first, second strings.Builder
	if code := run([]string{"-save", saved, "-json", "-"}, strings.NewReader(fullRun), &first, &strings.Builder{}); code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "saved stream", string(b), fullRun)
	if code := run([]string{"-json", saved}, nil, &second, &strings.Builder{}); code != 1 {
		t.Fatalf("exit status %d, want 1", code)
	}
	check(t, "report of the saved run", second.String(), first.String())
}

func check(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\ngot:\n%s\nwant:\n%s", what, got, want)
	}
}
