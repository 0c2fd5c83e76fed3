package models_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"unhold/models"
	"unhold/models/modelstest"
)

// A write waiting its turn gives up when its ctx ends, and answers busy
// (IsBusy: a request gets 503 BUSY) after the busy timeout; neither stays in
// the queue to hold up the writes after it. Reads never wait for a turn. On
// PostgreSQL as many writes as Options.Writers hold turns at once.
func TestWriteWaitEnds(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, writers := range []int{1, 2} {
			if d == models.SQLite && writers > 1 {
				continue // one write connection, whatever Writers says
			}
			t.Run(fmt.Sprintf("%d writers", writers), func(t *testing.T) {
				writeWaitEnds(t, d, writers)
			})
		}
	})
}

func TestWritersOption(t *testing.T) {
	t.Parallel()
	if _, err := models.Open(context.Background(), modelstest.MigratedDSN(t, models.SQLite), models.Options{Writers: -1}); !errors.Is(err, models.ErrInvalid) {
		t.Fatalf("Writers -1: %v, want INVALID_INPUT", err)
	}
}

func writeWaitEnds(t *testing.T, d models.Dialect, writers int) {
	s := modelstest.Open(t, d, models.Options{BusyTimeout: 100 * time.Millisecond, Writers: writers})
	ctx := context.Background()
	var ends []func()
	for range writers {
		ends = append(ends, modelstest.HoldWriteTurn(t, s))
	}
	var n int64
	if err := s.R.WithContext(ctx).Raw("SELECT COUNT(*) FROM orders").Scan(&n).Error; err != nil {
		t.Errorf("read while every write turn is held: %v", err)
	}

	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := s.SetStock(cctx, "sku-1", 5, 0, "test")
	if !errors.Is(err, context.DeadlineExceeded) || models.IsBusy(err) {
		t.Errorf("write with an ended ctx = %v; want its ctx's error, not busy", err)
	}
	_, err = s.SetStock(ctx, "sku-1", 5, 0, "test")
	if !models.IsBusy(err) {
		t.Errorf("write past the busy timeout = %v; want busy", err)
	}

	for _, end := range ends {
		end()
	}
	if _, err := s.SetStock(ctx, "sku-1", 5, 0, "test"); err != nil {
		t.Fatalf("write after the turn was given back: %v", err)
	}
}

// With writers hammering the one write turn (SQLite's one write
// connection; PostgreSQL with Writers 1, TestWriteGateRounds has more), a
// request waits at most one turn per writer queued before it (turns are
// handed out in arrival order, not to a random waiter, database/sql's
// choice, under which a waiter can be passed over many times in a row).
// The release worker's writes (ReleasePriority) wait in a line of their
// own served at least every other turn: behind 8 hammering requests the
// worker waits about one turn, not eight; and hammering worker writes
// still leave every other turn to a request.
func TestWorkerLineServedEveryOtherTurn(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) { workerLineServedEveryOtherTurn(t, d) })
}

func workerLineServedEveryOtherTurn(t *testing.T, d models.Dialect) {
	for _, tc := range []struct {
		name             string
		hammer, measured func(context.Context) context.Context
		wantAtMost       int64
	}{
		{"worker behind requests", plainCtx, models.ReleasePriority, 2},
		{"request behind workers", models.ReleasePriority, plainCtx, 2},
		// Each hammer at most once ahead (queued, or holding the turn
		// without having counted it yet), one more for a turn that began
		// between counting and queueing.
		{"request behind requests", plainCtx, plainCtx, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := modelstest.Open(t, d, models.Options{Writers: 1})
			const hammers = 8
			var turns atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			hctx := tc.hammer(context.Background())
			for range hammers {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						err := s.W.WithContext(hctx).Transaction(func(tx *gorm.DB) error {
							turns.Add(1)
							time.Sleep(3 * time.Millisecond)
							return tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
						})
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var worst int64
			mctx := tc.measured(context.Background())
			for range 30 {
				before := turns.Load()
				err := s.W.WithContext(mctx).Transaction(func(tx *gorm.DB) error {
					worst = max(worst, turns.Load()-before)
					return tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			if worst > tc.wantAtMost {
				t.Errorf("waited %d turns of %d hammering writers; want at most %d", worst, hammers, tc.wantAtMost)
			}
		})
	}
}

func plainCtx(ctx context.Context) context.Context { return ctx }

// On PostgreSQL, W and R share one pool: with as many writers as it has
// connections (-pg-writers takes up to 64), writes holding every turn left
// reads no connection, and they waited for a write to end.
func TestReadsBesideEveryWriteTurn(t *testing.T) {
	t.Parallel()
	const writers = 20
	s := modelstest.Open(t, models.Postgres, models.Options{Writers: writers})
	var ends []func()
	for range writers {
		ends = append(ends, modelstest.HoldWriteTurn(t, s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int64
	err := s.R.WithContext(ctx).Raw("SELECT COUNT(*) FROM orders").Scan(&n).Error
	for _, end := range ends {
		end()
	}
	if err != nil {
		t.Fatalf("read while %d writes hold every turn: %v", writers, err)
	}
}

// On PostgreSQL a write waiting for a row lock holds its write turn: when
// another instance's transaction kept the lock (its process hung), every
// write of this one waited behind it and failed BUSY, though none of them
// needed that row. The wait now ends at the busy timeout (lock_timeout),
// busy, and gives the turn back.
func TestRowLockWaitGivesTheTurnBack(t *testing.T) {
	t.Parallel()
	dsn := modelstest.MigratedDSN(t, models.Postgres)
	open := func() *models.Store {
		s, err := models.Open(context.Background(), dsn, models.Options{BusyTimeout: 500 * time.Millisecond, Writers: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s, other := open(), open()
	ctx := context.Background()
	for _, sku := range []string{"sku-1", "sku-2"} {
		if _, err := s.SetStock(ctx, sku, 5, 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	stuck := other.W.Begin()
	if err := stuck.Exec("SELECT sku_id FROM inventory WHERE sku_id = 'sku-1' FOR UPDATE").Error; err != nil {
		t.Fatal(err)
	}
	defer stuck.Rollback()
	locked := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := s.SetStock(lctx, "sku-1", 6, 0, "test")
		locked <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := s.SetStock(ctx, "sku-2", 6, 0, "test"); err != nil {
		t.Errorf("write of another row while a write waits for a stuck row lock: %v", err)
	}
	if err := <-locked; !models.IsBusy(err) {
		t.Errorf("write waiting for the stuck row lock = %v, want busy", err)
	}
}
