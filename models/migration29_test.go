package models_test

import (
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// Migration 00029 lets a run end PARTIAL (on SQLite by editing the
// table's text in sqlite_schema) and adds the coverage and streak tables
// and the tickets' kind. Going down turns a PARTIAL run back into DONE,
// as it was recorded before, and refuses PARTIAL again; up again accepts
// it, and the integrity check passes. Breaks if the text edit missed
// either way, or the down step left a status its CHECK refuses.
func TestMigration29PartialRuns(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			try := func(q string) error { return b.s.W.Exec(q, b.clock.Now()).Error }
			const partial = "INSERT INTO recon_runs (trigger_type, status, started_at) VALUES ('CLI', 'PARTIAL', ?)"
			if err := try(partial); err != nil {
				t.Fatalf("a PARTIAL run: %v", err)
			}
			if err := downTo(t, b, 28); err != nil {
				t.Fatalf("down: %v", err)
			}
			var statuses []string
			must(t, func() error { return b.s.R.Raw("SELECT status FROM recon_runs").Scan(&statuses).Error })
			if len(statuses) != 1 || statuses[0] != models.ReconDone {
				t.Fatalf("after down, runs %v, want the PARTIAL one DONE", statuses)
			}
			if err := try(partial); err == nil {
				t.Fatal("before 00029 a PARTIAL run was accepted")
			}
			if _, err := b.s.Migrate(b.ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			if err := try(partial); err != nil {
				t.Fatalf("after up again, a PARTIAL run: %v", err)
			}
			if err := try("INSERT INTO recon_runs (trigger_type, status, started_at) VALUES ('CLI', 'HALF', ?)"); err == nil {
				t.Fatal("a run of status HALF was accepted")
			}
			if d == models.SQLite {
				var ic string
				must(t, func() error { return b.s.R.Raw("PRAGMA integrity_check").Scan(&ic).Error })
				if ic != "ok" {
					t.Fatalf("integrity_check = %q", ic)
				}
			}
		})
	}
}
