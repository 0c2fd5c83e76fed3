package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/auth"
	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// schedTwoStores opens two stores, two connection pools, on one fresh
// database, as two instances of unhold would.
func schedTwoStores(t *testing.T, d models.Dialect) (*models.Store, *models.Store) {
	t.Helper()
	dsn := modelstest.MigratedDSN(t, d)
	open := func() *models.Store {
		s, err := models.Open(context.Background(), dsn, models.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open(), open()
}

// schedSpan is one run of a job as the job itself saw it.
type schedSpan struct {
	instance   string
	start, end time.Time
}

// schedSpans collects runs from several goroutines.
type schedSpans struct {
	mu    sync.Mutex
	spans []schedSpan
}

func (s *schedSpans) add(sp schedSpan) {
	s.mu.Lock()
	s.spans = append(s.spans, sp)
	s.mu.Unlock()
}

// checkNoOverlap fails the test if two runs overlapped, and returns the
// runs per instance.
func (s *schedSpans) checkNoOverlap(t *testing.T) map[string]int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := slices.Clone(s.spans)
	sort.Slice(sp, func(i, j int) bool { return sp[i].start.Before(sp[j].start) })
	per := map[string]int{}
	// Against the latest end so far, so a long run covering several later
	// ones is caught too.
	var last int
	for i, r := range sp {
		per[r.instance]++
		if i > 0 && r.start.Before(sp[last].end) {
			t.Errorf("run %d on %s started at %s, before run %d on %s ended at %s",
				i, r.instance, r.start.Format("15:04:05.000"), last, sp[last].instance, sp[last].end.Format("15:04:05.000"))
		}
		if i == 0 || r.end.After(sp[last].end) {
			last = i
		}
	}
	return per
}

// schedRuns reads the recorded runs of a job, oldest first.
func schedRuns(t *testing.T, s *models.Store, job string) []models.JobRun {
	t.Helper()
	page, err := s.JobRuns(context.Background(), job, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(page.Runs)
	return page.Runs
}

// schedWait polls cond until it holds or d passes.
func schedWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two instances, each with its own connection pool on one database, tick
// the same job every second; each run outlasts the next tick. The job never
// runs in both at once, a tick that finds the job still running is recorded
// once as SKIPPED, and every run is recorded.
func TestTwoSchedulersNeverOverlap(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		sa, sb := schedTwoStores(t, d)
		var spans schedSpans
		var ran atomic.Int32
		mk := func(s *models.Store, name string) *jobs.Scheduler {
			job := jobs.Job{Name: "slow", Spec: "@every 1s", Run: func(ctx context.Context) (string, error) {
				sp := schedSpan{instance: name, start: time.Now()}
				time.Sleep(1500 * time.Millisecond)
				sp.end = time.Now()
				spans.add(sp)
				ran.Add(1)
				return "ran on " + name, nil
			}}
			sc, err := jobs.New(context.Background(), []jobs.Job{job}, jobs.Options{Store: s, Instance: name, Log: modelstest.QuietLog()})
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
		a, b := mk(sa, "a"), mk(sb, "b")
		a.Start()
		b.Start()
		schedWait(t, 15*time.Second, "two runs", func() bool { return ran.Load() >= 2 })
		a.Stop()
		b.Stop()
		per := spans.checkNoOverlap(t)
		t.Logf("runs per instance: %v", per)
		runs := schedRuns(t, sa, "slow")
		var ok, skipped int
		for _, r := range runs {
			switch r.Outcome {
			case models.JobOK:
				ok++
				if r.Summary != "ran on "+r.Instance || r.TriggeredBy != models.JobTriggerCron {
					t.Errorf("run %+v does not say what it did", r)
				}
			case models.JobSkipped:
				skipped++
			default:
				t.Errorf("unexpected run %+v", r)
			}
		}
		if ok != int(ran.Load()) {
			t.Errorf("%d OK runs recorded, the job ran %d times", ok, ran.Load())
		}
		if skipped == 0 || skipped > ok {
			t.Errorf("%d SKIPPED rows for %d runs, want at least one and at most one per run", skipped, ok)
		}
	})
}

// Operators of two instances press "run now" over and over: the job runs
// one at a time, both instances get to run it, and every refusal names the
// run that holds the job.
func TestTwoSchedulersRunNowTakeTurns(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		sa, sb := schedTwoStores(t, d)
		var spans schedSpans
		mk := func(s *models.Store, name string) *jobs.Scheduler {
			job := jobs.Job{Name: "fast", Spec: "@daily", Run: func(ctx context.Context) (string, error) {
				sp := schedSpan{instance: name, start: time.Now()}
				time.Sleep(30 * time.Millisecond)
				sp.end = time.Now()
				spans.add(sp)
				return "", nil
			}}
			sc, err := jobs.New(context.Background(), []jobs.Job{job}, jobs.Options{Store: s, Instance: name, Log: modelstest.QuietLog()})
			if err != nil {
				t.Fatal(err)
			}
			return sc
		}
		a, b := mk(sa, "a"), mk(sb, "b")
		var wg sync.WaitGroup
		var refused atomic.Int32
		errs := make(chan error, 2)
		deadline := time.Now().Add(2 * time.Second)
		for _, sc := range []*jobs.Scheduler{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					err := sc.RunNow(context.Background(), "fast", "ops:"+sc.Instance())
					var re *jobs.RunningError
					switch {
					case errors.As(err, &re):
						if re.Owner != "a" && re.Owner != "b" || re.TriggeredBy != "ops:"+re.Owner || re.Since.IsZero() {
							errs <- fmt.Errorf("refusal names no run: %+v", re)
							return
						}
						refused.Add(1)
					case err != nil:
						errs <- err
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		a.Stop()
		b.Stop()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		per := spans.checkNoOverlap(t)
		if per["a"] == 0 || per["b"] == 0 || refused.Load() == 0 {
			t.Fatalf("runs per instance %v, %d refusals: want both instances to run it and some refusals", per, refused.Load())
		}
		runs := schedRuns(t, sa, "fast")
		if len(runs) != per["a"]+per["b"] {
			t.Fatalf("%d runs recorded, %v ran", len(runs), per)
		}
		var audits []models.AuditEntry
		if err := sa.R.Where("action = ?", "job_run_now").Find(&audits).Error; err != nil {
			t.Fatal(err)
		}
		started := 0
		for _, e := range audits {
			if e.Outcome == "started" {
				started++
			}
		}
		if started != len(runs) || len(audits) != len(runs)+int(refused.Load()) {
			t.Fatalf("%d audit rows (%d started) for %d runs and %d refusals", len(audits), started, len(runs), refused.Load())
		}
	})
}

// A run longer than its lease keeps the job: the lease is renewed while it
// runs, and no other instance gets in until it ends.
func TestLeaseRenewedWhileRunning(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		sa, sb := schedTwoStores(t, d)
		release := make(chan struct{})
		job := jobs.Job{Name: "long", Spec: "@daily", Run: func(ctx context.Context) (string, error) {
			<-release
			return "done", nil
		}}
		a, err := jobs.New(context.Background(), []jobs.Job{job}, jobs.Options{Store: sa, Instance: "a", Lease: time.Second, Log: modelstest.QuietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.RunNow(context.Background(), "long", "ops:t"); err != nil {
			t.Fatal(err)
		}
		// 3.5 s: more than three leases. A lease of a second leaves each
		// renewal (every third of it) two thirds of a second of slack, which
		// a loaded machine running -race needs; at 300 ms it did not.
		for range 70 {
			got, err := sb.ClaimJob(context.Background(), models.JobClaim{Name: "long", Owner: "b", TriggeredBy: "cron", Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got.Taken() {
				t.Fatal("another instance took a job whose run was still renewing its lease")
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(release)
		a.Stop()
		runs := schedRuns(t, sa, "long")
		if len(runs) != 1 || runs[0].Outcome != models.JobOK || runs[0].Summary != "done" {
			t.Fatalf("runs = %+v", runs)
		}
		got, err := sb.ClaimJob(context.Background(), models.JobClaim{Name: "long", Owner: "b", TriggeredBy: "cron", Lease: time.Minute})
		if err != nil || !got.Taken() {
			t.Fatalf("claim after the run = %+v, %v", got, err)
		}
	})
}

// A run whose lease is taken from it (its process stalled past the lease)
// is cancelled at the next renewal and recorded as FAILED.
func TestLostLeaseCancelsTheRun(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		started := make(chan struct{})
		job := jobs.Job{Name: "victim", Spec: "@daily", Run: func(ctx context.Context) (string, error) {
			close(started)
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(10 * time.Second):
				return "never cancelled", nil
			}
		}}
		sc, err := jobs.New(context.Background(), []jobs.Job{job}, jobs.Options{Store: s, Instance: "a", Lease: 300 * time.Millisecond, Log: modelstest.QuietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.RunNow(context.Background(), "victim", "ops:t"); err != nil {
			t.Fatal(err)
		}
		<-started
		if err := s.W.Exec(`UPDATE job_locks SET token = 'stolen', owner = 'b' WHERE name = 'victim'`).Error; err != nil {
			t.Fatal(err)
		}
		schedWait(t, 5*time.Second, "the run to be recorded", func() bool { return len(schedRuns(t, s, "victim")) == 1 })
		sc.Stop()
		r := schedRuns(t, s, "victim")[0]
		if r.Outcome != models.JobFailed || !strings.Contains(r.Error, "lease") || r.Duration() > 5*time.Second {
			t.Fatalf("run = %+v, want FAILED soon for the lost lease", r)
		}
	})
}

// Cron runs are recorded when they did something or failed, with their
// summary, detail and error; a quiet run leaves only its lease row; a
// panic and a timeout are failures; every run is logged with its fields.
func TestRunsRecordedAndLogged(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		var logs schedLog
		var wg sync.WaitGroup
		once := func(run func(ctx context.Context) (string, error)) func(ctx context.Context) (string, error) {
			wg.Add(1)
			var done atomic.Bool
			return func(ctx context.Context) (string, error) {
				defer func() {
					if done.CompareAndSwap(false, true) {
						wg.Done()
					}
				}()
				return run(ctx)
			}
		}
		list := []jobs.Job{
			{Name: "quiet", Spec: "@every 1s", Run: once(func(context.Context) (string, error) { return "", nil })},
			{Name: "busy", Spec: "@every 1s", Run: once(func(context.Context) (string, error) { return "closed 3 orders\nline 1\nline 2", nil })},
			{Name: "broken", Spec: "@every 1s", Run: once(func(context.Context) (string, error) { return "closed 1 order", errors.New("db went away") })},
			{Name: "panics", Spec: "@every 1s", Run: once(func(context.Context) (string, error) { panic("boom") })},
			{Name: "slow", Spec: "@every 1s", Timeout: 50 * time.Millisecond, Run: once(func(ctx context.Context) (string, error) {
				<-ctx.Done()
				return "", ctx.Err()
			})},
		}
		sc, err := jobs.New(context.Background(), list, jobs.Options{Store: s, Instance: "node-1", Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		sc.Start()
		wg.Wait()
		sc.Stop()
		want := map[string]struct {
			outcome        models.JobOutcome
			summary, error string
		}{
			"busy":   {models.JobOK, "closed 3 orders", ""},
			"broken": {models.JobFailed, "closed 1 order", "db went away"},
			"panics": {models.JobFailed, "", "panic: boom"},
			"slow":   {models.JobFailed, "", "timed out after 50ms: context deadline exceeded"},
		}
		for job, w := range want {
			runs := schedRuns(t, s, job)
			if len(runs) == 0 {
				t.Errorf("%s: no run recorded", job)
				continue
			}
			r := runs[0]
			if r.Outcome != w.outcome || r.Summary != w.summary || r.Error != w.error || r.Instance != "node-1" ||
				r.TriggeredBy != "cron" || r.StartedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) {
				t.Errorf("%s: run %+v, want %+v", job, r, w)
			}
		}
		if r := schedRuns(t, s, "busy"); len(r) > 0 && r[0].Detail != "line 1\nline 2" {
			t.Errorf("busy detail = %q", r[0].Detail)
		}
		if r := schedRuns(t, s, "quiet"); len(r) != 0 {
			t.Errorf("a quiet run was recorded: %+v", r)
		}
		locks, err := s.JobLocks(context.Background())
		if err != nil || len(locks) != 5 {
			t.Fatalf("locks = %+v, %v", locks, err)
		}
		for _, l := range locks {
			if l.Token != "" || l.ReleasedAt == nil || l.Owner != "node-1" {
				t.Errorf("lock %+v not released by node-1", l)
			}
		}
		lines := logs.find(t, "busy")
		if len(lines) == 0 {
			t.Fatalf("no log line for busy:\n%s", logs.String())
		}
		l := lines[0]
		if l["level"] != "INFO" || l["instance"] != "node-1" || l["outcome"] != "OK" || l["summary"] != "closed 3 orders" ||
			l["trigger"] != "cron" || l["duration"] == nil {
			t.Errorf("busy log line = %v", l)
		}
		if l := logs.find(t, "broken"); len(l) == 0 || l[0]["level"] != "ERROR" || l[0]["error"] != "db went away" {
			t.Errorf("broken log lines = %v", l)
		}
		if l := logs.find(t, "quiet"); len(l) == 0 || l[0]["level"] != "DEBUG" {
			t.Errorf("quiet log lines = %v", l)
		}
	})
}

// schedLog is a JSON log sink safe for several goroutines.
type schedLog struct{ modelstest.LogBuffer }

// find returns the "job run" lines of job.
func (l *schedLog) find(t *testing.T, job string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["job"] == job && strings.HasPrefix(m["msg"].(string), "job run") {
			out = append(out, m)
		}
	}
	return out
}

// RunNow: unknown jobs, a held job, a local job, and after Stop.
func TestRunNow(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		ctx := context.Background()
		release := make(chan struct{})
		var wakes atomic.Int32
		list := []jobs.Job{
			{Name: "held", Spec: "@daily", Run: func(context.Context) (string, error) { <-release; return "ok", nil }},
			{Name: "local", Spec: "@every 1h", Local: true, Run: func(context.Context) (string, error) { wakes.Add(1); return "", nil }},
		}
		sc, err := jobs.New(ctx, list, jobs.Options{Store: s, Instance: "a", Log: modelstest.QuietLog()})
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.RunNow(ctx, "nope", "ops:t"); !errors.Is(err, jobs.ErrUnknownJob) {
			t.Fatalf("unknown job: %v", err)
		}
		if err := sc.RunNow(ctx, "held", "ops:t"); err != nil {
			t.Fatal(err)
		}
		err = sc.RunNow(ctx, "held", "ops:u")
		var re *jobs.RunningError
		if !errors.As(err, &re) || !errors.Is(err, jobs.ErrAlreadyRunning) || re.Owner != "a" || re.TriggeredBy != "ops:t" {
			t.Fatalf("second run now = %v", err)
		}
		if err := sc.RunNow(ctx, "local", "ops:t"); err != nil {
			t.Fatal(err)
		}
		close(release)
		sc.Stop()
		if err := sc.RunNow(ctx, "held", "ops:t"); !errors.Is(err, jobs.ErrStopped) {
			t.Fatalf("after stop: %v", err)
		}
		if wakes.Load() != 1 {
			t.Fatalf("local job ran %d times", wakes.Load())
		}
		if r := schedRuns(t, s, "held"); len(r) != 1 || r[0].TriggeredBy != "ops:t" || r[0].Summary != "ok" {
			t.Fatalf("held runs = %+v", r)
		}
		if r := schedRuns(t, s, "local"); len(r) != 0 {
			t.Fatalf("a local job was recorded: %+v", r)
		}
		var audits []models.AuditEntry
		if err := s.R.Where("action = ?", "job_run_now").Order("id").Find(&audits).Error; err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range audits {
			got = append(got, a.Actor+" "+a.Target+" "+a.Outcome)
		}
		want := []string{"ops:t job:held started", "ops:u job:held already_running", "ops:t job:local started"}
		if !slices.Equal(got, want) {
			t.Fatalf("audit = %q, want %q", got, want)
		}
	})
}

// The one list: every job, its schedule in the configured zone, and the
// next tick the page shows.
func TestListAndNextRun(t *testing.T) {
	t.Parallel()
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	s := modelstest.Open(t, models.SQLite, models.Options{})
	w := jobs.NewWorker(s, "w1", 10, time.Minute, modelstest.QuietLog())
	recon := func(context.Context) (string, error) { return "0 diffs", nil }
	list, err := jobs.List(jobs.Deps{Store: s, Worker: w, Reconcile: recon}, jobs.Schedule{ReconcileAt: "04:30", Location: sh})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range list {
		got = append(got, fmt.Sprintf("%s=%s local=%v", j.Name, j.Spec, j.Local))
	}
	want := []string{
		"release_sweep=@every 2s local=true",
		"lease_rescue=@every 30s local=false",
		"timeout_close=@every 10s local=false",
		"reconcile=30 4 * * * local=false",
		"ledger_report=5 0 * * * local=false",
		"attempt_cleanup=30 4 * * * local=false",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("jobs =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sc, err := jobs.New(context.Background(), list, jobs.Options{Store: s, Instance: "a", Location: sh, Log: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	infos := sc.Jobs()
	for _, in := range infos {
		if in.Next.Before(before) {
			t.Errorf("%s: next run %s is in the past", in.Name, in.Next)
		}
		if in.Name == jobs.JobReconcile {
			n := in.Next.In(sh)
			if n.Hour() != 4 || n.Minute() != 30 || n.Sub(before) > 24*time.Hour {
				t.Errorf("reconcile next = %s, want the next 04:30 in Shanghai", n)
			}
		}
	}
	sc.Start()
	sc.Stop()
	for _, in := range sc.Jobs() {
		if !in.Next.IsZero() {
			t.Errorf("%s: a stopped scheduler still shows a next run", in.Name)
		}
	}
	if _, err := jobs.List(jobs.Deps{Store: s, Reconcile: recon}, jobs.Schedule{ReconcileAt: "25:00"}); err == nil {
		t.Error("reconcile at 25:00 was accepted")
	}
	if list, _ := jobs.List(jobs.Deps{Store: s}, jobs.Schedule{}); len(list) != 4 {
		t.Errorf("without worker and reconcile: %d jobs, want 4", len(list))
	}
}

// ParseSpec takes what the config takes: whole-second intervals, cron
// specs and descriptors, and no time zone of the spec's own.
func TestParseSpec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{"@every 30s", true}, {"@every 1h30m", true}, {"5 0 * * *", true}, {"@daily", true},
		{"@every 500ms", false}, {"@every 1.5s", false}, {"@every 0s", false}, {"@every -1m", false},
		{"0 5 0 * * *", false}, {"daily", false}, {"", false},
		{"TZ=Asia/Tokyo 0 3 * * *", false}, {"CRON_TZ=UTC 5 0 * * *", false},
	} {
		if _, err := jobs.ParseSpec(tc.spec); (err == nil) != tc.ok {
			t.Errorf("ParseSpec(%q) = %v, want ok=%v", tc.spec, err, tc.ok)
		}
	}
}

func TestDailyAt(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"03:00": "0 3 * * *", "3:05": "5 3 * * *", "23:59": "59 23 * * *", "00:00": "0 0 * * *"} {
		if got, err := jobs.DailyAt(in); err != nil || got != want {
			t.Errorf("DailyAt(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3", "24:00", "12:60", "12:5", "-1:00", "12:00:00", "ab:cd", "123:00"} {
		if got, err := jobs.DailyAt(in); err == nil {
			t.Errorf("DailyAt(%q) = %q, want an error", in, got)
		}
	}
}

// The daily report totals yesterday in the configured zone, not in UTC.
func TestLedgerReportTotalsYesterday(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		sh, _ := time.LoadLocation("Asia/Shanghai")
		clock := modelstest.NewClock() // 2026-11-29 10:00 UTC = 18:00 in Shanghai
		s := modelstest.Open(t, d, models.Options{Now: clock.Now})
		ctx := context.Background()
		for _, sku := range []string{"a", "b"} {
			if _, err := s.SetStock(ctx, sku, 5, 0, "test"); err != nil {
				t.Fatal(err)
			}
		}
		place := func(no string) {
			t.Helper()
			if _, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "a", Qty: 2}}}); err != nil {
				t.Fatal(err)
			}
		}
		place("o-1") // 18:00 on the 29th in Shanghai
		clock.Advance(7 * time.Hour)
		place("o-2")             // 01:00 on the 30th in Shanghai: not the 29th
		clock.Advance(time.Hour) // 02:00 on the 30th: yesterday is the 29th
		var logs schedLog
		summary, err := jobs.LedgerReport(ctx, s, sh, slog.New(slog.NewJSONHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		want := "2026-11-29 (Asia/Shanghai): 3 ledger rows — inventory 3\n" +
			"inventory ADJUST: 2 rows, qty 10\n" +
			"inventory LOCK: 1 rows, qty 2"
		if summary != want {
			t.Fatalf("report =\n%s\nwant\n%s", summary, want)
		}
		if !strings.Contains(logs.String(), `"msg":"daily ledger report"`) || !strings.Contains(logs.String(), `"rows":3`) {
			t.Fatalf("report log: %s", logs.String())
		}
		clock.Advance(24 * time.Hour)
		if summary, _ := jobs.LedgerReport(ctx, s, sh, modelstest.QuietLog()); !strings.HasPrefix(summary, "2026-11-30 (Asia/Shanghai): 1 ledger rows") {
			t.Fatalf("next day's report = %q", summary)
		}
	})
}

// The cleanup job keeps recent attempts and those of open tasks, and the
// rollups of the last RollupRetention: o-1's two rows (its attempt, its
// latency) go, o-2's stay.
func TestCleanupAttemptsJob(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		modelstest.PlaceAndClose(t, s, "o-1", 1)
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		w.Drain(ctx)
		a := auth.New(s, auth.Options{})
		if _, err := a.CreateUser(ctx, "ann", auth.RoleViewer, "ann's long password", "test"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Login(ctx, auth.LoginRequest{Name: "ann", Password: "ann's long password"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(10 * 24 * time.Hour)
		modelstest.PlaceAndClose(t, s, "o-2", 1)
		w.Drain(ctx)
		live, _, err := a.Login(ctx, auth.LoginRequest{Name: "ann", Password: "ann's long password"})
		if err != nil {
			t.Fatal(err)
		}
		summary, err := jobs.CleanupAttempts(ctx, s, a, 7*24*time.Hour, 7*24*time.Hour)
		if err != nil || !strings.HasPrefix(summary, "deleted 1 attempts of finished tasks and 0 job runs") ||
			!strings.Contains(summary, "kept 7 days") || !strings.Contains(summary, ", 2 overview rollup rows from before") ||
			!strings.Contains(summary, ", 2 events from before") ||
			!strings.HasSuffix(summary, "; 1 ended sessions and login throttles") {
			t.Fatalf("cleanup = %q, %v", summary, err)
		}
		if _, _, _, err := a.SessionUser(ctx, live, auth.SessionPolicy{}); err != nil {
			t.Fatalf("the live session did not survive the cleanup: %v", err)
		}
		var rollups int64
		if err := s.R.Raw("SELECT (SELECT COUNT(*) FROM attempt_minutes) + (SELECT COUNT(*) FROM latency_minutes)").Scan(&rollups).Error; err != nil || rollups != 2 {
			t.Errorf("%d rollup rows left (%v), want o-2's 2", rollups, err)
		}
		c1, _ := s.OrderChain(ctx, "o-1")
		c2, _ := s.OrderChain(ctx, "o-2")
		if len(c1.Tasks[0].AttemptLog) != 0 || len(c2.Tasks[0].AttemptLog) != 1 || len(c1.Flows) != 2 {
			t.Fatalf("after cleanup: o-1 %d attempts %d flows, o-2 %d attempts", len(c1.Tasks[0].AttemptLog), len(c1.Flows), len(c2.Tasks[0].AttemptLog))
		}
		// o-1's events (closed, released) are older than kept; o-2's not.
		if len(c1.Events) != 0 || len(c2.Events) != 2 {
			t.Fatalf("after cleanup: o-1 has %d events, o-2 %d; want 0 and 2", len(c1.Events), len(c2.Events))
		}
	})
}

// The scheduler never starts a job while its previous run is still going:
// the first run blocks across several ticks, and neither a tick nor an
// operator's run-now may start another.
func TestSchedulerSkipsOverlappingRuns(t *testing.T) {
	t.Parallel()
	var running, overlaps, runs atomic.Int32
	started := make(chan struct{}, 16)
	release := make(chan struct{})
	job := jobs.Job{Name: "slow", Spec: "@every 1s", Run: func(ctx context.Context) (string, error) {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		if runs.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return "", nil
	}}
	sc, err := jobs.New(context.Background(), []jobs.Job{job}, jobs.Options{Log: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	sc.Start()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never ran")
	}
	time.Sleep(2500 * time.Millisecond) // two or more ticks while the first run blocks
	// An operator's run-now meanwhile is refused, not started beside it.
	if err := sc.RunNow(context.Background(), "slow", "test"); !errors.Is(err, jobs.ErrAlreadyRunning) {
		t.Errorf("run-now while running = %v, want ErrAlreadyRunning", err)
	}
	close(release)
	sc.Stop()
	if overlaps.Load() != 0 {
		t.Fatalf("%d runs overlapped a running one", overlaps.Load())
	}
}

func TestSchedulerRejectsBadSpec(t *testing.T) {
	t.Parallel()
	run := func(context.Context) (string, error) { return "", nil }
	for _, spec := range []string{"every now and then", "* * * *", "61 * * * *", "@every", "@every -1s", "@sometimes"} {
		if _, err := jobs.New(context.Background(), []jobs.Job{{Name: "x", Spec: spec, Run: run}}, jobs.Options{}); err == nil {
			t.Errorf("spec %q was accepted", spec)
		}
	}
	if _, err := jobs.New(context.Background(), []jobs.Job{{Name: "x", Spec: "@every 1s", Run: run}, {Name: "x", Spec: "@every 1s", Run: run}}, jobs.Options{}); err == nil {
		t.Error("a job listed twice was accepted")
	}
}

// In a zone whose clocks skip midnight (Santiago moves them from 00:00 to
// 01:00 on 2026-09-06), yesterday starts at 01:00: the job neither counts
// the day before's last hour nor names the day before.
func TestLedgerReportDayWithoutMidnight(t *testing.T) {
	t.Parallel()
	scl, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Date(2026, 9, 6, 0, 0, 0, 0, scl).Day(); d != 5 {
		t.Fatalf("the premise moved: 2026-09-06 00:00 in Santiago normalizes to day %d, not the 5th", d)
	}
	now := time.Date(2026, 9, 6, 3, 30, 0, 0, time.UTC) // 23:30 on the 5th in Santiago
	s := modelstest.Open(t, models.SQLite, models.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	if _, err := s.SetStock(ctx, "a", 5, 0, "test"); err != nil {
		t.Fatal(err)
	}
	now = time.Date(2026, 9, 6, 4, 30, 0, 0, time.UTC) // 01:30 on the 6th
	if _, err := s.SetStock(ctx, "b", 5, 0, "test"); err != nil {
		t.Fatal(err)
	}
	now = time.Date(2026, 9, 7, 15, 0, 0, 0, time.UTC)
	summary, err := jobs.LedgerReport(ctx, s, scl, modelstest.QuietLog())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(summary, "2026-09-06 (America/Santiago): 1 ledger rows") {
		t.Fatalf("report = %q, want the 6th's one row", summary)
	}
}
