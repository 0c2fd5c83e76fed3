package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// The SKU list flags a hand edit of locked stock on that SKU only; a SKU
// whose stock is held by a PENDING order and by an unfinished release task
// reconciles.
func TestInventoryFlagsHandEdit(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, id := range []string{"sku-1", "sku-2", "sku-3"} {
			_, err := b.s.SetStock(b.ctx, id, 10, 0, "test")
			try(t, id, err)
		}
		// sku-1: 2 held by a PENDING order, 1 by a closed order whose release
		// task has not run yet.
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-pending", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}})
		try(t, "place", err)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-closed", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-3", Qty: 1}}})
		try(t, "place", err)
		_, err = b.s.CloseOrder(b.ctx, "o-closed", models.TriggerUserCancel, "test")
		try(t, "close", err)

		body := getPageBoth(t, b, "/inventory", "", http.StatusOK)
		for _, id := range []string{"sku-1", "sku-2", "sku-3"} {
			requireElement(t, body, "inv-ok-"+id, true)
		}
		requireElement(t, body, "inv-all-ok", true)

		if err := b.s.W.Exec("UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-2'").Error; err != nil {
			t.Fatal(err)
		}
		body = getPageBoth(t, b, "/inventory", "", http.StatusOK)
		requireText(t, body, "inv-flag-locked-sku-2", "锁定差 +1")
		requireText(t, body, "inv-flag-total-sku-2", "总量差 +1")
		requireElement(t, body, "inv-ok-sku-2", false)
		for _, id := range []string{"sku-1", "sku-3"} {
			requireElement(t, body, "inv-ok-"+id, true)
			requireElement(t, body, "inv-flag-locked-"+id, false)
			requireElement(t, body, "inv-flag-total-"+id, false)
		}
		requireElement(t, body, "inv-flagged", true)
		if !strings.Contains(body, `href="/inventory/sku-2"`) {
			t.Fatal("the SKU does not link to its ledger")
		}

		// The SKU page shows both checks.
		sku2 := getPageBoth(t, b, "/inventory/sku-2", "", http.StatusOK)
		requireElement(t, sku2, "sku-locked-bad", true)
		requireElement(t, sku2, "sku-total-bad", true)
		sku1 := getPageBoth(t, b, "/inventory/sku-1", "", http.StatusOK)
		requireElement(t, sku1, "sku-locked-ok", true)
		requireElement(t, sku1, "sku-total-ok", true)
		requireText(t, sku1, "sku-locked", "3")
		requireText(t, sku1, "sku-available", "7")

		// A moved unit (available to locked) breaks only the locked check.
		if err := b.s.W.Exec("UPDATE inventory SET locked = locked + 1, available = available - 1 WHERE sku_id = 'sku-3'").Error; err != nil {
			t.Fatal(err)
		}
		body = getPageBoth(t, b, "/inventory", "", http.StatusOK)
		requireElement(t, body, "inv-flag-locked-sku-3", true)
		requireElement(t, body, "inv-flag-total-sku-3", false)
	})
}

// The SKU list pages by id and filters by prefix, exactly (LIKE's
// wildcards are plain characters).
func TestInventoryPagesAndPrefix(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 55 {
			_, err := b.s.SetStock(b.ctx, fmt.Sprintf("a-%02d", i), int64(i), 0, "test")
			try(t, "stock", err)
		}
		_, err := b.s.SetStock(b.ctx, "b_1", 1, 30, "test")
		try(t, "stock", err)

		first := getPageBoth(t, b, "/inventory", "", http.StatusOK)
		if n := len(ledRows(first, "inv-row-")); n != 50 {
			t.Fatalf("first page has %d SKUs, want 50", n)
		}
		requireElement(t, first, "page-first", false)
		next, ok := testidHref(first, "page-next")
		if !ok || next != "/inventory?after=a-49" {
			t.Fatalf("next link %q", next)
		}
		second := getPageBoth(t, b, next, "", http.StatusOK)
		if rows := ledRows(second, "inv-row-"); len(rows) != 6 || !strings.Contains(rows[0], "a-50") || !strings.Contains(rows[5], "b_1") {
			t.Fatalf("second page rows %v", rows)
		}
		requireElement(t, second, "page-next", false)
		requireElement(t, second, "page-first", true)

		only := getPageBoth(t, b, "/inventory?prefix=+b_+", "", http.StatusOK)
		if rows := ledRows(only, "inv-row-"); len(rows) != 1 || !strings.Contains(rows[0], "b_1") {
			t.Fatalf("prefix b_ rows %v", rows)
		}
		if !strings.Contains(only, `<td class="num">30</td>`) {
			t.Fatal("the release delay is not shown")
		}
		none := getPageBoth(t, b, "/inventory?prefix=a_", "", http.StatusOK)
		requireElement(t, none, "inv-empty", true)
		tens := getPageBoth(t, b, "/inventory?prefix=a-1", "", http.StatusOK)
		if n := len(ledRows(tens, "inv-row-")); n != 10 {
			t.Fatalf("prefix a-1 has %d SKUs, want 10", n)
		}
	})
}

// A SKU's ledger lists its rows newest first with order links, 50 a page.
func TestSKULedgerRowsAndPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 60 {
			_, err := b.s.SetStock(b.ctx, "sku-1", int64(100+i), 0, "ops:1")
			try(t, "stock", err)
			b.clock.Advance(time.Second)
		}
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 4}}})
		try(t, "place", err)

		body := getPageBoth(t, b, "/inventory/sku-1", "", http.StatusOK)
		rows := ledRows(body, "flow-")
		if len(rows) != 50 {
			t.Fatalf("first page has %d rows, want 50", len(rows))
		}
		// The newest row is the order's LOCK: 159 available → 155, locked 0 → 4.
		top := ledElement(body, rows[0])
		for _, want := range []string{`href="/orders/o-1"`, "锁定", "下单", "159 → <strong>155</strong>", "0 → <strong>4</strong>"} {
			if !strings.Contains(top, want) {
				t.Fatalf("newest row lacks %q:\n%s", want, top)
			}
		}
		requireText(t, body, "sku-locked", "4")
		next, ok := testidHref(body, "page-next")
		if !ok {
			t.Fatal("no next page")
		}
		second := getPageBoth(t, b, next, "", http.StatusOK)
		if n := len(ledRows(second, "flow-")); n != 11 {
			t.Fatalf("second page has %d rows, want 11", n)
		}
		requireElement(t, second, "page-next", false)
		if !strings.Contains(second, "ops:1") || !strings.Contains(second, "调整") {
			t.Fatal("second page lacks the adjustments")
		}
		// Both pages together are every row once.
		seen := map[string]bool{}
		for _, r := range append(rows, ledRows(second, "flow-")...) {
			if seen[r] {
				t.Fatalf("row %s on both pages", r)
			}
			seen[r] = true
		}
		if !strings.Contains(b.call(http.MethodGet, "/inventory/sku-1?after=1", "").Body.String(), `data-testid="sku-ledger-empty"`) {
			t.Fatal("below the first row the ledger should be empty")
		}
	})
}

// ledElement is the markup of the element whose data-testid attribute is
// attr (as ledRows returns it), up to its end tag.
func ledElement(body, attr string) string {
	i := strings.Index(body, attr)
	if i < 0 {
		return ""
	}
	end := strings.Index(body[i:], "</tr>")
	if end < 0 {
		return body[i:]
	}
	return body[i : i+end]
}
