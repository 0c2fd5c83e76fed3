package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// benchOrder is the order of the close benchmarks: two SKUs, a balance
// freeze and a quota place, so a close writes four release tasks.
func benchOrder(no string) models.PlaceRequest {
	return models.PlaceRequest{OrderNo: no, UserID: "u1",
		Items:  []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}, ActivityID: "act-1", PayTimeout: time.Minute}
}

// BenchmarkCloseOrder: one close of an order with four holds (the status
// flip and four release tasks, in one transaction).
func BenchmarkCloseOrder(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			s := modelstest.Open(b, d, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			for i := range b.N {
				if _, _, err := s.PlaceOrder(ctx, benchOrder(fmt.Sprintf("c-%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r, err := s.CloseOrder(ctx, fmt.Sprintf("c-%d", i), models.TriggerUserCancel, "bench")
				if err != nil || !r.Won || r.Tasks != 4 {
					b.Fatalf("close: %+v, %v", r, err)
				}
			}
		})
	}
}

// BenchmarkCloseExpired: the timeout job's close, per order, of b.N unpaid
// orders past their deadline, a page at a time.
func BenchmarkCloseExpired(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			clock := modelstest.NewClock()
			s := modelstest.Open(b, d, models.Options{Now: clock.Now})
			ctx := context.Background()
			benchShop(b, s)
			for i := range b.N {
				if _, _, err := s.PlaceOrder(ctx, benchOrder(fmt.Sprintf("e-%d", i))); err != nil {
					b.Fatal(err)
				}
			}
			clock.Advance(2 * time.Minute)
			b.ReportAllocs()
			b.ResetTimer()
			closed := 0
			for closed < b.N {
				nos, err := s.CloseExpired(ctx, 500)
				if err != nil || len(nos) == 0 {
					b.Fatalf("close expired: %d, %v", len(nos), err)
				}
				closed += len(nos)
			}
		})
	}
}
