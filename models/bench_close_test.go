package models_test

import (
	"context"
	"fmt"
	"syscall"
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
			cpu := startCPU(b)
			b.ResetTimer()
			for i := range b.N {
				r, err := s.CloseOrder(ctx, fmt.Sprintf("c-%d", i), models.TriggerUserCancel, "bench")
				if err != nil || !r.Won || r.Tasks != 4 {
					b.Fatalf("close: %+v, %v", r, err)
				}
			}
			cpu.report()
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
			cpu := startCPU(b)
			b.ResetTimer()
			closed := 0
			for closed < b.N {
				nos, err := s.CloseExpired(ctx, 500)
				if err != nil || len(nos) == 0 {
					b.Fatalf("close expired: %d, %v", len(nos), err)
				}
				closed += len(nos)
			}
			cpu.report()
		})
	}
}

// cpuClock reports the process's CPU time (user and system) per op: on a
// shared machine the wall time of a close is mostly waiting for a core,
// and its CPU is what a change to the close path moves.
type cpuClock struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuClock { return cpuClock{b: b, start: processCPU(b)} }

func (c cpuClock) report() {
	c.b.ReportMetric(float64(processCPU(c.b)-c.start)/float64(c.b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
