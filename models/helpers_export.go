package models

import (
	"time"

	"gorm.io/gorm"
)

// Entry points for auth, which keeps its tables in this database and reads
// and writes them as the domain does: the same row lock, the same "not
// found", the same audit rows and the same "invalid". Each is the domain's
// own helper, so the two cannot drift apart.

// ForUpdate is the row-lock suffix for a read that a write in the same
// transaction will follow: " FOR UPDATE" on PostgreSQL; "" on SQLite, where
// the immediate write transaction already excludes other writers.
func (s *Store) ForUpdate() string { return s.forUpdate() }

// Take reads one row of q into dst; ErrNotFound, naming what, when there is
// none.
func Take(q *gorm.DB, dst any, what string) error { return take(q, dst, what) }

// AuditIn writes a copy of a, stamped now, in tx; a nil a writes nothing.
func AuditIn(tx *gorm.DB, a *AuditEntry, now time.Time) error { return auditIn(tx, a, now) }

// Invalid is bad input: ErrInvalid with what is wrong, worded by format.
func Invalid(format string, a ...any) error { return invalid(format, a...) }
