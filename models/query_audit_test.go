package models_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"unhold/models"
)

// audits counts the audit rows a condition keeps ("1 = 1": all).
func (b bundle) audits(t *testing.T, cond string, args ...any) int64 {
	t.Helper()
	var n int64
	must(t, func() error { return b.s.R.Model(&models.AuditEntry{}).Where(cond, args...).Count(&n).Error })
	return n
}

// lastAudit reads the newest audit row.
func (b bundle) lastAudit(t *testing.T) models.AuditEntry {
	t.Helper()
	var e models.AuditEntry
	must(t, func() error { return b.s.R.Order("id DESC").Take(&e).Error })
	return e
}

// Audit rows cannot be changed or deleted through gorm either, with the
// new columns in place.
func TestAuditAppendOnlyThroughGorm(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error {
			return b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "ann", Action: "user_create", Target: "user:bob", Outcome: "ok"})
		})
		e := b.lastAudit(t)
		for what, err := range map[string]error{
			"update":      b.s.W.Model(&models.AuditEntry{}).Where("id = ?", e.ID).Update("actor", "forged").Error,
			"update role": b.s.W.Model(&e).Updates(map[string]any{"role": "admin", "ip": "1.2.3.4"}).Error,
			"save":        b.s.W.Save(&models.AuditEntry{ID: e.ID, Actor: "forged", Action: "x", Target: "y", Outcome: "ok", CreatedAt: e.CreatedAt}).Error,
			"delete":      b.s.W.Delete(&models.AuditEntry{}, e.ID).Error,
			"delete all":  b.s.W.Where("1 = 1").Delete(&models.AuditEntry{}).Error,
		} {
			if err == nil {
				t.Errorf("%s of an audit row succeeded", what)
			}
		}
		if got := b.lastAudit(t); got.ID != e.ID || got.Actor != "ann" || got.Role != "" || got.IP != "" || b.audits(t, "1 = 1") != 1 {
			t.Fatalf("audit row changed: %+v, was %+v", got, e)
		}
	})
}

// Audit rows take the request's metadata from the context, through every
// path that writes them; fields set by the caller win; the user agent is
// cut to 256 bytes of valid UTF-8, the cut marked.
func TestAuditRequestMeta(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		ua := "a" + strings.Repeat("é", 150) // 301 bytes; byte 256 is inside an é
		ctx := models.WithRequestMeta(b.ctx, models.RequestMeta{Role: "operator", RequestID: "req-7", IP: "192.0.2.44", UserAgent: ua})
		if got := models.RequestMetaFrom(ctx); got.RequestID != "req-7" {
			t.Fatalf("meta = %+v", got)
		}
		if got := models.RequestMetaFrom(b.ctx); got != (models.RequestMeta{}) {
			t.Fatalf("meta of a bare context = %+v", got)
		}

		must(t, func() error {
			return b.s.RecordAudit(ctx, models.AuditEntry{Actor: "ann", Action: "a", Target: "t", Outcome: "ok", IP: "198.51.100.1"})
		})
		e := b.lastAudit(t)
		if e.Role != "operator" || e.RequestID != "req-7" || e.IP != "198.51.100.1" {
			t.Fatalf("recorded %+v", e)
		}
		kept, cut := strings.CutSuffix(e.UserAgent, cutMark)
		if len(e.UserAgent) > 256 || !cut || !utf8.ValidString(e.UserAgent) || !strings.HasPrefix(ua, kept) {
			t.Fatalf("user agent kept as %d bytes %q, valid=%v", len(e.UserAgent), e.UserAgent, utf8.ValidString(e.UserAgent))
		}

		// An audit row written inside a domain transaction (the lease's).
		jobClaim(t, bundle{s: b.s, clock: b.clock, ctx: ctx}, models.JobClaim{Name: "recon", Owner: "a",
			Audit: &models.AuditEntry{Actor: "ann", Action: "job_run_now", Target: "job:recon", Outcome: "started"}})
		e = b.lastAudit(t)
		if e.Action != "job_run_now" || e.Role != "operator" || e.RequestID != "req-7" || e.IP != "192.0.2.44" {
			t.Fatalf("job audit = %+v", e)
		}

		must(t, func() error {
			return b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "cron", Action: "a", Target: "t", Outcome: "ok"})
		})
		if e = b.lastAudit(t); e.Role != "" || e.RequestID != "" || e.IP != "" || e.UserAgent != "" {
			t.Fatalf("audit without request = %+v", e)
		}
	})
}

// auditRows writes one audit row per spec "actor action target", a
// second apart, and returns their ids.
func auditRows(t *testing.T, b bundle, specs ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, spec := range specs {
		f := strings.Fields(spec)
		must(t, func() error {
			return b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: f[0], Action: f[1], Target: f[2], Outcome: "ok"})
		})
		ids = append(ids, b.lastAudit(t).ID)
		b.clock.Advance(time.Second)
	}
	return ids
}

// An audit row is written even when what it records held NUL or bytes that
// are not UTF-8 (a refused request's path, say): they become U+FFFD, which
// PostgreSQL stores, instead of failing the write.
func TestAuditStoresAnyText(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		e := models.AuditEntry{Actor: "a\x00b", Action: "denied", Target: "route:POST /admin/users/\xff/disable",
			Outcome: "denied", Detail: "bad \xfe\x00"}
		if err := b.s.RecordAudit(b.ctx, e); err != nil {
			t.Fatalf("record: %v", err)
		}
		var got models.AuditEntry
		if err := b.s.R.Where("action = ?", "denied").Take(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got.Actor != "a\uFFFDb" || got.Target != "route:POST /admin/users/\uFFFD/disable" || got.Detail != "bad \uFFFD\uFFFD" {
			t.Fatalf("stored %+v", got)
		}
	})
}

func TestAuditLogFilters(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		start := b.clock.Now()
		ids := auditRows(t, b,
			"ann rerun order:A1",      // 0
			"ann rerun order:A10",     // 1
			"bob close order:a1",      // 2
			"bob rerun order:B2",      // 3
			"ann coupon coupon:100%",  // 4
			"ann coupon coupon:100x",  // 5
			"bob sku sku:a_b",         // 6
			"bob sku sku:aXb",         // 7
			`bob sku sku:a\b`,         // 8
			"cron job_run_now job:rc", // 9
		)
		pick := func(is ...int) []int64 {
			var out []int64
			for _, i := range is {
				out = append(out, ids[i])
			}
			slices.Reverse(out)
			return out
		}
		for _, tc := range []struct {
			f    models.AuditFilter
			want []int64
		}{
			{models.AuditFilter{}, pick(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
			{models.AuditFilter{Actor: "ann"}, pick(0, 1, 4, 5)},
			{models.AuditFilter{Actor: "an"}, nil},
			{models.AuditFilter{Action: "rerun"}, pick(0, 1, 3)},
			{models.AuditFilter{Actor: "bob", Action: "rerun"}, pick(3)},
			{models.AuditFilter{Target: "order:"}, pick(0, 1, 2, 3)},
			{models.AuditFilter{Target: "order:A1"}, pick(0, 1)},
			{models.AuditFilter{Target: "order:a1"}, pick(2)},
			{models.AuditFilter{Target: "coupon:100%"}, pick(4)},
			{models.AuditFilter{Target: "sku:a_"}, pick(6)},
			{models.AuditFilter{Target: `sku:a\`}, pick(8)},
			{models.AuditFilter{Target: "sku:a%"}, nil},
			{models.AuditFilter{From: start.Add(2 * time.Second), To: start.Add(4 * time.Second)}, pick(2, 3)},
			{models.AuditFilter{Action: "rerun", From: start.Add(time.Second)}, pick(1, 3)},
			{models.AuditFilter{Action: "rerun", To: start.Add(time.Second)}, pick(0)},
			{models.AuditFilter{Before: ids[4]}, pick(0, 1, 2, 3)},
			{models.AuditFilter{Actor: "bob", Before: ids[7]}, pick(2, 3, 6)},
		} {
			rows, next, err := b.s.AuditLog(b.ctx, tc.f)
			var got []int64
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if err != nil || next != 0 || !slices.Equal(got, tc.want) {
				t.Errorf("AuditLog(%+v) = %v next %d, %v; want %v", tc.f, got, next, err, tc.want)
			}
		}
		actions, err := b.s.AuditActions(b.ctx, false)
		if want := []string{"close", "coupon", "job_run_now", "rerun", "sku"}; err != nil || !slices.Equal(actions, want) {
			t.Fatalf("actions = %v, %v; want %v", actions, err, want)
		}
	})
}

// Pages go by id, newest first, without gaps or repeats, also filtered;
// the page size defaults to 50 and stops at 200.
func TestAuditLogPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		rows := make([]models.AuditEntry, 230)
		for i := range rows {
			rows[i] = models.AuditEntry{Actor: []string{"ann", "bob"}[i%2], Action: "a", Target: fmt.Sprintf("t:%d", i),
				Outcome: "ok", CreatedAt: b.clock.Now()}
		}
		must(t, func() error { return b.s.W.Create(&rows).Error })
		for _, tc := range []struct {
			f     models.AuditFilter
			total int
			sizes []int
		}{
			{models.AuditFilter{Limit: 100}, 230, []int{100, 100, 30}},
			{models.AuditFilter{}, 230, []int{50, 50, 50, 50, 30}},
			{models.AuditFilter{Limit: 1000}, 230, []int{200, 30}},
			{models.AuditFilter{Actor: "bob", Limit: 40}, 115, []int{40, 40, 35}},
		} {
			var got []int64
			var sizes []int
			f := tc.f
			for {
				page, next, err := b.s.AuditLog(b.ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				sizes = append(sizes, len(page))
				for _, r := range page {
					got = append(got, r.ID)
				}
				if next == 0 {
					break
				}
				f.Before = next
			}
			if len(got) != tc.total || !slices.IsSortedFunc(got, func(a, b int64) int { return int(b - a) }) ||
				len(slices.Compact(slices.Clone(got))) != tc.total || !slices.Equal(sizes, tc.sizes) {
				t.Errorf("%+v: %d rows in pages %v, want %d in %v", tc.f, len(got), sizes, tc.total, tc.sizes)
			}
		}
	})
}

// The audit policy's SQL condition keeps exactly the entries
// AuditOperational calls operational, and that is orders, tasks, tickets,
// reconciliation runs, jobs and resources, never users, tokens, sign-ins
// or refusals.
func TestAuditOperational(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		entries := map[string]bool{ // action target → operational
			"rerun order:A1/inventory": true, "order.refund order:A1": true, "bulk_rerun tasks:coupon?status=MANUAL": true,
			"abandon_task task:7": true, "diff_ack diff:3": true, "recon_run_now recon": true, "job_run_now job:sweep": true,
			"set_stock sku:s1": true, "coupon_create coupon:4": true, "credit account:u1": true, "activity_set activity:a1": true,
			"slot_put slot:seat-1":   true,
			"user_create user:carol": false, "token_revoke token:erp": false, "login user:carol": false, "logout user:carol": false,
			"password_change user:carol": false, "denied route:GET /admin/users": false, "refused_summary refusals:vic": false,
			"denied order:A1": false, "user_role order:A1": false, "rerun user:carol": false, "rerun ORDER:A1": false,
			"rerun recon2": false, "rerun orders:A1": false, "rerun nokind": false,
		}
		for spec := range entries {
			action, target, _ := strings.Cut(spec, " ")
			must(t, func() error {
				return b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "ann", Action: action, Target: target, Outcome: "ok"})
			})
		}
		all, _, err := b.s.AuditLog(b.ctx, models.AuditFilter{Limit: models.MaxAuditPageSize})
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, e := range all {
			op := b.s.AuditOperational(e)
			if exp, ok := entries[e.Action+" "+e.Target]; ok && op != exp {
				t.Errorf("AuditOperational(%s %s) = %v, want %v", e.Action, e.Target, op, exp)
			}
			if op {
				want = append(want, e.ID)
			}
		}
		rows, _, err := b.s.AuditLog(b.ctx, models.AuditFilter{Operational: true, Limit: models.MaxAuditPageSize})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range rows {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("AuditLog(Operational) = %v, want %v", got, want)
		}
		if n, _, err := b.s.CountAudit(b.ctx, models.AuditFilter{Operational: true}, 1000); err != nil || n != int64(len(want)) {
			t.Errorf("CountAudit(Operational) = %d, %v; want %d", n, err, len(want))
		}
		actions, err := b.s.AuditActions(b.ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			if models.AdminOnlyAuditAction(a) {
				t.Errorf("the operational actions offer %s", a)
			}
		}
		if !slices.Contains(actions, "rerun") || slices.Contains(actions, "token_revoke") {
			t.Errorf("operational actions = %v", actions)
		}
	})
}
