package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// The overview shows exact numbers for a planted state: releases DONE two
// hours ago and now, a RETRY (a timeout), a MANUAL (stock taken from under
// the lock), a DUPLICATE (a DONE task sent round again), a due task, and
// the reconciliation diffs the hand edit made; each number links to its
// list, the charts are inline SVG, and the oldest due task turns red past
// ten minutes.
func TestOverviewNumbers(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-a", 100, 0, "test")
		try(t, "sku-a", err)
		_, err = b.s.SetStock(b.ctx, "sku-m", 5, 0, "test")
		try(t, "sku-m", err)
		_, err = b.s.SetActivity(b.ctx, "act-1", 10, "test")
		try(t, "act-1", err)
		// 10:00 — three releases: ok-1 (stock), ok-2 (stock and quota).
		tkOrder(t, b, "ok-1", "sku-a", "")
		tkOrder(t, b, "ok-2", "sku-a", "act-1")
		drain(t, b)
		// 12:00 — r-1 fails with a timeout (RETRY), m-1 finds its lock gone
		// (MANUAL), ok-1's stock task goes round again (DUPLICATE), and
		// due-1 waits.
		b.clock.Advance(2 * time.Hour)
		tkOrder(t, b, "r-1", "sku-a", "")
		tkOrder(t, b, "m-1", "sku-m", "")
		try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-m'").Error)
		try(t, "send round again", b.s.W.Exec(`UPDATE release_tasks SET status = 'PENDING', next_at = ?
			WHERE order_no = 'ok-1'`, b.clock.Now()).Error)
		drain(t, b)
		tkOrder(t, b, "due-1", "sku-a", "")
		dueSince := b.clock.Now()
		diffs, err := b.s.Reconcile(b.ctx)
		try(t, "reconcile", err)
		if len(diffs) != 3 {
			t.Fatalf("planted %d diffs, want 3 (sku-m HELD, CONSERVATION, LEDGER_HELD): %+v", len(diffs), diffs)
		}

		waitDiffCount(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			for id, want := range map[string]string{
				"ov-backlog": "1", "ov-manual": "1", "ov-retry": "1", "ov-diffs": "1", "ov-duplicates": "1", // sku-m's three checks make one ticket
				"ov-rate-hour": "33.3%", "ov-success-hour": "1", "ov-failures-hour": "2", "ov-duplicates-hour": "1",
				"ov-rate-day": "66.7%", "ov-success-day": "4", "ov-failures-day": "2", "ov-duplicates-day": "1",
				"ov-type-inventory-hour-ok": "1", "ov-type-inventory-hour-fail": "2",
				"ov-type-inventory-day-ok": "3", "ov-type-inventory-day-fail": "2",
				"ov-type-quota-hour-ok": "0", "ov-type-quota-day-ok": "1", "ov-type-quota-day-fail": "0",
				"ov-type-coupon-day-ok": "0",
				"ov-class-TIMEOUT-hour": "1", "ov-class-TIMEOUT-day": "1",
				"ov-class-LOCKED_SHORT-hour": "1", "ov-class-LOCKED_SHORT-day": "1",
			} {
				checkText(t, body, id, want)
			}
			// A window's numbers open the tasks of that window: from its first
			// minute to the end of the current one.
			inWindow := func(span time.Duration, query string) string {
				now := b.clock.Now()
				from := now.Add(-span)
				if m := from.Truncate(time.Minute); m.Before(from) {
					from = m.Add(time.Minute)
				}
				v, err := url.ParseQuery(query)
				try(t, "query", err)
				v.Set("from", from.UTC().Format(time.RFC3339))
				v.Set("to", now.Truncate(time.Minute).Add(time.Minute).UTC().Format(time.RFC3339))
				return "/tasks?" + v.Encode()
			}
			for id, want := range map[string]string{
				"ov-backlog": "/tasks?due=1", "ov-manual": "/tasks?status=MANUAL", "ov-retry": "/tasks?status=RETRY",
				"ov-diffs": "/recon", "ov-duplicates": "#duplicates",
				"ov-failures-day":            inWindow(24*time.Hour, "status=RETRY&status=MANUAL"),
				"ov-success-hour":            inWindow(time.Hour, "status=DONE"),
				"ov-type-inventory-day-fail": inWindow(24*time.Hour, "status=RETRY&status=MANUAL&type=inventory"),
				"ov-type-quota-day-ok":       inWindow(24*time.Hour, "status=DONE&type=quota"),
				"ov-class-LOCKED_SHORT-day":  inWindow(24*time.Hour, "class=LOCKED_SHORT"),
				"ov-class-TIMEOUT-hour":      inWindow(time.Hour, "class=TIMEOUT"),
				"ov-oldest-age":              "/tasks?due=1&sort=old",
				"ov-range-1h":                "/?range=1h",
				"ov-range-7d":                "/?range=7d",
			} {
				if got := mustHref(t, body, id); got != want {
					t.Errorf("%s links to %q, want %q", id, got, want)
				}
			}
			if strings.Contains(testidTag(body, "ov-oldest-age"), "bad") {
				t.Error("a task due for 0 s is shown red")
			}
			if n := strings.Count(body, `data-testid="ov-dup-row"`); n != 1 || !strings.Contains(body, `href="/orders/ok-1"`) {
				t.Errorf("duplicate rows = %d, or ok-1 not linked", n)
			}
			// The charts are inline SVG: the day's chart, in ten-minute
			// columns, has ok-1 and ok-2's three releases at 10:00 and the two
			// failures at 12:00.
			for _, id := range []string{"ov-chart-minutes", "ov-chart-types"} {
				i := strings.Index(body, `data-testid="`+id+`"`)
				if i < 0 || !strings.Contains(body[i:min(i+400, len(body))], "<svg") {
					t.Errorf("%s has no inline SVG", id)
				}
			}
			title := map[bool]string{false: "10:00：释放 3，失败 0", true: "10:00: 3 released, 0 failed"}[en]
			if !strings.Contains(body, "<title>"+title+"</title>") {
				t.Errorf("the minute chart lacks the column %q", title)
			}
			title = map[bool]string{false: "12:00：释放 0，失败 2", true: "12:00: 0 released, 2 failed"}[en]
			if !strings.Contains(body, "<title>"+title+"</title>") {
				t.Errorf("the minute chart lacks the column %q", title)
			}
		}

		// Eleven minutes on: the due task (and the retry, due again) wait;
		// the oldest has waited 11 minutes and is red.
		b.clock.Advance(11 * time.Minute)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			checkText(t, body, "ov-backlog", "2")
			tag := testidTag(body, "ov-oldest-age")
			if !strings.Contains(tag, "bad") {
				t.Errorf("oldest due after 11 min is not red: %s", tag)
			}
			want := map[bool]string{false: "11 分钟", true: "11 min"}[en]
			checkText(t, body, "ov-oldest-age", want)
			if testidTag(body, "ov-oldest-warning") == "" {
				t.Error("no warning past 10 minutes")
			}
			if !strings.Contains(body, fmt.Sprintf(`datetime="%s"`, dueSince.Format(time.RFC3339))) {
				t.Error("the oldest due task's time is not shown")
			}
		}
		// A day later the windows are empty again; the queues remain.
		b.clock.Advance(24 * time.Hour)
		body := getPage(t, b, "/", false, http.StatusOK)
		checkText(t, body, "ov-rate-day", "—")
		checkText(t, body, "ov-manual", "1")
		if testidTag(body, "ov-classes-empty") == "" || testidTag(body, "ov-dups-empty") == "" {
			t.Error("no empty states for a quiet day")
		}
	})
}

// The range: 7 d adds the week's window and columns, each linked to the
// week's tasks, and draws an hourly chart; 1 h a per-minute one; anything
// else is refused and reads nothing. Every range's page carries the live
// stamp: when it was drawn, and how often the script redraws it.
func TestOverviewRange(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-a", 100, 0, "test")
		try(t, "sku-a", err)
		tkOrder(t, b, "old-1", "sku-a", "") // three days before now
		drain(t, b)
		b.clock.Advance(3*24*time.Hour + 30*time.Minute)
		for _, en := range []bool{false, true} {
			week := getPage(t, b, "/?range=7d", en, http.StatusOK)
			checkText(t, week, "ov-success-week", "1")
			checkText(t, week, "ov-success-day", "0")
			checkText(t, week, "ov-type-inventory-week-ok", "1")
			now := b.clock.Now()
			from := now.Add(-7 * 24 * time.Hour).UTC().Format(time.RFC3339)
			to := now.Truncate(time.Minute).Add(time.Minute).UTC().Format(time.RFC3339)
			want := "/tasks?" + (url.Values{"from": {from}, "to": {to}, "status": {"DONE"}, "type": {"inventory"}}).Encode()
			if got := mustHref(t, week, "ov-type-inventory-week-ok"); got != want {
				t.Errorf("the week's inventory releases link to %q, want %q", got, want)
			}
			if testidTag(week, "ov-range-7d") == "" || strings.Contains(testidTag(week, "ov-range-7d"), "href") {
				t.Errorf("7d is not the current range: %s", testidTag(week, "ov-range-7d"))
			}
			// One column an hour, dated: the release at the clock's start.
			start := modelstest.NewClock().Now().UTC()
			title := map[bool]string{false: "%s：释放 1，失败 0", true: "%s: 1 released, 0 failed"}[en]
			if col := fmt.Sprintf(title, start.Format("01-02 15:04")); !strings.Contains(week, "<title>"+col+"</title>") {
				t.Errorf("the week's chart lacks the column %q", col)
			}
			// Columns are 3 units wide: 168 hours.
			if !strings.Contains(testidElement(week, "ov-chart-minutes"), `viewBox="0 0 504 `) {
				t.Error("the week's chart is not 168 columns wide")
			}
			day := getPage(t, b, "/", en, http.StatusOK)
			if testidTag(day, "ov-rate-week") != "" || testidTag(day, "ov-range-24h") == "" {
				t.Error("the default range is not 24 h")
			}
			hour := getPage(t, b, "/?range=1h", en, http.StatusOK)
			if !strings.Contains(testidElement(hour, "ov-chart-minutes"), `viewBox="0 0 180 `) {
				t.Error("the hour's chart is not 60 columns wide")
			}
			// The week redraws every minute, the others every 5 s.
			for _, page := range []struct{ body, every string }{{week, "60"}, {day, "5"}, {hour, "5"}} {
				body := page.body
				if tag := testidTag(body, "live-stamp"); !strings.Contains(tag, `data-live="`+page.every+`"`) {
					t.Errorf("the live stamp is not set to %s s: %s", page.every, tag)
				}
				stamp := map[bool]string{false: "页面数据时间 ", true: "drawn at "}[en] + now.UTC().Format("15:04:05")
				checkText(t, body, "drawn-at", stamp)
			}
		}
		for _, bad := range []string{"30d", "1d", "7D"} {
			body := getPage(t, b, "/?range="+bad, false, http.StatusBadRequest)
			if !strings.Contains(body, "INVALID_INPUT") {
				t.Errorf("range=%s: no INVALID_INPUT in the refusal", bad)
			}
		}
	})
}

// An empty shop renders an overview of zeros with empty states.
func TestOverviewEmpty(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		waitDiffCount(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			for _, id := range []string{"ov-backlog", "ov-manual", "ov-retry", "ov-diffs", "ov-duplicates"} {
				checkText(t, body, id, "0")
			}
			checkText(t, body, "ov-oldest-age", "—")
			checkText(t, body, "ov-rate-hour", "—")
			if testidTag(body, "ov-classes-empty") == "" || testidTag(body, "ov-dups-empty") == "" || !strings.Contains(body, "<svg") {
				t.Error("empty states or charts missing")
			}
		}
	})
}

// waitDiffCount checks the overview says no reconciliation has run, runs
// one, and checks the overview then counts its open tickets.
func waitDiffCount(t *testing.T, b bundle) {
	t.Helper()
	first := getPage(t, b, "/", false, http.StatusOK)
	if testidTag(first, "ov-diffs-never") == "" {
		t.Fatal("before any run the overview did not say reconciliation never ran")
	}
	if _, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test"); err != nil {
		t.Fatal(err)
	}
	if testidTag(getPage(t, b, "/", false, http.StatusOK), "ov-diffs-at") == "" {
		t.Fatal("after a run the overview does not say when it ran")
	}
}

// The overview shows the last hour's close→released p50, p95 and p99 from
// the database: "—" with none, each figure red past the 2 s target, and a
// chart with the target drawn.
func TestOverviewLatency(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-a", 100, 0, "test")
		try(t, "sku-a", err)
		body := getPageBoth(t, b, "/", "", http.StatusOK)
		for _, id := range []string{"ov-latency-p50", "ov-latency-p95", "ov-latency-p99"} {
			checkText(t, body, id, "—")
		}
		checkText(t, body, "ov-latency-empty", "最近 1 小时没有释放。")
		if testidTag(body, "ov-latency-chart") != "" {
			t.Error("a chart without releases")
		}

		// Ten orders released 300 ms after their close: within the target.
		for i := range 10 {
			tkOrder(t, b, fmt.Sprintf("fast-%d", i), "sku-a", "")
		}
		b.clock.Advance(300 * time.Millisecond)
		drain(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			want := map[bool]string{false: "300 毫秒", true: "300 ms"}[en]
			for _, id := range []string{"ov-latency-p50", "ov-latency-p95", "ov-latency-p99"} {
				checkText(t, body, id, want)
				if strings.Contains(testidTag(body, id), "bad") {
					t.Errorf("%s within the target is red", id)
				}
			}
			checkText(t, body, "ov-latency-count", map[bool]string{false: "10 个释放，其中 0 个超过目标 2 秒", true: "10 releases, 0 of them past the 2 s target"}[en])
			chart := testidElement(body, "ov-latency-chart")
			target := map[bool]string{false: "目标 2 秒", true: "target 2 s"}[en]
			if !strings.Contains(chart, "<svg") || !strings.Contains(chart, `class="lat-target"`) || !strings.Contains(chart, target) ||
				strings.Count(chart, `class="lat-bar"`) != 3 {
				t.Errorf("the chart lacks its three bars or the target line:\n%s", chart)
			}
		}

		// One more, released 3 s after its close: the p95 and p99 go past
		// the target and turn red; the p50 does not.
		tkOrder(t, b, "slow-1", "sku-a", "")
		b.clock.Advance(3 * time.Second)
		drain(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			checkText(t, body, "ov-latency-p50", map[bool]string{false: "300 毫秒", true: "300 ms"}[en])
			for _, id := range []string{"ov-latency-p95", "ov-latency-p99"} {
				checkText(t, body, id, map[bool]string{false: "3 秒", true: "3 s"}[en])
				if !strings.Contains(testidTag(body, id), "bad") {
					t.Errorf("%s past the target is not red: %s", id, testidTag(body, id))
				}
			}
			if strings.Contains(testidTag(body, "ov-latency-p50"), "bad") {
				t.Error("the p50 within the target is red")
			}
			checkText(t, body, "ov-latency-count", map[bool]string{false: "11 个释放，其中 1 个超过目标 2 秒", true: "11 releases, 1 of them past the 2 s target"}[en])
			if n := strings.Count(testidElement(body, "ov-latency-chart"), `class="lat-bar over"`); n != 2 {
				t.Errorf("%d red bars, want 2", n)
			}
		}

		// Over an hour later they have left the window.
		b.clock.Advance(time.Hour + time.Second)
		body = getPage(t, b, "/", false, http.StatusOK)
		checkText(t, body, "ov-latency-p99", "—")
	})
}
