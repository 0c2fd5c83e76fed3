package modelstest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// BigShopOrders is how many orders the benchmark shop holds.
const BigShopOrders = 1_000_000

// BigShopPath returns a SQLite database with a big, consistent shop — one
// million orders over 90 days, about five million ledger rows — for page
// benchmarks. It is built once (a few minutes) at $UNHOLD_BIGSHOP or
// /tmp/unhold-bigshop-v1.db and reused; Open on it migrates any newer
// migrations. The shop ends at end.
func BigShopPath(tb testing.TB) (path string, end time.Time) {
	tb.Helper()
	path = os.Getenv("UNHOLD_BIGSHOP")
	if path == "" {
		path = filepath.Join(os.TempDir(), "unhold-bigshop-v1.db")
	}
	end = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if _, err := os.Stat(path); err == nil {
		return path, end
	}
	tmp := path + ".building"
	for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
		_ = os.Remove(p)
	}
	start := time.Now()
	if err := BuildBigShop(tmp, BigShopOrders, end); err != nil {
		tb.Fatalf("build big shop: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("built %s in %s", path, time.Since(start).Round(time.Second))
	return path, end
}

// bigShop tracks running totals while the history is written in time
// order, so every ledger row's before/after values chain exactly.
type bigShop struct {
	db    *sql.DB
	tx    *sql.Tx
	rows  map[string][]string // table → pending VALUES tuples
	cols  map[string]string
	sku   map[string]*[3]int64 // available, locked, sold
	acct  map[string]*[3]int64 // available, frozen, spent
	ids   map[string]int64     // next id per table
	flows int
	// The overview's rollups of the last models.RollupRetention before
	// the shop's end, as the releases would have written them.
	attemptMinutes map[[4]string]int64   // minute, outcome, type, class
	latencyMinutes map[[2]int64][3]int64 // minute, bucket → n, min ms, max ms
}

// rollUp adds one attempt that finished at done to the rollups; a
// released task's latency (ms from its due time) when released.
func (b *bigShop) rollUp(end, done time.Time, outcome, typ, class string, released bool, ms int64) {
	if done.Before(end.Add(-models.RollupRetention)) {
		return
	}
	m := done.Truncate(time.Minute).Unix()
	b.attemptMinutes[[4]string{fmt.Sprint(m), outcome, typ, class}]++
	if !released {
		return
	}
	bucket := int64(len(models.LatencyBuckets))
	for i, le := range models.LatencyBuckets {
		if ms <= le.Milliseconds() {
			bucket = int64(i)
			break
		}
	}
	k := [2]int64{m, bucket}
	v, seen := b.latencyMinutes[k]
	if !seen {
		v = [3]int64{0, ms, ms}
	}
	b.latencyMinutes[k] = [3]int64{v[0] + 1, min(v[1], ms), max(v[2], ms)}
}

func ts(t time.Time) string { return "'" + t.UTC().Format("2006-01-02 15:04:05.999999999-07:00") + "'" }

func q(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (b *bigShop) add(table string, vals ...string) {
	b.rows[table] = append(b.rows[table], "("+strings.Join(vals, ",")+")")
	if len(b.rows[table]) >= 400 {
		b.flush(table)
	}
}

func (b *bigShop) flush(table string) {
	if len(b.rows[table]) == 0 {
		return
	}
	stmt := "INSERT INTO " + table + " (" + b.cols[table] + ") VALUES " + strings.Join(b.rows[table], ",")
	if _, err := b.tx.Exec(stmt); err != nil {
		panic(fmt.Sprintf("%s: %v", table, err))
	}
	b.rows[table] = b.rows[table][:0]
}

func (b *bigShop) next(table string) int64 {
	b.ids[table]++
	return b.ids[table]
}

func (b *bigShop) commit() error {
	for t := range b.rows {
		b.flush(t)
	}
	if err := b.tx.Commit(); err != nil {
		return err
	}
	tx, err := b.db.Begin()
	b.tx = tx
	return err
}

// counterFlow writes one counter ledger row and applies it to the totals.
func (b *bigShop) counterFlow(table, keyCols string, keyVals []string, st *[3]int64, order string, typ models.FlowType, trig models.Trigger, qty int64, actor string, at time.Time) {
	before := *st
	switch typ {
	case models.FlowAdjust:
		st[0] += qty
	case models.FlowLock:
		st[0], st[1] = st[0]-qty, st[1]+qty
	case models.FlowDeduct:
		st[1], st[2] = st[1]-qty, st[2]+qty
	case models.FlowRelease:
		st[1], st[0] = st[1]-qty, st[0]+qty
	}
	ord := "NULL"
	if order != "" {
		ord = q(order)
	}
	vals := append([]string{fmt.Sprint(b.next(table)), ord}, keyVals...)
	vals = append(vals, q(string(typ)), "0", q(string(trig)), fmt.Sprint(qty),
		fmt.Sprint(before[0]), fmt.Sprint(st[0]), fmt.Sprint(before[1]), fmt.Sprint(st[1]),
		fmt.Sprint(before[2]), fmt.Sprint(st[2]), q(actor), ts(at))
	b.add(table, vals...)
	b.flows++
}

// BuildBigShop writes a shop of the given number of orders, ending at end,
// into a new SQLite file.
func BuildBigShop(path string, orders int, end time.Time) error {
	ctx := context.Background()
	s, err := models.Open(ctx, path, models.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		return err
	}
	db, err := s.W.DB()
	if err != nil {
		return err
	}
	// A throwaway file: speed over durability while it is built. Rows are
	// flushed table by table, children sometimes before their parents, so
	// foreign keys are checked by construction here, not by SQLite.
	for _, p := range []string{"PRAGMA synchronous=OFF", "PRAGMA cache_size=-200000", "PRAGMA foreign_keys=OFF",
		"CREATE TABLE inventory_rows (sku_id TEXT, available INTEGER, locked INTEGER, sold INTEGER, updated_at DATETIME)",
		"CREATE TABLE account_rows (uid TEXT, asset TEXT, available INTEGER, frozen INTEGER, spent INTEGER, updated_at DATETIME)"} {
		if _, err := db.Exec(p); err != nil {
			return err
		}
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	flowCols := "avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at"
	b := &bigShop{db: db, tx: tx, rows: map[string][]string{}, sku: map[string]*[3]int64{}, acct: map[string]*[3]int64{}, ids: map[string]int64{},
		attemptMinutes: map[[4]string]int64{}, latencyMinutes: map[[2]int64][3]int64{},
		cols: map[string]string{
			"orders":          "id, order_no, user_id, status, pay_deadline, close_reason, channel_txn_id, created_at, updated_at, paid_at, closed_at",
			"order_holds":     "id, order_no, resource_type, biz_key, qty, released, deducted",
			"release_tasks":   "id, order_no, resource_type, biz_key, qty, status, trigger_type, attempts, failures, next_at, last_error, error_class, created_at, updated_at, done_at",
			"task_attempts":   "id, task_id, order_no, resource_type, worker, outcome, error_class, error, started_at, finished_at",
			"user_coupons":    "id, user_id, owner, status, order_no, expire_at, created_at, updated_at",
			"inventory_flows": "id, order_no, sku_id, type, epoch, trigger_type, qty, " + flowCols,
			"account_flows":   "id, order_no, uid, asset, type, epoch, trigger_type, qty, " + flowCols,
			"coupon_flows":    "id, order_no, coupon_id, user_id, owner, type, epoch, trigger_type, status_before, status_after, expire_before, expire_after, actor, created_at",
		}}
	rng := rand.New(rand.NewPCG(1, 2))
	begin := end.Add(-90 * 24 * time.Hour)
	const skus, users = 2000, 50000
	skuID := func(i int) string { return fmt.Sprintf("SKU-%05d", i) }
	userID := func(i int) string { return fmt.Sprintf("u%05d", i) }
	for i := range skus {
		st := &[3]int64{}
		b.sku[skuID(i)] = st
		b.counterFlow("inventory_flows", "sku_id", []string{q(skuID(i))}, st, "", models.FlowAdjust, models.TriggerSetup, 1_000_000, "setup", begin)
	}
	for i := range users {
		st := &[3]int64{}
		b.acct[userID(i)] = st
		b.counterFlow("account_flows", "", []string{q(userID(i)), "'BALANCE'"}, st, "", models.FlowAdjust, models.TriggerSetup, 10_000_000, "setup", begin)
	}
	step := end.Sub(begin) / time.Duration(orders)
	for i := range orders {
		at := begin.Add(time.Duration(i) * step)
		no := fmt.Sprintf("B%07d", i)
		u := userID(rng.IntN(users))
		status := models.OrderPaid
		switch {
		case i >= orders-200:
			status = models.OrderPending
		case rng.IntN(100) < 35:
			status = models.OrderClosed
		}
		closedAt, paidAt := "NULL", "NULL"
		settle := at.Add(time.Duration(1+rng.IntN(600)) * time.Second)
		reason, txn := "", ""
		stuck := status == models.OrderClosed && i >= orders-3000 && rng.IntN(20) == 0
		switch status {
		case models.OrderPaid:
			paidAt, txn = ts(settle), "WX"+no
		case models.OrderClosed:
			closedAt, reason = ts(settle), string([]models.Trigger{models.TriggerUserCancel, models.TriggerTimeout, models.TriggerAdmin}[rng.IntN(3)])
		}
		b.add("orders", fmt.Sprint(i+1), q(no), q(u), q(string(status)), ts(at.Add(30*time.Minute)), q(reason), q(txn),
			ts(at), ts(settle), paidAt, closedAt)
		type hold struct {
			t   models.ResourceType
			key string
			qty int64
		}
		var hs []hold
		first := rng.IntN(skus)
		for j := range 1 + rng.IntN(3) {
			hs = append(hs, hold{models.ResInventory, skuID((first + j*37) % skus), int64(1 + rng.IntN(3))})
		}
		if rng.IntN(10) < 3 {
			hs = append(hs, hold{models.ResBalance, u, int64(100 + rng.IntN(5000))})
		}
		if rng.IntN(10) < 2 {
			id := b.next("user_coupons")
			owner := []string{"PLATFORM", "MERCHANT"}[rng.IntN(2)]
			cst := "USED"
			var ord string
			switch {
			case status == models.OrderPending || stuck:
				cst, ord = "LOCKED", q(no)
			case status == models.OrderClosed:
				cst, ord = "UNUSED", "NULL"
			default:
				ord = q(no)
			}
			exp := ts(at.Add(30 * 24 * time.Hour))
			b.add("user_coupons", fmt.Sprint(id), q(u), q(owner), q(cst), ord, exp, ts(at.Add(-time.Hour)), ts(settle))
			b.add("coupon_flows", fmt.Sprint(b.next("coupon_flows")), "NULL", fmt.Sprint(id), q(u), q(owner), "'ADJUST'", "0", "'SETUP'", "''", "'UNUSED'", "NULL", exp, "'setup'", ts(at.Add(-time.Hour)))
			b.add("coupon_flows", fmt.Sprint(b.next("coupon_flows")), q(no), fmt.Sprint(id), q(u), q(owner), "'LOCK'", "0", "'PLACE'", "'UNUSED'", "'LOCKED'", exp, exp, q("user:"+u), ts(at))
			b.flows += 2
			if status == models.OrderPaid || (status == models.OrderClosed && !stuck) {
				typ, after, trig, actor := "'DEDUCT'", "'USED'", "'PAY'", "'channel'"
				if status == models.OrderClosed {
					typ, after, trig, actor = "'RELEASE'", "'UNUSED'", q(reason), "'worker:bench'"
				}
				b.add("coupon_flows", fmt.Sprint(b.next("coupon_flows")), q(no), fmt.Sprint(id), q(u), q(owner), typ, "0", trig, "'LOCKED'", after, exp, exp, actor, ts(settle))
				b.flows++
			}
			hs = append(hs, hold{models.ResCoupon, fmt.Sprint(id), 1})
		}
		for _, h := range hs {
			var released, deducted int64
			counter := func(typ models.FlowType, trig models.Trigger, actor string, when time.Time) {
				switch h.t {
				case models.ResInventory:
					b.counterFlow("inventory_flows", "", []string{q(h.key)}, b.sku[h.key], no, typ, trig, h.qty, actor, when)
				case models.ResBalance:
					b.counterFlow("account_flows", "", []string{q(h.key), "'BALANCE'"}, b.acct[h.key], no, typ, trig, h.qty, actor, when)
				}
			}
			counter(models.FlowLock, models.TriggerPlace, "user:"+u, at)
			switch {
			case status == models.OrderPaid:
				counter(models.FlowDeduct, models.TriggerPay, "channel", settle)
				deducted = h.qty
			case status == models.OrderClosed:
				tid := b.next("release_tasks")
				done := settle.Add(time.Duration(50+rng.IntN(2000)) * time.Millisecond)
				tstatus, class, lastErr, doneAt, outcome := "DONE", "", "", ts(done), "DONE"
				if stuck {
					tstatus, class, lastErr, doneAt, outcome = "MANUAL", "LOCKED_SHORT", "held amount is smaller than the release", "NULL", "MANUAL"
					if rng.IntN(2) == 0 {
						tstatus, class, lastErr, outcome = "RETRY", "TIMEOUT", "warehouse stock service timed out", "RETRY"
					}
				} else {
					counter(models.FlowRelease, models.Trigger(reason), "worker:bench", done)
					released = h.qty
				}
				b.add("release_tasks", fmt.Sprint(tid), q(no), q(string(h.t)), q(h.key), fmt.Sprint(h.qty), q(tstatus), q(reason),
					"1", fmt.Sprint(map[bool]int{true: 1}[stuck]), ts(settle), q(lastErr), q(class), ts(settle), ts(done), doneAt)
				b.add("task_attempts", fmt.Sprint(b.next("task_attempts")), fmt.Sprint(tid), q(no), q(string(h.t)), "'bench'", q(outcome),
					q(class), q(lastErr), ts(settle), ts(done))
				b.rollUp(end, done, outcome, string(h.t), class, !stuck, done.Sub(settle).Milliseconds())
			}
			b.add("order_holds", fmt.Sprint(b.next("order_holds")), q(no), q(string(h.t)), q(h.key), fmt.Sprint(h.qty), fmt.Sprint(released), fmt.Sprint(deducted))
		}
		if i%20000 == 19999 {
			if err := b.commit(); err != nil {
				return err
			}
		}
	}
	b.cols["attempt_minutes"] = "minute, outcome, resource_type, error_class, n"
	for k, n := range b.attemptMinutes {
		b.add("attempt_minutes", k[0], q(k[1]), q(k[2]), q(k[3]), fmt.Sprint(n))
	}
	b.cols["latency_minutes"] = "minute, bucket, n, min_ms, max_ms"
	for k, v := range b.latencyMinutes {
		b.add("latency_minutes", fmt.Sprint(k[0]), fmt.Sprint(k[1]), fmt.Sprint(v[0]), fmt.Sprint(v[1]), fmt.Sprint(v[2]))
	}
	b.cols["inventory_rows"] = "sku_id, available, locked, sold, updated_at"
	b.cols["account_rows"] = "uid, asset, available, frozen, spent, updated_at"
	for id, st := range b.sku {
		b.add("inventory_rows", q(id), fmt.Sprint(st[0]), fmt.Sprint(st[1]), fmt.Sprint(st[2]), ts(end))
	}
	for id, st := range b.acct {
		b.add("account_rows", q(id), "'BALANCE'", fmt.Sprint(st[0]), fmt.Sprint(st[1]), fmt.Sprint(st[2]), ts(end))
	}
	if err := b.commit(); err != nil {
		return err
	}
	if err := b.tx.Rollback(); err != nil {
		return err
	}
	for _, stmt := range []string{
		"INSERT INTO inventory (sku_id, available, locked, sold, updated_at) SELECT sku_id, available, locked, sold, updated_at FROM inventory_rows",
		"INSERT INTO accounts (uid, asset, available, frozen, spent, updated_at) SELECT uid, asset, available, frozen, spent, updated_at FROM account_rows",
		"DROP TABLE inventory_rows", "DROP TABLE account_rows", "PRAGMA foreign_keys=ON", "ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
