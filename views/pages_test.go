package views

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
)

// testCSRF is the token the sample pages carry.
const testCSRF = "csrf-token-123"

var (
	testNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	testLoc = time.FixedZone("CST", 8*3600)
)

// testPage is a page as the web layer builds it for a signed-in user.
func testPage(lang Lang, role, title, active string) Page {
	p := Page{Lang: lang, Title: title, Active: active, URL: "/x", Now: testNow, Loc: testLoc,
		User: "alice", Role: role, CSRF: testCSRF, Flash: &Flash{OK: true, Text: "done"}}
	if role == "" {
		p.User = ""
	}
	return p
}

func renderHTML(t *testing.T, c templ.Component) string {
	t.Helper()
	var b strings.Builder
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatalf("render: %v", err)
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// samplePages renders every page with a view model that takes its fullest
// branches: actions present, optional parts shown.
func samplePages(lang Lang, role string) map[string]templ.Component {
	pg := func(title, active string) Page { return testPage(lang, role, title, active) }
	at := testNow.Add(-90 * time.Minute)
	flow := LedgerFlowRow{ID: 7, At: at, OrderNo: "O-1", Asset: "BALANCE", Type: "RELEASE", Trigger: "TIMEOUT", Qty: 2,
		AvailBefore: 1, AvailAfter: 3, HeldBefore: 2, HeldAfter: 0, Actor: "worker:a"}
	inv := InventoryRow{SkuID: "SKU-1", Available: 5, Locked: 2, Sold: 1, UpdatedAt: at, PendingHeld: 1, TaskHeld: 0, Adjusted: 9}
	pager := LedgerPager{FirstURL: "/first", NextURL: "/next"}
	chain := ChainView{No: "O-1", UserID: "u1", Status: "CLOSED", CloseReason: "TIMEOUT", ChannelTxnID: "tx", Note: "n",
		Created: at, PayDeadline: at, Paid: ptr(at), Closed: ptr(at),
		Resources: []ChainResource{{Type: "inventory", Key: "SKU-1", Held: 2, Task: "MANUAL", TaskClass: "TIMEOUT", TaskError: "e",
			Releases: []ChainRelease{{FlowID: 1, Qty: 2, Trigger: "RERUN", Actor: "bob", At: at}}, Duplicates: 1,
			RerunBy: "bob", RerunReason: "why", Diffs: []ChainDiff{{Check: "HELD", Expected: 1, Actual: 2}}}},
		Reruns: []ChainRerun{{Type: "inventory", Tasks: 1}},
		Timeline: []ChainEvent{
			{At: at, Kind: EventStatus, Code: "created", Trigger: "PLACE"},
			{At: at, Kind: EventFlow, Code: "LOCK", Resource: "inventory", Key: "SKU-1", Counter: true},
			{At: at, Kind: EventAttempt, Code: "RETRY", Resource: "inventory", Class: "TIMEOUT", Error: "e", Note: "n"},
			{At: at, Kind: EventAudit, Code: "rerun", Resource: "inventory", Actor: "bob", Outcome: "ok", Reason: "why",
				Detail: "d", Role: "operator", IP: "10.0.0.9"},
		}}
	ticket := ReconTicketRow{ID: 3, Resource: "inventory", Key: "SKU-1", KeyURL: "/inventory/SKU-1", Check: "HELD", Expected: 1,
		Actual: 2, Sign: 1, Orders: []string{"O-1"}, Status: "ACKED", FirstRun: 1, FirstAt: at, LastRun: 2, LastAt: at, AutoClosed: true}
	run := ReconRunRow{ID: 2, Trigger: "CRON", Actor: "cron", Status: "FAILED", Error: "boom", StartedAt: at, FinishedAt: ptr(testNow), Found: 1}
	return map[string]templ.Component{
		"overview": OverviewPage(pg("overview.title", "overview"), OverviewView{Backlog: 3, OldestDue: at, OldestDueBad: true,
			Manual: 1, Retry: 1, Diffs: 1, DiffsAt: at, Range: "7d", Ranges: []OverviewRangeLink{{ID: "1h", URL: "/?range=1h"}, {ID: "7d", Active: true}},
			Windows: []OverviewWindow{{ID: "hour", Success: 9, Failures: 1}, {ID: "day", Success: 9}, {ID: "week", Success: 9}},
			Types: []OverviewTypeRow{{Type: "inventory", Cells: []OverviewTypeCell{{Window: "hour"}, {Window: "day", Failures: 2, FailedURL: "/tasks"},
				{Window: "week", Failures: 2, FailedURL: "/tasks"}}}},
			Classes: []OverviewClassRow{{Class: "TIMEOUT", URL: "/tasks", Cells: []OverviewClassCell{{Window: "hour", N: 1, URL: "/tasks"},
				{Window: "day", N: 2, URL: "/tasks"}, {Window: "week", N: 2, URL: "/tasks"}}}}, ChartStart: at, Step: time.Hour,
			Released: []int64{1, 2, 3}, Failed: []int64{0, 1, 0},
			Duplicates: []OverviewDuplicate{{TaskID: 1, OrderNo: "O-1", Type: "inventory", Worker: "w", At: at}}}),
		"orders": OrdersPage(pg("orders.title", "orders"), OrdersList{Statuses: []string{"PAID"},
			Rows:    []OrderRow{{No: "O-1", UserID: "u1", Status: "CLOSED", LatePaid: true, Created: at, PayDeadline: at, Paid: ptr(at), Closed: ptr(at), Release: "MANUAL"}},
			NextURL: "/n", FirstURL: "/f"}),
		"order-notfound": OrderNotFound(pg("orders.notfound.title", "orders"), "O-9"),
		"chain":          OrderChainPage(pg("orders.chain.title", "orders"), chain),
		"rerun": RerunPreviewPage(pg("orders.rerun.title", "orders"), RerunPreview{No: "O-1", Type: "inventory", MaxLen: 500,
			Tasks: []RerunTask{{ID: 1, Key: "SKU-1", Qty: 2, Status: "RETRY", Class: "TIMEOUT", LastError: "e", NextAt: at,
				RerunBy: "bob", RerunReason: "r", Ledger: &ChainRelease{FlowID: 1, At: at, Actor: "w"}}}}),
		"tasks": TasksPage(pg("tasks.title", "tasks"), TasksView{StatusOptions: []string{"MANUAL"}, TypeOptions: []string{"inventory"},
			ClassOptions: []string{"TIMEOUT"}, Rows: []TaskRow{{ID: 1, OrderNo: "O-1", Type: "inventory", Key: "SKU-1", Status: "MANUAL",
				NextAt: at, LastError: "e"}}, NextURL: "/n", FirstURL: "/f", RerunURL: "/tasks/rerun?type=inventory"}),
		"task": TaskDetailPage(pg("tasks.title", "tasks"), TaskDetailView{Task: TaskRow{ID: 1, OrderNo: "O-1", Type: "inventory",
			Status: "MANUAL", LastError: "e"}, Trigger: "TIMEOUT", CreatedAt: at, UpdatedAt: at, DoneAt: ptr(at), LeaseUntil: ptr(at),
			RerunBy: "bob", RerunReason: "r", Attempts: []TaskAttemptRow{{ID: 1, Worker: "w", Outcome: "RETRY", Error: "e", StartedAt: at, FinishedAt: at}},
			RerunURL: RerunURL("O-1", "inventory")}),
		"bulk": BulkRerunPage(pg("tasks.bulk.title", "tasks"), BulkRerunView{Type: "inventory", Statuses: []string{"MANUAL"},
			Class: "TIMEOUT", Older: "5", Order: "O-1", Key: "SKU-1", Due: true, Tasks: []TaskRow{{ID: 1, OrderNo: "O-1", Type: "inventory",
				Key: "SKU-1", Status: "MANUAL", Class: "LOCKED_SHORT", HeldNow: ptr(int64(0)), Qty: 2}}, More: true, ListURL: "/tasks", BackURL: "/tasks",
			Hidden: []BulkHidden{{Name: "type", Value: "inventory"}}, MaxReason: 500}),
		"bulk-refused": BulkRerunRefusedPage(pg("tasks.bulk.title", "tasks"), "tasks.bulk.howto", "/tasks"),
		"inventory":    InventoryPage(pg("inv.title", "inventory"), InventoryView{Prefix: "SKU", Rows: []InventoryRow{inv}, Pager: pager}),
		"sku":          SKUPage(pg("sku.title", "inventory"), SKUView{SKU: inv, Flows: []LedgerFlowRow{flow}, Pager: pager, Model: StockModel{DeductAt: "payment"}}),
		"coupons": CouponsPage(pg("coupons.title", "coupons"), CouponsView{Filter: CouponFilter{User: "u1"},
			Totals:     &CouponTotals{Scope: "all", N: map[string]map[string]int64{"PLATFORM": {"LOCK": 1}, "MERCHANT": {"RELEASE": 2}}},
			TotalsDays: 1, TodayURL: "/coupons", UserCoupons: []CouponNow{{ID: 1, Owner: "PLATFORM", Status: "LOCKED", OrderNo: "O-1", ExpireAt: at}},
			MoreUserCoupons: true, Rows: []CouponFlowRow{{ID: 1, At: at, CouponID: 1, UserID: "u1", Owner: "MERCHANT", OrderNo: "O-1",
				Type: "LOCK", Trigger: "PLACE", StatusBefore: "UNUSED", StatusAfter: "LOCKED", StatusNow: "LOCKED", ExpireAfter: at, Actor: "a"}},
			Partial: true, Scanned: 10, Pager: pager}),
		"balances": BalancesPage(pg("bal.title", "balances"), BalancesView{User: "u1", Asset: "BALANCE",
			Assets: []AccountRow{{UID: "u1", Asset: "BALANCE", Available: 1, UpdatedAt: at}, {UID: "u1", Asset: "POINTS", ExpireAt: ptr(at), UpdatedAt: at}},
			Flows: []LedgerFlowRow{flow, {ID: 8, At: at, OrderNo: "O-1", Asset: "POINTS", Type: "RELEASE", Trigger: "TIMEOUT", Qty: 2,
				Expires: true, ExpireBefore: ptr(at), ExpireAfter: ptr(testNow.Add(72 * time.Hour))}}, Pager: pager,
			Recent: []AccountRow{{UID: "u2", Asset: "POINTS", UpdatedAt: at}}}),
		"report": DailyReportPage(pg("report.title", "report"), ReportView{Date: "2026-11-29", Zone: "CST", From: at, To: testNow,
			PrevURL: "/p", NextURL: "/n", TodayURL: "/t", CSVURL: "/c", Total: 1,
			Rows: []ReportRow{{ID: "inventory", Resource: "inventory", Cells: map[string]ReportCell{"LOCK": {N: 1, Q: 2}}}}}),
		"recon": ReconPage(pg("recon.title", "recon"), ReconView{Runs: []ReconRunRow{run}, Running: &run,
			Summary:       []ReconSummaryRow{{Resource: "inventory", Pos: 1, PosAcked: 1, Neg: 0, PosURL: "/recon?sign=1"}},
			Filter:        ReconFilter{Statuses: []string{"OPEN"}, Resource: "inventory", Sign: "1"},
			StatusOptions: []string{"OPEN", "ACKED"}, ResourceOptions: []string{"inventory"}, Tickets: []ReconTicketRow{ticket},
			NextURL: "/n", FirstURL: "/f"}),
		"recon-diff": ReconDiffPage(pg("recon.diff.page", "recon"), ReconDiffView{Ticket: ticket, Note: "n", AckedBy: "bob",
			AckedAt: ptr(at), ResolvedBy: "bob", ResolvedAt: ptr(at), ClosedByRun: 2,
			History: []ReconEvent{{At: at, Kind: "found", Run: 1}, {At: at, Kind: "ack", Actor: "bob", Note: "looking"}},
			CanAck:  true, CanResolve: true, MaxNote: 500}),
		"recon-notfound": ReconDiffNotFound(pg("recon.notfound.title", "recon"), 9),
		"jobs": JobsPage(pg("jobs.title", "jobs"), JobsView{Running: true, Instance: "i1", Zone: "CST",
			Jobs: []JobView{{Name: "recon", Spec: "0 3 * * *", Next: testNow.Add(time.Hour),
				Holder:  &JobHolder{Owner: "i1", TriggeredBy: "cron", Since: at, Until: testNow},
				Runs:    []JobRunRow{{ID: 1, Instance: "i1", TriggeredBy: "cron", Outcome: "FAILED", Summary: "s", Detail: "d", Error: "e", Started: at, Took: 2 * time.Second}},
				MoreURL: "/jobs/recon", RunURL: "/jobs/recon/run", LinkURL: "/recon"}}}),
		"error-404": ErrorPage(pg("error.title", ""), 404, "NOT_FOUND", ""),
		"error-403": ErrorPage(pg("error.title", ""), 403, "FORBIDDEN", "needs operator"),
		"error-400": ErrorPage(pg("error.title", ""), 400, "INVALID_INPUT", "bad"),
		"error-500": ErrorPage(pg("error.title", ""), 500, "INTERNAL", ""),
		"password":  PasswordPage(pg("password.title", ""), PasswordView{Error: "PASSWORD_WEAK", MinLen: 10}),
		"users": UsersPage(pg("users.title", "users"), UsersView{Roles: []string{"viewer", "operator", "admin"}, MinLen: 10,
			Secret: &Secret{Title: "The new user's password", For: "carol", Value: "s3cret-value"},
			Users: []UserRow{
				{ID: 1, Name: "alice", Role: "admin", Self: true, LastLoginAt: ptr(at), Sessions: 2, CreatedAt: at,
					RoleURL: "/admin/users/1/role", DisableURL: "/admin/users/1/disable", EnableURL: "/admin/users/1/enable", ResetURL: "/admin/users/1/reset"},
				{ID: 2, Name: "bob", Role: "operator", CreatedAt: at,
					RoleURL: "/admin/users/2/role", DisableURL: "/admin/users/2/disable", EnableURL: "/admin/users/2/enable", ResetURL: "/admin/users/2/reset"},
				{ID: 3, Name: "carol", Role: "viewer", Disabled: true, CreatedAt: at,
					RoleURL: "/admin/users/3/role", DisableURL: "/admin/users/3/disable", EnableURL: "/admin/users/3/enable", ResetURL: "/admin/users/3/reset"},
			}}),
		"tokens": TokensPage(pg("tokens.title", "tokens"), TokensView{Roles: []string{"viewer", "operator", "admin"},
			Secret: &Secret{Title: "The new API token", For: "erp", Value: "uh_abcd1234_full_secret"},
			Tokens: []TokenRow{
				{ID: 1, Name: "erp", Role: "operator", Prefix: "abcd1234", CreatedBy: "alice", CreatedAt: at, LastUsedAt: ptr(at), RevokeURL: "/admin/tokens/1/revoke"},
				{ID: 2, Name: "old", Role: "viewer", Prefix: "ffff0000", CreatedBy: "alice", CreatedAt: at, RevokedAt: ptr(at), RevokeURL: "/admin/tokens/2/revoke"},
			}}),
		"audit": AuditPage(pg("audit.title", "audit"), AuditView{Actor: "bob", Action: "rerun", Target: "order:O-1", From: "2026-11-01",
			To: "2026-11-29", Actions: []string{"rerun", "login", "something_new"}, Error: "A date is written YYYY-MM-DD.",
			FirstURL: "/audit", NextURL: "/audit?before=5",
			Rows: []AuditRow{
				{ID: 9, At: at, Actor: "bob", Role: "operator", Action: "rerun", Target: "order:O-1/inventory", TargetURL: "/orders/O-1",
					Reason: "stock fixed", Outcome: "ok", Detail: "1 task", IP: "10.0.0.9", RequestID: "req-1", UserAgent: "curl/8.0"},
				{ID: 8, At: at, Actor: "carol", Role: "viewer", Action: "denied", Target: "route:POST /recon/run", Outcome: "denied",
					IP: "10.0.0.10", UserAgent: "Firefox"},
				{ID: 7, At: at, Actor: "token:erp", Action: "something_new", Target: "x", Outcome: "weird"},
			}}),
		"search": SearchPage(pg("search.title", ""), SearchView{Query: "ab", Searched: true, Limit: 20, Groups: []SearchGroup{
			{Kind: "order", More: true, Rows: []SearchRow{{Key: "AB-1", URL: "/orders/AB-1", Status: "PENDING",
				Links: []SearchLink{{Label: "search.user", Text: "u1", URL: "/orders?user=u1"}}}}},
			{Kind: "task", Rows: []SearchRow{{Key: "7", URL: "/tasks/7", Status: "MANUAL",
				Links: []SearchLink{{Label: "search.resource", Code: "inventory", Text: "ab-sku", URL: "/inventory/ab-sku"}}}}},
			{Kind: "activity", Rows: []SearchRow{{Key: "ab-act", Counter: true, Available: 1, Locked: 2, Spent: 3}}},
		}}),
		"search-bad":  SearchPage(pg("search.title", ""), SearchView{Query: "a%", Bad: true}),
		"search-none": SearchPage(pg("search.title", ""), SearchView{Query: "zz", Searched: true}),
		"search-hint": SearchPage(pg("search.title", ""), SearchView{}),
	}
}

// signedOutPages are rendered with nobody signed in.
func signedOutPages(lang Lang) map[string]templ.Component {
	p := testPage(lang, "", "login.title", "")
	p.Flash = nil
	return map[string]templ.Component{
		"login":           LoginPage(p, LoginView{Name: "bob", Next: "/orders", Error: "BAD_CREDENTIALS"}),
		"login-throttled": LoginPage(p, LoginView{Error: "LOGIN_THROTTLED", RetryAfter: "3 min"}),
		"login-blank":     LoginPage(p, LoginView{}),
	}
}

var (
	formRe    = regexp.MustCompile(`(?is)<form\b[^>]*>.*?</form>`)
	postRe    = regexp.MustCompile(`(?i)\bmethod="post"`)
	inlineRe  = regexp.MustCompile(`(?i)\sstyle=|<style\b|\son[a-z]+=`)
	scriptRe  = regexp.MustCompile(`(?i)<script\b[^>]*>`)
	appScript = `<script src="/static/app.js" defer>`
)

// reporter is the part of testing.T checkPage uses, so a test can check
// the check.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// checkPage holds every rendered page to the rules: every text from the
// catalog, every POST form with the CSRF field, nothing the
// Content-Security-Policy would block.
func checkPage(t reporter, name, html string) {
	t.Helper()
	if i := strings.Index(html, "⟦"); i >= 0 {
		t.Errorf("%s: a catalog key is missing: %s", name, html[i:min(len(html), i+60)])
	}
	if m := inlineRe.FindString(html); m != "" {
		t.Errorf("%s: %q would be blocked by the Content-Security-Policy", name, m)
	}
	for _, s := range scriptRe.FindAllString(html, -1) {
		if s != appScript {
			t.Errorf("%s: script %q is not the app's own file", name, s)
		}
	}
	field := `<input type="hidden" name="_csrf" value="` + testCSRF + `">`
	forms := formRe.FindAllString(html, -1)
	if len(forms) != strings.Count(strings.ToLower(html), "<form") {
		t.Errorf("%s: %d forms matched of %d", name, len(forms), strings.Count(html, "<form"))
	}
	for _, f := range forms {
		open := f[:strings.Index(f, ">")+1]
		if postRe.MatchString(open) && !strings.Contains(f, field) {
			t.Errorf("%s: POST form without the CSRF field: %s", name, open)
		}
	}
}

func TestEveryPageFollowsTheRules(t *testing.T) {
	t.Parallel()
	for _, lang := range []Lang{LangZH, LangEN} {
		for _, role := range []string{RoleViewer, RoleOperator, RoleAdmin} {
			for name, c := range samplePages(lang, role) {
				checkPage(t, string(lang)+"/"+role+"/"+name, renderHTML(t, c))
			}
		}
		for name, c := range signedOutPages(lang) {
			checkPage(t, string(lang)+"/signed-out/"+name, renderHTML(t, c))
		}
	}
}

// The check itself must catch what it is for.
func TestCheckPageCatches(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"missing key": `<p>⟦nav.x⟧</p>`,
		"style attr":  `<p style="color:red">x</p>`,
		"style tag":   `<style>p{}</style>`,
		"handler":     `<button onclick="x()">x</button>`,
		"script":      `<script>alert(1)</script>`,
		"no csrf":     `<form method="post" action="/x"><button>x</button></form>`,
		"other csrf":  `<form method="POST" action="/x"><input type="hidden" name="_csrf" value="nope"></form>`,
	}
	for name, html := range bad {
		var r recorder
		checkPage(&r, name, html)
		if len(r.errs) == 0 {
			t.Errorf("checkPage let %s through", name)
		}
	}
}

// No .templ source may hold what the Content-Security-Policy blocks: a
// branch the samples miss is still checked here.
func TestTemplSourcesHaveNoInlineStyleOrScript(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) < 10 {
		t.Fatalf("templ files: %v %v", files, err)
	}
	re := regexp.MustCompile(`(?i)style=|<style|<script|\son[a-z]+=`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if re.MatchString(line) && strings.TrimSpace(line) != appScript+`</script>` {
				t.Errorf("%s:%d: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// Every literal catalog key the views use exists, in branches the sample
// pages do not render too.
func TestLiteralKeysExist(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.templ")
	gofiles, _ := filepath.Glob("*.go")
	for _, f := range gofiles {
		if !strings.HasSuffix(f, "_templ.go") && !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	re := regexp.MustCompile(`\.Tf?\("([^"]+)"[,)]`)
	var missing []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if _, ok := catalog[m[1]]; !ok {
				missing = append(missing, f+": "+m[1])
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("missing catalog key %s", m)
	}
}
