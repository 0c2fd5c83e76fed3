package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// SkipReason is why a run left a key of a remote type unchecked: its HELD
// check did not compare what the service holds with what unhold expects.
type SkipReason string

// Skip reasons, stable codes.
const (
	// SkipUnknownOutcome: a call of the key may be under way or done
	// unseen (a leased or tried task, an aborted placement's release, a
	// recent placement), or its expectation moved between the two reads.
	SkipUnknownOutcome SkipReason = "UNKNOWN_OUTCOME"
	// SkipNoAnswer: a timeout, a lost connection, a busy answer (408, 425,
	// 429, 5xx), or not asked (a wave failed, the run's time ran out).
	SkipNoAnswer SkipReason = "NO_ANSWER"
	// SkipRefused: the service answered an error (a 4xx; a 404 once
	// another key of the type got another answer).
	SkipRefused SkipReason = "REFUSED"
	// SkipOtherKey: the service answered for another key.
	SkipOtherKey SkipReason = "OTHER_KEY"
	// SkipUnparseable: the answer was junk, or echoed no key.
	SkipUnparseable SkipReason = "UNPARSEABLE"
)

// SkipReasons lists every reason, in the order pages show them.
var SkipReasons = []SkipReason{SkipUnknownOutcome, SkipNoAnswer, SkipRefused, SkipOtherKey, SkipUnparseable}

// CheckUnchecked is the check name of an UNCHECKED ticket.
const CheckUnchecked = "UNCHECKED"

// Ticket kinds: DIFF, checks that disagree on a key; UNCHECKED, a key a
// run after run could not check.
const (
	TicketDiff      = "DIFF"
	TicketUnchecked = "UNCHECKED"
)

// DefaultUncheckedAfter is how many runs in a row must skip a key before
// it gets an UNCHECKED ticket, unless Options say otherwise.
const DefaultUncheckedAfter = 3

// ReconCoverage is what one run's HELD check of one remote type covered:
// the keys compared, and those skipped by reason. A local type has none:
// its checks read every key in one snapshot and skip none.
type ReconCoverage struct {
	RunID          int64        `json:"-"`
	ResourceType   ResourceType `json:"resource"`
	Compared       int64        `json:"compared"`
	UnknownOutcome int64        `json:"-"`
	NoAnswer       int64        `json:"-"`
	Refused        int64        `json:"-"`
	OtherKey       int64        `json:"-"`
	Unparseable    int64        `json:"-"`
	// HeldOffered is false when the service offers no GET /holds: the
	// type has no HELD check, which is declared, not a skip.
	HeldOffered bool `json:"held_check_offered"`
}

// TableName is the coverage table.
func (ReconCoverage) TableName() string { return "recon_coverage" }

// SkippedBy is how many keys were skipped for reason r.
func (c ReconCoverage) SkippedBy(r SkipReason) int64 {
	switch r {
	case SkipUnknownOutcome:
		return c.UnknownOutcome
	case SkipNoAnswer:
		return c.NoAnswer
	case SkipRefused:
		return c.Refused
	case SkipOtherKey:
		return c.OtherKey
	case SkipUnparseable:
		return c.Unparseable
	}
	return 0
}

// Skipped is how many keys were skipped, whatever the reason.
func (c ReconCoverage) Skipped() int64 {
	var n int64
	for _, r := range SkipReasons {
		n += c.SkippedBy(r)
	}
	return n
}

// Partial tells whether the type's coverage makes its run PARTIAL.
func (c ReconCoverage) Partial() bool { return c.Skipped() > 0 }

// MarshalJSON adds the skipped total and the counts by reason (those
// above 0) to the fields.
func (c ReconCoverage) MarshalJSON() ([]byte, error) {
	type plain ReconCoverage
	by := map[SkipReason]int64{}
	for _, r := range SkipReasons {
		if n := c.SkippedBy(r); n > 0 {
			by[r] = n
		}
	}
	return json.Marshal(struct {
		plain
		Skipped   int64                `json:"skipped"`
		SkippedBy map[SkipReason]int64 `json:"skipped_by"`
	}{plain(c), c.Skipped(), by})
}

// coverageOf counts what hc covered of type t in run.
func coverageOf(run int64, t ResourceType, hc *heldCheck) ReconCoverage {
	c := ReconCoverage{RunID: run, ResourceType: t, Compared: int64(len(hc.compared)), HeldOffered: !hc.notOffered}
	for _, r := range hc.skipped {
		switch r {
		case SkipUnknownOutcome:
			c.UnknownOutcome++
		case SkipNoAnswer:
			c.NoAnswer++
		case SkipRefused:
			c.Refused++
		case SkipOtherKey:
			c.OtherKey++
		case SkipUnparseable:
			c.Unparseable++
		}
	}
	return c
}

// uncheckedStreak is a key's run of consecutive runs that skipped it.
type uncheckedStreak struct {
	ResourceType ResourceType
	BizKey       string
	SinceRunID   int64
	SinceAt      time.Time
	Runs         int64
	Reasons      string
	LastRunID    int64
}

func (uncheckedStreak) TableName() string { return "recon_unchecked" }

// withReason adds r to a comma-separated list of reasons, once.
func withReason(list string, r SkipReason) string {
	if list == "" {
		return string(r)
	}
	if slices.Contains(strings.Split(list, ","), string(r)) {
		return list
	}
	return list + "," + string(r)
}

// recordCoverage records, inside the run's transaction, what the HELD
// check of each remote type covered (checks), keeps each key's streak of
// runs that skipped it, opens or updates the UNCHECKED ticket of a key
// whose streak reached s.uncheckedAfter, and closes the UNCHECKED tickets
// of the keys the run compared. It returns the coverage rows and the
// tickets opened and closed. A type whose service offers no GET /holds
// leaves its streaks and tickets as they are.
func (s *Store) recordCoverage(tx *gorm.DB, run *ReconRun, checks map[ResourceType]*heldCheck, now time.Time) (
	cov []ReconCoverage, opened, closed int64, err error) {
	for _, t := range s.types {
		hc, ok := checks[t]
		if !ok {
			continue
		}
		c := coverageOf(run.ID, t, hc)
		if err := tx.Create(&c).Error; err != nil {
			return nil, 0, 0, err
		}
		cov = append(cov, c)
		if hc.notOffered {
			continue
		}
		if err := s.keepStreaks(tx, run, t, hc); err != nil {
			return nil, 0, 0, err
		}
		o, cl, err := s.uncheckedTickets(tx, run, t, hc, now)
		if err != nil {
			return nil, 0, 0, err
		}
		opened += o
		closed += cl
	}
	return cov, opened, closed, nil
}

// keepStreaks lengthens the streak of each key of t the run skipped, and
// ends the others.
func (s *Store) keepStreaks(tx *gorm.DB, run *ReconRun, t ResourceType, hc *heldCheck) error {
	var rows []uncheckedStreak
	if err := tx.Where("resource_type = ?", t).Find(&rows).Error; err != nil {
		return err
	}
	known := make(map[string]uncheckedStreak, len(rows))
	for _, r := range rows {
		known[r.BizKey] = r
	}
	keys := make([]string, 0, len(hc.skipped))
	for k := range hc.skipped {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for part := range slices.Chunk(keys, closeChunk) {
		var q strings.Builder
		q.WriteString(`INSERT INTO recon_unchecked (resource_type, biz_key, since_run_id, since_at, runs, reasons, last_run_id) VALUES `)
		args := make([]any, 0, 7*len(part))
		for i, k := range part {
			st, ok := known[k]
			if !ok {
				st = uncheckedStreak{SinceRunID: run.ID, SinceAt: run.StartedAt}
			}
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, t, k, st.SinceRunID, st.SinceAt, st.Runs+1, withReason(st.Reasons, hc.skipped[k]), run.ID)
		}
		q.WriteString(` ON CONFLICT (resource_type, biz_key) DO UPDATE SET runs = excluded.runs, reasons = excluded.reasons,
			last_run_id = excluded.last_run_id`)
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return err
		}
	}
	return tx.Exec("DELETE FROM recon_unchecked WHERE resource_type = ? AND last_run_id <> ?", t, run.ID).Error
}

// uncheckedTickets opens or updates the UNCHECKED ticket of each key of t
// whose streak reached s.uncheckedAfter, and closes the UNCHECKED tickets of
// the keys the run compared.
func (s *Store) uncheckedTickets(tx *gorm.DB, run *ReconRun, t ResourceType, hc *heldCheck, now time.Time) (opened, closed int64, err error) {
	var open []DiffTicket
	if err := tx.Where("resource_type = ? AND check_name = ? AND checks = '' AND status <> 'RESOLVED' AND kind = ?",
		t, CheckUnchecked, TicketUnchecked).Find(&open).Error; err != nil {
		return 0, 0, err
	}
	ticket := make(map[string]int64, len(open))
	for _, d := range open {
		ticket[d.BizKey] = d.ID
	}
	var long []uncheckedStreak
	if err := tx.Where("resource_type = ? AND runs >= ?", t, s.uncheckedAfter).Order("biz_key").Find(&long).Error; err != nil {
		return 0, 0, err
	}
	for _, st := range long {
		if id, ok := ticket[st.BizKey]; ok {
			err := tx.Model(&DiffTicket{}).Where("id = ?", id).Updates(map[string]any{"streak": st.Runs, "reasons": st.Reasons,
				"last_run_id": run.ID, "updated_at": now}).Error
			if err != nil {
				return 0, 0, err
			}
			continue
		}
		d := DiffTicket{Kind: TicketUnchecked, ResourceType: t, BizKey: st.BizKey, CheckName: CheckUnchecked, Sign: 1,
			Streak: st.Runs, Reasons: st.Reasons, Status: DiffOpen, FirstRunID: run.ID, LastRunID: run.ID, CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&d).Error; err != nil {
			return 0, 0, err
		}
		if err := emitEvents(tx, []newEvent{ticketOpened(d, now)}); err != nil {
			return 0, 0, err
		}
		opened++
	}
	var done []int64
	for _, k := range hc.compared {
		if id, ok := ticket[k]; ok {
			done = append(done, id)
		}
	}
	note := fmt.Sprintf("compared in run %d: closed automatically", run.ID)
	for part := range slices.Chunk(done, closeChunk) {
		n, err := autoClose(tx, now, note, "id IN ?", part)
		if err != nil {
			return 0, 0, err
		}
		closed += n
	}
	return opened, closed, nil
}

// coverageOfRuns reads the coverage rows of runs, by run, each run's in the
// registry's order of types.
func (s *Store) coverageOfRuns(ctx context.Context, runs []ReconRun) error {
	ids := make([]int64, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []ReconCoverage
	if err := s.R.WithContext(ctx).Where("run_id IN ?", ids).Find(&rows).Error; err != nil {
		return fmt.Errorf("coverage of reconciliation runs: %w", err)
	}
	slices.SortStableFunc(rows, func(a, b ReconCoverage) int { return s.TypeRank(a.ResourceType) - s.TypeRank(b.ResourceType) })
	by := map[int64][]ReconCoverage{}
	for _, c := range rows {
		by[c.RunID] = append(by[c.RunID], c)
	}
	for i := range runs {
		runs[i].Coverage = by[runs[i].ID]
	}
	return nil
}

// UncheckedSince is, per remote type with keys on a streak of skipped
// runs, when the oldest such streak began: the start of the first run
// that skipped its key. (Read row by row, not as MIN: SQLite gives an
// aggregate of a DATETIME back as text.)
func (s *Store) UncheckedSince(ctx context.Context) (map[ResourceType]time.Time, error) {
	out := map[ResourceType]time.Time{}
	for _, t := range s.RemoteTypes() {
		var oldest []uncheckedStreak
		err := s.R.WithContext(ctx).Where("resource_type = ?", t).Order("since_at").Limit(1).Find(&oldest).Error
		if err != nil {
			return nil, fmt.Errorf("%s keys unchecked since: %w", t, err)
		}
		if len(oldest) == 1 {
			out[t] = oldest[0].SinceAt
		}
	}
	return out, nil
}

// LastFinishedCoverage is the coverage of the newest run that finished
// (DONE or PARTIAL); nil before the first.
func (s *Store) LastFinishedCoverage(ctx context.Context) ([]ReconCoverage, error) {
	var runs []ReconRun
	err := s.R.WithContext(ctx).Where("status IN ?", []string{ReconDone, ReconPartial}).Order("id DESC").Limit(1).Find(&runs).Error
	if err != nil {
		return nil, fmt.Errorf("last finished reconciliation run: %w", err)
	}
	if err := s.coverageOfRuns(ctx, runs); err != nil || len(runs) == 0 {
		return nil, err
	}
	return runs[0].Coverage, nil
}

// skipWords are the reasons in the words of a run's summary.
var skipWords = map[SkipReason]string{
	SkipUnknownOutcome: "outcome unknown",
	SkipNoAnswer:       "no answer",
	SkipRefused:        "refused",
	SkipOtherKey:       "answered for another key",
	SkipUnparseable:    "unparseable answer",
}

// Unchecked says in words what the run left unchecked, type by type:
// "giftcard 8 keys not checked (no answer 5, answered for another key 3)";
// "" when it checked every key.
func (r *ReconRun) Unchecked() string {
	var parts []string
	for _, c := range r.Coverage {
		if c.Skipped() == 0 {
			continue
		}
		var why []string
		for _, reason := range SkipReasons {
			if n := c.SkippedBy(reason); n > 0 {
				why = append(why, fmt.Sprintf("%s %d", skipWords[reason], n))
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d keys not checked (%s)", c.ResourceType, c.Skipped(), strings.Join(why, ", ")))
	}
	return strings.Join(parts, "; ")
}

// RemoteTypes are the registry's remote types, in its order.
func (s *Store) RemoteTypes() []ResourceType {
	var out []ResourceType
	for _, t := range s.types {
		if _, ok := s.remotes[t]; ok {
			out = append(out, t)
		}
	}
	return out
}
