package models_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// goManual sends a new order's stock task to MANUAL now, the way a real
// one gets there: its SKU's lock was taken away by hand, so the worker's
// release finds too little (LOCKED_SHORT). It returns the task.
func (b bundle) goManual(t *testing.T, no string) models.ReleaseTask {
	t.Helper()
	sku := "sku-" + no
	must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 5, 0, "test"); return err })
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}
	must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
	must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); return err })
	must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = ?", sku).Error })
	if got := b.drain(t, "w1"); got[models.OutcomeManual] != 1 {
		t.Fatalf("drain = %v, want one MANUAL", got)
	}
	var tk models.ReleaseTask
	must(t, func() error { return b.s.R.Where("order_no = ?", no).Take(&tk).Error })
	if tk.Status != models.TaskManual || tk.ManualSince == nil || !tk.ManualSince.Equal(b.clock.Now()) {
		t.Fatalf("task %s: status %s, manual since %v; want MANUAL since %v", no, tk.Status, tk.ManualSince, b.clock.Now())
	}
	return tk
}

// plantTicket writes an unresolved (or resolved) ticket opened now, by a
// run of its own, and returns its id.
func (b bundle) plantTicket(t *testing.T, key, status string) int64 {
	t.Helper()
	now := b.clock.Now()
	var run int64
	must(t, func() error {
		return b.s.W.Raw("INSERT INTO recon_runs (trigger_type, status, started_at) VALUES ('CLI', 'DONE', ?) RETURNING id", now).
			Scan(&run).Error
	})
	var id int64
	must(t, func() error {
		return b.s.W.Raw(`INSERT INTO recon_diffs (resource_type, biz_key, check_name, expected, actual, sign, status,
			first_run_id, last_run_id, created_at, updated_at) VALUES ('inventory', ?, 'LOCKED', 1, 0, -1, ?, ?, ?, ?, ?) RETURNING id`,
			key, status, run, run, now, now).Scan(&id).Error
	})
	return id
}

// The manual queue's buckets across their edges, on a fixed clock: an item
// a second before, at and after the SLA, and before and at an hour; the
// buckets' lists (the overview's links) hold exactly the items counted,
// the age-sorted list longest waiting first. With an SLA of an hour or
// less the middle bucket is empty and the first ends at the SLA.
// Breaks if an edge falls in the wrong bucket, a list and its count
// disagree, or a resolved ticket is aged.
func TestManualAgeBuckets(t *testing.T) {
	t.Parallel()
	type item struct {
		age  time.Duration
		want models.ManualAge
	}
	for _, tc := range []struct {
		name  string
		sla   time.Duration
		items []item // oldest first
	}{
		{"sla 4h", 4 * time.Hour, []item{
			{4*time.Hour + time.Second, models.AgePastSLA},
			{4 * time.Hour, models.AgePastSLA},
			{4*time.Hour - time.Second, models.AgeUnderSLA},
			{time.Hour, models.AgeUnderSLA},
			{time.Hour - time.Second, models.AgeUnderHour},
			{0, models.AgeUnderHour},
		}},
		{"sla 30m", 30 * time.Minute, []item{
			{time.Hour, models.AgePastSLA},
			{30*time.Minute + time.Second, models.AgePastSLA},
			{30 * time.Minute, models.AgePastSLA},
			{30*time.Minute - time.Second, models.AgeUnderHour},
			{0, models.AgeUnderHour},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, d := range modelstest.Engines {
				t.Run(string(d), func(t *testing.T) {
					t.Parallel()
					b := setup(t, d, models.Options{ManualSLA: tc.sla})
					if b.s.ManualSLA() != tc.sla {
						t.Fatalf("ManualSLA = %s, want %s", b.s.ManualSLA(), tc.sla)
					}
					// A resolved ticket, older than all, is no one's work.
					b.plantTicket(t, "resolved", models.DiffResolved)
					start := b.clock.Now()
					wantTasks := map[models.ManualAge][]int64{}
					wantTickets := map[models.ManualAge][]int64{}
					var oldestTask, oldestTicket int64
					for i, it := range tc.items {
						if i > 0 {
							b.clock.Advance(tc.items[i-1].age - it.age)
						}
						tk := b.goManual(t, fmt.Sprintf("m%d", i))
						status := models.DiffOpen
						if i%2 == 1 {
							status = models.DiffAcked
						}
						id := b.plantTicket(t, fmt.Sprintf("k%d", i), status)
						wantTasks[it.want] = append(wantTasks[it.want], tk.ID)
						wantTickets[it.want] = append(wantTickets[it.want], id)
						if i == 0 {
							oldestTask, oldestTicket = tk.ID, id
						}
					}
					b.clock.Advance(tc.items[len(tc.items)-1].age)
					if got := b.clock.Now().Sub(start); got != tc.items[0].age {
						t.Fatalf("the oldest item's age is %s, want %s", got, tc.items[0].age)
					}

					m, err := b.s.ManualAgeing(b.ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !m.Tasks.Oldest.Equal(start) || !m.Tickets.Oldest.Equal(start) || m.OldestAge(m.Tasks) != tc.items[0].age {
						t.Errorf("oldest: tasks %v, tickets %v (age %s); want both %v (%s)",
							m.Tasks.Oldest, m.Tickets.Oldest, m.OldestAge(m.Tasks), start, tc.items[0].age)
					}
					for _, a := range models.ManualAges {
						if m.Tasks.N[a] != int64(len(wantTasks[a])) || m.Tickets.N[a] != int64(len(wantTickets[a])) {
							t.Errorf("%s: %d tasks, %d tickets; want %d, %d", a, m.Tasks.N[a], m.Tickets.N[a],
								len(wantTasks[a]), len(wantTickets[a]))
						}
						f := models.TaskFilter{Statuses: []models.TaskStatus{models.TaskManual}, Age: a}
						if n, _, err := b.s.CountTasks(b.ctx, f, 100); err != nil || n != m.Tasks.N[a] {
							t.Errorf("%s: CountTasks = %d, %v; want %d", a, n, err, m.Tasks.N[a])
						}
						page, err := b.s.ListManualByAge(b.ctx, f, models.Cursor{}, 100)
						if err != nil {
							t.Fatal(err)
						}
						var got []int64
						for _, tk := range page.Tasks {
							got = append(got, tk.ID)
						}
						if !slices.Equal(got, wantTasks[a]) {
							t.Errorf("%s: tasks listed %v, want %v (oldest first)", a, got, wantTasks[a])
						}
						q := models.DiffQuery{Age: a, OldestFirst: true}
						if n, _, err := b.s.CountDiffTickets(b.ctx, q, 100); err != nil || n != m.Tickets.N[a] {
							t.Errorf("%s: CountDiffTickets = %d, %v; want %d", a, n, err, m.Tickets.N[a])
						}
						tp, err := b.s.DiffTickets(b.ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						got = nil
						for _, d := range tp.Tickets {
							got = append(got, d.ID)
						}
						if !slices.Equal(got, wantTickets[a]) {
							t.Errorf("%s: tickets listed %v, want %v (oldest first)", a, got, wantTickets[a])
						}
					}
					all, err := b.s.ListManualByAge(b.ctx, models.TaskFilter{Statuses: []models.TaskStatus{models.TaskManual}}, models.Cursor{}, 100)
					if err != nil || len(all.Tasks) != len(tc.items) || all.Tasks[0].ID != oldestTask {
						t.Errorf("all MANUAL by age: %d tasks, %v; want %d, task %d first", len(all.Tasks), err, len(tc.items), oldestTask)
					}
					old, err := b.s.DiffTickets(b.ctx, models.DiffQuery{Statuses: models.UnresolvedStatuses, OldestFirst: true})
					if err != nil || len(old.Tickets) != len(tc.items) || old.Tickets[0].ID != oldestTicket {
						t.Errorf("unresolved tickets oldest first: %d, %v; want %d, ticket %d first", len(old.Tickets), err, len(tc.items), oldestTicket)
					}
				})
			}
		})
	}
}

// The list sorted by age pages through the MANUAL tasks without a gap or a
// repeat, ties (went MANUAL at one instant) broken by id, and refuses a
// filter that keeps other statuses.
func TestListManualByAgePages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		var want []int64
		for i := range 7 {
			want = append(want, b.goManual(t, fmt.Sprintf("p%d", i)).ID)
			if i%3 == 0 {
				b.clock.Advance(time.Minute)
			}
		}
		f := models.TaskFilter{Statuses: []models.TaskStatus{models.TaskManual}}
		var got []int64
		var after models.Cursor
		for range 10 {
			p, err := b.s.ListManualByAge(b.ctx, f, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range p.Tasks {
				got = append(got, tk.ID)
			}
			if p.Next.ID == 0 {
				break
			}
			if after, err = models.ParseCursor(p.Next.String()); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages = %v, want %v", got, want)
		}
		for _, bad := range []models.TaskFilter{{}, {Statuses: []models.TaskStatus{models.TaskManual, models.TaskRetry}}} {
			if _, err := b.s.ListManualByAge(b.ctx, bad, models.Cursor{}, 3); err == nil {
				t.Errorf("sorting %+v by age was accepted", bad)
			}
		}
		if _, err := b.s.ListTasks(b.ctx, models.TaskFilter{Age: models.AgePastSLA, Due: true}, models.Cursor{}, false, 3); err == nil {
			t.Error("an age with due was accepted")
		}
		if _, err := b.s.ListTasks(b.ctx, models.TaskFilter{Age: "old"}, models.Cursor{}, false, 3); err == nil {
			t.Error("an age bucket named old was accepted")
		}
	})
}

// A MANUAL task's age counts from when it went MANUAL, not from its
// creation, and does not move when something unrelated writes the row
// (a lease rescue, an attempt cleanup, a write of updated_at as another
// feature might make); a rerun takes it out of the queue, and going
// MANUAL again starts a new age. Breaks if the age is read from
// updated_at or created_at.
func TestManualAgeIgnoresUnrelatedWrites(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		created := b.clock.Now()
		sku := "sku-late"
		must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 5, 0, "test"); return err })
		req := models.PlaceRequest{OrderNo: "late", UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}
		must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "late", models.TriggerUserCancel, "u1"); return err })
		// An hour later the release finds the lock gone: MANUAL from then.
		b.clock.Advance(time.Hour)
		wentManual := b.clock.Now()
		must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = ?", sku).Error })
		b.drain(t, "w1")
		b.clock.Advance(2 * time.Hour)
		age := func() time.Duration {
			t.Helper()
			m, err := b.s.ManualAgeing(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			return m.OldestAge(m.Tasks)
		}
		if got := age(); got != 2*time.Hour {
			t.Fatalf("age = %s, want 2h (went MANUAL at %v, created %v)", got, wentManual, created)
		}
		if _, err := b.s.RescueLeases(b.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.DeleteOldAttempts(b.ctx, b.clock.Now().Add(time.Hour), 100); err != nil {
			t.Fatal(err)
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET updated_at = ? WHERE order_no = 'late'", b.clock.Now()).Error
		})
		if got := age(); got != 2*time.Hour {
			t.Fatalf("after unrelated writes age = %s, want still 2h", got)
		}
		var tk models.ReleaseTask
		must(t, func() error { return b.s.R.Where("order_no = 'late'").Take(&tk).Error })
		must(t, func() error { return b.s.RerunTask(b.ctx, tk.ID, "ops", "lock restored by hand") })
		if m, err := b.s.ManualAgeing(b.ctx); err != nil || m.Tasks.Total() != 0 || !m.Tasks.Oldest.IsZero() {
			t.Fatalf("after the rerun the queue holds %d tasks (oldest %v), %v; want none", m.Tasks.Total(), m.Tasks.Oldest, err)
		}
		var rerun models.ReleaseTask
		must(t, func() error { return b.s.R.Where("order_no = 'late'").Take(&rerun).Error })
		if rerun.ManualSince != nil {
			t.Errorf("after the rerun manual_since = %v, want none", rerun.ManualSince)
		}
		// Still short: MANUAL again, its age new.
		b.clock.Advance(10 * time.Minute)
		b.drain(t, "w1")
		b.clock.Advance(5 * time.Minute)
		if got := age(); got != 5*time.Minute {
			t.Errorf("after going MANUAL again age = %s, want 5m", got)
		}
	})
}

// Migration 00034 dates a task already MANUAL by its updated_at (the
// failure that sent it there was its last write), and a MANUAL row with
// no manual_since (set by hand in SQL) is still counted, by updated_at.
// Down and up again keeps the schema whole.
func TestMigration34ManualSince(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.goManual(t, "old")
		if err := downTo(t, b, 31); err != nil {
			t.Fatalf("down: %v", err)
		}
		if _, err := b.s.Migrate(b.ctx); err != nil {
			t.Fatalf("up again: %v", err)
		}
		var back models.ReleaseTask
		must(t, func() error { return b.s.R.Where("id = ?", tk.ID).Take(&back).Error })
		if back.ManualSince == nil || !back.ManualSince.Equal(back.UpdatedAt) {
			t.Fatalf("back-filled manual_since = %v, want updated_at %v", back.ManualSince, back.UpdatedAt)
		}
		b.clock.Advance(time.Minute)
		hand := b.goManual(t, "hand")
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET manual_since = NULL WHERE id = ?", hand.ID).Error
		})
		b.clock.Advance(5 * time.Hour)
		m, err := b.s.ManualAgeing(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Tasks.N[models.AgePastSLA] != 2 || m.OldestAge(m.Tasks) != 5*time.Hour+time.Minute {
			t.Errorf("past the SLA %d, oldest %s; want 2, 5h1m", m.Tasks.N[models.AgePastSLA], m.OldestAge(m.Tasks))
		}
	})
}

// AgeBucket's edges, without a database.
func TestAgeBucket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		age, sla time.Duration
		want     models.ManualAge
	}{
		{-time.Second, 4 * time.Hour, models.AgeUnderHour},
		{time.Hour - time.Second, 4 * time.Hour, models.AgeUnderHour},
		{time.Hour, 4 * time.Hour, models.AgeUnderSLA},
		{4*time.Hour - time.Second, 4 * time.Hour, models.AgeUnderSLA},
		{4 * time.Hour, 4 * time.Hour, models.AgePastSLA},
		{time.Hour, time.Hour, models.AgePastSLA},
		{time.Hour - time.Second, time.Hour, models.AgeUnderHour},
		{10 * time.Minute, 10 * time.Minute, models.AgePastSLA},
	} {
		if got := models.AgeBucket(tc.age, tc.sla); got != tc.want {
			t.Errorf("AgeBucket(%s, %s) = %s, want %s", tc.age, tc.sla, got, tc.want)
		}
	}
	for _, s := range []string{"", "LT_1H", "past", "lt_1h "} {
		if _, err := models.ParseManualAge(s); err == nil {
			t.Errorf("ParseManualAge(%q) accepted", s)
		}
	}
}
