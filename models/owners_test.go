package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// users adds dashboard accounts straight to auth's table, as name:role or
// name:role:disabled.
func (b bundle) users(t *testing.T, specs ...string) {
	t.Helper()
	for _, sp := range specs {
		f := strings.Split(sp, ":")
		must(t, func() error {
			return b.s.W.Exec(`INSERT INTO users (name, role, password_hash, disabled, password_changed_at, created_at, updated_at)
				VALUES (?, ?, 'x', ?, ?, ?, ?)`, f[0], f[1], len(f) > 2, b.clock.Now(), b.clock.Now(), b.clock.Now()).Error
		})
	}
}

// openTicket plants a hand edit of sku-1's locked amount while order no
// has an unfinished task on it, reconciles, and returns the ticket, which
// names the order.
func (b bundle) openTicket(t *testing.T, no string) models.DiffTicket {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	b.closedOrder(t, no, 1)
	must(t, func() error {
		return b.s.W.Exec(`UPDATE inventory SET locked = locked + 3 WHERE sku_id = 'sku-1'`).Error
	})
	if _, err := b.s.RunReconciliation(b.ctx, "CLI", "test"); err != nil {
		t.Fatal(err)
	}
	ts, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Statuses: []string{models.DiffOpen}})
	if err != nil || len(ts) != 1 || !strings.Contains(ts[0].Orders, no) {
		t.Fatalf("tickets = %+v, %v; want one naming %s", ts, err, no)
	}
	return ts[0]
}

// stamps are the columns of a task or ticket an assignment or a note must
// not move: the worker's compare-and-sets and the queue's ageing read them.
type stamps struct {
	Status    string
	NextAt    *time.Time
	UpdatedAt time.Time
}

func (b bundle) stampsOf(t *testing.T, table string, id int64) stamps {
	t.Helper()
	cols := "status, next_at, updated_at"
	if table == "recon_diffs" {
		cols = "status, NULL AS next_at, updated_at"
	}
	var out stamps
	must(t, func() error { return b.s.R.Raw(`SELECT `+cols+` FROM `+table+` WHERE id = ?`, id).Scan(&out).Error })
	return out
}

// takeRace has two operators take one item at once, from goroutines of their
// own: exactly one wins, the other is told, by a TakenError, the winner's
// name.
func takeRace(t *testing.T, assign func(actor string) error) string {
	t.Helper()
	names := []string{"alice", "bob"}
	errs := make([]error, len(names))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			<-start
			errs[i] = assign(n)
		})
	}
	close(start)
	wg.Wait()
	winner, loser := -1, -1
	for i, err := range errs {
		if err == nil {
			winner = i
		} else {
			loser = i
		}
	}
	if winner < 0 || loser < 0 {
		t.Fatalf("errors %v: want exactly one winner", errs)
	}
	var te *models.TakenError
	if !errors.As(errs[loser], &te) || !errors.Is(errs[loser], models.ErrTaken) || te.Owner != names[winner] ||
		!strings.Contains(errs[loser].Error(), names[winner]) {
		t.Fatalf("loser's error %v: want TAKEN naming %s", errs[loser], names[winner])
	}
	return names[winner]
}

// Two operators taking one MANUAL task at once: one wins, the other is
// told who has it; the owner columns change, the task's status, next_at
// and updated_at do not. The same for a ticket.
func TestTakeRace(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.users(t, "alice:operator", "bob:admin")
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		id := b.manualTask(t, "o-1", 1, models.TaskManual)
		before := b.stampsOf(t, "release_tasks", id)
		b.clock.Advance(time.Minute)
		won := takeRace(t, func(n string) error { return b.s.AssignTask(b.ctx, id, n, "", n) })
		tk := b.task(t, "o-1")
		if tk.Owner != won || tk.OwnedSince == nil || !tk.OwnedSince.Equal(b.clock.Now()) {
			t.Fatalf("task owner %q since %v, want %s now", tk.Owner, tk.OwnedSince, won)
		}
		if after := b.stampsOf(t, "release_tasks", id); !reflect.DeepEqual(after, before) {
			t.Fatalf("taking moved the task: %+v, was %+v", after, before)
		}
		audit := b.auditOf(t, models.TaskTarget(id))
		if len(audit) != 2 || audit[0].Outcome == audit[1].Outcome {
			t.Fatalf("audit = %+v, want one ok take and one refused", audit)
		}

		tk2 := b.openTicket(t, "o-2")
		b.clock.Advance(time.Minute)
		won = takeRace(t, func(n string) error { return b.s.AssignTicket(b.ctx, tk2.ID, n, "", n) })
		got, err := b.s.GetDiff(b.ctx, tk2.ID)
		if err != nil || got.Owner != won || !got.UpdatedAt.Equal(tk2.UpdatedAt) {
			t.Fatalf("ticket %+v, %v: want %s's, updated_at unchanged", got, err, won)
		}
		if a := b.auditOf(t, models.TicketTarget(tk2.ID)); len(a) != 2 || a[0].Action != "take" {
			t.Fatalf("ticket audit = %+v", a)
		}
	})
}

// A hand-over goes only to an enabled operator or admin; a stale from
// (let go of a task someone else has, or no one) is TAKEN; a task that is
// not MANUAL is NOT_OPEN. Each refusal changes nothing and is audited.
func TestAssignRefusals(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.users(t, "alice:operator", "bob:operator", "vera:viewer", "dan:operator:disabled")
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		id := b.manualTask(t, "o-1", 1, models.TaskManual)
		must(t, func() error { return b.s.AssignTask(b.ctx, id, "alice", "", "alice") })
		before := b.allTasks(t)
		for _, c := range []struct {
			name, actor, from, to string
			want                  error
		}{
			{"to a viewer", "alice", "alice", "vera", models.ErrBadAssignee},
			{"to a disabled user", "alice", "alice", "dan", models.ErrBadAssignee},
			{"to no user", "alice", "alice", "zed", models.ErrBadAssignee},
			{"to a token", "alice", "alice", "token:erp", models.ErrBadAssignee},
			{"let go from a stale owner", "bob", "bob", "", models.ErrTaken},
			{"let go from nobody", "bob", "", "", models.ErrTaken},
			{"take over blindly", "bob", "", "bob", models.ErrTaken},
			{"an owner too long", "bob", strings.Repeat("a", 300), "", models.ErrInvalid},
		} {
			err := b.s.AssignTask(b.ctx, id, c.actor, c.from, c.to)
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused assignment changed tasks")
		}
		if err := b.s.AssignTask(b.ctx, id, "bob", "bob", ""); err == nil || !strings.Contains(err.Error(), "alice") {
			t.Fatalf("stale let go: %v, want it to name alice", err)
		}
		// Handed over, then let go by its new owner: nobody's.
		must(t, func() error { return b.s.AssignTask(b.ctx, id, "alice", "alice", "bob") })
		must(t, func() error { return b.s.AssignTask(b.ctx, id, "bob", "bob", "") })
		if tk := b.task(t, "o-1"); tk.Owner != "" || tk.OwnedSince != nil {
			t.Fatalf("after let go: %q %v", tk.Owner, tk.OwnedSince)
		}
		var oks []string
		for _, a := range b.auditOf(t, models.TaskTarget(id)) {
			if a.Outcome == "ok" {
				oks = append(oks, a.Action+" "+a.Detail)
			}
		}
		want := []string{"take owner nobody → alice", "hand_over owner alice → bob", "let_go owner bob → nobody"}
		if !reflect.DeepEqual(oks, want) {
			t.Fatalf("audit = %q, want %q", oks, want)
		}
		// A task that left MANUAL keeps its owner as history; nobody
		// changes it.
		must(t, func() error { return b.s.AssignTask(b.ctx, id, "alice", "", "alice") })
		must(t, func() error { return b.s.RerunTask(b.ctx, id, "alice", "fixed the stock") })
		if err := b.s.AssignTask(b.ctx, id, "alice", "alice", ""); !errors.Is(err, models.ErrNotOpen) {
			t.Fatalf("let go of a PENDING task: %v, want NOT_OPEN", err)
		}
		if err := b.s.AssignTask(b.ctx, id+100, "alice", "", "alice"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("a missing task: %v, want NOT_FOUND", err)
		}
		if tk := b.task(t, "o-1"); tk.Owner != "alice" {
			t.Fatalf("a rerun task's owner = %q, want alice kept", tk.Owner)
		}
	})
}

// Notes are appended, bounded, refused when empty, too long or not text,
// kept from any change by the table, audited, and read per item and per
// order (a ticket's notes with every order it names); a note moves none
// of its item's timestamps.
func TestNotes(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.openTicket(t, "o-1")
		task := b.task(t, "o-1")
		before := b.stampsOf(t, "release_tasks", task.ID)
		for _, c := range []struct {
			text string
			want error
		}{
			{" \n ", models.ErrNoteEmpty},
			{strings.Repeat("长", models.MaxNoteLen/3+1), models.ErrNoteTooLong},
			{"bad \xff", models.ErrNoteNotText},
			{"nul \x00", models.ErrNoteNotText},
		} {
			if _, err := b.s.AddNote(b.ctx, models.ItemTask, task.ID, "alice", c.text); !errors.Is(err, c.want) {
				t.Errorf("note %.20q: %v, want %v", c.text, err, c.want)
			}
		}
		if _, err := b.s.AddNote(b.ctx, models.ItemTicket, tk.ID+50, "alice", "x"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("a missing ticket: %v", err)
		}
		longest := strings.Repeat("长", models.MaxNoteLen/3)
		n1, err := b.s.AddNote(b.ctx, models.ItemTask, task.ID, "alice", "  called the warehouse  ")
		if err != nil || n1.Text != "called the warehouse" || n1.OrderNo != "o-1" {
			t.Fatalf("note = %+v, %v", n1, err)
		}
		b.clock.Advance(time.Minute)
		must(t, func() error { _, err := b.s.AddNote(b.ctx, models.ItemTask, task.ID, "bob", longest); return err })
		must(t, func() error {
			_, err := b.s.AddNote(b.ctx, models.ItemTicket, tk.ID, "bob", "same key as o-1")
			return err
		})
		if after := b.stampsOf(t, "release_tasks", task.ID); !reflect.DeepEqual(after, before) {
			t.Fatalf("a note moved the task: %+v, was %+v", after, before)
		}
		if got, _ := b.s.GetDiff(b.ctx, tk.ID); !got.UpdatedAt.Equal(tk.UpdatedAt) {
			t.Fatal("a note moved the ticket's updated_at")
		}
		ns, err := b.s.Notes(b.ctx, models.ItemTask, task.ID)
		if err != nil || len(ns) != 2 || ns[0].Author != "alice" || ns[1].Text != longest {
			t.Fatalf("task notes = %+v, %v", ns, err)
		}
		on, err := b.s.OrderNotes(b.ctx, "o-1")
		if err != nil || len(on) != 3 || on[2].ItemKind != models.ItemTicket {
			t.Fatalf("order notes = %+v, %v", on, err)
		}
		if on, _ := b.s.OrderNotes(b.ctx, "o-"); len(on) != 0 {
			t.Fatalf("notes of a prefix of the order: %+v", on)
		}
		if a := b.auditOf(t, models.TaskTarget(task.ID)); len(a) != 2 || a[1].Action != "note" || a[1].Reason != longest {
			t.Fatalf("audit of the notes = %+v", a)
		}
		for _, q := range []string{"UPDATE item_notes SET text = 'x'", "DELETE FROM item_notes"} {
			if err := b.s.W.Exec(q).Error; err == nil {
				t.Errorf("%s was let through", q)
			}
		}
	})
}

// The owner filter lists open items only: mine, nobody's, or one name's;
// mine needs to know who asks; the link keeps "mine", the bulk rerun's
// audit target the name.
func TestOwnerFilter(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.users(t, "alice:operator", "bob:operator")
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		a := b.manualTask(t, "o-1", 1, models.TaskManual)
		bb := b.manualTask(t, "o-2", 1, models.TaskManual)
		n := b.manualTask(t, "o-3", 1, models.TaskManual)
		r := b.manualTask(t, "o-4", 1, models.TaskRetry)
		must(t, func() error { return b.s.AssignTask(b.ctx, a, "alice", "", "alice") })
		must(t, func() error { return b.s.AssignTask(b.ctx, bb, "bob", "", "bob") })
		list := func(owner, me string) []int64 {
			t.Helper()
			p, err := b.s.ListTasks(b.ctx, models.TaskFilter{Owner: owner, Me: me}, models.Cursor{}, true, 50)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, tk := range p.Tasks {
				ids = append(ids, tk.ID)
			}
			return ids
		}
		for _, c := range []struct {
			owner, me string
			want      []int64
		}{
			{models.OwnerMine, "alice", []int64{a}},
			{"bob", "alice", []int64{bb}},
			{models.OwnerNobody, "", []int64{n}},
			{"", "", []int64{a, bb, n, r}},
		} {
			if got := list(c.owner, c.me); !reflect.DeepEqual(got, c.want) {
				t.Errorf("owner=%q me=%q: %v, want %v", c.owner, c.me, got, c.want)
			}
		}
		if _, err := b.s.ListTasks(b.ctx, models.TaskFilter{Owner: models.OwnerMine}, models.Cursor{}, true, 50); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("mine without me: %v, want ErrInvalid", err)
		}
		f := models.TaskFilter{Type: models.ResInventory, Owner: models.OwnerMine, Me: "alice"}
		if got := f.Values().Encode(); got != "owner=mine&type=inventory" {
			t.Errorf("values = %s", got)
		}
		if got := models.BulkRerunTarget(f); got != "tasks:inventory?owner=alice" {
			t.Errorf("bulk rerun target = %s", got)
		}

		tk := b.openTicket(t, "o-5")
		must(t, func() error { return b.s.AssignTicket(b.ctx, tk.ID, "bob", "", "bob") })
		for owner, want := range map[string]int{"mine": 1, "nobody": 0, "alice": 0} {
			ts, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Owner: owner, Me: "bob"})
			if err != nil || len(ts) != want {
				t.Errorf("tickets owner=%s: %d, %v; want %d", owner, len(ts), err, want)
			}
			q := models.DiffQuery{Owner: owner, Me: "bob"}
			page, err := b.s.DiffTickets(b.ctx, q)
			n, _, cerr := b.s.CountDiffTickets(b.ctx, q, 100)
			if err != nil || cerr != nil || len(page.Tickets) != want || n != int64(want) {
				t.Errorf("ticket page owner=%s: %d (count %d), %v, %v; want %d", owner, len(page.Tickets), n, err, cerr, want)
			}
		}
	})
}

// Migration 00032 goes down and up again with its notes' guards.
func TestMigration32Owners(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			if err := downTo(t, b, 31); err != nil {
				t.Fatalf("down: %v", err)
			}
			if err := b.s.W.Exec("SELECT owner FROM release_tasks").Error; err == nil {
				t.Fatal("owner is still there after down")
			}
			if _, err := b.s.Migrate(b.ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			if err := b.s.W.Exec("SELECT owner, owned_since FROM recon_diffs").Error; err != nil {
				t.Fatal(fmt.Errorf("after up: %w", err))
			}
		})
	}
}
