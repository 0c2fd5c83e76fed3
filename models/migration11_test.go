package models_test

import (
	"os"
	"testing"

	"github.com/pressly/goose/v3"

	"unhold/models"
	"unhold/models/modelstest"
)

// Migration 00011 on tasks written before it: a MANUAL task whose
// transient failures reached MaxFailures says RETRY_EXHAUSTED with its last
// class kept beside it; a task that went MANUAL on a permanent error, or
// is still retrying, keeps its class. Down puts the classes back.
func TestMigration11Backfill(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, _ := openDSN(t, d)
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			sqlDB, err := b.s.W.DB()
			must(t, func() error { return err })
			gd := goose.DialectSQLite3
			if d == models.Postgres {
				gd = goose.DialectPostgres
			}
			p, err := goose.NewProvider(gd, sqlDB, os.DirFS("migrations/"+string(d)))
			must(t, func() error { return err })
			set := map[string]string{
				"o-exhausted": "status = 'MANUAL', failures = 8, error_class = 'TIMEOUT', last_error = 'timeout'",
				"o-permanent": "status = 'MANUAL', failures = 2, error_class = 'LOCKED_SHORT'",
				"o-retrying":  "status = 'RETRY', failures = 3, error_class = 'CONNECTION'",
				"o-fresh":     "status = 'PENDING'",
			}
			for no := range set {
				b.closedOrder(t, no, 1)
			}
			// The tasks as the code before 00011 left them.
			_, err = p.DownTo(b.ctx, 10)
			must(t, func() error { return err })
			for no, cols := range set {
				must(t, func() error { return b.s.W.Exec("UPDATE release_tasks SET "+cols+" WHERE order_no = ?", no).Error })
			}
			_, err = b.s.Migrate(b.ctx)
			must(t, func() error { return err })
			type row struct{ OrderNo, ErrorClass, LastErrorClass string }
			read := func() map[string]row {
				var rows []row
				must(t, func() error {
					return b.s.W.Raw("SELECT order_no, error_class, last_error_class FROM release_tasks").Scan(&rows).Error
				})
				out := map[string]row{}
				for _, r := range rows {
					out[r.OrderNo] = r
				}
				return out
			}
			want := map[string]row{
				"o-exhausted": {"o-exhausted", "RETRY_EXHAUSTED", "TIMEOUT"},
				"o-permanent": {"o-permanent", "LOCKED_SHORT", "LOCKED_SHORT"},
				"o-retrying":  {"o-retrying", "CONNECTION", "CONNECTION"},
				"o-fresh":     {"o-fresh", "", ""},
			}
			if got := read(); len(got) != len(want) {
				t.Fatalf("tasks = %v", got)
			} else {
				for no, w := range want {
					if got[no] != w {
						t.Errorf("after up %s = %+v, want %+v", no, got[no], w)
					}
				}
			}
			tk := b.task(t, "o-exhausted")
			if tk.ErrorClass != models.ClassRetryExhausted || tk.LastErrorClass != models.ClassTimeout {
				t.Errorf("the exhausted task reads %s / %s", tk.ErrorClass, tk.LastErrorClass)
			}
			_, err = p.DownTo(b.ctx, 10)
			must(t, func() error { return err })
			var classes []struct{ OrderNo, ErrorClass string }
			must(t, func() error {
				return b.s.W.Raw("SELECT order_no, error_class FROM release_tasks ORDER BY order_no").Scan(&classes).Error
			})
			for _, c := range classes {
				if c.ErrorClass != map[string]string{"o-exhausted": "TIMEOUT", "o-permanent": "LOCKED_SHORT", "o-retrying": "CONNECTION", "o-fresh": ""}[c.OrderNo] {
					t.Errorf("after down %s = %s", c.OrderNo, c.ErrorClass)
				}
			}
		})
	}
}
