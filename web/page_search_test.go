package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"unhold/auth"
	"unhold/models"
)

// searchShop seeds keys that share the prefix "ab" across kinds and cases:
// two orders of user AB-u1 (and one of xy-u2), AB-u1's account, two SKUs,
// an activity, a slot and a gift_wrap key.
func searchShop(t *testing.T, b bundle) {
	t.Helper()
	for _, sku := range []string{"Ab-sku-1", "ab-SKU-2", "zz-sku"} {
		_, err := b.s.SetStock(b.ctx, sku, 10, 0, "test")
		try(t, "stock "+sku, err)
	}
	_, err := b.s.Credit(b.ctx, "AB-u1", models.AssetBalance, 100, "test")
	try(t, "credit", err)
	_, err = b.s.SetActivity(b.ctx, "ab-act", 5, "test")
	try(t, "activity", err)
	_, _, err = b.s.PutSlot(b.ctx, "AB-seat", "test")
	try(t, "slot", err)
	_, err = b.s.SetDeclared(b.ctx, "gift_wrap", "aB-box", 3, "test")
	try(t, "gift_wrap", err)
	for _, o := range []struct{ no, user string }{{"AB-100", "AB-u1"}, {"ab-101", "AB-u1"}, {"Xy-1", "xy-u2"}} {
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: o.no, UserID: o.user,
			Items: []models.Item{{SkuID: "zz-sku", Qty: 1}}})
		try(t, "place "+o.no, err)
	}
}

// searchHits lists a results page's hits: each group's id, then its keys.
func searchHits(body string) string {
	var out []string
	for _, m := range regexp.MustCompile(`data-testid="search-group-([a-z_]+)"|data-testid="search-hit">\s*<td>\s*(?:<a [^>]*>)?([^<\s]+)`).FindAllStringSubmatch(body, -1) {
		if m[1] != "" {
			out = append(out, m[1]+":")
		} else {
			out = append(out, m[2])
		}
	}
	return strings.Join(out, " ")
}

// searchRows are a results page's rows, in order.
func searchRows(body string) []string {
	var out []string
	for {
		row := testidElement(body, "search-hit")
		if row == "" {
			return out
		}
		out = append(out, row)
		body = body[strings.Index(body, row)+len(row):]
	}
}

func TestSearchRedirectsAnExactMatch(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		searchShop(t, b)
		redirects := func(q, want string) {
			t.Helper()
			rec := servePage(b, "/search?q="+url.QueryEscape(q), "", "")
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
				t.Errorf("search %q = %d to %q, want 303 to %q", q, rec.Code, rec.Header().Get("Location"), want)
			}
		}
		// The order's number in another case, though ab-101 starts with it too.
		redirects("ab-100", "/orders/AB-100")
		redirects("  xY-1\u200b ", "/orders/Xy-1")
		redirects("ab-sku-1", "/inventory/Ab-sku-1")
		redirects("AB-BOX", "/resources/gift_wrap/aB-box")
		// One hit in all, though not exact.
		redirects("xy-u", "/users/xy-u2")
		// A user with orders and an account is one hit.
		redirects("ab-u1", "/users/AB-u1")

		cp, err := b.s.CreateCoupon(b.ctx, "xy-u2", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		coupon := strconv.FormatInt(cp.ID, 10)
		redirects(coupon, "/coupons?coupon="+coupon)

		for _, no := range []string{"AB-100", "Xy-1"} {
			_, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "test")
			try(t, "close "+no, err)
		}
		var task int64
		try(t, "task", b.s.R.Raw(`SELECT id FROM release_tasks WHERE order_no = 'Xy-1'`).Scan(&task).Error)
		if task == cp.ID {
			t.Fatalf("task %d has the coupon's number: the test needs them apart", task)
		}
		redirects(strconv.FormatInt(task, 10), "/tasks/"+strconv.FormatInt(task, 10))
		// The coupon's number is AB-100's task's too: two exact hits, listed.
		body := getPage(t, b, "/search?q="+coupon, false, http.StatusOK)
		if got := searchHits(body); got != "coupon: "+coupon+" task: "+coupon {
			t.Errorf("hits of %s: %q, want the coupon and the task", coupon, got)
		}
	})
}

func TestSearchListsHitsByKind(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		searchShop(t, b)
		body := getPageBoth(t, b, "/search?q=aB", "", http.StatusOK)
		want := "order: AB-100 ab-101 user: AB-u1 sku: Ab-sku-1 ab-SKU-2 " +
			"activity: ab-act slot: AB-seat gift_wrap: aB-box"
		if got := searchHits(body); got != want {
			t.Errorf("hits %q, want %q", got, want)
		}
		for id, href := range map[string]string{
			"search-group-order": "/orders/AB-100", "search-group-user": "/users/AB-u1",
			"search-group-sku":       "/inventory/Ab-sku-1",
			"search-group-gift_wrap": "/resources/gift_wrap/aB-box",
		} {
			if got, _ := testidHref(testidElement(body, id), "search-hit-link"); got != href {
				t.Errorf("%s links %q, want %q", id, got, href)
			}
		}
		// An activity and a slot have no page yet: their rows say so.
		for _, id := range []string{"search-group-activity", "search-group-slot"} {
			if _, ok := testidHref(testidElement(body, id), "search-hit-link"); ok {
				t.Errorf("%s has a link", id)
			}
		}
		requireElement(t, body, "search-more", false)

		body = getPage(t, b, "/search?q=nothing-here", true, http.StatusOK)
		requireElement(t, body, "search-none", true)
	})
}

// Each thing is one row with its status and a detail line: a user (of two
// orders and an account) once, with their last order and a link to their
// balances; an order with its status and what it froze; a coupon with its
// state and owner.
func TestSearchRowsSayWhatEachThingIs(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku", 10, 0, "test")
		try(t, "stock", err)
		_, err = b.s.Credit(b.ctx, "user-084", models.AssetBalance, 5000, "test")
		try(t, "credit", err)
		for _, o := range []struct {
			no, user string
			freeze   int64
		}{{"O-1", "user-084", 0}, {"O-2", "user-084", 1234}, {"O-3", "user-085", 0}} {
			b.clock.Advance(time.Minute)
			req := models.PlaceRequest{OrderNo: o.no, UserID: o.user, Items: []models.Item{{SkuID: "sku", Qty: 1}}}
			if o.freeze > 0 {
				req.Freeze = []models.Freeze{{Asset: models.AssetBalance, Amount: o.freeze}}
			}
			_, _, err := b.s.PlaceOrder(b.ctx, req)
			try(t, "place "+o.no, err)
		}
		_, err = b.s.CloseOrder(b.ctx, "O-2", models.TriggerUserCancel, "test")
		try(t, "close", err)

		for _, en := range []bool{false, true} {
			say := func(zh, english string) string { return map[bool]string{false: zh, true: english}[en] }
			body := getPage(t, b, "/search?q=user-08", en, http.StatusOK)
			if got := searchHits(body); got != "user: user-084 user-085" {
				t.Fatalf("hits %q, want each user once", got)
			}
			rows := searchRows(body)
			checkText(t, rows[0], "search-status", "—")
			last := markupText(testidElement(rows[0], "search-last"))
			if !strings.HasPrefix(last, say("最近订单 O-2 已关闭，", "Last order O-2 CLOSED, ")) ||
				!strings.HasSuffix(last, say("，冻结 12.34 元", ", froze 12.34 yuan")) {
				t.Errorf("user-084's last order reads %q", last)
			}
			if href, _ := testidHref(rows[0], "search-hit-link"); href != "/users/user-084" ||
				!strings.Contains(rows[0], `href="/orders/O-2"`) || !strings.Contains(rows[0], `href="/balances?user=user-084"`) {
				t.Errorf("user-084's row does not link the user, the last order and the balances:\n%s", rows[0])
			}
			if last := markupText(testidElement(rows[1], "search-last")); !strings.HasPrefix(last, say("最近订单 O-3 待处理，", "Last order O-3 PENDING, ")) {
				t.Errorf("user-085's last order reads %q", last)
			}

			body = getPage(t, b, "/search?q=o-", en, http.StatusOK)
			rows = searchRows(body)
			if len(rows) != 3 {
				t.Fatalf("%d order rows, want 3", len(rows))
			}
			checkText(t, rows[1], "search-status", say("已关闭", "CLOSED"))
			checkText(t, rows[1], "search-frozen", say("冻结 12.34 元", "froze 12.34 yuan"))
			requireElement(t, rows[0], "search-frozen", false)
		}
	})
}

func TestSearchSaysWhenAKindIsCut(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range models.SearchLimit + 1 {
			_, err := b.s.SetStock(b.ctx, "k-"+strconv.Itoa(100+i), 1, 0, "test")
			try(t, "stock", err)
		}
		body := getPageBoth(t, b, "/search?q=K-", "", http.StatusOK)
		if n := strings.Count(body, `data-testid="search-hit"`); n != models.SearchLimit {
			t.Errorf("%d hits listed, want %d", n, models.SearchLimit)
		}
		checkText(t, body, "search-more", "超过 20 项，只列出前 20 项：请多输入几位。")
	})
}

// recordQueries records every statement either of the store's pools runs
// from now on.
func recordQueries(t *testing.T, b bundle) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	record := func(tx *gorm.DB) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, tx.Statement.SQL.String())
	}
	for i, db := range []*gorm.DB{b.s.R, b.s.W} {
		name := "search_test:record" + strconv.Itoa(i)
		try(t, "callback", db.Callback().Query().After("gorm:query").Register(name, record))
		try(t, "callback", db.Callback().Row().After("gorm:row").Register(name, record))
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// searchedTables are the tables a search reads.
var searchedTables = regexp.MustCompile(`(?i)\bFROM\s+"?(orders|accounts|user_coupons|inventory|release_tasks|activity_quotas|slot_holds|declared_counters)\b`)

func TestSearchRefusesWhatIsNotAKeyWithoutReading(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		searchShop(t, b)
		seen := recordQueries(t, b)
		for _, q := range []string{"ab%", "a_b c", "订单", "<script>", strings.Repeat("a", 65), "ab'--"} {
			body := getPageBoth(t, b, "/search?q="+url.QueryEscape(q), "", http.StatusBadRequest)
			requireElement(t, body, "search-bad", true)
			if v := testidTag(body, "search-page-q"); !strings.Contains(v, `value="`) {
				t.Errorf("search %q: the box lost the query: %s", q, v)
			}
			for _, sql := range seen() {
				if searchedTables.MatchString(sql) {
					t.Errorf("search %q read: %s", q, sql)
				}
			}
		}
		body := getPage(t, b, "/search?q=+", false, http.StatusOK)
		requireElement(t, body, "search-hint", true)
		if sqls := seen(); len(sqls) == 0 {
			t.Fatal("no statement recorded: the recorder is broken")
		}
		// The recorder does see a search's reads.
		getPage(t, b, "/search?q=ab", false, http.StatusOK)
		read := false
		for _, sql := range seen() {
			read = read || searchedTables.MatchString(sql)
		}
		if !read {
			t.Error("a valid search read no searched table: the recorder misses them")
		}
	})
}

func TestSearchBoxOnEveryPage(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		searchShop(t, b)
		viewer := b.as(b.mustSignIn("cs", auth.RoleViewer))
		for _, path := range []string{"/", "/orders", "/orders/AB-100", "/tasks", "/inventory", "/coupons",
			"/balances", "/resources/gift_wrap", "/reports/daily", "/recon", "/jobs", "/audit", "/search",
			"/account/password", "/orders/no-such-order"} {
			want := http.StatusOK
			if path == "/orders/no-such-order" {
				want = http.StatusNotFound
			}
			body := getPage(t, viewer, path, true, want)
			form := testidTag(body, "search-form")
			if !strings.Contains(form, `method="get"`) || !strings.Contains(form, `action="/search"`) {
				t.Errorf("%s: header search form %q", path, form)
			}
			if q := testidTag(body, "search-q"); !strings.Contains(q, `name="q"`) ||
				!strings.Contains(q, `placeholder="Order, user, SKU…"`) {
				t.Errorf("%s: search box %q", path, q)
			}
		}
		body := getPage(t, viewer, "/", false, http.StatusOK)
		if q := testidTag(body, "search-q"); !strings.Contains(q, `placeholder="搜索订单号、用户、券、SKU、任务…"`) {
			t.Errorf("search box in Chinese %q", q)
		}
		// Signed out: no box on the login page, and the search sends to it.
		anon := b.as(nil)
		body = getPage(t, anon, "/login", false, http.StatusOK)
		requireElement(t, body, "search-form", false)
		rec := servePage(anon, "/search?q=AB-100", "", "")
		if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther ||
			loc != "/login?next="+url.QueryEscape("/search?q=AB-100") {
			t.Errorf("signed-out search = %d to %q, want 303 to the login form", rec.Code, loc)
		}
	})
}
