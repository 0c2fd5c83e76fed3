// Command testtime shows where a Go test suite's time goes. It runs
// go test -json (or reads a saved run) and prints the packages slowest
// first, the slowest tests and subtests, and a total line.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const usage = `usage: go run ./internal/testtime [flags] [-- go test args...]

Runs go test -json with the given args (./... when there are none) and
reports where the time went: packages slowest first, the slowest tests
(subtests are rows of their own) and a total line. While it runs, stderr
gets one line per finished package plus build errors; test output is not
shown (keep it with -save).

Seconds are go test's own Elapsed figures: a package's from its final
pass/fail event, a test's from its own pass/fail/skip event. A test that
never reported an end (timeout, panic, interrupted run) is "unfinished",
timed from its start to its package's last event. In the package table,
pass/fail/skip count top-level tests and subtests together; with -count=N
every run of a test counts. The wall time is measured while go test runs;
for a saved run it is the span from its first event to its last.

Exit status: 0 all passed, 1 go test failed (a package failed or did not
build) or the input could not be parsed (the report is still printed),
2 bad usage or the input could not be opened.

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type options struct {
	top      int
	jsonFile string
	saveFile string
	md       bool
	goArgs   []string
}

// run is main with its inputs and outputs passed in, and returns the exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	c, wall, problems, err := gather(opts, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "testtime: %v\n", err)
		return 2
	}
	if err := report(stdout, c, opts.top, opts.md, wall); err != nil {
		problems = append(problems, "writing report: "+err.Error())
	}
	// After the report, so they are the last thing on the terminal.
	for _, p := range problems {
		fmt.Fprintf(stderr, "testtime: %s\n", p)
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

// gather reads the whole stream, from go test or from a saved run. An error
// means it could not start; problems are why the run counts as failed.
func gather(opts options, stdin io.Reader, stderr io.Writer) (c *collector, wall time.Duration, problems []string, err error) {
	// Open the save file before starting go test, so a bad path costs
	// nothing.
	save, closeSave, err := openSave(opts.saveFile)
	if err != nil {
		return nil, 0, nil, err
	}
	start := time.Now()
	in, finish, err := openInput(opts, stdin, stderr)
	if err != nil {
		closeSave()
		return nil, 0, nil, err
	}
	c = newCollector(stderr, stderr)
	readErr := c.read(io.TeeReader(in, save))
	finishErr := finish()
	wall = time.Since(start)
	if opts.jsonFile != "" {
		// A saved run was not timed by us; its events carry the times.
		wall = c.span()
	}
	c.finalize()

	problems = c.problems()
	if readErr != nil {
		problems = append(problems, "reading input: "+readErr.Error())
	}
	if err := closeSave(); err != nil {
		problems = append(problems, "saving: "+err.Error())
	}
	// go test's own exit status mostly repeats what the events said; name
	// it only when nothing else explains the failure.
	if finishErr != nil && len(problems) == 0 {
		problems = append(problems, "go test: "+finishErr.Error())
	}
	return c, wall, problems, nil
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var opts options
	fs := flag.NewFlagSet("testtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&opts.top, "top", 30, "list the `N` slowest tests and subtests (0: all)")
	fs.StringVar(&opts.jsonFile, "json", "", "read a saved go test -json `FILE` (- for stdin) instead of running go test")
	fs.StringVar(&opts.saveFile, "save", "", "also write the raw json stream to `FILE`")
	fs.BoolVar(&opts.md, "md", false, "print the two tables as markdown")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.goArgs = fs.Args()
	if opts.top < 0 {
		return opts, usageError(fs, "-top must be 0 or more")
	}
	if opts.jsonFile != "" && len(opts.goArgs) > 0 {
		return opts, usageError(fs, "-json reads a saved run; go test args make no sense with it")
	}
	if len(opts.goArgs) == 0 {
		opts.goArgs = []string{"./..."}
	}
	return opts, nil
}

func usageError(fs *flag.FlagSet, msg string) error {
	fmt.Fprintf(fs.Output(), "testtime: %s\n", msg)
	fs.Usage()
	return errors.New(msg)
}

// openSave returns where to copy the raw stream and how to close it.
func openSave(name string) (io.Writer, func() error, error) {
	if name == "" {
		return io.Discard, func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// openInput returns the json stream and a function that waits for its
// producer and says how it ended.
func openInput(opts options, stdin io.Reader, stderr io.Writer) (io.Reader, func() error, error) {
	switch opts.jsonFile {
	case "":
		return startGoTest(opts.goArgs, stderr)
	case "-":
		return stdin, func() error { return nil }, nil
	}
	f, err := os.Open(opts.jsonFile)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

func startGoTest(args []string, stderr io.Writer) (io.Reader, func() error, error) {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	// go test's stderr is plain text meant for a person (and, before Go
	// 1.24, build errors); pass it through.
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	// Ctrl-C in a terminal reaches go test too (same process group); stay
	// alive so the report covers what finished before it stopped. Notify,
	// not Ignore: an ignored signal would stay ignored in go test.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return out, cmd.Wait, nil
}

// event is one line of go test -json (see go doc test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output and build-fail events
	FailedBuild string // package fail events caused by a build failure
}

// Outcomes of a test, as in the json actions, plus one for a test that never
// reported an end.
const (
	pass       = "pass"
	fail       = "fail"
	skip       = "skip"
	unfinished = "unfinished"
)

// Package statuses.
const (
	pkgOK          = "ok"
	pkgFail        = "FAIL"
	pkgBuildFailed = "build failed"
	pkgNoTests     = "no tests"
	pkgUnfinished  = "unfinished"
)

type testResult struct {
	pkg     string
	name    string
	seconds float64
	outcome string // empty while running
	started time.Time
}

// isSub tells subtests apart: only they have a slash in their name, as
// test function names cannot contain one.
func (t *testResult) isSub() bool { return strings.Contains(t.name, "/") }

type pkgResult struct {
	name        string
	seconds     float64
	status      string // empty while running
	failedBuild string // the build named by the fail event, if any
	buildFailed bool   // go test's closing line said the build failed
	first, last time.Time
	tests       []*testResult
	// running maps a test name to its latest run, so that -count=N gives N
	// results rather than one overwritten N times.
	running map[string]*testResult
}

// collector turns the event stream into per-package and per-test results.
type collector struct {
	pkgs        map[string]*pkgResult
	events      int
	badLines    int
	buildFails  []string // import paths from build-fail events
	first, last time.Time
	progress    io.Writer // one line per finished package
	diag        io.Writer // plain-text lines and build errors
}

func newCollector(progress, diag io.Writer) *collector {
	return &collector{pkgs: map[string]*pkgResult{}, progress: progress, diag: diag}
}

// read consumes the whole stream. It reads lines without a length limit
// because a test can print a very long line.
func (c *collector) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.line(n, line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (c *collector) line(n int, b []byte) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return
	}
	if trimmed[0] != '{' {
		// Not JSON: build errors from older go versions or something the
		// test binary wrote around test2json. A person may need it; it
		// says nothing about timing.
		fmt.Fprintf(c.diag, "%s\n", trimmed)
		return
	}
	var ev event
	if err := json.Unmarshal(trimmed, &ev); err != nil {
		c.badLines++
		fmt.Fprintf(c.diag, "testtime: line %d: %v\n", n, err)
		return
	}
	c.add(ev)
}

func (c *collector) add(ev event) {
	c.events++
	c.seen(ev.Time)
	switch {
	case ev.Action == "build-output":
		// Since Go 1.24 build errors come as events; show them as go
		// test would.
		io.WriteString(c.diag, ev.Output)
	case ev.Action == "build-fail":
		c.buildFails = append(c.buildFails, ev.ImportPath)
	case ev.Package == "":
		// Nothing to attribute it to.
	case ev.Test == "":
		c.packageEvent(ev)
	default:
		c.testEvent(ev)
	}
}

// seen widens the run's time span. build-* events carry no time.
func (c *collector) seen(t time.Time) {
	if t.IsZero() {
		return
	}
	if c.first.IsZero() || t.Before(c.first) {
		c.first = t
	}
	if t.After(c.last) {
		c.last = t
	}
}

func (c *collector) span() time.Duration { return c.last.Sub(c.first) }

func (c *collector) pkg(name string, t time.Time) *pkgResult {
	p := c.pkgs[name]
	if p == nil {
		p = &pkgResult{name: name, first: t, running: map[string]*testResult{}}
		c.pkgs[name] = p
	}
	if t.After(p.last) {
		p.last = t
	}
	return p
}

func (c *collector) packageEvent(ev event) {
	p := c.pkg(ev.Package, ev.Time)
	switch ev.Action {
	case "output":
		// Before Go 1.24 the fail event did not say the build failed;
		// only go test's closing line did.
		if strings.HasSuffix(ev.Output, " [build failed]\n") || strings.HasSuffix(ev.Output, " [setup failed]\n") {
			p.buildFailed = true
		}
		return
	case pass:
		p.status = pkgOK
	case fail:
		p.status = pkgFail
		if ev.FailedBuild != "" || p.buildFailed {
			p.status = pkgBuildFailed
			p.failedBuild = ev.FailedBuild
		}
	case skip:
		p.status = pkgNoTests
	default:
		return
	}
	p.seconds = ev.Elapsed
	fmt.Fprintln(c.progress, progressLine(p))
}

func progressLine(p *pkgResult) string {
	switch p.status {
	case pkgOK:
		return fmt.Sprintf("ok   %s %.1fs", p.name, p.seconds)
	case pkgBuildFailed:
		return fmt.Sprintf("FAIL %s [build failed]", p.name)
	case pkgNoTests:
		return fmt.Sprintf("?    %s [no test files]", p.name)
	}
	return fmt.Sprintf("FAIL %s %.1fs", p.name, p.seconds)
}

func (c *collector) testEvent(ev event) {
	p := c.pkg(ev.Package, ev.Time)
	t := p.running[ev.Test]
	if ev.Action == "run" || t == nil {
		t = &testResult{pkg: p.name, name: ev.Test, started: ev.Time}
		p.running[ev.Test] = t
		p.tests = append(p.tests, t)
	}
	switch ev.Action {
	case pass, fail, skip:
		t.outcome = ev.Action
		t.seconds = ev.Elapsed
	}
}

// finalize settles what never reported an end, e.g. after a timeout panic or
// a truncated file, timing it up to the last event seen.
func (c *collector) finalize() {
	for _, p := range c.pkgs {
		if p.status == "" {
			p.status = pkgUnfinished
			p.seconds = p.last.Sub(p.first).Seconds()
		}
		for _, t := range p.tests {
			if t.outcome == "" {
				t.outcome = unfinished
				t.seconds = p.last.Sub(t.started).Seconds()
			}
		}
	}
}

// problems lists why the run counts as failed; none means it passed.
func (c *collector) problems() []string {
	var out []string
	if c.events == 0 && c.badLines == 0 {
		out = append(out, "no go test -json events in the input")
	}
	var failed, notDone []string
	reported := map[string]bool{}
	for _, p := range c.sortedPackages() {
		switch p.status {
		case pkgFail, pkgBuildFailed:
			failed = append(failed, p.name)
		case pkgUnfinished:
			notDone = append(notDone, p.name)
		}
		if p.failedBuild != "" {
			reported[p.failedBuild] = true
		}
	}
	if len(failed) > 0 {
		out = append(out, "failed: "+strings.Join(failed, ", "))
	}
	if len(notDone) > 0 {
		out = append(out, "did not finish: "+strings.Join(notDone, ", "))
	}
	// A build failure normally also fails its package; name only those
	// that did not.
	for _, ip := range c.buildFails {
		if !reported[ip] {
			out = append(out, "build failed: "+ip)
		}
	}
	if c.badLines > 0 {
		out = append(out, fmt.Sprintf("%d line(s) could not be parsed", c.badLines))
	}
	return out
}

// sortedPackages returns the packages slowest first, then by name so the
// order is stable.
func (c *collector) sortedPackages() []*pkgResult {
	var ps []*pkgResult
	for _, p := range c.pkgs {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *pkgResult) int {
		return cmp.Or(cmp.Compare(b.seconds, a.seconds), strings.Compare(a.name, b.name))
	})
	return ps
}

// sortedTests returns every test and subtest, slowest first.
func (c *collector) sortedTests() []*testResult {
	var ts []*testResult
	for _, p := range c.pkgs {
		ts = append(ts, p.tests...)
	}
	// Stable: with -count=N the runs of one test keep their order.
	slices.SortStableFunc(ts, func(a, b *testResult) int {
		return cmp.Or(cmp.Compare(b.seconds, a.seconds), strings.Compare(a.pkg, b.pkg), strings.Compare(a.name, b.name))
	})
	return ts
}

// tally counts outcomes.
type tally struct{ pass, fail, skip, unfinished int }

func (t *tally) add(outcome string) {
	switch outcome {
	case pass:
		t.pass++
	case fail:
		t.fail++
	case skip:
		t.skip++
	default:
		t.unfinished++
	}
}

func (t *tally) merge(o tally) {
	t.pass += o.pass
	t.fail += o.fail
	t.skip += o.skip
	t.unfinished += o.unfinished
}

func (t tally) total() int { return t.pass + t.fail + t.skip + t.unfinished }

// String reads "12 (10 passed, 1 failed, 1 skipped)".
func (t tally) String() string {
	s := fmt.Sprintf("%d (%d passed, %d failed, %d skipped", t.total(), t.pass, t.fail, t.skip)
	if t.unfinished > 0 {
		s += fmt.Sprintf(", %d unfinished", t.unfinished)
	}
	return s + ")"
}

// counts splits a package's results into top-level tests and subtests.
func counts(tests []*testResult) (top, sub tally) {
	for _, t := range tests {
		if t.isSub() {
			sub.add(t.outcome)
		} else {
			top.add(t.outcome)
		}
	}
	return top, sub
}

func report(w io.Writer, c *collector, top int, md bool, wall time.Duration) error {
	pkgRows := packageRows(c.sortedPackages())
	heading(w, md, fmt.Sprintf("packages, slowest first (%d):", len(pkgRows)))
	if err := writeTable(w, md, packageColumns(), pkgRows); err != nil {
		return err
	}
	tests := c.sortedTests()
	shown := tests
	if top > 0 && top < len(tests) {
		shown = tests[:top]
	}
	fmt.Fprintln(w)
	heading(w, md, fmt.Sprintf("slowest tests and subtests (%d of %d):", len(shown), len(tests)))
	if err := writeTable(w, md, testColumns(), testRows(shown)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", totalLine(c, wall))
	return err
}

// heading titles a table; markdown wants a blank line before a table.
func heading(w io.Writer, md bool, title string) {
	fmt.Fprintln(w, title)
	if md {
		fmt.Fprintln(w)
	}
}

// column is a table header; numeric columns are right-aligned.
type column struct {
	name    string
	numeric bool
}

// Variable-width text goes last in both tables so the numbers line up.

func packageColumns() []column {
	return []column{{"seconds", true}, {"status", false}, {"tests", true}, {"subtests", true},
		{"pass", true}, {"fail", true}, {"skip", true}, {"package", false}}
}

func testColumns() []column {
	return []column{{"seconds", true}, {"outcome", false}, {"package", false}, {"test", false}}
}

// packageRows leaves out packages without test files: they take no time and
// would bury the rest in a ./... run. The total line counts them.
func packageRows(ps []*pkgResult) [][]string {
	var rows [][]string
	for _, p := range ps {
		if p.status == pkgNoTests {
			continue
		}
		top, sub := counts(p.tests)
		rows = append(rows, []string{
			seconds(p.seconds), p.status, itoa(top.total()), itoa(sub.total()),
			itoa(top.pass + sub.pass), itoa(top.fail + sub.fail), itoa(top.skip + sub.skip), p.name,
		})
	}
	return rows
}

func testRows(ts []*testResult) [][]string {
	var rows [][]string
	for _, t := range ts {
		rows = append(rows, []string{seconds(t.seconds), t.outcome, t.pkg, t.name})
	}
	return rows
}

func seconds(s float64) string { return fmt.Sprintf("%.2f", s) }

func itoa(n int) string { return strconv.Itoa(n) }

func totalLine(c *collector, wall time.Duration) string {
	var top, sub tally
	statuses := map[string]int{}
	for _, p := range c.pkgs {
		t, s := counts(p.tests)
		top.merge(t)
		sub.merge(s)
		statuses[p.status]++
	}
	var ps []string
	for _, s := range []string{pkgOK, pkgFail, pkgBuildFailed, pkgUnfinished, pkgNoTests} {
		if statuses[s] > 0 {
			ps = append(ps, fmt.Sprintf("%d %s", statuses[s], s))
		}
	}
	return fmt.Sprintf("total: tests %v, subtests %v; packages %d (%s); wall %.1fs",
		top, sub, len(c.pkgs), strings.Join(ps, ", "), wall.Seconds())
}

// writeTable prints aligned plain text, or a markdown table that is also
// aligned so it reads well before rendering.
func writeTable(w io.Writer, md bool, header []column, rows [][]string) error {
	names := make([]string, len(header))
	for i, col := range header {
		names[i] = col.name
	}
	all := append([][]string{names}, rows...)
	if md {
		all = escapePipes(all)
		all = append(all[:1], append([][]string{mdRule(header)}, all[1:]...)...)
	}
	padNumbers(all, header)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if md {
		tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	}
	for _, row := range all {
		fmt.Fprintln(tw, formatRow(row, md))
	}
	return tw.Flush()
}

// formatRow joins cells with tabs for tabwriter; in markdown every cell
// starts with a pipe and the row ends with one.
func formatRow(cells []string, md bool) string {
	if !md {
		return strings.Join(cells, "\t")
	}
	return "| " + strings.Join(cells, "\t| ") + "\t|"
}

// mdRule is the markdown line under the header; numbers align right.
func mdRule(header []column) []string {
	rule := make([]string, len(header))
	for i, col := range header {
		rule[i] = "---"
		if col.numeric {
			rule[i] = "---:"
		}
	}
	return rule
}

// escapePipes keeps a pipe in a subtest name from splitting a markdown cell.
func escapePipes(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(row))
		for j, cell := range row {
			out[i][j] = strings.ReplaceAll(cell, "|", `\|`)
		}
	}
	return out
}

// padNumbers right-aligns numeric columns, rewriting the cells in place; tabwriter can only
// align every column the same way.
func padNumbers(rows [][]string, header []column) {
	for i, col := range header {
		if !col.numeric {
			continue
		}
		width := 0
		for _, row := range rows {
			width = max(width, len(row[i]))
		}
		for _, row := range rows {
			row[i] = strings.Repeat(" ", width-len(row[i])) + row[i]
		}
	}
}
