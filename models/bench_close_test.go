package models_test

import (
	"context"
	"fmt"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// BenchmarkCloseOrder: the close transaction of a one-SKU order (status
// flip, one release task), what a wake-up notification rides on.
func BenchmarkCloseOrder(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			s := modelstest.Open(b, d, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			for i := range b.N {
				req := models.PlaceRequest{OrderNo: fmt.Sprintf("c-%d", i), UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.CloseOrder(ctx, fmt.Sprintf("c-%d", i), models.TriggerTimeout, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
