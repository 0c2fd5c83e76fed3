package views

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	latBarRe    = regexp.MustCompile(`<rect class="lat-bar[^"]*" x="(\d+)" y="\d+" width="(\d+)"`)
	latTargetRe = regexp.MustCompile(`<line class="lat-target" x1="(\d+)"`)
	latTickRe   = regexp.MustCompile(`<text class="lat-tick" x="(\d+)"[^>]*>([^<]+)</text>`)
)

// latencyChartParts renders a latency chart and reads back where its bars
// end, where the target line is and where each tick label sits.
func latencyChartParts(t *testing.T, lang Lang, l OverviewLatency) (ends []int, target int, ticks map[string]int, html string) {
	t.Helper()
	html = renderHTML(t, LatencyChart(testPage(lang, "viewer", "overview.title", "overview"), l))
	for _, m := range latBarRe.FindAllStringSubmatch(html, -1) {
		x, _ := strconv.Atoi(m[1])
		w, _ := strconv.Atoi(m[2])
		ends = append(ends, x+w)
	}
	if len(ends) != 3 {
		t.Fatalf("%d bars, want 3:\n%s", len(ends), html)
	}
	m := latTargetRe.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no target line:\n%s", html)
	}
	target, _ = strconv.Atoi(m[1])
	ticks = map[string]int{}
	for _, m := range latTickRe.FindAllStringSubmatch(html, -1) {
		ticks[m[2]], _ = strconv.Atoi(m[1])
	}
	return ends, target, ticks, html
}

// A backed-up shop (p50 13 min, p99 36 min) gets bars of different
// lengths, none cut at the plot's end, each between the ticks around its
// value, and the 2 s target line inside the plot with its label.
func TestLatencyChartFitsLongLatencies(t *testing.T) {
	t.Parallel()
	l := OverviewLatency{Count: 50, OverTarget: 50, Target: 2 * time.Second,
		P50: 13 * time.Minute, P95: 30 * time.Minute, P99: 36 * time.Minute}
	for _, lang := range []Lang{LangZH, LangEN} {
		ends, target, ticks, html := latencyChartParts(t, lang, l)
		if !(ends[0] < ends[1] && ends[1] < ends[2]) {
			t.Errorf("%s: bar ends %v, want p50 < p95 < p99", lang, ends)
		}
		if ends[2] > latLabelW+latPlotW {
			t.Errorf("%s: the p99 bar ends at %d, past the plot's end %d", lang, ends[2], latLabelW+latPlotW)
		}
		if target <= latLabelW || target >= ends[0] {
			t.Errorf("%s: target line at %d, want inside the plot and short of the p50 bar's end %d", lang, target, ends[0])
		}
		tenMin, hour := map[Lang]string{LangZH: "10 分钟", LangEN: "10 min"}[lang], map[Lang]string{LangZH: "1 小时", LangEN: "1 h"}[lang]
		if !(ticks[tenMin] < ends[0] && ends[2] < ticks[hour]) {
			t.Errorf("%s: ticks %v, want %s before the p50's end %d and %s after the p99's end %d", lang, ticks, tenMin, ends[0], hour, ends[2])
		}
		if label := map[Lang]string{LangZH: "目标 2 秒", LangEN: "target 2 s"}[lang]; !strings.Contains(html, label) {
			t.Errorf("%s: the target line is not labelled %q:\n%s", lang, label, html)
		}
	}
}

// Sub-second latencies still read well: bars of different lengths, each
// long enough to see, all short of the target line, with ticks in
// milliseconds and seconds.
func TestLatencyChartReadsSubSecond(t *testing.T) {
	t.Parallel()
	l := OverviewLatency{Count: 50, Target: 2 * time.Second,
		P50: 120 * time.Millisecond, P95: 400 * time.Millisecond, P99: 900 * time.Millisecond}
	ends, target, ticks, _ := latencyChartParts(t, LangZH, l)
	if !(ends[0] < ends[1] && ends[1] < ends[2] && ends[2] < target) {
		t.Errorf("bar ends %v and target %d, want p50 < p95 < p99 < target", ends, target)
	}
	if ends[0]-latLabelW < latPlotW/10 {
		t.Errorf("the p50 bar is %d long, too short to read", ends[0]-latLabelW)
	}
	if target >= latLabelW+latPlotW {
		t.Errorf("target line at %d, on the plot's end", target)
	}
	for _, label := range []string{"100 毫秒", "1 秒"} {
		if _, ok := ticks[label]; !ok {
			t.Errorf("no tick %q in %v", label, ticks)
		}
	}
}
