package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"unhold/models"
)

// A stopped stock task whose key holds enough again only because another
// order locked since: the row still holds less than its ledger, so the
// cause is still there (a rerun would give back the other order's hold,
// and that order's release would stop next). The task page must send the
// operator to the correction, not say the rerun will release.
func TestAttackCauseCoveredByAnotherOrder(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		fixStopped(t, b, "f-1", cp.ID, "UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-f'")
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "f-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-f", Qty: 2}}})
		try(t, "place f-2", err)
		id := tkTaskOf(t, b, "f-1", models.ResInventory)
		for _, path := range []string{fmt.Sprintf("/tasks/%d", id), "/orders/f-1/resources/inventory/rerun"} {
			body := getPage(t, b, path, true, http.StatusOK)
			if got := causeOf(body); got != "short.row" || testidTag(body, "cause-fix") == "" {
				t.Errorf("%s: cause %q, want short.row with the link to the correction", path, got)
			}
		}
	})
}

// A stopped task whose key was deleted by hand and made again (set_stock
// makes a new row holding nothing): the key exists now, but it holds less
// than the task gives back, so a rerun would stop again (LOCKED_SHORT).
// The cause must say what the key holds against its ledger and link to the
// correction, not that a rerun will release.
func TestAttackCauseKeyMadeAgain(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		fixStopped(t, b, "f-1", cp.ID, "DELETE FROM inventory WHERE sku_id = 'sku-f'")
		id := tkTaskOf(t, b, "f-1", models.ResInventory)
		if got := causeOf(getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)); got != "missing" {
			t.Fatalf("the key deleted: cause %q, want missing", got)
		}
		_, err = b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f again", err)
		body := getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		if got := causeOf(body); got != "short.row" || testidTag(body, "cause-fix") == "" {
			t.Errorf("the key made again holding nothing: cause %q, want short.row with the link to the correction", got)
		}
	})
}
