package models_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"unhold/models"
	"unhold/models/modelstest"
)

// icuDSN creates a PostgreSQL database whose collation is ICU en-US, where
// SQL ORDER BY and Go's byte order disagree ("SKU-B" sorts before "sku-a"
// in bytes, after it there), and drops it when the test ends, after the
// stores opened on it are closed.
func icuDSN(t *testing.T) string {
	t.Helper()
	base := modelstest.PGBase(t)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("unhold_icu_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE DATABASE " + name + " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"); err != nil {
		_ = admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name)
		_ = admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// icuStore opens and migrates a store on a fresh icuDSN database, and
// makes sure the database does not sort bytewise, or the test would prove
// nothing.
func icuStore(t *testing.T, opt models.Options) *models.Store {
	t.Helper()
	s, err := models.Open(context.Background(), icuDSN(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var first string
	must(t, func() error {
		return s.R.Raw("SELECT x FROM (VALUES ('SKU-B'), ('sku-a')) v(x) ORDER BY x LIMIT 1").Scan(&first).Error
	})
	if first != "sku-a" {
		t.Fatalf("the database sorts %q first, bytewise: the test would prove nothing", first)
	}
	return s
}

// A batch locks a counter's keys in the order placing an order locks them,
// by bytes, whatever the database's collation. Its one locking read used
// to take them in SQL ORDER BY order, which on an ICU database puts
// "sku-a" before "SKU-B": placing B took SKU-B and stopped (a slow ledger
// insert), the batch took sku-a and waited for SKU-B, placing B then
// waited for sku-a, and PostgreSQL aborted the batch as a deadlock.
func TestAttackBatchLocksKeysInByteOrder(t *testing.T) {
	t.Parallel()
	s := icuStore(t, models.Options{})
	b := bundle{s: s, ctx: context.Background()}
	for _, sku := range []string{"SKU-B", "sku-a"} {
		must(t, func() error { _, err := s.SetStock(b.ctx, sku, 10, 0, "test"); return err })
	}
	items := []models.Item{{SkuID: "sku-a", Qty: 1}, {SkuID: "SKU-B", Qty: 1}}
	batchShop(t, b, []models.PlaceRequest{{OrderNo: "A", UserID: "u1", Items: items}})
	tasks, err := s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	if err != nil || len(tasks) != 2 {
		t.Fatalf("claimed %d tasks (%v), want 2", len(tasks), err)
	}
	slowInsert(t, s, "inventory_flows", "B")
	var wg sync.WaitGroup
	var placeErr, batchErr error
	var results []models.ReleaseResult
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _, placeErr = s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "B", UserID: "u2", Items: items})
	}()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond) // B holds SKU-B and sleeps
		results, batchErr = s.ReleaseBatch(b.ctx, tasks, "w1")
	}()
	wg.Wait()
	if placeErr != nil || batchErr != nil {
		t.Fatalf("place B: %v; batch releasing A: %v", placeErr, batchErr)
	}
	for i, r := range results {
		if r.Outcome != models.OutcomeDone {
			t.Errorf("%s of A: %+v, want DONE", tasks[i].BizKey, r)
		}
	}
	modelstest.CheckInvariants(t, s)
}

// savepoints counts the savepoints s's transactions take: none when a
// batch commits on its fast path.
func savepoints(t *testing.T, s *models.Store) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	must(t, func() error {
		return s.W.Callback().Raw().Before("gorm:raw").Register("test:savepoints", func(db *gorm.DB) {
			if strings.HasPrefix(db.Statement.SQL.String(), "SAVEPOINT") {
				n.Add(1)
			}
		})
	})
	return &n
}

// mixedShop sets up counters whose keys sort differently by bytes and by a
// collation (case, '-' against '_', digits), users whose BALANCE and
// POINTS differ, a coupon per order and slots, and places and closes the
// orders: every kind of task, interleaved, in one batch.
func mixedShop(t *testing.T, b bundle) []models.PlaceRequest {
	t.Helper()
	skus := []string{"SKU-B", "sku-a", "sku_a", "sku-10", "sku-9", "Sku-9"}
	users := []string{"U1", "u1", "u-2", "u_2"}
	for _, sku := range skus {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 100, 0, "test"); return err })
	}
	for i, u := range users {
		must(t, func() error { _, err := b.s.Credit(b.ctx, u, models.AssetBalance, int64(10000+i), "test"); return err })
		must(t, func() error { _, err := b.s.Credit(b.ctx, u, models.AssetPoints, int64(700+i), "test"); return err })
	}
	for _, act := range []string{"ACT-1", "act-1"} {
		must(t, func() error { _, err := b.s.SetActivity(b.ctx, act, 50, "test"); return err })
	}
	var reqs []models.PlaceRequest
	for i := range 12 {
		u := users[i%len(users)]
		cp, err := b.s.CreateCoupon(b.ctx, u, models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		if err != nil {
			t.Fatal(err)
		}
		slot := fmt.Sprintf("seat-%d", i)
		must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, slot, "test"); return err })
		reqs = append(reqs, models.PlaceRequest{
			OrderNo: fmt.Sprintf("o-%02d", i), UserID: u,
			Items: []models.Item{{SkuID: skus[i%len(skus)], Qty: int64(1 + i%3)}, {SkuID: skus[(i+1)%len(skus)], Qty: 2},
				{SkuID: skus[(i+3)%len(skus)], Qty: 1}},
			CouponIDs: []int64{cp.ID},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: int64(100 + i)},
				{Asset: models.AssetPoints, Amount: int64(10 + 2*i)}},
			ActivityID: []string{"ACT-1", "act-1"}[i%2], SlotID: slot,
		})
	}
	batchShop(t, b, reqs)
	return reqs
}

// checkAccountFlows checks each order's RELEASE rows in the accounts'
// ledger: one per asset, for what that asset froze, under the order's user.
func checkAccountFlows(t *testing.T, b bundle, reqs []models.PlaceRequest) {
	t.Helper()
	type row struct {
		OrderNo, UID, Asset string
		Qty                 int64
	}
	var rows []row
	must(t, func() error {
		return b.s.R.Raw("SELECT order_no, uid, asset, qty FROM account_flows WHERE type = 'RELEASE'").Scan(&rows).Error
	})
	got := map[string]int64{}
	for _, r := range rows {
		got[r.OrderNo+"/"+r.UID+"/"+r.Asset] += r.Qty
	}
	want := map[string]int64{}
	for _, r := range reqs {
		for _, f := range r.Freeze {
			want[r.OrderNo+"/"+r.UserID+"/"+string(f.Asset)] += f.Amount
		}
	}
	if len(rows) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("account RELEASE rows %v, want %v", got, want)
	}
}

// One batch of every kind of task, its counters' keys sorting differently
// in Go and in SQL, BALANCE and POINTS of one user side by side: on the
// fast path (no savepoint) each task is released once, by its own amount,
// on its own asset, and every ledger chain holds. A fault on one POINTS
// task (an error, a panic) sends the batch to the savepoint path: only
// that task fails, once, and the next batch releases it.
func TestAttackBatchMixedCounters(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		for _, fault := range []string{"none", "error", "panic"} {
			t.Run(string(d)+"/"+fault, func(t *testing.T) {
				t.Parallel()
				var calls atomic.Int64
				b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
					if fault == "none" || point != models.FaultAfterLedger || tk.OrderNo != "o-05" ||
						tk.ResourceType != models.ResPoints || calls.Add(1) > 1 {
						return nil
					}
					if fault == "panic" {
						panic("points of o-05")
					}
					return errors.New("points of o-05")
				}})
				reqs := mixedShop(t, b)
				tasks := claimAll(t, b, "w1")
				if len(tasks) != 12*8 {
					t.Fatalf("claimed %d tasks, want %d", len(tasks), 12*8)
				}
				taken := savepoints(t, b.s)
				results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
				if err != nil {
					t.Fatal(err)
				}
				if fault == "none" && taken.Load() != 0 {
					t.Errorf("the batch took %d savepoints, want its fast path", taken.Load())
				}
				n := attemptsOf(t, b)
				for i, tk := range tasks {
					want := models.OutcomeDone
					if fault != "none" && tk.OrderNo == "o-05" && tk.ResourceType == models.ResPoints {
						want = models.OutcomeRetry
					}
					if results[i].Outcome != want || n[tk.ID] != 1 {
						t.Errorf("%s %s %s: %+v with %d attempt rows, want %s with 1",
							tk.OrderNo, tk.ResourceType, tk.BizKey, results[i], n[tk.ID], want)
					}
				}
				modelstest.CheckInvariants(t, b.s)
				if fault != "none" {
					b.clock.Advance(time.Hour)
					if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 || len(got) != 1 {
						t.Fatalf("second drain = %v, want the one failed task DONE", got)
					}
					modelstest.CheckInvariants(t, b.s)
				}
				checkAccountFlows(t, b, reqs)
				for i, u := range []string{"U1", "u1", "u-2", "u_2"} {
					acct, err := b.s.GetAccount(b.ctx, u)
					if err != nil {
						t.Fatal(err)
					}
					bal, pts := acct[models.AssetBalance], acct[models.AssetPoints]
					if bal.Available != int64(10000+i) || bal.Frozen != 0 || pts.Available != int64(700+i) || pts.Frozen != 0 {
						t.Errorf("%s: balance %+v, points %+v, want everything back", u, bal, pts)
					}
				}
			})
		}
	}
}

// A key whose held amount covers each of its tasks alone but not their
// sum (hand-edited down) sends the batch to the savepoint path: the tasks
// are released in turn until the amount runs out, the rest go MANUAL as
// LOCKED_SHORT, the other keys' tasks release, and the key's ledger rows
// start from what the row really held, nothing of the fast path's sums
// left behind.
func TestAttackBatchSumShortOfHeld(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, sku := range []string{"sku-a", "sku-b"} {
			must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 10, 0, "test"); return err })
		}
		var reqs []models.PlaceRequest
		for i := range 3 {
			reqs = append(reqs, models.PlaceRequest{OrderNo: fmt.Sprintf("o-%d", i), UserID: "u1",
				Items: []models.Item{{SkuID: "sku-a", Qty: 2}, {SkuID: "sku-b", Qty: 1}}})
		}
		batchShop(t, b, reqs)
		must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 3 WHERE sku_id = 'sku-a'").Error })
		tasks := claimAll(t, b, "w1")
		results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for i, tk := range tasks {
			got[tk.BizKey+"/"+results[i].Outcome+"/"+string(results[i].Class)]++
		}
		want := map[string]int{"sku-a/DONE/": 1, "sku-a/MANUAL/LOCKED_SHORT": 2, "sku-b/DONE/": 3}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("outcomes %v, want %v", got, want)
		}
		var rows []struct{ HeldBefore, HeldAfter, AvailBefore, AvailAfter int64 }
		must(t, func() error {
			return b.s.R.Raw(`SELECT held_before, held_after, avail_before, avail_after FROM inventory_flows
				WHERE sku_id = 'sku-a' AND type = 'RELEASE'`).Scan(&rows).Error
		})
		if len(rows) != 1 || rows[0].HeldBefore != 3 || rows[0].HeldAfter != 1 || rows[0].AvailBefore != 4 || rows[0].AvailAfter != 6 {
			t.Fatalf("sku-a RELEASE rows %+v, want one from 3 held to 1", rows)
		}
		if sku, err := b.s.GetSKU(b.ctx, "sku-a"); err != nil || sku.Locked != 1 || sku.Available != 6 {
			t.Fatalf("sku-a = %+v (%v), want 1 locked and 6 available", sku, err)
		}
		if sku, err := b.s.GetSKU(b.ctx, "sku-b"); err != nil || sku.Locked != 0 || sku.Available != 10 {
			t.Fatalf("sku-b = %+v (%v), want all of it back", sku, err)
		}
	})
}

// More tasks of one counter than one ledger insert takes (500 rows), on
// two keys: the rows go in two inserts, on the fast path, and the first
// row of the second insert chains on from the last of the first.
func TestAttackBatchCounterPastOneInsert(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			for _, sku := range []string{"sku-a", "SKU-B"} {
				must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 10000, 0, "test"); return err })
			}
			const orders = 251 // 502 tasks: two past one insert
			var reqs []models.PlaceRequest
			for i := range orders {
				reqs = append(reqs, models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: "u1",
					Items: []models.Item{{SkuID: "sku-a", Qty: int64(1 + i%3)}, {SkuID: "SKU-B", Qty: 1}}})
			}
			batchShop(t, b, reqs)
			tasks, err := b.s.ClaimTasks(b.ctx, "w1", 1000, time.Minute)
			if err != nil || len(tasks) != 2*orders {
				t.Fatalf("claimed %d tasks (%v), want %d", len(tasks), err, 2*orders)
			}
			taken := savepoints(t, b.s)
			results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
			if err != nil {
				t.Fatal(err)
			}
			if taken.Load() != 0 {
				t.Errorf("the batch took %d savepoints, want its fast path", taken.Load())
			}
			for i, r := range results {
				if r.Outcome != models.OutcomeDone {
					t.Errorf("%s of %s: %+v, want DONE", tasks[i].BizKey, tasks[i].OrderNo, r)
				}
			}
			modelstest.CheckInvariants(t, b.s)
			for _, sku := range []string{"sku-a", "SKU-B"} {
				if got, err := b.s.GetSKU(b.ctx, sku); err != nil || got.Locked != 0 || got.Available != 10000 {
					t.Errorf("%s = %+v (%v), want all of it back", sku, got, err)
				}
			}
		})
	}
}

// Two instances on one database (SQLite, PostgreSQL, PostgreSQL sorting
// by ICU collation): placements of several mixed-case SKUs, payments (late
// ones too), closes, stock changes and reruns race two workers releasing
// overlapping keys in batches. No transaction fails but for a business
// reason (no deadlock, no batch that does not commit), and the books
// balance afterwards.
func TestAttackBatchRaces(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"sqlite", "postgres", "postgres-icu"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			var dsn string
			switch db {
			case "sqlite":
				dsn = modelstest.MigratedDSN(t, models.SQLite)
			case "postgres":
				dsn = modelstest.MigratedDSN(t, models.Postgres)
			default:
				dsn = icuDSN(t)
			}
			batchRaces(t, dsn)
		})
	}
}

// batchRaces is TestAttackBatchRaces on the database at dsn, migrated
// here unless it is already (icuDSN's is not: it has its own collation).
func batchRaces(t *testing.T, dsn string) {
	open := func() *models.Store {
		s, err := models.Open(context.Background(), dsn, models.Options{BusyTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s1 := open()
	if _, err := s1.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := open()
	ctx := context.Background()
	skus := []string{"SKU-B", "sku-a", "sku_a", "Sku-c", "sku-C", "sku-10", "sku-9"}
	users := []string{"U1", "u1", "u_2", "u-2"}
	for _, sku := range skus {
		must(t, func() error { _, err := s1.SetStock(ctx, sku, 1000, 0, "test"); return err })
	}
	for _, u := range users {
		must(t, func() error { _, err := s1.Credit(ctx, u, models.AssetBalance, 1_000_000, "test"); return err })
		must(t, func() error { _, err := s1.Credit(ctx, u, models.AssetPoints, 1_000_000, "test"); return err })
	}
	// 20 orders: with the batch locking keys in the collation's order
	// (the defect), the ICU run deadlocked in 23 runs of 23; with 10, in
	// half.
	const orders = 20
	var (
		mu     sync.Mutex
		failed []string
		placed = make(chan string, orders)
		closed = make(chan string, orders)
		seq    atomic.Int64
		done   atomic.Int64 // tasks released by a batch
	)
	fail := func(what string, err error) {
		var be *models.Error
		if err == nil || errors.As(err, &be) {
			return
		}
		mu.Lock()
		failed = append(failed, fmt.Sprintf("%s: %v", what, err))
		mu.Unlock()
	}
	var placers, others sync.WaitGroup
	for p, s := range []*models.Store{s1, s2} {
		placers.Add(1)
		go func() {
			defer placers.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			for i := range orders / 2 {
				no := fmt.Sprintf("p%d-%03d", p, i)
				var items []models.Item
				for _, k := range rng.Perm(len(skus))[:2+rng.IntN(4)] {
					items = append(items, models.Item{SkuID: skus[k], Qty: int64(1 + rng.IntN(3))})
				}
				_, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: users[rng.IntN(len(users))], Items: items,
					Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 10}, {Asset: models.AssetPoints, Amount: 3}}})
				fail("place "+no, err)
				if err == nil {
					placed <- no
				}
			}
		}()
	}
	go func() {
		placers.Wait()
		close(placed)
	}()
	// Close most orders and pay a few of them late; pay some in time.
	others.Add(1)
	go func() {
		defer others.Done()
		defer close(closed)
		for no := range placed {
			if seq.Add(1)%5 == 0 {
				_, err := s2.PayOrder(ctx, no, "txn-"+no)
				fail("pay "+no, err)
				continue
			}
			_, err := s1.CloseOrder(ctx, no, models.TriggerUserCancel, "test")
			fail("close "+no, err)
			closed <- no
		}
	}()
	others.Add(1)
	go func() {
		defer others.Done()
		i := 0
		for no := range closed {
			i++
			switch i % 4 {
			case 0:
				_, err := s2.PayOrder(ctx, no, "txn-late-"+no)
				fail("late pay "+no, err)
			case 1:
				_, err := s1.Rerun(ctx, no, models.ResInventory, "admin", "race")
				if !errors.Is(err, models.ErrNothingToRerun) {
					fail("rerun "+no, err)
				}
			case 2:
				_, err := s2.SetStock(ctx, skus[i%len(skus)], int64(1000+i), 0, "test")
				fail("set stock", err)
			}
		}
	}()
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for w, s := range []*models.Store{s1, s2} {
		workers.Add(1)
		go func() {
			defer workers.Done()
			worker := fmt.Sprintf("w%d", w)
			for {
				tasks, err := s.ClaimTasks(ctx, worker, 25, time.Minute)
				fail("claim", err)
				if len(tasks) > 0 {
					results, err := s.ReleaseBatch(ctx, tasks, worker)
					fail("batch", err)
					for i, r := range results {
						if r.Outcome == models.OutcomeDone {
							done.Add(1)
						}
						if r.Class != "" {
							fail(fmt.Sprintf("task %d of %s", tasks[i].ID, tasks[i].OrderNo), errors.New(r.Err))
						}
					}
					continue
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
	}
	others.Wait()
	close(stop)
	workers.Wait()
	for _, f := range failed {
		t.Error(f)
	}
	t.Logf("batches released %d tasks", done.Load())
	if done.Load() < orders {
		t.Errorf("batches released %d tasks, want the race to cover at least %d", done.Load(), orders)
	}
	b := bundle{s: s1, ctx: ctx}
	b.drain(t, "w-last")
	modelstest.CheckInvariants(t, s1)
}
