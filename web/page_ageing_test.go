package web_test

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// ageingBundle is a server whose manual queue has sla.
func ageingBundle(sla time.Duration) func(*testing.T, models.Dialect) bundle {
	return func(t *testing.T, d models.Dialect) bundle {
		clock := modelstest.NewClock()
		return newBundle(modelstest.Open(t, d, models.Options{Now: clock.Now, ManualSLA: sla}), clock)
	}
}

// goManual sends a new order's stock task to MANUAL now, as a real one
// gets there (its SKU's lock taken away by hand, the release finds too
// little), and returns its id.
func goManual(t *testing.T, b bundle, no string) int64 {
	t.Helper()
	sku := "sku-" + no
	if _, err := b.s.SetStock(b.ctx, sku, 5, 0, "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
	try(t, "take the lock", b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = ?", sku).Error)
	tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	if res, err := b.s.ReleaseTask(b.ctx, tasks[0], "w1"); err != nil || res.Outcome != models.OutcomeManual {
		t.Fatalf("release: %+v, %v; want MANUAL", res, err)
	}
	return tasks[0].ID
}

// openTicket writes a ticket opened now, by a run of its own.
func openTicket(t *testing.T, b bundle, key, status string) int64 {
	t.Helper()
	now := b.clock.Now()
	var run, id int64
	try(t, "run", b.s.W.Raw("INSERT INTO recon_runs (trigger_type, status, started_at) VALUES ('CLI', 'DONE', ?) RETURNING id", now).
		Scan(&run).Error)
	try(t, "ticket", b.s.W.Raw(`INSERT INTO recon_diffs (resource_type, biz_key, check_name, expected, actual, sign, status,
		first_run_id, last_run_id, created_at, updated_at) VALUES ('inventory', ?, 'LOCKED', 1, 0, -1, ?, ?, ?, ?, ?) RETURNING id`,
		key, status, run, run, now, now).Scan(&id).Error)
	return id
}

var (
	taskRowRE   = regexp.MustCompile(`data-testid="task-row" data-task-id="(\d+)"`)
	ticketRowRE = regexp.MustCompile(`data-testid="recon-ticket" data-diff-id="(\d+)"`)
)

// rowIDs are the ids of a list's rows, in the page's order.
func rowIDs(re *regexp.Regexp, body string) []int64 {
	var out []int64
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, id)
	}
	return out
}

// The overview's manual queue table, SLA 4 h: each bucket's count of MANUAL
// tasks and unresolved tickets links to a list of exactly its items,
// longest waiting first, where the ones past the SLA carry a badge and
// every age reads as hours and minutes; a viewer sees it all. Breaks if a
// link's list and its count disagree, or the badge marks the wrong rows.
func TestOverviewAgeingLinks(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, ageingBundle(4*time.Hour), func(t *testing.T, b bundle) {
		start := b.clock.Now()
		old := goManual(t, b, "old")                                   // 4 h 0 min 1 s at the end
		oldTicket := openTicket(t, b, "k-old", models.DiffAcked)       // past the SLA too
		openTicket(t, b, "k-done", models.DiffResolved)                // not waiting
		b.clock.Advance(48*time.Minute + time.Second)                  // 3 h 12 min left
		mid := goManual(t, b, "mid")                                   // 3 h 12 min
		b.clock.Advance(3*time.Hour + 2*time.Minute)                   // 10 min left
		young := goManual(t, b, "young")                               // 10 min
		youngTicket := openTicket(t, b, "k-young", models.DiffOpen)    // 10 min
		youngTicket2 := openTicket(t, b, "k-young-2", models.DiffOpen) // 10 min
		b.clock.Advance(10 * time.Minute)
		if got := b.clock.Now().Sub(start); got != 4*time.Hour+time.Second {
			t.Fatalf("the oldest waited %s", got)
		}
		viewer := b.as(b.mustSignIn("cs", auth.RoleViewer))

		ov := getPageBoth(t, viewer, "/", "", http.StatusOK)
		for _, tc := range []struct {
			queue, bucket string
			re            *regexp.Regexp
			want          []int64
		}{
			{"tasks", "past_sla", taskRowRE, []int64{old}},
			{"tasks", "lt_sla", taskRowRE, []int64{mid}},
			{"tasks", "lt_1h", taskRowRE, []int64{young}},
			{"tickets", "past_sla", ticketRowRE, []int64{oldTicket}},
			{"tickets", "lt_sla", ticketRowRE, nil},
			{"tickets", "lt_1h", ticketRowRE, []int64{youngTicket, youngTicket2}},
		} {
			id := "ov-age-" + tc.queue + "-" + tc.bucket
			if n, _ := testidText(ov, id); n != strconv.Itoa(len(tc.want)) {
				t.Errorf("%s = %q, want %d", id, n, len(tc.want))
			}
			list := getPageBoth(t, viewer, mustHref(t, ov, id), "", http.StatusOK)
			if got := rowIDs(tc.re, list); !slices.Equal(got, tc.want) {
				t.Errorf("%s links to %v, want %v", id, got, tc.want)
			}
			kind := map[string]string{"tasks": "task", "tickets": "ticket"}[tc.queue]
			badges := len(regexp.MustCompile(`data-testid="`+kind+`-past-sla"`).FindAllString(list, -1))
			if want := map[bool]int{true: len(tc.want), false: 0}[tc.bucket == "past_sla"]; badges != want {
				t.Errorf("%s's list has %d past-SLA badges, want %d", id, badges, want)
			}
		}
		if got, _ := testidText(ov, "ov-age-tasks-oldest"); got != "4 小时 0 分" {
			t.Errorf("oldest task = %q, want 4 小时 0 分", got)
		}
		// Every MANUAL task by age, oldest first, each age readable.
		en := getPage(t, viewer, mustHref(t, ov, "ov-age-tasks-oldest"), true, http.StatusOK)
		if got := rowIDs(taskRowRE, en); !slices.Equal(got, []int64{old, mid, young}) {
			t.Errorf("oldest first = %v, want %v", got, []int64{old, mid, young})
		}
		if got, _ := testidText(en, "task-waiting"); got != "4 h 0 min" {
			t.Errorf("first age = %q, want 4 h 0 min", got)
		}
		midRow := en[regexp.MustCompile(`data-task-id="` + strconv.FormatInt(mid, 10) + `"`).FindStringIndex(en)[0]:]
		if got, _ := testidText(midRow, "task-waiting"); got != "3 h 12 min" {
			t.Errorf("mid age = %q, want 3 h 12 min", got)
		}
		detail := getPage(t, viewer, "/tasks/"+strconv.FormatInt(old, 10), true, http.StatusOK)
		if got, _ := testidText(detail, "task-waiting"); got != "4 h 0 min" || testidTag(detail, "task-past-sla") == "" {
			t.Errorf("the task's page says it waited %q (past-SLA mark %q)", got, testidTag(detail, "task-past-sla"))
		}
		tickets := getPage(t, viewer, mustHref(t, ov, "ov-age-tickets-oldest"), true, http.StatusOK)
		if got := rowIDs(ticketRowRE, tickets); !slices.Equal(got, []int64{oldTicket, youngTicket, youngTicket2}) {
			t.Errorf("tickets oldest first = %v", got)
		}
	})
}

// With an SLA of an hour or less the overview has no "1 h – SLA" column
// and its first bucket ends at the SLA; the list's age filter offers the
// same two.
func TestOverviewAgeingShortSLA(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, ageingBundle(30*time.Minute), func(t *testing.T, b bundle) {
		goManual(t, b, "a")
		b.clock.Advance(30 * time.Minute)
		goManual(t, b, "b")
		en := getPage(t, b, "/", true, http.StatusOK)
		if tag := testidTag(en, "ov-age-tasks-lt_sla"); tag != "" {
			t.Errorf("a 30 min SLA shows the 1 h – SLA bucket: %s", tag)
		}
		for id, want := range map[string]string{"ov-age-tasks-past_sla": "1", "ov-age-tasks-lt_1h": "1"} {
			if got, _ := testidText(en, id); got != want {
				t.Errorf("%s = %q, want %s", id, got, want)
			}
		}
		table := testidElement(en, "ov-ageing")
		for _, want := range []string{"&lt; 30 min", "≥ 30 min (past the SLA)"} {
			if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(table) {
				t.Errorf("the table does not say %q:\n%s", want, markupText(table))
			}
		}
		list := getPage(t, b, "/tasks?status=MANUAL", true, http.StatusOK)
		if opts := markupText(testidElement(list, "f-age")); opts != "All < 30 min ≥ 30 min (past the SLA)" {
			t.Errorf("age choices = %q", opts)
		}
	})
}

// A bad age or sort is refused with a message, on the page and the API.
func TestAgeingBadInput(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, path := range []string{
			"/tasks?age=old",
			"/tasks?age=past_sla&status=RETRY",
			"/tasks?age=lt_1h&due=1",
			"/tasks?sort=age&status=RETRY",
			"/tasks?sort=age",
			"/recon?age=1h",
			"/recon?sort=oldest",
			"/recon?age=past_sla&status=RESOLVED",
		} {
			if rec := servePage(b, path, "en", ""); rec.Code != http.StatusBadRequest {
				t.Errorf("%s = %d, want 400", path, rec.Code)
			}
		}
		rec := b.call(http.MethodGet, "/api/v1/tasks?age=soon", "")
		wantError(t, rec, http.StatusBadRequest, "INVALID_INPUT")
		rec = b.call(http.MethodGet, "/api/v1/recon/tickets?age=past_sla&sort=age", "")
		if rec.Code != http.StatusOK {
			t.Errorf("tickets by age over the API = %d\n%s", rec.Code, rec.Body)
		}
	})
}
