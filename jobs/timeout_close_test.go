package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// The timeout close goes page after page until no order is due, waking the
// worker after each page.
func TestTimeoutCloseGoesThroughPages(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			clock := modelstest.NewClock()
			s := modelstest.Open(t, d, models.Options{Now: clock.Now})
			ctx := context.Background()
			if _, err := s.SetStock(ctx, "sku-1", 1000, 0, "test"); err != nil {
				t.Fatal(err)
			}
			const orders = 201 // a full page of 200 and a part
			for i := range orders {
				req := models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: "u1",
					Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, PayTimeout: time.Minute}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(2 * time.Minute)
			wakes := 0
			summary, err := jobs.CloseExpired(ctx, s, func() { wakes++ })
			if err != nil || summary != "closed 201 unpaid orders past their deadline, 2 pages" || wakes != 2 {
				t.Fatalf("run = %q, %v, %d wakes; want 201 closed in 2 pages, 2 wakes", summary, err, wakes)
			}
			summary, err = jobs.CloseExpired(ctx, s, func() { wakes++ })
			if err != nil || summary != "" || wakes != 2 {
				t.Fatalf("second run = %q, %v, %d wakes; want nothing to do", summary, err, wakes)
			}
			modelstest.CheckInvariants(t, s)
		})
	}
}
