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
// so pages measured on it show a believable shop.
func TestBigShopIsConsistent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.db")
	if err := modelstest.BuildBigShop(path, 5000, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	s, err := models.Open(context.Background(), path, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	modelstest.CheckInvariants(t, s)
}
