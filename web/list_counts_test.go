package web_test

import (
	"html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// countsShop seeds one store for every list that shows a total: orders of
// two days, some open, most closed; their tasks DONE, MANUAL (a hand edit
// took sku-c's locks) and PENDING, of two types; the audit entries the
// set-up writes; and reconciliation tickets, open and resolved, of both
// signs. Tasks and orders are more than a page.
func countsShop(t *testing.T, b bundle) {
	t.Helper()
	for _, sku := range []string{"sku-a", "sku-b", "sku-c"} {
		_, err := b.s.SetStock(b.ctx, sku, 1000, 0, "stocker")
		try(t, "stock "+sku, err)
	}
	_, err := b.s.SetActivity(b.ctx, "act-1", 1000, "planner")
	try(t, "activity", err)
	place := func(i int) string {
		no := "o-" + strconv.Itoa(100+i)
		sku := []string{"sku-a", "sku-b", "sku-c"}[i%3]
		r := models.PlaceRequest{OrderNo: no, UserID: "u" + strconv.Itoa(i%2), Items: []models.Item{{SkuID: sku, Qty: 1}}}
		if i%2 == 0 {
			r.ActivityID = "act-1"
		}
		_, _, err := b.s.PlaceOrder(b.ctx, r)
		try(t, "place "+no, err)
		return no
	}
	closeOrder := func(no string) {
		_, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u")
		try(t, "close "+no, err)
	}
	var first []string
	for i := range 30 {
		first = append(first, place(i))
	}
	b.clock.Advance(49 * time.Hour)
	var second []string
	for i := 30; i < 56; i++ {
		second = append(second, place(i))
	}
	try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = 0, available = available + locked WHERE sku_id = 'sku-c'").Error)
	for _, no := range first {
		closeOrder(no)
	}
	b.clock.Advance(2 * time.Hour)
	for _, no := range second[:20] {
		closeOrder(no)
	}
	drain(t, b)
	for _, no := range second[20:24] {
		closeOrder(no) // left PENDING
	}
	try(t, "skew", b.s.W.Exec("UPDATE inventory SET available = available + 1 WHERE sku_id IN ('sku-a', 'sku-b')").Error)
	_, err = b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
	try(t, "recon", err)
	try(t, "unskew", b.s.W.Exec("UPDATE inventory SET available = available - 1 WHERE sku_id = 'sku-a'").Error)
	try(t, "skew down", b.s.W.Exec("UPDATE activity_quotas SET available = available - 1 WHERE activity_id = 'act-1'").Error)
	_, err = b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
	try(t, "recon again", err)
}

// aList is a dashboard list with a total: its path, the data-testid of its
// total, of its rows and of its next-page link.
type aList struct{ path, total, row, next string }

var (
	tasksList  = aList{"/tasks", "tasks-total", "task-row", "tasks-next"}
	ordersList = aList{"/orders", "orders-total", "order-row", "next-page"}
	auditList  = aList{"/audit", "audit-total", "audit-row", "audit-next"}
	reconList  = aList{"/recon", "recon-tickets-total", "recon-ticket", "recon-next"}
)

var digitsRE = regexp.MustCompile(`[0-9][0-9,]*`)

// pageThrough reads the list with query q page by page, returning the
// total the first page states and the rows of every page.
func pageThrough(t *testing.T, b bundle, l aList, q string) (total, rows int) {
	t.Helper()
	path := l.path
	if q != "" {
		path += "?" + q
	}
	for pages := 0; path != ""; pages++ {
		if pages > 20 {
			t.Fatalf("%s: more than 20 pages", l.path+"?"+q)
		}
		body := getPage(t, b, path, false, 200)
		if pages == 0 {
			text := markupText(testidElement(body, l.total))
			n, err := strconv.Atoi(strings.ReplaceAll(digitsRE.FindString(text), ",", ""))
			if err != nil || strings.Contains(text, "超过") {
				t.Fatalf("%s: total %q is not a count", path, text)
			}
			total = n
		}
		rows += strings.Count(body, `data-testid="`+l.row+`"`)
		path = ""
		if i := strings.Index(body, `data-testid="`+l.next+`"`); i >= 0 {
			tag := body[strings.LastIndex(body[:i], "<"):i]
			href := tag[strings.Index(tag, `href="`)+6:]
			path = html.UnescapeString(href[:strings.Index(href, `"`)])
		}
	}
	return total, rows
}

// Every list that states a total states the rows its filter shows, over
// all its pages, for each of its filters. Breaks if a count ignores a
// filter, as the task count ignored the status one ("共 1,897 个任务"
// above 13 MANUAL rows).
func TestListTotalsMatchRows(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		countsShop(t, b)
		day1 := b.clock.Now().Add(-51 * time.Hour).UTC().Format("2006-01-02")
		day3 := b.clock.Now().UTC().Format("2006-01-02") // every close, more than a page
		from := b.clock.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
		to := b.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		type listCase struct {
			l aList
			q string
		}
		cases := []listCase{{tasksList, ""}, {tasksList, "status=DONE&status=MANUAL"}, {tasksList, "type=inventory"},
			{tasksList, "type=quota"}, {tasksList, "class=LOCKED_SHORT"}, {tasksList, "older=60"}, {tasksList, "order=o-100"},
			{tasksList, "type=inventory&key=sku-c"}, {tasksList, "from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to)},
			{tasksList, "due=1"}, {tasksList, "sort=old"}, {tasksList, "type=inventory&status=MANUAL"},
			{ordersList, ""}, {ordersList, "user=u1"}, {ordersList, "no=o-100"}, {ordersList, "from=" + day1 + "&to=" + day1},
			{ordersList, "sort=old"}, {ordersList, "held_type=quota"}, {ordersList, "held_type=inventory&held_key=sku-c"},
			{ordersList, "held_type=coupon"}, {ordersList, "closed_from=" + day3}, {ordersList, "closed_from=" + day3 + "&sort=old"},
			{ordersList, "closed_from=" + day3 + "&closed_to=" + day3},
			{ordersList, "closed_to=" + day1}, {ordersList, "held_type=quota&closed_from=" + day3 + "&release=RELEASING"},
			{auditList, ""}, {auditList, "actor=stocker"}, {auditList, "target=sku:sku-a"}, {auditList, "target=sku"}, {auditList, "from=" + day1 + "&to=" + day1},
			{reconList, ""}, {reconList, "resource=inventory"}, {reconList, "sign=1"}, {reconList, "sign=-1"}}
		for _, st := range models.TaskStatuses {
			cases = append(cases, listCase{tasksList, "status=" + string(st)})
		}
		for _, st := range models.OrderStatuses {
			cases = append(cases, listCase{ordersList, "status=" + string(st)})
		}
		for _, st := range models.ReleaseStates {
			cases = append(cases, listCase{ordersList, "release=" + string(st)})
		}
		for _, st := range models.DiffStatuses {
			cases = append(cases, listCase{reconList, "status=" + st})
		}
		actions, err := b.s.AuditActions(b.ctx, false)
		try(t, "audit actions", err)
		for _, a := range actions {
			cases = append(cases, listCase{auditList, "action=" + url.QueryEscape(a)})
		}
		for _, c := range cases {
			total, rows := pageThrough(t, b, c.l, c.q)
			if total != rows {
				t.Errorf("%s?%s says %d, shows %d rows", c.l.path, c.q, total, rows)
			}
		}
		for _, c := range []listCase{{tasksList, ""}, {ordersList, ""}} {
			if total, _ := pageThrough(t, b, c.l, c.q); total <= 50 {
				t.Errorf("%s has %d rows, not more than a page", c.l.path, total)
			}
		}
	})
}
