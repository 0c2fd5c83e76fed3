package models

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The audit page's reads, and the request metadata every audit row
// carries.

// RequestMeta is what an audit row records of the request that caused it:
// the acting role, the request id, the client's address and user agent.
type RequestMeta struct {
	Role, RequestID, IP, UserAgent string
}

type requestMetaKey struct{}

// WithRequestMeta returns ctx carrying m; audit rows written with it get
// m's fields (see AuditEntry.BeforeCreate).
func WithRequestMeta(ctx context.Context, m RequestMeta) context.Context {
	return context.WithValue(ctx, requestMetaKey{}, m)
}

// RequestMetaFrom reads the request metadata of ctx; zero when it has none.
func RequestMetaFrom(ctx context.Context) RequestMeta {
	if ctx == nil {
		return RequestMeta{}
	}
	m, _ := ctx.Value(requestMetaKey{}).(RequestMeta)
	return m
}

// Audit page sizes.
const (
	AuditPageSize    = 50
	MaxAuditPageSize = 200
)

// The audit policy, in one place: an entry is operational when it is
// about the shop's work — an order, a task, a reconciliation ticket or
// run, a job, a resource's stock or balance — and is not a refusal;
// everything else (users, tokens, sign-ins and sign-outs, password
// changes, refused requests and their summaries) is for admins only. The
// audit pages, the API and the order chain all read through it: admins see
// every entry whole, everyone else operational entries without the
// request's metadata (address, user agent, request id). Unknown kinds are
// admin-only, so a new kind of target is hidden until someone decides.
var (
	// operationalKinds are the target kinds ("<kind>:…") of operational
	// entries; a declared counter's type is one too (see auditKinds).
	operationalKinds = []string{"order", "task", "tasks", "diff", "ticket", "job", "sku", "coupon", "account", "activity", "slot", "approval"}
	// adminKinds are never operational, whatever a counter is named.
	adminKinds = []string{"user", "token", "route", RefusedSummaryKind}
	// adminActions are actions only ever done to an admin-only target, or
	// refusals: their names are not offered to other roles either.
	adminActions = []string{"denied", RefusedSummaryAction, "login", "logout", "password_change"}
	// adminActionPrefixes are the user_*, token_* and webhook_* actions.
	adminActionPrefixes = []string{"user_", "token_", "webhook_"}
)

// reconTarget is the target of a reconciliation run asked for by hand,
// without a kind.
const reconTarget = "recon"

// RefusedSummaryAction and RefusedSummaryKind name the row that sums up
// the refusals of one actor in one minute past the first few (the target
// is "refusals:<actor>").
const (
	RefusedSummaryAction = "refused_summary"
	RefusedSummaryKind   = "refusals"
)

// AdminOnlyAuditAction tells whether an action is never shown to a
// non-admin, so that its name is not offered as a filter either.
func AdminOnlyAuditAction(action string) bool {
	if slices.Contains(adminActions, action) {
		return true
	}
	for _, p := range adminActionPrefixes {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// auditKinds are the operational target kinds of this store: the fixed
// ones, the declared counter types, and the remote types (a question to
// their service about a key).
func (s *Store) auditKinds() []string {
	kinds := slices.Clone(operationalKinds)
	for _, t := range s.types {
		if k := s.resources[t].Kind(); (k == KindCounter || k == KindRemote) && !slices.Contains(adminKinds, string(t)) &&
			!slices.Contains(kinds, string(t)) {
			kinds = append(kinds, string(t))
		}
	}
	return kinds
}

// AuditOperational tells whether a non-admin may see e (without its
// request metadata: see AuditEntry.Operational).
func (s *Store) AuditOperational(e AuditEntry) bool {
	if AdminOnlyAuditAction(e.Action) {
		return false
	}
	if e.Target == reconTarget {
		return true
	}
	kind, _, ok := strings.Cut(e.Target, ":")
	return ok && slices.Contains(s.auditKinds(), kind)
}

// Operational is e as a non-admin sees it: without the request's address,
// user agent and id.
func (e AuditEntry) Operational() AuditEntry {
	e.IP, e.UserAgent, e.RequestID = "", "", ""
	return e
}

// operationalCond is the SQL condition AuditOperational is.
func (s *Store) operationalCond() (string, []any) {
	var actions []string
	var args []any
	for _, a := range adminActions {
		actions, args = append(actions, "?"), append(args, a)
	}
	conds := []string{"action NOT IN (" + strings.Join(actions, ", ") + ")"}
	for _, p := range adminActionPrefixes {
		c, a := prefixCond(s.Dialect, "action", p)
		conds, args = append(conds, "NOT ("+c+")"), append(args, a...)
	}
	kinds, kargs := []string{"target = ?"}, []any{reconTarget}
	for _, k := range s.auditKinds() {
		c, a := prefixCond(s.Dialect, "target", k+":")
		kinds, kargs = append(kinds, "("+c+")"), append(kargs, a...)
	}
	conds = append(conds, "("+strings.Join(kinds, " OR ")+")")
	return strings.Join(conds, " AND "), append(args, kargs...)
}

// AuditFilter selects audit rows: an exact actor and action, a target
// prefix ("order:" or "order:A1"), a time range [From, To), only the
// operational entries (for a non-admin), and the page: rows below the id
// Before (0: from the newest), Limit of them.
type AuditFilter struct {
	Actor, Action, Target string
	From, To              time.Time
	Operational           bool
	Before                int64
	Limit                 int
}

// auditWhere is the filter's SQL condition and its arguments.
func (s *Store) auditWhere(f AuditFilter) (string, []any) {
	d := s.Dialect
	conds, args := []string{"id < ?"}, []any{below(f.Before)}
	if f.Operational {
		c, a := s.operationalCond()
		conds, args = append(conds, "("+c+")"), append(args, a...)
	}
	if f.Actor != "" {
		conds, args = append(conds, "actor = ?"), append(args, f.Actor)
	}
	if f.Action != "" {
		conds, args = append(conds, "action = ?"), append(args, f.Action)
	}
	if f.Target != "" { // on SQLite a range of the (target, id) index
		cond, a := prefixCond(d, "target", f.Target)
		conds, args = append(conds, cond), append(args, a...)
	}
	if !f.From.IsZero() {
		conds, args = append(conds, "created_at >= ?"), append(args, f.From.UTC())
	}
	if !f.To.IsZero() {
		conds, args = append(conds, "created_at < ?"), append(args, f.To.UTC())
	}
	return strings.Join(conds, " AND "), args
}

// AuditLog reads one page of the audit rows the filter keeps, newest
// first, by id; next is the Before of the next page, 0 on the last one.
// An actor or action filter reads its (actor, id) or (action, id) index.
func (s *Store) AuditLog(ctx context.Context, f AuditFilter) ([]AuditEntry, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = AuditPageSize
	}
	limit = min(limit, MaxAuditPageSize)
	cond, args := s.auditWhere(f)
	var rows []AuditEntry
	err := s.R.WithContext(ctx).Raw(`SELECT * FROM audit_log WHERE `+cond+` ORDER BY id DESC LIMIT ?`,
		append(args, limit+1)...).Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("audit log: %w", err)
	}
	var next int64
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	return rows, next, nil
}

// CountAudit counts the audit rows the filter keeps, up to limit, as
// CountTasks does.
func (s *Store) CountAudit(ctx context.Context, f AuditFilter, limit int) (int64, bool, error) {
	f.Before = 0
	cond, args := s.auditWhere(f)
	return s.countCapped(ctx, "audit_log", cond, args, limit)
}

// AuditActions lists the actions audit rows have, for the filter's choice;
// with operational, only those a non-admin may filter by.
func (s *Store) AuditActions(ctx context.Context, operational bool) ([]string, error) {
	var out []string
	if err := s.R.WithContext(ctx).Raw(`SELECT DISTINCT action FROM audit_log ORDER BY action`).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("audit actions: %w", err)
	}
	if operational {
		out = slices.DeleteFunc(out, AdminOnlyAuditAction)
	}
	return out, nil
}

// AuditEntryByID reads one audit entry; ErrNotFound when there is none.
func (s *Store) AuditEntryByID(ctx context.Context, id int64) (AuditEntry, error) {
	var rows []AuditEntry
	if err := s.R.WithContext(ctx).Raw(`SELECT * FROM audit_log WHERE id = ?`, id).Scan(&rows).Error; err != nil {
		return AuditEntry{}, fmt.Errorf("audit entry %d: %w", id, err)
	}
	if len(rows) == 0 {
		return AuditEntry{}, fmt.Errorf("audit entry %d: %w", id, ErrNotFound)
	}
	return rows[0], nil
}
