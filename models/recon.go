package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// ReconRun is one reconciliation run.
type ReconRun struct {
	ID         int64      `json:"id"`
	Trigger    string     `json:"trigger" gorm:"column:trigger_type"`
	Actor      string     `json:"actor"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Found      int64      `json:"found"`
	Opened     int64      `json:"opened"`
	Closed     int64      `json:"closed"`
	Error      string     `json:"error,omitempty"`
	// Coverage is what the run's HELD check of each remote type covered
	// (recon_coverage); a local type's checks skip no key.
	Coverage []ReconCoverage `json:"coverage" gorm:"-"`
}

// Skipped is how many keys the run left unchecked, all types together.
func (r *ReconRun) Skipped() int64 {
	var n int64
	for _, c := range r.Coverage {
		n += c.Skipped()
	}
	return n
}

// Reconciliation run statuses and triggers.
const (
	ReconRunning = "RUNNING"
	ReconDone    = "DONE"
	ReconFailed  = "FAILED"
	// ReconPartial is a run that finished but left keys unchecked
	// (ReconRun.Coverage says which and why): what it found is recorded as
	// a DONE run's is, but it did not look at everything.
	ReconPartial = "PARTIAL"

	ReconByCron = "CRON"
	ReconByCLI  = "CLI"
	ReconByAPI  = "API"
	ReconByOps  = "DASHBOARD"
)

// DiffTicket is a reconciliation ticket: the checks that disagree on one
// key, OPEN → ACKED → RESOLVED, with who did it and a note. CheckName,
// Expected and Actual are the first of Checks (HELD when it is among
// them), and Sign is its: a positive Sign (actual above expected) is a
// missed release; a negative one a double release or rolled-back state.
type DiffTicket struct {
	ID int64 `json:"id"`
	// Kind is TicketDiff, or TicketUnchecked: a key runs in a row could
	// not check (Streak runs, for Reasons), closed by the run that
	// compares it.
	Kind         string       `json:"kind" gorm:"default:DIFF"`
	ResourceType ResourceType `json:"resource"`
	BizKey       string       `json:"key"`
	CheckName    string       `json:"check"`
	Expected     int64        `json:"expected"`
	Actual       int64        `json:"actual"`
	// Checks lists every check of the key that disagrees, each with its
	// own expected and actual. A ticket opened before tickets were grouped
	// (migration 00025) stores none; it reads as its one check.
	Checks     TicketChecks `json:"checks" gorm:"column:checks"`
	Sign       int          `json:"sign"`
	Orders     string       `json:"orders"`
	Status     string       `json:"status"`
	FirstRunID int64        `json:"first_run_id"`
	LastRunID  int64        `json:"last_run_id"`
	Note       string       `json:"note,omitempty"`
	AckedBy    string       `json:"acked_by,omitempty"`
	AckedAt    *time.Time   `json:"acked_at,omitempty"`
	ResolvedBy string       `json:"resolved_by,omitempty"`
	ResolvedAt *time.Time   `json:"resolved_at,omitempty"`
	AutoClosed bool         `json:"auto_closed"`
	Streak     int64        `json:"streak,omitempty"`
	Reasons    string       `json:"reasons,omitempty"`
	// Owner is the operator who took the ticket while it was open (""
	// nobody), and OwnedSince when; see AssignTicket. It stays when the
	// ticket is resolved, as history.
	Owner      string     `json:"owner,omitempty"`
	OwnedSince *time.Time `json:"owned_since,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// TableName is the ticket table.
func (DiffTicket) TableName() string { return "recon_diffs" }

// TicketCheck is one check that disagrees on a ticket's key.
type TicketCheck struct {
	Check    string `json:"check"`
	Expected int64  `json:"expected"`
	Actual   int64  `json:"actual"`
}

// TicketChecks is a ticket's checks, stored as a JSON array (” for none).
type TicketChecks []TicketCheck

// Value stores the checks as JSON; none as ”.
func (c TicketChecks) Value() (driver.Value, error) {
	if len(c) == 0 {
		return "", nil
	}
	b, err := json.Marshal([]TicketCheck(c))
	return string(b), err
}

// Scan reads the checks back; ” (an old ticket) is none.
func (c *TicketChecks) Scan(v any) error {
	var b []byte
	switch x := v.(type) {
	case nil:
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return fmt.Errorf("ticket checks: cannot read %T", v)
	}
	*c = nil
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, (*[]TicketCheck)(c))
}

// withChecks fills an old ticket's Checks with its one check, so every
// ticket lists its checks alike.
func (t *DiffTicket) withChecks() {
	if len(t.Checks) == 0 {
		t.Checks = TicketChecks{{Check: t.CheckName, Expected: t.Expected, Actual: t.Actual}}
	}
}

// withChecks fills each ticket's Checks (DiffTicket.withChecks).
func withChecks(ts []DiffTicket) {
	for i := range ts {
		ts[i].withChecks()
	}
}

// ticketGroup is the diffs of one key, grouped into one ticket.
type ticketGroup struct {
	resource ResourceType
	key      string
	checks   TicketChecks
}

// groupDiffs groups diffs by key, in the order keys first appear, each
// key's checks with HELD first and the others by name.
func groupDiffs(found []Diff) []ticketGroup {
	var out []ticketGroup
	index := map[ResourceKey]int{}
	for _, d := range found {
		k := ResourceKey{Type: d.Resource, Key: d.Key}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ticketGroup{resource: d.Resource, key: d.Key})
		}
		out[i].checks = append(out[i].checks, TicketCheck{Check: d.Check, Expected: d.Expected, Actual: d.Actual})
	}
	for _, g := range out {
		sort.SliceStable(g.checks, func(i, j int) bool {
			a, b := g.checks[i].Check, g.checks[j].Check
			if (a == CheckHeld) != (b == CheckHeld) {
				return a == CheckHeld
			}
			return a < b
		})
	}
	return out
}

// Ticket statuses.
const (
	DiffOpen     = "OPEN"
	DiffAcked    = "ACKED"
	DiffResolved = "RESOLVED"
)

// Reconciliation refusals.
var (
	ErrDiffState    = &Error{"DIFF_STATE", "the diff is not in a state that allows this"}
	ErrReconRunning = &Error{"RECON_RUNNING", "a reconciliation is already running"}
)

// ReconAbandoned is how long a run may stay RUNNING before the next run
// takes it for dead.
const ReconAbandoned = 30 * time.Minute

// maxOrdersPerDiff bounds the orders named on one ticket.
const maxOrdersPerDiff = 10

// RunReconciliation runs every resource's checks, keeps each diff as a
// ticket (updating the open one for the same resource, key and check, or
// opening a new one), and closes, saying so, every open ticket whose diff
// is gone. The run is recorded with what it found.
func (s *Store) RunReconciliation(ctx context.Context, trigger, actor string) (*ReconRun, error) {
	now := s.Now()
	// A run that has been RUNNING this long died with its process.
	err := s.W.WithContext(ctx).Model(&ReconRun{}).Where("status = ? AND started_at < ?", ReconRunning, now.Add(-ReconAbandoned)).
		Updates(map[string]any{"status": ReconFailed, "finished_at": now, "error": "abandoned: still RUNNING after " + ReconAbandoned.String()}).Error
	if err != nil {
		return nil, fmt.Errorf("start reconciliation: %w", err)
	}
	run := &ReconRun{Trigger: trigger, Actor: actor, Status: ReconRunning, StartedAt: now}
	if err := s.W.WithContext(ctx).Create(run).Error; err != nil {
		if IsUniqueViolation(err) {
			return nil, fmt.Errorf("%w: another reconciliation is running", ErrReconRunning)
		}
		return nil, fmt.Errorf("start reconciliation: %w", err)
	}
	// The diffs and the orders named beside them come from one snapshot, so
	// a ticket never names orders from after the diff it describes.
	var found []Diff
	var orders map[string]string
	err = s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		if found, err = s.reconcile(ctx, tx); err != nil {
			return err
		}
		orders, err = s.diffOrders(tx, found)
		return err
	})
	var checks map[ResourceType]*heldCheck
	if err == nil {
		found, checks, err = s.withServiceDiffs(ctx, found, orders)
	}
	if err == nil {
		err = s.recordDiffs(ctx, run, found, orders, checks)
	}
	if err != nil {
		now := s.Now()
		msg := clip(err.Error(), maxErrorLen)
		ferr := s.W.WithContext(context.WithoutCancel(ctx)).Model(run).
			Updates(map[string]any{"status": ReconFailed, "finished_at": now, "error": msg}).Error
		return nil, errors.Join(fmt.Errorf("reconciliation run %d: %w", run.ID, err), ferr)
	}
	return run, nil
}

// withServiceDiffs adds to found what the remote types' services say
// (reconcileServices), and to orders the orders their diffs name, read
// after the services answered. It returns what each type's HELD check
// covered. When ctx has a deadline, the services' questions get half the
// time left: a slow one leaves its keys, and those of the types asked
// after it, unchecked, and the run still has the time to record what it
// found. unhold's own reads keep ctx.
func (s *Store) withServiceDiffs(ctx context.Context, found []Diff, orders map[string]string) ([]Diff, map[ResourceType]*heldCheck, error) {
	sctx := ctx
	if end, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, time.Until(end)/2)
		defer cancel()
	}
	more, checks, err := s.reconcileServices(ctx, sctx)
	if err != nil || len(more) == 0 {
		return found, checks, err
	}
	err = s.readSnapshot(ctx, func(tx *gorm.DB) error {
		named, err := s.diffOrders(tx, more)
		maps.Copy(orders, named)
		return err
	})
	return append(found, more...), checks, err
}

// recordDiffs keeps found as tickets of run and closes every unresolved
// DIFF ticket the run did not find, but for the HELD tickets of the keys
// it left unchecked (all of the type's when its service offers no GET
// /holds), which stay as they are. It records what the remote types' HELD checks
// covered, with their UNCHECKED tickets (recordCoverage); a run that
// skipped a key ends PARTIAL, any other DONE.
func (s *Store) recordDiffs(ctx context.Context, run *ReconRun, found []Diff, orders map[string]string,
	checks map[ResourceType]*heldCheck) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		for t, hc := range checks {
			keys := slices.Sorted(maps.Keys(hc.skipped))
			if hc.notOffered {
				err := tx.Exec(`UPDATE recon_diffs SET last_run_id = ? WHERE status <> 'RESOLVED' AND resource_type = ?
					AND check_name = ?`, run.ID, t, CheckHeld).Error
				if err != nil {
					return err
				}
			}
			for part := range slices.Chunk(keys, closeChunk) {
				err := tx.Exec(`UPDATE recon_diffs SET last_run_id = ? WHERE status <> 'RESOLVED' AND resource_type = ?
					AND check_name = ? AND biz_key IN ?`, run.ID, t, CheckHeld, part).Error
				if err != nil {
					return err
				}
			}
		}
		for _, g := range groupDiffs(found) {
			id, opened, err := s.recordGroup(tx, run, g, orders[string(g.resource)+"/"+g.key], checks, now)
			if err != nil {
				return err
			}
			if opened {
				run.Opened++
			}
			// The key's tickets from before grouping give way to its one ticket.
			note := fmt.Sprintf("grouped into ticket %d in run %d: closed automatically", id, run.ID)
			n, err := autoClose(tx, now, note, "resource_type = ? AND biz_key = ? AND checks = '' AND kind = 'DIFF'", g.resource, g.key)
			if err != nil {
				return err
			}
			run.Closed += n
		}
		n, err := autoClose(tx, now, fmt.Sprintf("gone in run %d: closed automatically", run.ID),
			"last_run_id <> ? AND kind = 'DIFF'", run.ID)
		if err != nil {
			return err
		}
		run.Closed += n
		cov, opened, closed, err := s.recordCoverage(tx, run, checks, now)
		if err != nil {
			return err
		}
		run.Coverage = cov
		run.Opened += opened
		run.Closed += closed
		run.Found = int64(len(found))
		run.Status = ReconDone
		if slices.ContainsFunc(cov, ReconCoverage.Partial) {
			run.Status = ReconPartial
		}
		run.FinishedAt = &now
		return tx.Model(run).Updates(map[string]any{"status": run.Status, "finished_at": now,
			"found": run.Found, "opened": run.Opened, "closed": run.Closed}).Error
	})
}

// autoClose resolves, as the system and saying why (note), the unresolved
// tickets that match where, and returns how many it closed.
func autoClose(tx *gorm.DB, now time.Time, note, where string, args ...any) (int64, error) {
	res := tx.Exec(`UPDATE recon_diffs SET status = 'RESOLVED', auto_closed = ?, resolved_by = 'system', resolved_at = ?, updated_at = ?,
		note = CASE WHEN note = '' THEN ? ELSE note || ' / ' || ? END
		WHERE status <> 'RESOLVED' AND `+where, append([]any{true, now, now, note, note}, args...)...)
	return res.RowsAffected, res.Error
}

// recordGroup keeps one key's diffs as its one unresolved ticket: it
// updates the ticket when there is one, or opens it (opened). A HELD check
// the run left unchecked (a remote service that did not answer) stays on
// the ticket as it was last seen.
func (s *Store) recordGroup(tx *gorm.DB, run *ReconRun, g ticketGroup, ords string, held map[ResourceType]*heldCheck,
	now time.Time) (id int64, opened bool, err error) {
	var open []DiffTicket
	err = tx.Where("resource_type = ? AND biz_key = ? AND checks <> '' AND status <> 'RESOLVED'", g.resource, g.key).
		Limit(1).Find(&open).Error
	if err != nil {
		return 0, false, err
	}
	checks := g.checks
	if len(open) == 1 && keyUnchecked(held, g.resource, g.key) && !slices.ContainsFunc(checks, isHeld) {
		if i := slices.IndexFunc(open[0].Checks, isHeld); i >= 0 {
			checks = append(TicketChecks{open[0].Checks[i]}, checks...)
		}
	}
	first := checks[0]
	sign := 1
	if first.Actual < first.Expected {
		sign = -1
	}
	if len(open) == 1 {
		err := tx.Model(&DiffTicket{}).Where("id = ?", open[0].ID).Updates(map[string]any{"check_name": first.Check,
			"expected": first.Expected, "actual": first.Actual, "checks": checks, "sign": sign, "orders": ords,
			"last_run_id": run.ID, "updated_at": now}).Error
		return open[0].ID, false, err
	}
	t := DiffTicket{Kind: TicketDiff, ResourceType: g.resource, BizKey: g.key, CheckName: first.Check, Expected: first.Expected, Actual: first.Actual,
		Checks: checks, Sign: sign, Orders: ords, Status: DiffOpen, FirstRunID: run.ID, LastRunID: run.ID, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&t).Error; err != nil {
		return 0, false, err
	}
	if err := emitEvents(tx, []newEvent{ticketOpened(t, now)}); err != nil {
		return 0, false, err
	}
	return t.ID, true, nil
}

func isHeld(c TicketCheck) bool { return c.Check == CheckHeld }

// keyUnchecked tells whether the run left key's HELD check unchecked.
func keyUnchecked(checks map[ResourceType]*heldCheck, t ResourceType, key string) bool {
	hc, ok := checks[t]
	if !ok {
		return false
	}
	_, skipped := hc.skipped[key]
	return hc.notOffered || skipped
}

// diffOrders names, per resource key with a diff, the orders that hold it
// in db's snapshot: PENDING orders, orders with unfinished release tasks,
// and orders whose task an admin abandoned (what it left held is the diff).
func (s *Store) diffOrders(db *gorm.DB, found []Diff) (map[string]string, error) {
	keys := map[ResourceType][]string{}
	for _, d := range found {
		keys[d.Resource] = append(keys[d.Resource], d.Key)
	}
	out := map[string]string{}
	for t, ks := range keys {
		type row struct{ BizKey, OrderNo string }
		var rows []row
		err := db.Raw(`SELECT h.biz_key, h.order_no FROM order_holds h JOIN orders o ON o.order_no = h.order_no
			WHERE h.resource_type = ? AND h.biz_key IN ? AND o.status = 'PENDING'
			UNION
			SELECT biz_key, order_no FROM release_tasks WHERE resource_type = ? AND biz_key IN ? AND status IN ('PENDING','RETRY','MANUAL','ABANDONED')`,
			t, ks, t, ks).Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("orders of %s diffs: %w", t, err)
		}
		per := map[string][]string{}
		for _, r := range rows {
			per[r.BizKey] = append(per[r.BizKey], r.OrderNo)
		}
		for k, nos := range per {
			sort.Strings(nos)
			if len(nos) > maxOrdersPerDiff {
				nos = nos[:maxOrdersPerDiff]
			}
			out[string(t)+"/"+k] = strings.Join(nos, ",")
		}
	}
	return out, nil
}

// OpenDiffCounts counts the diff tickets not yet RESOLVED, per resource;
// an UNCHECKED ticket is no diff, and is not counted.
func (s *Store) OpenDiffCounts(ctx context.Context) (map[ResourceType]int64, error) {
	type row struct {
		ResourceType ResourceType
		N            int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT resource_type, COUNT(*) AS n FROM recon_diffs
		WHERE status IN ('OPEN','ACKED') AND kind = ? GROUP BY resource_type`, TicketDiff).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count open diffs: %w", err)
	}
	out := make(map[ResourceType]int64, len(s.types))
	for _, t := range s.types {
		out[t] = 0
	}
	for _, r := range rows {
		out[r.ResourceType] = r.N
	}
	return out, nil
}

// LastReconRun is the newest run, or nil before the first.
func (s *Store) LastReconRun(ctx context.Context) (*ReconRun, error) {
	var runs []ReconRun
	if err := s.R.WithContext(ctx).Order("started_at DESC, id DESC").Limit(1).Find(&runs).Error; err != nil {
		return nil, fmt.Errorf("last reconciliation run: %w", err)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	if err := s.coverageOfRuns(ctx, runs); err != nil {
		return nil, err
	}
	return &runs[0], nil
}

// ReconRuns lists the newest runs, each with its coverage.
func (s *Store) ReconRuns(ctx context.Context, limit int) ([]ReconRun, error) {
	var runs []ReconRun
	if err := s.R.WithContext(ctx).Order("started_at DESC, id DESC").Limit(limit).Find(&runs).Error; err != nil {
		return nil, fmt.Errorf("reconciliation runs: %w", err)
	}
	if err := s.coverageOfRuns(ctx, runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// DiffFilter selects tickets. Zero values select everything.
type DiffFilter struct {
	Statuses []string
	Resource ResourceType
	Sign     int
	// Owner keeps the open tickets of one owner, as TaskFilter.Owner does
	// the MANUAL tasks; Me is who asks, for OwnerMine.
	Owner string
	Me    string
	After Cursor
	Limit int
}

// ListDiffs lists tickets newest first, by keyset on (created_at, id).
func (s *Store) ListDiffs(ctx context.Context, f DiffFilter) ([]DiffTicket, error) {
	if err := ValidOwnerFilter(f.Owner, f.Me); err != nil {
		return nil, err
	}
	q := s.R.WithContext(ctx).Model(&DiffTicket{})
	if c, a := ownerWhere(f.Owner, f.Me, "status <> '"+DiffResolved+"'"); c != "" {
		q = q.Where(c, a...)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("status IN ?", f.Statuses)
	}
	if f.Resource != "" {
		q = q.Where("resource_type = ?", f.Resource)
	}
	if f.Sign != 0 {
		q = q.Where("sign = ? AND kind = ?", f.Sign, TicketDiff)
	}
	if f.After.ID != 0 {
		q = q.Where("(created_at < ? OR (created_at = ? AND id < ?))", f.After.At, f.After.At, f.After.ID)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var out []DiffTicket
	if err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list diffs: %w", err)
	}
	withChecks(out)
	return out, nil
}

// GetDiff reads one ticket.
func (s *Store) GetDiff(ctx context.Context, id int64) (*DiffTicket, error) {
	var t DiffTicket
	if err := take(s.R.WithContext(ctx).Where("id = ?", id), &t, fmt.Sprintf("diff %d", id)); err != nil {
		return nil, err
	}
	t.withChecks()
	return &t, nil
}

// AckDiff marks an OPEN ticket as seen by actor, with a note.
func (s *Store) AckDiff(ctx context.Context, id int64, actor, note string) error {
	return s.moveDiff(ctx, id, actor, note, "ack", []string{DiffOpen}, DiffAcked)
}

// ResolveDiff closes an OPEN or ACKED ticket; the note says what was done.
func (s *Store) ResolveDiff(ctx context.Context, id int64, actor, note string) error {
	if strings.TrimSpace(note) == "" {
		return invalid("resolving a diff needs a note saying what was done")
	}
	return s.moveDiff(ctx, id, actor, note, "resolve", []string{DiffOpen, DiffAcked}, DiffResolved)
}

func (s *Store) moveDiff(ctx context.Context, id int64, actor, note, action string, from []string, to string) error {
	if utf8.RuneCountInString(note) > 1000 {
		return invalid("the note must be at most 1000 characters")
	}
	target := fmt.Sprintf("diff:%d", id)
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		set := map[string]any{"status": to, "updated_at": now, "note": gorm.Expr("CASE WHEN note = '' THEN ? ELSE note || ' / ' || ? END", note, note)}
		if to == DiffAcked {
			set["acked_by"], set["acked_at"] = actor, now
		} else {
			set["resolved_by"], set["resolved_at"] = actor, now
		}
		if note == "" {
			delete(set, "note")
		}
		res := tx.Model(&DiffTicket{}).Where("id = ? AND status IN ?", id, from).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			var t DiffTicket
			if err := take(tx.Where("id = ?", id), &t, target); err != nil {
				return err
			}
			return fmt.Errorf("%w: diff %d is %s", ErrDiffState, id, t.Status)
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: "diff_" + action, Target: target, Reason: note,
			Outcome: "ok", Detail: "now " + to, CreatedAt: now}).Error
	})
	if err != nil {
		return fmt.Errorf("%s diff %d: %w", action, id, err)
	}
	return nil
}

// Reconcile runs every resource's reconciliation, in one snapshot.
func (s *Store) Reconcile(ctx context.Context) ([]Diff, error) {
	var all []Diff
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		all, err = s.reconcile(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	more, _, err := s.reconcileServices(ctx, ctx)
	if err != nil {
		return nil, err
	}
	all = append(all, more...)
	sortDiffs(all)
	return all, nil
}

// reconcile runs every resource's reconciliation inside tx, sorted by
// resource, key and check.
func (s *Store) reconcile(ctx context.Context, tx *gorm.DB) ([]Diff, error) {
	var all []Diff
	for _, t := range s.types {
		d, err := s.resources[t].Reconcile(ctx, tx)
		if err != nil {
			return nil, err
		}
		all = append(all, d...)
		if err := s.betweenReads(); err != nil {
			return nil, err
		}
	}
	sortDiffs(all)
	return all, nil
}

// sortDiffs sorts diffs by resource, key and check.
func sortDiffs(diffs []Diff) {
	sort.Slice(diffs, func(i, j int) bool {
		a, b := diffs[i], diffs[j]
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Check < b.Check
	})
}
