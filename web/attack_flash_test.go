package web_test

import (
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
