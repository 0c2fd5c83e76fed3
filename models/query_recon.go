package models

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// DiffStatuses lists every ticket status, in workflow order.
var DiffStatuses = []string{DiffOpen, DiffAcked, DiffResolved}

// ParseDiffStatus accepts a ticket status.
func ParseDiffStatus(s string) (string, error) {
	for _, st := range DiffStatuses {
		if st == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: ticket status must be OPEN, ACKED or RESOLVED, not %q", ErrInvalid, s)
}

// DiffPageSize is how many tickets one page of the list shows.
const DiffPageSize = 50

// DiffQuery selects one page of tickets, newest first. Zero fields do not
// filter; no status keeps every status.
type DiffQuery struct {
	Statuses []string
	Resource ResourceType
	// Sign is 1 or -1; 0 keeps both.
	Sign int
	// Before keeps tickets whose id is below it: the keyset of the next page.
	Before int64
	Limit  int
	// Owner keeps the open tickets of one owner (OwnerMine, OwnerNobody or
	// a name), as TaskFilter.Owner does; Me is who asks.
	Owner, Me string
	// Age keeps the unresolved tickets of one age bucket of the manual
	// queue, by when each was opened, under the store's SLA.
	Age ManualAge
	// OldestFirst lists the oldest ticket (lowest id: tickets are opened
	// in id order, one reconciliation at a time) first; After, not
	// Before, is then the keyset of the next page.
	OldestFirst bool
	After       int64
}

// KeptStatuses is what q's status condition keeps: the named statuses
// (every one when none is named), only the unresolved ones with an age.
func (q DiffQuery) KeptStatuses() []string {
	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = DiffStatuses
	}
	if q.Age == "" {
		return statuses
	}
	var out []string
	for _, st := range statuses {
		if slices.Contains(UnresolvedStatuses, st) && !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// DiffPage is one page of tickets and the keyset of the next one (0 on the
// last page).
type DiffPage struct {
	Tickets []DiffTicket
	Next    int64
}

// CountDiffTickets counts the tickets q keeps (every status when it names
// none, as DiffTickets reads them), up to limit, as CountTasks does.
func (s *Store) CountDiffTickets(ctx context.Context, q DiffQuery, limit int) (int64, bool, error) {
	statuses := q.KeptStatuses()
	if len(statuses) == 0 {
		return 0, false, nil
	}
	cond, args := "status IN ?", []any{statuses}
	if q.Resource != "" {
		cond += " AND resource_type = ?"
		args = append(args, q.Resource)
	}
	if q.Sign != 0 {
		cond += " AND sign = ?"
		args = append(args, q.Sign)
	}
	if err := ValidOwnerFilter(q.Owner, q.Me); err != nil {
		return 0, false, err
	}
	if c, a := ownerWhere(q.Owner, q.Me, "status <> '"+DiffResolved+"'"); c != "" {
		cond += " AND " + c
		args = append(args, a...)
	}
	if q.Age != "" {
		ac, aa := q.Age.cond("created_at", s.Now(), s.manualSLA)
		cond += " AND " + ac
		args = append(args, aa...)
	}
	return s.countCapped(ctx, "recon_diffs", cond, args, limit)
}

// DiffTickets reads one page of the tickets q keeps, newest (highest id)
// first. Each (status, resource) pair is read on its own range of the
// (status, resource_type, id) index, at most a page from each, and the
// parts merged in one UNION ALL, so no query reads or sorts more than a
// page per pair however many tickets were resolved over the years.
func (s *Store) DiffTickets(ctx context.Context, q DiffQuery) (DiffPage, error) {
	if q.Sign != 0 && q.Sign != 1 && q.Sign != -1 {
		return DiffPage{}, fmt.Errorf("%w: sign must be 1 or -1, not %d", ErrInvalid, q.Sign)
	}
	if q.Before < 0 || q.After < 0 {
		return DiffPage{}, fmt.Errorf("%w: the page position must be a positive ticket id, not %d", ErrInvalid, min(q.Before, q.After))
	}
	if q.Age != "" {
		if _, err := ParseManualAge(string(q.Age)); err != nil {
			return DiffPage{}, err
		}
	}
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = DiffPageSize
	}
	var statuses []string
	for _, st := range q.Statuses {
		if _, err := ParseDiffStatus(st); err != nil {
			return DiffPage{}, err
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	if len(statuses) == 0 {
		statuses = DiffStatuses
	}
	statuses = DiffQuery{Statuses: statuses, Age: q.Age}.KeptStatuses()
	if len(statuses) == 0 {
		return DiffPage{Tickets: []DiffTicket{}}, nil
	}
	resources := s.Types()
	if q.Resource != "" {
		if _, err := s.ParseType(string(q.Resource)); err != nil {
			return DiffPage{}, err
		}
		resources = []ResourceType{q.Resource}
	}
	cond := "status = ? AND resource_type = ?"
	var extra []any
	if q.Sign != 0 {
		// Not in the index: the part reads its range until a page matches.
		cond += " AND sign = ?"
		extra = append(extra, q.Sign)
	}
	if q.Before > 0 {
		cond += " AND id < ?"
		extra = append(extra, q.Before)
	}
	if err := ValidOwnerFilter(q.Owner, q.Me); err != nil {
		return DiffPage{}, err
	}
	if c, a := ownerWhere(q.Owner, q.Me, "status <> '"+DiffResolved+"'"); c != "" {
		cond += " AND " + c
		extra = append(extra, a...)
	}
	dir := "DESC"
	if q.OldestFirst {
		dir = "ASC"
		if q.After > 0 {
			cond += " AND id > ?"
			extra = append(extra, q.After)
		}
	}
	if q.Age != "" {
		// Not in the index either; only unresolved tickets are read.
		ac, aa := q.Age.cond("created_at", s.Now(), s.manualSLA)
		cond += " AND " + ac
		extra = append(extra, aa...)
	}
	var parts []string
	var args []any
	for _, st := range statuses {
		for _, rt := range resources {
			parts = append(parts, fmt.Sprintf(`SELECT * FROM (SELECT * FROM recon_diffs WHERE %s ORDER BY id %s LIMIT %d) AS p%d`,
				cond, dir, q.Limit+1, len(parts)))
			args = append(append(args, st, rt), extra...)
		}
	}
	sql := "SELECT * FROM (" + strings.Join(parts, " UNION ALL ") + fmt.Sprintf(") AS u ORDER BY id %s LIMIT %d", dir, q.Limit+1)
	var out []DiffTicket
	if err := s.R.WithContext(ctx).Raw(sql, args...).Scan(&out).Error; err != nil {
		return DiffPage{}, fmt.Errorf("list diff tickets: %w", err)
	}
	withChecks(out)
	page := DiffPage{Tickets: out}
	if len(out) > q.Limit {
		page.Tickets = out[:q.Limit]
		page.Next = page.Tickets[q.Limit-1].ID
	}
	return page, nil
}

// DiffSummary counts the unresolved tickets of one resource and sign.
type DiffSummary struct {
	Resource ResourceType
	Sign     int
	Open     int64
	Acked    int64
}

// OpenDiffSummary counts the OPEN and ACKED DIFF tickets by resource and
// sign, in the registry's order of types, positive before negative (an
// UNCHECKED ticket has no sign that means anything). It reads only the
// unresolved part of the status index.
func (s *Store) OpenDiffSummary(ctx context.Context) ([]DiffSummary, error) {
	type row struct {
		ResourceType ResourceType
		Sign         int
		Status       string
		N            int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT resource_type, sign, status, COUNT(*) AS n FROM recon_diffs
		WHERE status IN ('OPEN','ACKED') AND kind = 'DIFF' GROUP BY resource_type, sign, status`).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("summarise open diffs: %w", err)
	}
	type key struct {
		t    ResourceType
		sign int
	}
	sums := map[key]*DiffSummary{}
	var out []DiffSummary
	for _, r := range rows {
		k := key{r.ResourceType, r.Sign}
		d := sums[k]
		if d == nil {
			d = &DiffSummary{Resource: r.ResourceType, Sign: r.Sign}
			sums[k] = d
		}
		if r.Status == DiffAcked {
			d.Acked += r.N
		} else {
			d.Open += r.N
		}
	}
	for _, d := range sums {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := s.TypeRank(out[i].Resource), s.TypeRank(out[j].Resource); a != b {
			return a < b
		}
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Sign > out[j].Sign
	})
	return out, nil
}

// ReconRunsByID reads the runs with the given ids, by primary key.
func (s *Store) ReconRunsByID(ctx context.Context, ids []int64) (map[int64]ReconRun, error) {
	out := make(map[int64]ReconRun, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var runs []ReconRun
	if err := s.R.WithContext(ctx).Where("id IN ?", ids).Find(&runs).Error; err != nil {
		return nil, fmt.Errorf("reconciliation runs by id: %w", err)
	}
	for _, r := range runs {
		out[r.ID] = r
	}
	return out, nil
}

// ReconRunAfter is the first run after run id that finished: the one that
// closed a ticket last seen in run id automatically. Nil when none.
func (s *Store) ReconRunAfter(ctx context.Context, id int64) (*ReconRun, error) {
	var runs []ReconRun
	err := s.R.WithContext(ctx).Where("id > ? AND status IN ?", id, []string{ReconDone, ReconPartial}).Order("id").Limit(1).Find(&runs).Error
	if err != nil {
		return nil, fmt.Errorf("reconciliation run after %d: %w", id, err)
	}
	if len(runs) == 0 {
		return nil, nil
	}
	return &runs[0], nil
}

// maxDiffHistory bounds the audit entries a ticket's page shows.
const maxDiffHistory = 100

// DiffHistory lists what people did to a ticket, oldest first, from the
// audit log (index (target, id)).
func (s *Store) DiffHistory(ctx context.Context, id int64) ([]AuditEntry, error) {
	return s.targetHistory(ctx, TicketTarget(id), maxDiffHistory)
}

// AuditReconRunNow records that actor asked for a reconciliation run from
// the dashboard; the run itself records its result in recon_runs.
func (s *Store) AuditReconRunNow(ctx context.Context, actor string) error {
	e := AuditEntry{Actor: actor, Action: "recon_run_now", Target: "recon", Outcome: "ok",
		Detail: "started in the background", CreatedAt: s.Now()}
	if err := s.W.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("audit reconciliation run: %w", err)
	}
	return nil
}

// maxAbandonedShown bounds the abandoned tasks a ticket's page names.
const maxAbandonedShown = 20

// AbandonedTask is a task an admin abandoned, with who did it and why.
type AbandonedTask struct {
	ReleaseTask
	By     string
	Reason string
}

// AbandonedTasks lists the abandoned tasks of one key, newest first (the
// (resource_type, biz_key, status) index), each with its abandon's audit
// row: what a ticket of the key names as left held.
func (s *Store) AbandonedTasks(ctx context.Context, t ResourceType, key string) ([]AbandonedTask, error) {
	db := s.R.WithContext(ctx)
	var tasks []ReleaseTask
	err := db.Where("resource_type = ? AND biz_key = ? AND status = ?", t, key, TaskAbandoned).Order("id DESC").
		Limit(maxAbandonedShown).Find(&tasks).Error
	if err != nil {
		return nil, fmt.Errorf("abandoned tasks of %s %s: %w", t, key, err)
	}
	out := make([]AbandonedTask, 0, len(tasks))
	for _, tk := range tasks {
		var e []AuditEntry
		err := db.Where("target = ? AND action = 'abandon_task' AND outcome = 'ok'", TaskTarget(tk.ID)).Order("id DESC").Limit(1).Find(&e).Error
		if err != nil {
			return nil, fmt.Errorf("who abandoned task %d: %w", tk.ID, err)
		}
		a := AbandonedTask{ReleaseTask: tk}
		if len(e) == 1 {
			a.By, a.Reason = e[0].Actor, e[0].Reason
		}
		out = append(out, a)
	}
	return out, nil
}
