package models_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// pointsFlow is one points ledger row as the expiry tests read it.
type pointsFlow struct {
	Type         string
	OrderNo      *string
	ExpireBefore *time.Time
	ExpireAfter  *time.Time
}

func pointsFlows(t *testing.T, b bundle, uid string) []pointsFlow {
	t.Helper()
	var rows []pointsFlow
	must(t, func() error {
		return b.s.R.Raw(`SELECT type, order_no, expire_before, expire_after FROM account_flows
			WHERE uid = ? AND asset = 'POINTS' ORDER BY id`, uid).Scan(&rows).Error
	})
	return rows
}

func pointsExpiry(t *testing.T, b bundle, uid string) *time.Time {
	t.Helper()
	acc, err := b.s.GetAccount(b.ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	return acc[models.AssetPoints].ExpireAt
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func showTime(p *time.Time) string {
	if p == nil {
		return "never"
	}
	return p.UTC().Format(time.RFC3339Nano)
}

// Points given back by a release (task by task, and in a batch of several
// orders of one user) or by a whole refund move the account's expiry as
// the policy says: extend to at least now + 3 days, keep as it was; never
// stays never. Every points row states the expiry before and after it, the
// rows chain (each starts where the one before ended) and the last ends at
// the account's expiry. An account whose points came back past their
// expiry under keep refuses the next lock. Breaks if a path forgets the
// policy, the batch's update and its rows disagree, or a row states
// another expiry than the account had.
func TestPointsExpiryOnRelease(t *testing.T) {
	t.Parallel()
	const hour = time.Hour
	policies := []models.CouponPolicy{{Expiry: models.CouponExtend, ExtendDays: 3}, {Expiry: models.CouponKeep}}
	// expiries: from the clock's start; zero is never. The release comes
	// two hours after the start, so "past" has expired by then.
	expiries := []struct {
		name string
		in   time.Duration
	}{{"never", 0}, {"future", 24 * hour}, {"past", hour}}
	for _, d := range modelstest.Engines {
		for _, pol := range policies {
			for _, ex := range expiries {
				for _, path := range []string{"task", "batch", "refund"} {
					name := fmt.Sprintf("%s/%s/%s/%s", d, pol.Expiry, ex.name, path)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						b := setup(t, d, models.Options{Points: pol})
						start := b.clock.Now()
						var e0 *time.Time
						if ex.in == 0 {
							must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetPoints, 1, "test"); return err })
						} else {
							until := start.Add(ex.in)
							e0 = &until
							must(t, func() error {
								_, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 1, until, "test")
								return err
							})
						}
						cp := b.shop(t)
						if got := pointsExpiry(t, b, "u1"); !sameTime(got, e0) {
							t.Fatalf("expiry after the credits = %s, want %s", showTime(got), showTime(e0))
						}
						switch path {
						case "refund":
							b.paidOrder(t, "o-1", cp)
						default:
							batchShop(t, b, []models.PlaceRequest{
								{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
									Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 100}}},
								{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 1}},
									Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 50}}},
							})
						}
						b.clock.Advance(2 * hour)
						now := b.clock.Now()
						switch path {
						case "refund":
							if _, err := b.s.Refund(b.ctx, "o-1", "rf-1", nil, "", "cs"); err != nil {
								t.Fatal(err)
							}
						case "task":
							b.drain(t, "w1")
						case "batch":
							tasks := claimAll(t, b, "w1")
							var pts int
							for _, tk := range tasks {
								if tk.ResourceType == models.ResPoints {
									pts++
								}
							}
							if pts != 2 {
								t.Fatalf("claimed %d points tasks, want 2", pts)
							}
							results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
							if err != nil {
								t.Fatal(err)
							}
							for i, r := range results {
								if r.Outcome != models.OutcomeDone {
									t.Fatalf("task %d: %+v, want DONE", i, r)
								}
							}
						}
						want := e0
						if e0 != nil && pol.Expiry == models.CouponExtend {
							if floor := now.Add(3 * 24 * hour); e0.Before(floor) {
								want = &floor
							}
						}
						if got := pointsExpiry(t, b, "u1"); !sameTime(got, want) {
							t.Fatalf("expiry after the %s = %s, want %s", path, showTime(got), showTime(want))
						}
						flows := pointsFlows(t, b, "u1")
						returned := 0
						var prev *time.Time // the first row is the credit's, from never
						for i, f := range flows {
							if !sameTime(f.ExpireBefore, prev) {
								t.Errorf("row %d (%s) states expiry before %s, want %s (the row before's after)", i, f.Type, showTime(f.ExpireBefore), showTime(prev))
							}
							switch f.Type {
							case "RELEASE", "REFUND":
								returned++
								if !sameTime(f.ExpireAfter, want) {
									t.Errorf("row %d (%s) states expiry after %s, want %s", i, f.Type, showTime(f.ExpireAfter), showTime(want))
								}
							case "LOCK", "DEDUCT":
								if !sameTime(f.ExpireAfter, f.ExpireBefore) {
									t.Errorf("row %d (%s) moved the expiry %s → %s", i, f.Type, showTime(f.ExpireBefore), showTime(f.ExpireAfter))
								}
							}
							prev = f.ExpireAfter
						}
						if wantN := map[string]int{"refund": 1, "task": 2, "batch": 2}[path]; returned != wantN {
							t.Fatalf("%d RELEASE/REFUND points rows, want %d: %+v", returned, wantN, flows)
						}
						var balance int64
						must(t, func() error {
							return b.s.R.Raw(`SELECT COUNT(*) FROM account_flows WHERE asset = 'BALANCE'
								AND (expire_before IS NOT NULL OR expire_after IS NOT NULL)`).Scan(&balance).Error
						})
						if balance != 0 {
							t.Errorf("%d balance rows state an expiry", balance)
						}
						_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-next", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
							Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 1}}})
						if expired := want != nil && !want.After(now); expired != errors.Is(err, models.ErrPointsExpired) {
							t.Fatalf("next lock with the points expiring %s (now %s): %v", showTime(want), showTime(&now), err)
						}
						modelstest.CheckInvariants(t, b.s)
					})
				}
			}
		}
	}
}

// A lock of points whose account has expired is refused POINTS_EXPIRED,
// saying when, and changes nothing: no order, no ledger row, the account
// and the other resources as they were. A credit valid later makes the
// points usable again. Breaks if the lock looks at the amount alone.
func TestPointsLockRefusedWhenExpired(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		until := b.clock.Now().Add(time.Hour)
		must(t, func() error {
			_, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 500, until, "test")
			return err
		})
		cp := b.shop(t)
		b.clock.Advance(time.Hour)
		before := ledgerRows(t, b)
		acc, err := b.s.GetAccount(b.ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = b.s.PlaceOrder(b.ctx, fullOrder("o-x", cp))
		if !errors.Is(err, models.ErrPointsExpired) || !strings.Contains(err.Error(), until.Format(time.RFC3339)) {
			t.Fatalf("place with expired points: %v, want POINTS_EXPIRED naming %s", err, until.Format(time.RFC3339))
		}
		var orders int64
		must(t, func() error { return b.s.R.Raw("SELECT COUNT(*) FROM orders").Scan(&orders).Error })
		if orders != 0 {
			t.Fatalf("%d orders after a refused placement", orders)
		}
		if n := ledgerRows(t, b); n != before {
			t.Fatalf("ledger rows %d → %d after a refused placement", before, n)
		}
		after, err := b.s.GetAccount(b.ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []models.Asset{models.AssetBalance, models.AssetPoints} {
			x, y := acc[a], after[a]
			if x.Available != y.Available || x.Frozen != y.Frozen || x.Spent != y.Spent || !sameTime(x.ExpireAt, y.ExpireAt) {
				t.Fatalf("%s %+v → %+v after a refused placement", a, x, y)
			}
		}
		later := b.clock.Now().Add(24 * time.Hour)
		must(t, func() error { _, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 1, later, "test"); return err })
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-y", cp)); err != nil {
			t.Fatalf("place after a credit valid later: %v", err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A credit of points with an expiry moves the account's expiry to the
// later of the two (rolling), and its ADJUST row states both; a plain
// credit leaves it; points that never expire keep never while the account
// holds any. Refused, changing nothing: an expiry on a balance, one not in
// the future. Breaks if a credit could shorten points' life.
func TestCreditUntilRolls(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		now := b.clock.Now()
		at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
		day := 24 * time.Hour
		steps := []struct {
			until *time.Time
			want  *time.Time
		}{
			{at(10 * day), at(10 * day)},
			{at(5 * day), at(10 * day)},
			{nil, at(10 * day)},
			{at(20 * day), at(20 * day)},
		}
		for i, st := range steps {
			var err error
			if st.until == nil {
				_, err = b.s.Credit(b.ctx, "u1", models.AssetPoints, 10, "test")
			} else {
				_, err = b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 10, *st.until, "test")
			}
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := pointsExpiry(t, b, "u1"); !sameTime(got, st.want) {
				t.Fatalf("step %d: expiry %s, want %s", i, showTime(got), showTime(st.want))
			}
		}
		flows := pointsFlows(t, b, "u1")
		if len(flows) != 4 || flows[0].ExpireBefore != nil || !sameTime(flows[0].ExpireAfter, at(10*day)) ||
			!sameTime(flows[3].ExpireBefore, at(10*day)) || !sameTime(flows[3].ExpireAfter, at(20*day)) {
			t.Fatalf("ADJUST rows = %+v", flows)
		}
		rows := ledgerRows(t, b)
		for name, try := range map[string]func() error{
			"balance": func() error {
				_, err := b.s.CreditUntil(b.ctx, "u1", models.AssetBalance, 10, *at(day), "test")
				return err
			},
			"now": func() error { _, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 10, now, "test"); return err },
			"past": func() error {
				_, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 10, *at(-day), "test")
				return err
			},
		} {
			if err := try(); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%s: %v, want INVALID_INPUT", name, err)
			}
		}
		if n := ledgerRows(t, b); n != rows {
			t.Fatalf("ledger rows %d → %d after refused credits", rows, n)
		}
		if got := pointsExpiry(t, b, "u1"); !sameTime(got, at(20*day)) {
			t.Fatalf("expiry %s after refused credits", showTime(got))
		}
		must(t, func() error { _, err := b.s.Credit(b.ctx, "u2", models.AssetPoints, 10, "test"); return err })
		must(t, func() error {
			_, err := b.s.CreditUntil(b.ctx, "u2", models.AssetPoints, 10, *at(day), "test")
			return err
		})
		if got := pointsExpiry(t, b, "u2"); got != nil {
			t.Fatalf("points that never expire now expire %s", showTime(got))
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// Migration 00027: a balance row or a balance ledger row with an expiry is
// refused; going down is refused while any points expiry is stated, and on
// a database without one it goes down and up again. Breaks if the CHECKs
// are missing or the down step drops what it would lose.
func TestMigration27PointsExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		try := func(q string) error { return b.s.W.Exec(q).Error }
		for _, q := range []string{
			"UPDATE accounts SET expire_at = updated_at WHERE asset = 'BALANCE'",
			`INSERT INTO account_flows (uid, asset, type, trigger_type, qty, avail_before, avail_after, held_before, held_after,
				spent_before, spent_after, created_at, expire_after) SELECT 'u9', 'BALANCE', 'ADJUST', 'SETUP', 1, 0, 1, 0, 0, 0, 0, updated_at, updated_at FROM accounts LIMIT 1`,
		} {
			if err := try(q); err == nil {
				t.Errorf("accepted: %s", q)
			}
		}
		if err := downTo(t, b, 26); err != nil {
			t.Fatalf("down without an expiry: %v", err)
		}
		if err := try("UPDATE accounts SET expire_at = NULL"); err == nil {
			t.Fatal("after down, accounts still has expire_at")
		}
		if _, err := b.s.Migrate(b.ctx); err != nil {
			t.Fatalf("up again: %v", err)
		}
		must(t, func() error {
			_, err := b.s.CreditUntil(b.ctx, "u5", models.AssetPoints, 1, b.clock.Now().Add(time.Hour), "test")
			return err
		})
		if err := downTo(t, b, 26); err == nil {
			t.Fatal("down with a points expiry went through")
		}
		if got := pointsExpiry(t, b, "u5"); got == nil {
			t.Fatal("the refused down lost the expiry")
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A late payment takes back the points its order's close gave back, even
// when they expired meanwhile (policy keep, so the release left the
// expiry), as it takes back an expired coupon: the customer paid with
// them. The order ends PAID, not REFUND_PENDING. Breaks if the late
// payment's lock were refused as a placement's is.
func TestLatePaymentTakesBackExpiredPoints(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{Points: models.CouponPolicy{Expiry: models.CouponKeep}})
			until := b.clock.Now().Add(2 * time.Hour)
			must(t, func() error {
				_, err := b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 500, until, "test")
				return err
			})
			cp := b.shop(t)
			if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-late", cp)); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.CloseOrder(b.ctx, "o-late", models.TriggerTimeout, "job"); err != nil {
				t.Fatal(err)
			}
			b.drain(t, "w")
			b.clock.Advance(3 * time.Hour)
			pr, err := b.s.PayOrder(b.ctx, "o-late", "txn-late")
			if err != nil || pr.Status != models.OrderPaid || !pr.Late {
				t.Fatalf("late payment after the points expired: %+v, %v; want PAID", pr, err)
			}
			acc, err := b.s.GetAccount(b.ctx, "u1")
			if err != nil {
				t.Fatal(err)
			}
			if pts := acc[models.AssetPoints]; pts.Spent != 100 || pts.Frozen != 0 || pts.Available != 900 {
				t.Fatalf("points after the late payment: %+v, want 100 spent", pts)
			}
			modelstest.CheckInvariants(t, b.s)
		})
	}
}
