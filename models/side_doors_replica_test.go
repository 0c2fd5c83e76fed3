package models_test

import (
	"errors"
	"testing"

	"gorm.io/gorm"

	"unhold/models"
)

// On PostgreSQL, session_replication_role = replica (what pg_restore
// --disable-triggers and logical-replication tools set; a superuser, or
// any role granted SET on it, may set it in a plain session, no DDL) turns
// off every trigger that is not ENABLE ALWAYS: DELETE, UPDATE and TRUNCATE
// of the append-only tables then pass. This test fails on main; the fix
// is ALTER TABLE ... ENABLE ALWAYS TRIGGER for each append-only trigger, in
// a new migration.
func TestPostgresReplicaRoleCannotBypassAppendOnly(t *testing.T) {
	t.Parallel()
	b, _ := openDSN(t, models.Postgres)
	withEveryFlow(t, b)
	var super bool
	must(t, func() error {
		return b.s.W.Raw("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super).Error
	})
	if !super {
		t.Skip("needs a role that may set session_replication_role")
	}
	for _, table := range appendOnlyTables(t, b) {
		for _, stmt := range []string{"DELETE FROM " + table, "UPDATE " + table + " SET id = id", "TRUNCATE " + table + " CASCADE"} {
			var n int64
			err := b.s.W.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("SET LOCAL session_replication_role = replica").Error; err != nil {
					return err
				}
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
				if err := tx.Raw("SELECT COUNT(*) FROM " + table).Scan(&n).Error; err != nil {
					return err
				}
				return errRollback
			})
			if errors.Is(err, errRollback) {
				t.Errorf("%s under session_replication_role = replica: accepted (%d rows left), want refused", stmt, n)
			}
		}
	}
}

var errRollback = rollbackError{}

type rollbackError struct{}

func (rollbackError) Error() string { return "rolled back by the test" }
