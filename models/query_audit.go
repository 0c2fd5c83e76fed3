package models

import (
	"context"
	"fmt"
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

// AuditFilter selects audit rows: an exact actor and action, a target
// prefix ("order:" or "order:A1"), a time range [From, To), and the page:
// rows below the id Before (0: from the newest), Limit of them.
type AuditFilter struct {
	Actor, Action, Target string
	From, To              time.Time
	Before                int64
	Limit                 int
}

// where is the filter's SQL condition and its arguments.
func (f AuditFilter) where(d Dialect) (string, []any) {
	conds, args := []string{"id < ?"}, []any{below(f.Before)}
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
	cond, args := f.where(s.Dialect)
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
	cond, args := f.where(s.Dialect)
	return s.countCapped(ctx, "audit_log", cond, args, limit)
}

// AuditActions lists the actions audit rows have, for the filter's choice.
func (s *Store) AuditActions(ctx context.Context) ([]string, error) {
	var out []string
	if err := s.R.WithContext(ctx).Raw(`SELECT DISTINCT action FROM audit_log ORDER BY action`).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("audit actions: %w", err)
	}
	return out, nil
}
