package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// BenchmarkPages renders every dashboard page against the big benchmark
// shop (1M orders, about 5M ledger rows, SQLite): each must stay under
// 200 ms. Run with: go test ./web/ -run '^$' -bench Pages -benchtime 20x
func BenchmarkPages(b *testing.B) {
	path, end := modelstest.BigShopPath(b)
	ctx := context.Background()
	s, err := models.Open(ctx, path, models.Options{Now: func() time.Time { return end.Add(time.Minute) }})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	e := web.New(web.Deps{Store: s, Location: time.UTC, Sessions: testSessions})
	// Signed in as an admin, as every page needs: the session lookup is part
	// of what each request costs.
	signer := bundle{e: e, s: s, clock: modelstest.NewClock()}
	who, err := signer.signIn("bench-"+randHex(4), auth.RoleAdmin)
	if err != nil {
		b.Fatal(err)
	}
	as := signer.as(who)
	var manual models.ReleaseTask
	if err := s.R.Where("status = ?", models.TaskManual).Order("id DESC").Take(&manual).Error; err != nil {
		b.Fatal(err)
	}
	day := end.Add(-24 * time.Hour).Format("2006-01-02")
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"orders", "/orders"},
		{"orders_closed", "/orders?status=CLOSED"},
		{"orders_user", "/orders?user=u04242"},
		{"orders_range", "/orders?from=2026-10-01&to=2026-10-02"},
		{"orders_old_first", "/orders?sort=old"},
		{"orders_held_coupon", "/orders?held_type=coupon"},
		{"orders_held_sku", "/orders?held_type=inventory&held_key=SKU-00042"},
		{"orders_closed_day", "/orders?closed_from=" + day + "&closed_to=" + day},
		{"order_chain", "/orders/B0500000"},
		{"order_chain_manual", "/orders/" + manual.OrderNo},
		{"rerun_preview", "/orders/" + manual.OrderNo + "/resources/" + string(manual.ResourceType) + "/rerun"},
		{"tasks", "/tasks"},
		{"tasks_manual", "/tasks?status=MANUAL"},
		{"tasks_manual_age", "/tasks?status=MANUAL&sort=age"},
		{"tasks_past_sla", "/tasks?status=MANUAL&age=past_sla&sort=age"},
		{"tasks_class", "/tasks?class=TIMEOUT"},
		{"task", "/tasks/12345"},
		{"bulk_rerun_preview", "/tasks/rerun?type=inventory&status=MANUAL"},
		{"inventory", "/inventory"},
		{"sku_ledger", "/inventory/SKU-00042"},
		{"coupons", "/coupons"},
		{"coupons_user", "/coupons?user=u04242"},
		{"balances", "/balances"},
		{"balances_user", "/balances?user=u04242"},
		{"daily_report", "/reports/daily?date=" + day},
		{"recon", "/recon"},
		{"recon_past_sla", "/recon?age=past_sla&sort=age"},
		{"recon_resolved_plus", "/recon?status=RESOLVED&sign=1"},
		{"jobs", "/jobs"},
		{"audit", "/audit"},
		{"audit_actor", "/audit?actor=" + who.name},
		{"users", "/admin/users"},
		{"tokens", "/admin/tokens"},
		{"search_orders", "/search?q=b05"},
		{"search_users", "/search?q=U00"},
		{"search_skus", "/search?q=sku-0"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				rec := as.serve(httptest.NewRequest(http.MethodGet, p.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s = %d\n%.500s", p.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
	b.Run("daily_csv", func(b *testing.B) {
		for range b.N {
			rec := as.serve(httptest.NewRequest(http.MethodGet, "/reports/daily-rows.csv?date="+day, nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("csv = %d", rec.Code)
			}
			b.SetBytes(int64(rec.Body.Len()))
		}
	})
}
