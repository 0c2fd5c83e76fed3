package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// BenchmarkPlaceOrder: one order holding two SKUs, a balance freeze and a
// quota place, in one transaction.
func BenchmarkPlaceOrder(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			s := modelstest.Open(b, d, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			b.ResetTimer()
			for i := range b.N {
				req := models.PlaceRequest{OrderNo: fmt.Sprintf("p-%d", i), UserID: "u1",
					Items:  []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}},
					Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}, ActivityID: "act-1"}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReleaseTask: the release transaction of one inventory task
// (task DONE under the lease, ledger row, conditional update, attempt row),
// claimed in batches of 50.
func BenchmarkReleaseTask(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			s := modelstest.Open(b, d, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			benchReleases(ctx, b, s, 50, false)
		})
	}
}

// BenchmarkReleaseBatch: the same releases, claimed 100 at a time and each
// claim released in one transaction (a savepoint per task), as the worker
// does.
func BenchmarkReleaseBatch(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			s := modelstest.Open(b, d, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			benchReleases(ctx, b, s, 100, true)
		})
	}
}

// benchReleases closes b.N one-SKU orders, then times claiming their tasks
// batch at a time and releasing them, each alone or each claim in one
// transaction.
func benchReleases(ctx context.Context, b *testing.B, s *models.Store, batch int, together bool) {
	for i := range b.N {
		no := fmt.Sprintf("r-%d", i)
		req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
		if _, _, err := s.PlaceOrder(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, err := s.CloseOrder(ctx, no, models.TriggerTimeout, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	done := 0
	for done < b.N {
		tasks, err := s.ClaimTasks(ctx, "bench", batch, time.Minute)
		if err != nil || len(tasks) == 0 {
			b.Fatalf("claim: %d, %v", len(tasks), err)
		}
		if together {
			rs, err := s.ReleaseBatch(ctx, tasks, "bench")
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range rs {
				if r.Outcome != models.OutcomeDone {
					b.Fatalf("release: %+v", r)
				}
			}
			done += len(tasks)
			continue
		}
		for _, t := range tasks {
			if r, err := s.ReleaseTask(ctx, t, "bench"); err != nil || r.Outcome != models.OutcomeDone {
				b.Fatalf("release: %+v, %v", r, err)
			}
			done++
		}
	}
}

func benchShop(b *testing.B, s *models.Store) {
	ctx := context.Background()
	for _, sku := range []string{"sku-1", "sku-2"} {
		if _, err := s.SetStock(ctx, sku, 100_000_000, 0, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Credit(ctx, "u1", models.AssetBalance, 100_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := s.SetActivity(ctx, "act-1", 100_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
}
