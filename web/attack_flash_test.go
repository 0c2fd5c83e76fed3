package web_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// The chain's rerun waits for the tries and says how they ended; a try
// that failed again is said with its error in the viewer's language, as
// the task's own rerun says it.
func TestAttackChainRerunFlashInChinese(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		fixStopped(t, b, "f-1", cp.ID, "UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-f'")
		_, body := followPost(t, b, postForm(b, "/orders/f-1/resources/inventory/rerun", url.Values{"reason": {"重试"}}, false), false)
		flash, _ := testidText(body, "flash")
		if !strings.Contains(flash, "当前占用少于订单 f-1") || strings.Contains(flash, "held amount is smaller") {
			t.Errorf("the chain's rerun on a Chinese page: flash %q, want the error in Chinese", flash)
		}
	})
}

// A flash is a cookie, and a browser drops a cookie past 4096 bytes without
// a word: a flash that echoes what was typed, or says many tasks' errors,
// must still fit, or the operator sees nothing at all.
func TestAttackFlashFitsACookie(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		form := url.Values{"available": {strings.Repeat("9", 6000)}, "reason": {"counted"}}
		rec := postForm(b, "/resources/inventory/sku-f/correct", form, false)
		flashFits(t, "a long number typed", rec)
		if _, body := followPost(t, b, rec, false); testidTag(body, "flash") == "" {
			t.Error("a long number typed: the page after shows no flash")
		}
		// One order whose ten stock lines all stop again on the rerun.
		items := make([]models.Item, 10)
		for i := range items {
			sku := fmt.Sprintf("sku-%02d", i)
			_, err := b.s.SetStock(b.ctx, sku, 10, 0, "test")
			try(t, sku, err)
			items[i] = models.Item{SkuID: sku, Qty: 2}
		}
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "f-9", UserID: "u1", Items: items})
		try(t, "place f-9", err)
		try(t, "side door", b.s.W.Exec("UPDATE inventory SET locked = 0, available = 12 WHERE sku_id LIKE 'sku-0%'").Error)
		_, err = b.s.CloseOrder(b.ctx, "f-9", models.TriggerUserCancel, "u1")
		try(t, "close f-9", err)
		fixDrain(b.s)
		rec = postForm(b, "/orders/f-9/resources/inventory/rerun", url.Values{"reason": {"重试"}}, false)
		flashFits(t, "ten tasks failed again", rec)
		if _, body := followPost(t, b, rec, false); testidTag(body, "flash") == "" {
			t.Error("ten tasks failed again: the page after shows no flash")
		}
	})
}

// flashFits fails unless rec sets a flash cookie a browser keeps.
func flashFits(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	for _, h := range rec.Result().Header.Values("Set-Cookie") {
		if strings.HasPrefix(h, "flash=") {
			if len(h) > 4096 {
				t.Errorf("%s: the flash cookie is %d bytes; a browser drops it", what, len(h))
			}
			return
		}
	}
	t.Errorf("%s: no flash cookie", what)
}
