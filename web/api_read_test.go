package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/remote/remotetest"
)

// readPage is one page of a read API list.
type readPage[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// readAll follows a list's next links from path, limit rows a page, and
// returns every row and how many pages it took.
func readAll[T any](t *testing.T, b bundle, path string, limit int) ([]T, int) {
	t.Helper()
	sep := "?"
	if u, _ := url.Parse(path); u.RawQuery != "" {
		sep = "&"
	}
	var all []T
	next, pages := "", 0
	for {
		p := fmt.Sprintf("%s%slimit=%d", path, sep, limit)
		if next != "" {
			p += "&after=" + url.QueryEscape(next)
		}
		got := must[readPage[T]](t, b, http.StatusOK, http.MethodGet, p, "")
		pages++
		if len(got.Items) > limit || (got.Next != "" && len(got.Items) != limit) {
			t.Fatalf("%s: %d items, next %q", p, len(got.Items), got.Next)
		}
		all = append(all, got.Items...)
		if next = got.Next; next == "" {
			return all, pages
		}
		if pages > 100 {
			t.Fatalf("%s: no last page", path)
		}
	}
}

// wantBad checks that a GET is refused 400 INVALID_INPUT.
func wantBad(t *testing.T, b bundle, path string) {
	t.Helper()
	rec := b.call(http.MethodGet, path, "")
	if rec.Code != http.StatusBadRequest {
		t.Errorf("GET %s = %d %s, want 400", path, rec.Code, rec.Body)
		return
	}
	wantError(t, rec, http.StatusBadRequest, "INVALID_INPUT")
}

// orderJSON is one order of GET /api/v1/orders.
type orderJSON struct {
	models.Order
	Holds []models.HeldKey `json:"holds"`
}

// The order list takes the orders page's filters and pages by keyset:
// every order once, in order, whatever the page size.
func TestAPIOrdersList(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		for i := range 5 {
			b.clock.Advance(time.Second)
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: fmt.Sprintf("o-%d", i), UserID: "u2",
				Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
			try(t, "place", err)
		}
		all, pages := readAll[orderJSON](t, b, "/api/v1/orders", 2)
		var nos []string
		for _, o := range all {
			nos = append(nos, o.OrderNo)
		}
		if want := []string{"o-4", "o-3", "o-2", "o-1", "o-0"}; len(nos) != 7 || !slices.Equal(nos[:5], want) || pages != 4 {
			t.Fatalf("orders %v in %d pages, want %v then the two seeded ones, in 4", nos, pages, want)
		}
		old, _ := readAll[orderJSON](t, b, "/api/v1/orders?user=u2&sort=old", 3)
		if len(old) != 5 || old[0].OrderNo != "o-0" || old[4].OrderNo != "o-4" {
			t.Fatalf("u2's orders oldest first = %v", old)
		}
		paid := must[readPage[orderJSON]](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders?status=PAID", "")
		if len(paid.Items) != 1 || paid.Items[0].OrderNo != "paid-1" || paid.Next != "" {
			t.Fatalf("PAID orders = %+v", paid)
		}
		none := must[readPage[orderJSON]](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders?no=nope", "")
		if none.Items == nil || len(none.Items) != 0 {
			t.Fatalf("no match = %+v, want items []", none)
		}
		for _, q := range []string{"status=LOST", "user=a%20b", "no=%2A", "from=2026-13-01", "from=2026-12-02&to=2026-12-01",
			"sort=up", "after=zz", "limit=0", "limit=501", "limit=x", "held_key=sku-1", "held_type=giftcard",
			"closed_from=2026-13-01", "closed_from=2026-12-02&closed_to=2026-12-01"} {
			wantBad(t, b, "/api/v1/orders?"+q)
		}
	})
}

// chainAnswer is the answer of GET /api/v1/orders/:order_no/chain.
type chainAnswer struct {
	models.Chain
	Diffs []models.Diff `json:"diffs"`
	models.ChainRecon
}

// The chain answers what the order's page shows: the chain, a diff of
// each key it holds that does not reconcile now, which is a note and not
// the order's, and the order's own disagreements with its ledger rows.
func TestAPIOrderChain(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		got := must[chainAnswer](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders/held-1/chain", "")
		if got.Order.OrderNo != "held-1" || len(got.Holds) != 3 || len(got.Flows) != 3 || got.Diffs == nil || len(got.Diffs) != 0 {
			t.Fatalf("chain = %+v", got)
		}
		try(t, "plant", b.s.W.Exec("UPDATE inventory SET locked = locked + 2 WHERE sku_id = 'sku-1'").Error)
		got = must[chainAnswer](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders/held-1/chain", "")
		if len(got.Diffs) == 0 || got.Diffs[0].Resource != models.ResInventory || got.Diffs[0].Key != "sku-1" ||
			got.Diffs[0].Actual-got.Diffs[0].Expected != 2 {
			t.Fatalf("diffs after planting = %+v", got.Diffs)
		}
		if !got.Reconciles || len(got.Own) != 0 || len(got.Keys) == 0 || got.Keys[0].Key != "sku-1" || !got.Keys[0].Live {
			t.Fatalf("a key-wide diff: reconciles %v, own %+v, key notes %+v", got.Reconciles, got.Own, got.Keys)
		}
		try(t, "edit hold", b.s.W.Exec("UPDATE order_holds SET released = 1 WHERE order_no = 'held-1' AND biz_key = 'sku-1'").Error)
		got = must[chainAnswer](t, b, http.StatusOK, http.MethodGet, "/api/v1/orders/held-1/chain", "")
		if got.Reconciles || len(got.Own) == 0 || got.Own[0].Check != models.CheckLineHeld || got.Own[0].Key != "sku-1" || len(got.Keys) != 0 {
			t.Fatalf("a hold edited by hand: reconciles %v, own %+v, key notes %+v", got.Reconciles, got.Own, got.Keys)
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/orders/nope/chain", ""), http.StatusNotFound, "NOT_FOUND")
		wantBad(t, b, "/api/v1/orders/a%20b/chain")
	})
}

// The task list takes the tasks page's filter; a task answers with every
// attempt at it.
func TestAPITasks(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		_, err := b.s.CloseOrder(b.ctx, "held-1", models.TriggerUserCancel, "u1")
		try(t, "close", err)
		all, pages := readAll[models.ReleaseTask](t, b, "/api/v1/tasks?status=PENDING", 2)
		if len(all) != 3 || pages != 2 {
			t.Fatalf("PENDING tasks = %d in %d pages, want 3 in 2", len(all), pages)
		}
		slot := must[readPage[models.ReleaseTask]](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks?type=slot&order=held-1", "")
		if len(slot.Items) != 1 || slot.Items[0].ResourceType != models.ResSlot || slot.Items[0].BizKey != "seat-1" {
			t.Fatalf("slot tasks = %+v", slot)
		}
		drain(t, b)
		done := must[readPage[models.ReleaseTask]](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks?status=DONE&status=RETRY", "")
		if len(done.Items) != 3 {
			t.Fatalf("DONE tasks = %+v", done)
		}
		id := done.Items[0].ID
		task := must[struct {
			models.ChainTask
			Notes []models.Note `json:"notes"`
		}](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(id, 10), "")
		if task.ID != id || task.Status != models.TaskDone || len(task.AttemptLog) != 1 || task.AttemptLog[0].Outcome != models.OutcomeDone ||
			task.Notes == nil {
			t.Fatalf("task %d = %+v", id, task)
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/tasks/999", ""), http.StatusNotFound, "NOT_FOUND")
		for _, p := range []string{"/api/v1/tasks/0", "/api/v1/tasks/x", "/api/v1/tasks?status=LOST", "/api/v1/tasks?type=nope",
			"/api/v1/tasks?class=X", "/api/v1/tasks?older=-1", "/api/v1/tasks?due=2", "/api/v1/tasks?sort=x",
			"/api/v1/tasks?after=1", "/api/v1/tasks?limit=501"} {
			wantBad(t, b, p)
		}
	})
}

// A ledger lists any type's rows, newest first, all or one key's: a
// built-in counter, an account asset (only its own asset's rows), a coupon
// (keyed by its id) and a slot.
func TestAPILedgers(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sh := seedShop(t, b)
		inv, pages := readAll[models.Flow](t, b, "/api/v1/ledgers/inventory", 1)
		// sku-1 and sku-2 set, held-1 and paid-1 locked one each, paid-1 deducted.
		if len(inv) != 5 || pages != 5 || inv[0].ID < inv[4].ID {
			t.Fatalf("inventory ledger = %+v in %d pages", inv, pages)
		}
		sku1, _ := readAll[models.Flow](t, b, "/api/v1/ledgers/inventory?key=sku-1", 2)
		for _, f := range sku1 {
			if f.BizKey != "sku-1" || f.ResourceType != models.ResInventory {
				t.Fatalf("sku-1's ledger has %+v", f)
			}
		}
		if len(sku1) != 4 {
			t.Fatalf("sku-1's ledger = %d rows, want 4", len(sku1))
		}
		bal := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/balance?key=u1", "")
		pts := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/points", "")
		if len(bal.Items) != 1 || bal.Items[0].Qty != 1000 || len(pts.Items) != 1 || pts.Items[0].Qty != 500 {
			t.Fatalf("balance %+v, points %+v", bal, pts)
		}
		key := strconv.FormatInt(sh.couponU2, 10)
		cp := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/coupon?key="+key, "")
		if len(cp.Items) != 1 || cp.Items[0].BizKey != key || cp.Items[0].Owner != string(models.CouponMerchant) {
			t.Fatalf("coupon %s's ledger = %+v", key, cp)
		}
		slot := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/slot?key=seat-1", "")
		if len(slot.Items) == 0 || slot.Items[0].OrderNo == nil || *slot.Items[0].OrderNo != "held-1" || slot.Items[0].StatusAfter == "" {
			t.Fatalf("seat-1's ledger = %+v", slot)
		}
		empty := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/quota?key=act-9", "")
		if empty.Items == nil || len(empty.Items) != 0 || empty.Next != "" {
			t.Fatalf("an unknown key's ledger = %+v, want items []", empty)
		}
		for _, p := range []string{"/api/v1/ledgers/nope", "/api/v1/ledgers/coupon?key=c1", "/api/v1/ledgers/coupon?key=0",
			"/api/v1/ledgers/inventory?key=a%20b", "/api/v1/ledgers/inventory?after=0", "/api/v1/ledgers/inventory?after=x",
			"/api/v1/ledgers/inventory?limit=0"} {
			wantBad(t, b, p)
		}
	})
}

// A declared counter's ledger is its rows of the shared declared ledger.
func TestAPILedgerDeclared(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		for _, key := range []string{"box-1", "box-2"} {
			_, err := b.s.SetDeclared(b.ctx, "gift_wrap", key, 5, "test")
			try(t, "set "+key, err)
		}
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: "gift_wrap", Key: "box-1", Qty: 2}}})
		try(t, "place", err)
		all, _ := readAll[models.Flow](t, b, "/api/v1/ledgers/gift_wrap", 2)
		box1, _ := readAll[models.Flow](t, b, "/api/v1/ledgers/gift_wrap?key=box-1", 1)
		if len(all) != 3 || len(box1) != 2 || box1[0].Type != models.FlowLock || box1[0].Qty != 2 || box1[0].HeldAfter != 2 ||
			box1[0].ResourceType != "gift_wrap" {
			t.Fatalf("gift_wrap ledger = %+v; box-1's = %+v", all, box1)
		}
	})
}

// A remote type's ledger is its rows of remote_flows, each with the
// service's answer as its status.
func TestAPILedgerRemote(t *testing.T) {
	t.Parallel()
	svc := remotetest.New(remotetest.Options{})
	eachEngineWith(t, withGiftCards(svc), func(t *testing.T, b bundle) {
		svc.SetAvailable("GC-"+string(b.s.Dialect), 100)
		key := "GC-" + string(b.s.Dialect)
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: giftCards, Key: key, Qty: 30}}})
		try(t, "place", err)
		got := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/giftcard?key="+key, "")
		if len(got.Items) != 1 || got.Items[0].Type != models.FlowLock || got.Items[0].Qty != 30 || got.Items[0].StatusAfter == "" {
			t.Fatalf("giftcard ledger = %+v", got)
		}
		if other := must[readPage[models.Flow]](t, b, http.StatusOK, http.MethodGet, "/api/v1/ledgers/inventory", ""); len(other.Items) != 0 {
			t.Fatalf("the inventory ledger has %+v", other.Items)
		}
	})
}

// The reconcile answer lists the tickets its run opened; the ticket list
// takes the reconciliation page's filter.
func TestAPIReconTickets(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		reconPlant(t, b)
		got := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		if int64(len(got.Tickets)) != got.Run.Opened || got.Run.Opened < 4 {
			t.Fatalf("run %+v answered %d tickets", got.Run, len(got.Tickets))
		}
		// One ticket per key: the run's diffs outnumber its tickets, whose
		// checks add up to them.
		checks := 0
		for _, d := range got.Tickets {
			if d.FirstRunID != got.Run.ID || d.Status != models.DiffOpen {
				t.Fatalf("ticket %+v is not one run %d opened", d, got.Run.ID)
			}
			if len(d.Checks) == 0 || d.Checks[0].Check != d.CheckName || d.Checks[0].Expected != d.Expected || d.Checks[0].Actual != d.Actual {
				t.Fatalf("ticket %+v: its checks do not start with its check", d)
			}
			checks += len(d.Checks)
		}
		if int64(checks) != got.Run.Found || got.Run.Found <= got.Run.Opened {
			t.Fatalf("run %+v: its tickets list %d checks", got.Run, checks)
		}
		again := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "{}")
		if again.Tickets == nil || len(again.Tickets) != 0 {
			t.Fatalf("a run opening nothing answered tickets %+v", again.Tickets)
		}
		all, _ := readAll[models.DiffTicket](t, b, "/api/v1/recon/tickets", 2)
		if len(all) != len(got.Tickets) {
			t.Fatalf("listed %d open tickets, want %d", len(all), len(got.Tickets))
		}
		pos := must[readPage[models.DiffTicket]](t, b, http.StatusOK, http.MethodGet, "/api/v1/recon/tickets?resource=inventory&sign=1", "")
		neg := must[readPage[models.DiffTicket]](t, b, http.StatusOK, http.MethodGet, "/api/v1/recon/tickets?resource=inventory&sign=-1", "")
		if len(pos.Items) == 0 || len(neg.Items) == 0 {
			t.Fatalf("inventory tickets: above %+v, below %+v", pos, neg)
		}
		for _, d := range append(pos.Items, neg.Items...) {
			if d.ResourceType != models.ResInventory {
				t.Fatalf("an inventory list has %+v", d)
			}
		}
		try(t, "resolve", b.s.ResolveDiff(b.ctx, pos.Items[0].ID, "test", "fixed by hand"))
		resolved := must[readPage[models.DiffTicket]](t, b, http.StatusOK, http.MethodGet, "/api/v1/recon/tickets?status=RESOLVED", "")
		if len(resolved.Items) != 1 || resolved.Items[0].ID != pos.Items[0].ID {
			t.Fatalf("RESOLVED tickets = %+v", resolved)
		}
		for _, q := range []string{"status=DONE", "resource=nope", "sign=2", "after=-1", "limit=501"} {
			wantBad(t, b, "/api/v1/recon/tickets?"+q)
		}
	})
}

// The audit log is for admins, with the audit page's filter.
func TestAPIAudit(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		must[map[string]any](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		all, _ := readAll[models.AuditEntry](t, b, "/api/v1/audit", 3)
		if len(all) < 2 || all[0].ID < all[len(all)-1].ID {
			t.Fatalf("audit = %+v", all)
		}
		runs := must[readPage[models.AuditEntry]](t, b, http.StatusOK, http.MethodGet, "/api/v1/audit?action=recon_run_now&actor=token:root", "")
		if len(runs.Items) != 1 || runs.Items[0].Target != "recon" {
			t.Fatalf("recon_run_now by token:root = %+v", runs)
		}
		viewer, err := b.signIn("v1", "viewer")
		try(t, "sign in", err)
		// A viewer reads the operational entries (TestAuditPolicy says which).
		must[readPage[models.AuditEntry]](t, b.as(viewer), http.StatusOK, http.MethodGet, "/api/v1/audit", "")
		long := strings.Repeat("x", 129)
		for _, q := range []string{"actor=" + long, "target=" + long, "action=nope", "from=2026-02-30", "to=x", "after=0", "limit=201", "limit=0"} {
			wantBad(t, b, "/api/v1/audit?"+q)
		}
	})
}
