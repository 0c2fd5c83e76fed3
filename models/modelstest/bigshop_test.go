package modelstest_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// The benchmark shop, built small, is consistent: every invariant holds,
// and the overview's rollups count the attempts and releases of the last
// RollupRetention, so pages measured on it show a believable shop. Its
// last 200 orders, still PENDING, span 90 days × 200 / orders: 3,000
// orders is about the fewest that leave some releases in the 8 days (59;
// at 2,000 none, and a shop without its latency rollups would pass). Its
// time is the 50,000 users and 2,000 SKUs, whatever the orders.
func TestBigShopIsConsistent(t *testing.T) {
	if testing.Short() {
		t.Skip("a shop of 50,000 users built and checked: over ten seconds")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.db")
	end := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if err := modelstest.BuildBigShop(path, 3000, end); err != nil {
		t.Fatal(err)
	}
	s, err := models.Open(context.Background(), path, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	modelstest.CheckInvariants(t, s)
	since := end.Add(-models.RollupRetention)
	var got, want [2]int64
	for i, q := range []string{"SELECT COALESCE(SUM(n), 0) FROM attempt_minutes", "SELECT COALESCE(SUM(n), 0) FROM latency_minutes"} {
		if err := s.R.Raw(q).Scan(&got[i]).Error; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.R.Raw("SELECT COUNT(*) FROM task_attempts WHERE finished_at >= ?", since).Scan(&want[0]).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.R.Raw("SELECT COUNT(*) FROM release_tasks WHERE done_at >= ? AND trigger_type <> 'RERUN'", since).Scan(&want[1]).Error; err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("rollups count %v attempts and releases of the last %s, want %v", got, models.RollupRetention, want)
	}
}
