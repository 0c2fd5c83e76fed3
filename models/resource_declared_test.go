package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"
)

// openStore is a migrated store on a fresh database of engine d: a SQLite
// file in the test's directory, or a schema of its own on the PostgreSQL
// server UNHOLD_TEST_PG names. A test inside the package opens its own,
// since modelstest imports models.
func openStore(t *testing.T, d Dialect, now func() time.Time) *Store {
	t.Helper()
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "unhold.db")
	if d == Postgres {
		base := os.Getenv("UNHOLD_TEST_PG")
		if base == "" {
			if os.Getenv("CI") != "" {
				t.Fatal("UNHOLD_TEST_PG is not set under CI: the PostgreSQL suite must run")
			}
			t.Skip("UNHOLD_TEST_PG not set: skipping the PostgreSQL run")
		}
		admin, err := Open(ctx, base, Options{})
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		schema := "t_" + hex.EncodeToString(b)
		if err := admin.W.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			_ = admin.Close()
			t.Fatalf("postgres at UNHOLD_TEST_PG does not answer: %v", err)
		}
		t.Cleanup(func() {
			_ = admin.W.Exec("DROP SCHEMA " + schema + " CASCADE").Error
			_ = admin.Close()
		})
		u, err := url.Parse(base)
		if err != nil {
			t.Fatalf("parse UNHOLD_TEST_PG: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	s, err := Open(ctx, dsn, Options{Now: now})
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", d, err)
	}
	return s
}

// Every statement the generic counter writes, run against the declared
// counters' tables on both engines: two declared types share the tables
// and the key k1, and neither sees the other's rows. Set-up (adjust),
// LOCK, a short and a duplicate LOCK, RELEASE and DEDUCT through Apply, a
// batch through releaseMany, Flows, a clean reconciliation, and a hand
// edit that reconciliation catches.
func TestDeclaredCounter(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			s := openStore(t, d, func() time.Time { return now })
			ctx := context.Background()
			wrap, seat := declaredCounter(s, "gift_wrap"), declaredCounter(s, "trial_seat")

			write := func(fn func(tx *gorm.DB) error) error { return s.write(ctx, fn) }
			must := func(what string, fn func(tx *gorm.DB) error) {
				t.Helper()
				if err := write(fn); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			want := func(c *counter, key string, avail, held, spent int64) {
				t.Helper()
				got, found, err := c.lock(s.W, key)
				if err != nil || !found {
					t.Fatalf("%s %s: found %v, %v", c.typ, key, found, err)
				}
				if w := (counterRow{Avail: avail, Held: held, Spent: spent}); got != w {
					t.Fatalf("%s %s = %+v, want %+v", c.typ, key, got, w)
				}
			}
			clean := func(when string) {
				t.Helper()
				for _, c := range []*counter{wrap, seat} {
					if diffs, err := c.Reconcile(ctx, s.R); err != nil || len(diffs) != 0 {
						t.Fatalf("%s: reconcile %s = %v, %v; want no diffs", when, c.typ, diffs, err)
					}
				}
			}
			op := func(kind FlowType, orderNo, key string, qty int64, trigger Trigger) Op {
				return Op{Kind: kind, OrderNo: orderNo, UserID: "u1", Key: key, Qty: qty, Trigger: trigger, Actor: "test", Now: now}
			}
			// place writes a PENDING order holding qty of c's key, and its LOCK.
			place := func(c *counter, orderNo, key string, qty int64) error {
				return write(func(tx *gorm.DB) error {
					if err := tx.Exec(`INSERT INTO orders (order_no, user_id, status, pay_deadline, created_at, updated_at)
						VALUES (?, 'u1', 'PENDING', ?, ?, ?)`, orderNo, now.Add(15*time.Minute), now, now).Error; err != nil {
						return err
					}
					if err := tx.Exec(`INSERT INTO order_holds (order_no, resource_type, biz_key, qty) VALUES (?, ?, ?, ?)`,
						orderNo, c.typ, key, qty).Error; err != nil {
						return err
					}
					return c.Apply(tx, op(FlowLock, orderNo, key, qty, TriggerPlace))
				})
			}
			status := func(st OrderStatus, orderNos ...string) {
				t.Helper()
				must("order status", func(tx *gorm.DB) error {
					return tx.Exec("UPDATE orders SET status = ? WHERE order_no IN ?", st, orderNos).Error
				})
			}

			must("rows", func(tx *gorm.DB) error {
				return tx.Exec(`INSERT INTO declared_counters (resource_type, biz_key, updated_at)
					VALUES ('gift_wrap', 'k1', ?), ('gift_wrap', 'k2', ?), ('trial_seat', 'k1', ?)`, now, now, now).Error
			})
			for _, a := range []struct {
				c     *counter
				key   string
				delta int64
			}{{wrap, "k1", 10}, {wrap, "k2", 5}, {seat, "k1", 3}} {
				must("adjust", func(tx *gorm.DB) error {
					got, err := a.c.adjust(tx, a.key, a.delta, "test", now)
					if err == nil && got != (counterRow{Avail: a.delta}) {
						t.Errorf("adjust %s %s by %d = %+v", a.c.typ, a.key, a.delta, got)
					}
					return err
				})
			}
			if err := write(func(tx *gorm.DB) error { _, err := wrap.adjust(tx, "k2", -6, "test", now); return err }); !errors.Is(err, ErrStockBelowHeld) {
				t.Errorf("adjust k2 by -6 of 5: %v, want STOCK_CONFLICT", err)
			}
			if err := write(func(tx *gorm.DB) error { _, err := wrap.adjust(tx, "k9", 1, "test", now); return err }); !errors.Is(err, ErrResourceNotFound) {
				t.Errorf("adjust of a key without a row: %v, want RESOURCE_NOT_FOUND", err)
			}
			want(wrap, "k1", 10, 0, 0)
			want(wrap, "k2", 5, 0, 0)
			want(seat, "k1", 3, 0, 0)
			clean("after set-up")

			for _, p := range []struct {
				c            *counter
				orderNo, key string
				qty          int64
			}{{wrap, "o-1", "k1", 2}, {wrap, "o-2", "k1", 3}, {wrap, "o-3", "k2", 1}, {seat, "o-4", "k1", 1}} {
				if err := place(p.c, p.orderNo, p.key, p.qty); err != nil {
					t.Fatalf("place %s: %v", p.orderNo, err)
				}
			}
			want(wrap, "k1", 5, 5, 0)
			want(wrap, "k2", 4, 1, 0)
			want(seat, "k1", 2, 1, 0)
			clean("after the LOCKs")

			if err := place(wrap, "o-5", "k2", 5); !errors.Is(err, ErrInsufficientStock) {
				t.Errorf("LOCK 5 of k2's 4: %v, want INSUFFICIENT_STOCK", err)
			}
			if err := place(wrap, "o-6", "k9", 1); !errors.Is(err, ErrResourceNotFound) {
				t.Errorf("LOCK of a key without a row: %v, want RESOURCE_NOT_FOUND", err)
			}
			if err := write(func(tx *gorm.DB) error { return wrap.Apply(tx, op(FlowLock, "o-1", "k1", 2, TriggerPlace)) }); !errors.Is(err, errDuplicate) {
				t.Errorf("o-1's LOCK again: %v, want a duplicate", err)
			}
			want(wrap, "k2", 4, 1, 0)
			want(wrap, "k1", 5, 5, 0)

			status(OrderClosed, "o-1")
			// The order's hold row moves with the counter, as the store's
			// apply moves it: reconciliation checks the lines too.
			must("RELEASE o-1", func(tx *gorm.DB) error {
				if err := wrap.Apply(tx, op(FlowRelease, "o-1", "k1", 2, TriggerTimeout)); err != nil {
					return err
				}
				_, err := releaseHolds(tx, []ReleaseTask{{OrderNo: "o-1", ResourceType: wrap.Type(), BizKey: "k1", Qty: 2}})
				return err
			})
			if err := write(func(tx *gorm.DB) error { return wrap.Apply(tx, op(FlowRelease, "o-1", "k1", 2, TriggerTimeout)) }); !errors.Is(err, errDuplicate) {
				t.Errorf("o-1's RELEASE again: %v, want a duplicate", err)
			}
			want(wrap, "k1", 7, 3, 0)
			want(seat, "k1", 2, 1, 0)
			clean("after a RELEASE")

			status(OrderClosed, "o-2", "o-3")
			batch := []Op{op(FlowRelease, "o-2", "k1", 3, TriggerUserCancel), op(FlowRelease, "o-3", "k2", 1, TriggerUserCancel)}
			must("releaseMany", func(tx *gorm.DB) error {
				if err := wrap.releaseMany(tx, batch); err != nil {
					return err
				}
				_, err := releaseHolds(tx, []ReleaseTask{{OrderNo: "o-2", ResourceType: wrap.Type(), BizKey: "k1", Qty: 3},
					{OrderNo: "o-3", ResourceType: wrap.Type(), BizKey: "k2", Qty: 1}})
				return err
			})
			want(wrap, "k1", 10, 0, 0)
			want(wrap, "k2", 5, 0, 0)
			want(seat, "k1", 2, 1, 0)
			clean("after a batch")
			for name, ops := range map[string][]Op{
				"the same batch again": batch,
				"more than is held":    {op(FlowRelease, "o-7", "k1", 1, TriggerUserCancel)},
				"a key without a row":  {op(FlowRelease, "o-7", "k9", 1, TriggerUserCancel)},
			} {
				if err := write(func(tx *gorm.DB) error { return wrap.releaseMany(tx, ops) }); !errors.Is(err, errTryEach) {
					t.Errorf("releaseMany of %s: %v, want errTryEach", name, err)
				}
			}

			status(OrderPaid, "o-4")
			must("DEDUCT o-4", func(tx *gorm.DB) error {
				if err := seat.Apply(tx, op(FlowDeduct, "o-4", "k1", 1, TriggerPay)); err != nil {
					return err
				}
				return tx.Exec("UPDATE order_holds SET deducted = deducted + 1 WHERE order_no = 'o-4' AND resource_type = ? AND biz_key = 'k1'", seat.Type()).Error
			})
			want(seat, "k1", 2, 0, 1)
			want(wrap, "k1", 10, 0, 0)
			clean("after a DEDUCT")

			flows := func(c *counter, orderNo string) []string {
				t.Helper()
				fs, err := c.Flows(s.R, orderNo)
				if err != nil {
					t.Fatalf("flows of %s: %v", orderNo, err)
				}
				var out []string
				for _, f := range fs {
					if f.ResourceType != c.typ || f.OrderNo == nil || *f.OrderNo != orderNo {
						t.Errorf("flow %+v listed for %s %s", f, c.typ, orderNo)
					}
					out = append(out, string(f.Type)+" "+f.BizKey+" "+string(f.Trigger))
				}
				return out
			}
			for _, f := range []struct {
				c       *counter
				orderNo string
				want    []string
			}{
				{wrap, "o-1", []string{"LOCK k1 PLACE", "RELEASE k1 TIMEOUT"}},
				{wrap, "o-3", []string{"LOCK k2 PLACE", "RELEASE k2 USER_CANCEL"}},
				{seat, "o-4", []string{"LOCK k1 PLACE", "DEDUCT k1 PAY"}},
				{seat, "o-1", nil},
				{wrap, "o-4", nil},
				{wrap, "o-5", nil},
			} {
				if got := flows(f.c, f.orderNo); !reflect.DeepEqual(got, f.want) {
					t.Errorf("flows of %s %s = %q, want %q", f.c.typ, f.orderNo, got, f.want)
				}
			}
			fs, err := wrap.Flows(s.R, "o-1")
			if err != nil || len(fs) != 2 {
				t.Fatalf("flows of o-1 = %v, %v", fs, err)
			}
			if r := fs[1]; r.Qty != 2 || r.AvailBefore != 5 || r.AvailAfter != 7 || r.HeldBefore != 5 || r.HeldAfter != 3 ||
				r.SpentBefore != 0 || r.SpentAfter != 0 || r.Actor != "test" || !r.CreatedAt.Equal(now) {
				t.Errorf("o-1's RELEASE row = %+v", r)
			}
			sums, _, err := wrap.ledgerSums(ctx, s.R)
			if wantSums := map[string]counterRow{"k1": {Avail: 10}, "k2": {Avail: 5}}; err != nil || !reflect.DeepEqual(sums, wantSums) {
				t.Errorf("gift_wrap ledger sums = %v, %v; want %v", sums, err, wantSums)
			}

			must("hand edit", func(tx *gorm.DB) error {
				return tx.Exec("UPDATE declared_counters SET available = available + 1 WHERE resource_type = 'gift_wrap' AND biz_key = 'k2'").Error
			})
			diffs, err := wrap.Reconcile(ctx, s.R)
			if err != nil {
				t.Fatal(err)
			}
			wantDiffs := []Diff{
				{Resource: "gift_wrap", Key: "k2", Check: CheckLedgerAvail, Expected: 5, Actual: 6},
				{Resource: "gift_wrap", Key: "k2", Check: CheckConservation, Expected: 5, Actual: 6},
			}
			if !reflect.DeepEqual(diffs, wantDiffs) {
				t.Errorf("reconcile after a hand edit = %+v, want %+v", diffs, wantDiffs)
			}
			if diffs, err := seat.Reconcile(ctx, s.R); err != nil || len(diffs) != 0 {
				t.Errorf("trial_seat after gift_wrap's hand edit = %v, %v; want no diffs", diffs, err)
			}

			for _, stmt := range []string{
				"UPDATE declared_counter_flows SET qty = qty + 1",
				"DELETE FROM declared_counter_flows",
				"UPDATE declared_counters SET locked = -1",
				"UPDATE declared_counters SET spent = spent - 2",
			} {
				if err := write(func(tx *gorm.DB) error { return tx.Exec(stmt).Error }); err == nil {
					t.Errorf("%s: accepted, want refused", stmt)
				}
			}
		})
	}
}
