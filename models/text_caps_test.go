package models_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"unhold/models"
)

// cutMark is how a clipped text ends.
const cutMark = "…[cut]"

// Audit text is clipped to its documented bound, on a character boundary
// and marked, however long what was refused: a 60 KB target, reason,
// detail and User-Agent still make one storable row.
func TestAuditTextClipped(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		long := strings.Repeat("理", 20<<10) // 60 KB, three bytes a character
		must(t, func() error {
			return b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "root", Action: "denied", Target: "route:GET /" + long,
				Reason: long, Outcome: "denied", Detail: long + "\x00", UserAgent: long})
		})
		var e models.AuditEntry
		must(t, func() error { return b.s.W.Order("id DESC").Take(&e).Error })
		for _, f := range []struct {
			name string
			got  string
			max  int
		}{{"target", e.Target, 512}, {"reason", e.Reason, 4096}, {"detail", e.Detail, 4096}, {"user agent", e.UserAgent, 256}} {
			if len(f.got) > f.max || !strings.HasSuffix(f.got, cutMark) || !utf8.ValidString(f.got) {
				t.Errorf("%s is %d bytes (valid UTF-8 %v), want at most %d ending in %q", f.name, len(f.got), utf8.ValidString(f.got), f.max, cutMark)
			}
		}
		if !strings.HasPrefix(e.Target, "route:GET /理理") {
			t.Errorf("target = %.40q…, want its beginning kept", e.Target)
		}
	})
}

// A release failure whose text is long and not ASCII is recorded, clipped
// on a character boundary: cutting it mid-character made PostgreSQL refuse
// the row, so the failure was not recorded at all.
func TestReleaseErrorClipped(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			long := errors.New(strings.Repeat("超时", 2000))
			b := setup(t, d, models.Options{Faults: func(point string, _ *models.ReleaseTask) error {
				if point == models.FaultAfterLedger {
					return &models.TransientError{Class: models.ClassTimeout, Err: long}
				}
				return nil
			}})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			must(t, func() error {
				_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
				return err
			})
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); return err })
			if got := b.drain(t, "w1"); got[models.OutcomeRetry] != 1 {
				t.Fatalf("drain = %v, want one RETRY", got)
			}
			var tk models.ReleaseTask
			must(t, func() error { return b.s.W.Where("order_no = ?", "o-1").Take(&tk).Error })
			var at models.TaskAttempt
			must(t, func() error { return b.s.W.Where("task_id = ?", tk.ID).Take(&at).Error })
			for name, got := range map[string]string{"last_error": tk.LastError, "attempt error": at.Error} {
				if len(got) > 1000 || !strings.HasSuffix(got, cutMark) || !strings.HasPrefix(got, "TIMEOUT: 超时") {
					t.Errorf("%s is %d bytes: %.30q…; want at most 1000, cut and marked", name, len(got), got)
				}
			}
		})
	}
}
