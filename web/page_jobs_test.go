package web_test

import (
	"context"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/auth"
	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// jbEnv is a bundle whose server runs a scheduler with the real job list;
// reconciliation blocks until gate is closed, so a test can see it running.
type jbEnv struct {
	bundle
	sched   *jobs.Scheduler
	gate    chan struct{}
	entered chan struct{}
	open    func() // opens gate, once
}

func jbShanghai(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func jbSetup(t *testing.T, d models.Dialect) jbEnv {
	t.Helper()
	clock := modelstest.NewClock() // 2026-11-29 10:00 UTC, 18:00 in Shanghai
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	sh := jbShanghai(t)
	env := jbEnv{gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	recon := func(ctx context.Context) (string, error) {
		env.entered <- struct{}{}
		select {
		case <-env.gate:
			return "0 diffs found", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	w := jobs.NewWorker(s, "node-1", 10, time.Minute, slog.New(slog.DiscardHandler))
	list, err := jobs.List(jobs.Deps{Store: s, Worker: w, Reconcile: recon}, jobs.Schedule{Location: sh})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := jobs.New(context.Background(), list, jobs.Options{Store: s, Instance: "node-1", Location: sh})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	env.open = func() { once.Do(func() { close(env.gate) }) }
	t.Cleanup(func() {
		env.open()
		sched.Stop()
	})
	env.sched = sched
	env.bundle = jbBundle(s, clock, sched, sh)
	return env
}

// jbBundle is newBundle with a scheduler (nil: none) and a time zone.
func jbBundle(s *models.Store, clock *modelstest.Clock, sched *jobs.Scheduler, loc *time.Location) bundle {
	b := bundle{s: s, a: auth.New(s, auth.Options{}), clock: clock, wakes: &atomic.Int64{}, logs: &modelstest.LogBuffer{}, ctx: context.Background()}
	b.e = web.New(web.Deps{Store: s, Auth: b.a, Log: slog.New(slog.NewTextHandler(b.logs, nil)), Wake: func() { b.wakes.Add(1) },
		Location: loc, Scheduler: sched, Sessions: testSessions})
	b.who = b.mustSignIn("jobs-admin", auth.RoleAdmin)
	return b
}

// jbGet fetches a page in Chinese or English, with cookies, failing unless
// the status is want or a key is left untranslated.
func jbGet(t *testing.T, b bundle, path string, en bool, want int, cookies ...*http.Cookie) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if en {
		req.AddCookie(&http.Cookie{Name: "lang", Value: "en"})
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := b.serve(req)
	if rec.Code != want {
		t.Fatalf("GET %s = %d, want %d\n%s", path, rec.Code, want, rec.Body)
	}
	body := rec.Body.String()
	if strings.Contains(body, "⟦") {
		t.Fatalf("GET %s (en=%v) has an untranslated key:\n%s", path, en, body)
	}
	return body
}

// jbPost posts a form in Chinese or English and returns the answer.
func jbPost(b bundle, path string, en bool) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if en {
		req.AddCookie(&http.Cookie{Name: "lang", Value: "en"})
	}
	return b.serve(req)
}

// jbFlash checks a POST answered 303 to /jobs and returns the flash text
// the next page shows, and whether it is a success.
func jbFlash(t *testing.T, b bundle, rec *httptest.ResponseRecorder, en bool) (string, bool) {
	t.Helper()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/jobs" {
		t.Fatalf("POST = %d to %q, want 303 to /jobs\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}
	body := jbGet(t, b, "/jobs", en, http.StatusOK, rec.Result().Cookies()...)
	tag := jbTag(body, "flash")
	text, ok := jbText(body, "flash")
	if !ok {
		t.Fatalf("no flash after the POST:\n%s", body)
	}
	return text, strings.Contains(tag, " ok")
}

// jbTag is the start tag of the element whose data-testid is id.
func jbTag(body, id string) string {
	return regexp.MustCompile(`<[^<>]*data-testid="` + regexp.QuoteMeta(id) + `"[^<>]*>`).FindString(body)
}

// jbText is the text of the element whose data-testid is id, nested tags
// included, spaces folded.
func jbText(body, id string) (string, bool) {
	tag := jbTag(body, id)
	if tag == "" {
		return "", false
	}
	rest := body[strings.Index(body, tag)+len(tag):]
	name := regexp.MustCompile(`^<([a-z0-9]+)`).FindStringSubmatch(tag)[1]
	// The element ends at its matching end tag.
	depth, i := 1, 0
	re := regexp.MustCompile(`(?i)<(/?)` + name + `\b[^>]*>`)
	for depth > 0 {
		m := re.FindStringSubmatchIndex(rest[i:])
		if m == nil {
			return "", false
		}
		if rest[i+m[2]:i+m[3]] == "/" {
			depth--
		} else {
			depth++
		}
		if depth == 0 {
			rest = rest[:i+m[0]]
			break
		}
		i += m[1]
	}
	s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(rest, " ")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " "), true
}

// jbRuns are the texts of the run rows inside the element id.
func jbRuns(t *testing.T, body, id string) []string {
	t.Helper()
	tag := jbTag(body, id)
	if tag == "" {
		return nil
	}
	table := body[strings.Index(body, tag):]
	table = table[:strings.Index(table, "</table>")]
	var out []string
	for _, row := range strings.Split(table, `data-testid="job-run"`)[1:] {
		s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString("<"+row, " ")
		out = append(out, strings.Join(strings.Fields(html.UnescapeString(s)), " "))
	}
	return out
}

func jbWant(t *testing.T, body, id, want string) {
	t.Helper()
	got, ok := jbText(body, id)
	if !ok {
		t.Errorf("no element %q", id)
		return
	}
	if got != want {
		t.Errorf("%s = %q, want %q", id, got, want)
	}
}

func jbHas(t *testing.T, body, id, part string) {
	t.Helper()
	got, ok := jbText(body, id)
	if !ok {
		t.Errorf("no element %q", id)
		return
	}
	if !strings.Contains(got, part) {
		t.Errorf("%s = %q, want it to contain %q", id, got, part)
	}
}

// jbWaitRuns waits until job has n recorded runs.
func jbWaitRuns(t *testing.T, b bundle, job string, n int) []models.JobRun {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := b.s.JobRuns(b.ctx, job, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) >= n {
			return page.Runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d runs, want %d", job, len(page.Runs), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func jbAudit(t *testing.T, b bundle) []string {
	t.Helper()
	var rows []models.AuditEntry
	if err := b.s.R.Where("action = ?", "job_run_now").Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Actor+" "+r.Target+" "+r.Outcome)
	}
	return out
}

// The page lists every job with its schedule in words, its next run and an
// empty record, in both languages.
func TestJobsPageLists(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := jbSetup(t, d)
			var next time.Time
			for _, in := range env.sched.Jobs() {
				if in.Name == jobs.JobReconcile {
					next = in.Next
				}
			}
			schedules := map[string][2]string{
				"release_sweep":   {"每 2 秒 @every 2s · 每个实例各自运行", "every 2 s @every 2s · runs on every instance"},
				"lease_rescue":    {"每 30 秒 @every 30s", "every 30 s @every 30s"},
				"timeout_close":   {"每 10 秒 @every 10s", "every 10 s @every 10s"},
				"reconcile":       {"每天 03:00 0 3 * * *", "daily at 03:00 0 3 * * *"},
				"ledger_report":   {"每天 00:05 5 0 * * *", "daily at 00:05 5 0 * * *"},
				"attempt_cleanup": {"每天 04:30 30 4 * * *", "daily at 04:30 30 4 * * *"},
			}
			for i, en := range []bool{false, true} {
				body := jbGet(t, env.bundle, "/jobs", en, http.StatusOK)
				here := []string{"本进程（实例 node-1）运行调度器。计划时间按 Asia/Shanghai。",
					"This process (instance node-1) runs the scheduler. Times of day are in Asia/Shanghai."}[i]
				jbWant(t, body, "jobs-here", here)
				if jbTag(body, "jobs-not-running") != "" {
					t.Error("says the scheduler is not running")
				}
				for name, want := range schedules {
					jbWant(t, body, "job-"+name+"-schedule", want[i])
					jbWant(t, body, "job-"+name+"-state", []string{"空闲", "Idle"}[i])
					jbHas(t, body, "job-"+name+"-empty", []string{"还没有记录的运行", "No recorded run yet"}[i])
					if !strings.Contains(jbTag(body, "job-"+name+"-run"), "submit") ||
						!strings.Contains(body, `action="/jobs/`+name+`/run"`) {
						t.Errorf("%s has no run-now button", name)
					}
				}
				if !strings.Contains(body, `<time datetime="`+next.UTC().Format(time.RFC3339)+`"`) {
					t.Errorf("reconcile's next run %s is not on the page", next.UTC().Format(time.RFC3339))
				}
				if sh := next.In(jbShanghai(t)); sh.Hour() != 3 || sh.Minute() != 0 {
					t.Errorf("reconcile next = %s, want 03:00 in Shanghai", sh)
				}
				jbHas(t, body, "job-reconcile-next", next.In(jbShanghai(t)).Format("2006-01-02 15:04:05"))
				if got := strings.Count(body, `<section id="job-`); got != 6 {
					t.Errorf("%d job sections, want 6", got)
				}
			}
		})
	}
}

// Run now: started with a flash and an audit row, the run recorded and
// shown; a second press while it runs is refused and audited; an unknown
// job is a 404 page.
func TestJobsRunNow(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := jbSetup(t, d)
			b := env.bundle
			msg, ok := jbFlash(t, b, jbPost(b, "/jobs/ledger_report/run", false), false)
			if !ok || msg != "已开始运行：账本日报。结果稍后出现在下面。" {
				t.Fatalf("flash = %q ok=%v", msg, ok)
			}
			runs := jbWaitRuns(t, b, "ledger_report", 1)
			if r := runs[0]; r.Outcome != models.JobOK || r.TriggeredBy != "jobs-admin" ||
				r.Summary != "2026-11-28 (Asia/Shanghai): 0 ledger rows" {
				t.Fatalf("run = %+v", r)
			}
			for i, en := range []bool{false, true} {
				body := jbGet(t, b, "/jobs", en, http.StatusOK)
				rows := jbRuns(t, body, "job-ledger_report-runs")
				want := []string{"成功 node-1 手动：jobs-admin 2026-11-28（Asia/Shanghai）：账本 0 行",
					"OK node-1 manual: jobs-admin 2026-11-28 (Asia/Shanghai): 0 ledger rows"}[i]
				if len(rows) != 1 || !strings.Contains(rows[0], want) || !strings.HasPrefix(rows[0], "2026-11-29 18:00:00") {
					t.Errorf("ledger_report rows = %q, want one with %q", rows, want)
				}
				jbHas(t, body, "job-ledger_report-state", []string{"空闲 · 上次开始：2026-11-29 18:00:00，实例 node-1（手动：jobs-admin）",
					"Idle · Last started 2026-11-29 18:00:00 on node-1 (manual: jobs-admin)"}[i])
				if !strings.Contains(jbTag(body, "job-ledger_report-more"), `href="/jobs?job=ledger_report"`) {
					t.Errorf("no link to the job's runs")
				}
			}

			// Reconciliation blocks until the gate opens: it is running.
			if msg, ok := jbFlash(t, b, jbPost(b, "/jobs/reconcile/run", true), true); !ok || msg != "Started: Reconciliation. Its result will show below." {
				t.Fatalf("flash = %q ok=%v", msg, ok)
			}
			<-env.entered
			body := jbGet(t, b, "/jobs", false, http.StatusOK)
			jbWant(t, body, "job-reconcile-state", "运行中：实例 node-1（手动：jobs-admin）自 2026-11-29 18:00:00 起，租约到 2026-11-29 18:01:00")
			jbHas(t, body, "job-reconcile-summary", "对账 每天 03:00")
			jbHas(t, body, "job-reconcile-summary", "运行中（node-1） 无")
			jbHas(t, body, "job-ledger_report-summary", "空闲 成功 2026-11-29 18:00:00")
			jbHas(t, body, "job-release_sweep-summary", "空闲 不记录")
			msg, ok = jbFlash(t, b, jbPost(b, "/jobs/reconcile/run", false), false)
			if ok || msg != "对账 正在运行（实例 node-1，自 2026-11-29 18:00:00 起），没有重复启动。" {
				t.Fatalf("second press flash = %q ok=%v", msg, ok)
			}
			env.open()
			runs = jbWaitRuns(t, b, "reconcile", 1)
			if len(runs) != 1 || runs[0].Summary != "0 diffs found" {
				t.Fatalf("reconcile runs = %+v", runs)
			}

			// The sweep is local: it runs, is audited, and is not recorded.
			if _, ok := jbFlash(t, b, jbPost(b, "/jobs/release_sweep/run", false), false); !ok {
				t.Fatal("sweep not started")
			}
			want := []string{
				"jobs-admin job:ledger_report started",
				"jobs-admin job:reconcile started",
				"jobs-admin job:reconcile already_running",
				"jobs-admin job:release_sweep started",
			}
			if got := jbAudit(t, b); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("audit =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}

			for _, en := range []bool{false, true} {
				rec := jbPost(b, "/jobs/no_such_job/run", en)
				if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `data-testid="error-code"`) || strings.Contains(rec.Body.String(), "⟦") {
					t.Fatalf("unknown job = %d\n%s", rec.Code, rec.Body)
				}
				jbGet(t, b, "/jobs?job=no_such_job", en, http.StatusNotFound)
			}
			if got := jbAudit(t, b); len(got) != len(want) {
				t.Fatalf("an unknown job was audited: %q", got)
			}
			if runs, _ := b.s.JobRuns(b.ctx, "release_sweep", 0, 10); len(runs.Runs) != 0 {
				t.Fatalf("the sweep was recorded: %+v", runs.Runs)
			}
		})
	}
}

// One job's runs, 50 a page, newest first, with the pager; bad
// parameters are 400 pages.
func TestJobsOneJobPages(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := jbSetup(t, d)
			b := env.bundle
			for i := range 55 {
				c, err := b.s.ClaimJob(b.ctx, models.JobClaim{Name: "attempt_cleanup", Owner: "node-2", TriggeredBy: "cron", Lease: time.Minute})
				if err != nil || !c.Taken() {
					t.Fatalf("claim: %+v %v", c, err)
				}
				b.clock.Advance(1500 * time.Millisecond)
				run := models.JobRun{Job: "attempt_cleanup", Instance: "node-2", TriggeredBy: "cron", Outcome: models.JobOK,
					Summary: "deleted " + strings.Repeat("x", i%3) + "run" + string(rune('A'+i%26)), StartedAt: c.StartedAt, FinishedAt: b.clock.Now()}
				if i == 54 {
					run.Outcome, run.Error, run.Detail = models.JobFailed, "disk full", "batch 1: 1000\nbatch 2: failed"
				}
				if _, _, err := b.s.FinishJob(b.ctx, c.Token, run, true); err != nil {
					t.Fatal(err)
				}
			}
			for _, en := range []bool{false, true} {
				all := jbGet(t, b, "/jobs", en, http.StatusOK)
				if rows := jbRuns(t, all, "job-attempt_cleanup-runs"); len(rows) != 10 {
					t.Errorf("the list shows %d runs of a job, want the last 10", len(rows))
				}
				first := jbGet(t, b, "/jobs?job=attempt_cleanup", en, http.StatusOK)
				if got := strings.Count(first, `<section id="job-`); got != 1 {
					t.Errorf("one job's page shows %d jobs", got)
				}
				rows := jbRuns(t, first, "job-attempt_cleanup-runs")
				if len(rows) != 50 {
					t.Fatalf("first page has %d runs", len(rows))
				}
				if !strings.Contains(rows[0], []string{"失败", "FAILED"}[map[bool]int{false: 0, true: 1}[en]]) ||
					!strings.Contains(rows[0], "disk full") || !strings.Contains(rows[0], "batch 2: failed") ||
					!strings.Contains(rows[0], []string{"1.5 秒", "1.5 s"}[map[bool]int{false: 0, true: 1}[en]]) {
					t.Errorf("newest run = %q", rows[0])
				}
				next := jbTag(first, "jobs-next")
				m := regexp.MustCompile(`href="([^"]*)"`).FindStringSubmatch(next)
				if m == nil || jbTag(first, "jobs-first") != "" {
					t.Fatalf("pager: next %q first %q", next, jbTag(first, "jobs-first"))
				}
				u, _ := url.Parse(html.UnescapeString(m[1]))
				second := jbGet(t, b, u.String(), en, http.StatusOK)
				if rows := jbRuns(t, second, "job-attempt_cleanup-runs"); len(rows) != 5 || jbTag(second, "jobs-next") != "" || jbTag(second, "jobs-first") == "" {
					t.Errorf("second page: %d runs, next %q, first %q", len(rows), jbTag(second, "jobs-next"), jbTag(second, "jobs-first"))
				}
				for _, bad := range []string{"/jobs?job=attempt_cleanup&before=abc", "/jobs?job=attempt_cleanup&before=0", "/jobs?job=attempt_cleanup&before=-3"} {
					jbGet(t, b, bad, en, http.StatusBadRequest)
				}
			}
		})
	}
}

// Without a scheduler in the process the page still shows what the
// database recorded, says so, and runs nothing.
func TestJobsPageWithoutScheduler(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sh := jbShanghai(t)
		b = jbBundle(b.s, b.clock, nil, sh)
		body := jbGet(t, b, "/jobs", false, http.StatusOK)
		jbHas(t, body, "jobs-not-running", "本进程没有运行调度器")
		jbHas(t, body, "jobs-none", "还没有任何任务的记录")

		done, err := b.s.ClaimJob(b.ctx, models.JobClaim{Name: "reconcile", Owner: "node-2", TriggeredBy: "cron", Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.s.FinishJob(b.ctx, done.Token, models.JobRun{Job: "reconcile", Instance: "node-2", TriggeredBy: "cron",
			Outcome: models.JobOK, Summary: "2 diffs", StartedAt: done.StartedAt, FinishedAt: b.clock.Now()}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.ClaimJob(b.ctx, models.JobClaim{Name: "reconcile", Owner: "node-3", TriggeredBy: "ops:x", Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.ClaimJob(b.ctx, models.JobClaim{Name: "ledger_report", Owner: "node-4", TriggeredBy: "cron", Lease: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(45 * time.Second) // node-4 vanished: its lease ran out
		for i, en := range []bool{false, true} {
			body := jbGet(t, b, "/jobs", en, http.StatusOK)
			if jbTag(body, "jobs-here") != "" || strings.Contains(body, `/run"`) || jbTag(body, "job-reconcile-schedule") != "" {
				t.Errorf("a page without scheduler offers schedules or run buttons:\n%s", body)
			}
			if got := strings.Count(body, `<section id="job-`); got != 2 {
				t.Errorf("%d job sections, want reconcile and ledger_report", got)
			}
			jbWant(t, body, "job-reconcile-state", []string{
				"运行中：实例 node-3（手动：ops:x）自 2026-11-29 18:00:00 起，租约到 2026-11-29 18:01:00",
				"Running on node-3 (manual: ops:x) since 2026-11-29 18:00:00, lease until 2026-11-29 18:01:00"}[i])
			jbWant(t, body, "job-ledger_report-state", []string{
				"实例 node-4 于 2026-11-29 18:00:00 开始的运行已失联：租约在 2026-11-29 18:00:30 到期，下一次领取时会记为失败",
				"The run started by node-4 at 2026-11-29 18:00:00 stopped answering: its lease ran out at 2026-11-29 18:00:30; the next claim records it as failed"}[i])
			jbHas(t, body, "job-ledger_report-summary", []string{"运行失联", "run lost"}[i])
			if rows := jbRuns(t, body, "job-reconcile-runs"); len(rows) != 1 || !strings.Contains(rows[0], "2 diffs") {
				t.Errorf("reconcile rows = %q", rows)
			}
			msg, ok := jbFlash(t, b, jbPost(b, "/jobs/reconcile/run", en), en)
			if ok || msg != []string{"本进程没有运行调度器，无法立即运行。", "The scheduler is not running in this process; nothing was started."}[i] {
				t.Errorf("run now without scheduler: %q ok=%v", msg, ok)
			}
		}
		jbGet(t, b, "/jobs?job=reconcile", true, http.StatusOK)
		jbGet(t, b, "/jobs?job=timeout_close", true, http.StatusNotFound)
		if got := jbAudit(t, b); len(got) != 0 {
			t.Fatalf("audited without a run: %q", got)
		}
	})
}
