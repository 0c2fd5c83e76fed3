package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// ownersShop is seedShop with held-1 closed, its inventory task MANUAL,
// a hand edit of sku-2 reconciled into a ticket, and alice and bob
// (operators), vera (a viewer) and dan (a disabled operator) signed in.
type ownersShop struct {
	task, ticket          int64
	alice, bob, vera, dan *identity
}

func seedOwners(t *testing.T, b bundle) ownersShop {
	t.Helper()
	seedShop(t, b)
	_, err := b.s.CloseOrder(b.ctx, "held-1", models.TriggerUserCancel, "test")
	try(t, "close held-1", err)
	var o ownersShop
	o.task = tkTaskOf(t, b, "held-1", models.ResInventory)
	try(t, "make MANUAL", b.s.W.Exec("UPDATE release_tasks SET status = 'MANUAL' WHERE id = ?", o.task).Error)
	try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = locked + 2 WHERE sku_id = 'sku-1'").Error)
	_, err = b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
	try(t, "reconcile", err)
	ts, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Statuses: []string{models.DiffOpen}})
	try(t, "tickets", err)
	if len(ts) != 1 || !strings.Contains(ts[0].Orders, "held-1") {
		t.Fatalf("tickets = %+v, want one naming held-1", ts)
	}
	o.ticket = ts[0].ID
	for _, u := range []struct {
		who  **identity
		name string
		role auth.Role
	}{{&o.alice, "alice", auth.RoleOperator}, {&o.bob, "bob", auth.RoleOperator}, {&o.vera, "vera", auth.RoleViewer},
		{&o.dan, "dan", auth.RoleOperator}} {
		who, err := b.signIn(u.name, u.role)
		try(t, "sign in "+u.name, err)
		*u.who = who
	}
	try(t, "disable dan", b.s.W.Exec("UPDATE users SET disabled = ? WHERE name = 'dan'", true).Error)
	return o
}

// owned reads the data-owner of an item page's owner box.
func owned(t *testing.T, body string) string {
	t.Helper()
	tag := testidTag(body, "owner")
	_, rest, ok := strings.Cut(tag, `data-owner="`)
	if !ok {
		t.Fatalf("no owner on the page:\n%s", testidElement(body, "owner-box"))
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// The task and ticket pages show the owner and notes; an operator takes,
// hands over and lets go with the owner the page showed, and a stale one
// changes nothing and says who has it; a hand-over to a viewer, a disabled
// or an unknown user is refused; notes are refused empty or too long and
// show on the item's page and on the order's chain; the lists filter by
// owner. A viewer sees owners and notes, gets no form, and every POST of
// theirs is refused.
func TestOwnerPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		o := seedOwners(t, b)
		taskURL := fmt.Sprintf("/tasks/%d", o.task)
		ticketURL := fmt.Sprintf("/recon/diffs/%d", o.ticket)
		alice, bob, vera := b.as(o.alice), b.as(o.bob), b.as(o.vera)
		assign := func(b bundle, url, from, to string) *httptest.ResponseRecorder {
			return postForm(b, url+"/assign", map[string][]string{"from": {from}, "to": {to}}, true)
		}
		for _, u := range []string{taskURL, ticketURL} {
			body := getPageBoth(t, alice, u, "", http.StatusOK)
			if owned(t, body) != "" || testidTag(body, "owner-take-form") == "" || testidTag(body, "note-form") == "" {
				t.Fatalf("%s before: no take or note form, or an owner:\n%s", u, testidElement(body, "owner-box"))
			}
			if hand := testidElement(body, "owner-hand-to"); !strings.Contains(hand, ">alice<") || !strings.Contains(hand, ">bob<") ||
				strings.Contains(hand, "vera") || strings.Contains(hand, "dan") {
				t.Errorf("%s hands to:\n%s", u, hand)
			}
			wantFlash(t, b, assign(alice, u, "", "alice"), true, u, true, "#"+u[strings.LastIndex(u, "/")+1:]+" is yours.")
			id := u[strings.LastIndex(u, "/")+1:]
			wantFlash(t, b, assign(bob, u, "", "bob"), true, u, false, "Nothing changed: #"+id+" is alice's now.")
			for _, bad := range []string{"vera", "dan", "zed"} {
				if ok, _ := flashAfter(t, b, assign(alice, u, "alice", bad), true, u); ok {
					t.Errorf("%s handed to %s", u, bad)
				}
			}
			wantFlash(t, b, assign(alice, u, "alice", "bob"), true, u, true, "#"+id+" was handed to bob.")
			wantFlash(t, b, assign(alice, u, "alice", ""), true, u, false, "Nothing changed: #"+id+" is bob's now.")
			if got := owned(t, getPage(t, alice, u, true, http.StatusOK)); got != "bob" {
				t.Fatalf("%s owner = %q, want bob", u, got)
			}
			// Notes.
			wantFlash(t, b, postForm(bob, u+"/notes", url.Values{"text": {"  "}}, true), true, u, false, "Not added: a note needs some text.")
			long := url.Values{"text": {strings.Repeat("x", models.MaxNoteLen+1)}}
			if ok, _ := flashAfter(t, b, postForm(bob, u+"/notes", long, true), true, u); ok {
				t.Errorf("%s took a note too long", u)
			}
			wantFlash(t, b, postForm(bob, u+"/notes", url.Values{"text": {"note on " + u}}, true), true, u, true, "Note added.")

			// The viewer sees it all, and no form.
			body = getPageBoth(t, vera, u, "", http.StatusOK)
			if owned(t, body) != "bob" || !strings.Contains(testidElement(body, "notes"), "note on "+u) {
				t.Errorf("a viewer does not see %s's owner or note:\n%s", u, testidElement(body, "owner-box"))
			}
			for _, form := range []string{"owner-forms", "note-form"} {
				if testidTag(body, form) != "" {
					t.Errorf("a viewer gets %s on %s", form, u)
				}
			}
			for _, post := range []*httptest.ResponseRecorder{assign(vera, u, "bob", "vera"), postForm(vera, u+"/notes", url.Values{"text": {"x"}}, true)} {
				if post.Code != http.StatusForbidden {
					t.Errorf("a viewer's POST on %s = %d, want 403", u, post.Code)
				}
			}
		}
		// The chain shows both notes, each linked to its item.
		chain := testidElement(getPageBoth(t, vera, "/orders/held-1", "", http.StatusOK), "chain-notes")
		for _, want := range []string{"note on " + taskURL, "note on " + ticketURL, `href="` + taskURL + `"`, `href="` + ticketURL + `"`} {
			if !strings.Contains(chain, want) {
				t.Errorf("the chain's notes lack %q:\n%s", want, chain)
			}
		}
		// The task page's history says who handed it to whom.
		if h := testidElement(getPage(t, vera, taskURL, true, http.StatusOK), "task-history"); !strings.Contains(h, "owner alice → bob") {
			t.Errorf("history:\n%s", h)
		}
		// Lists: bob's, nobody's, mine.
		for _, c := range []struct {
			who   bundle
			path  string
			found bool
		}{
			{bob, "/tasks?owner=mine", true},
			{alice, "/tasks?owner=mine", false},
			{vera, "/tasks?owner=bob", true},
			{vera, "/tasks?owner=nobody", false},
			{bob, "/recon?owner=mine", true},
			{vera, "/recon?owner=nobody", false},
		} {
			body := getPageBoth(t, c.who, c.path, "", http.StatusOK)
			row := fmt.Sprintf(`data-task-id="%d"`, o.task)
			if strings.HasPrefix(c.path, "/recon") {
				row = fmt.Sprintf(`data-diff-id="%d"`, o.ticket)
			}
			if strings.Contains(body, row) != c.found {
				t.Errorf("%s lists the item: %v, want %v", c.path, !c.found, c.found)
			}
			if c.found && !strings.Contains(testidElement(body, "owner-cell"), "bob") {
				t.Errorf("%s: the owner column does not say bob", c.path)
			}
		}
		// A task that left MANUAL keeps its owner as history, and no form.
		try(t, "rerun", b.s.RerunTask(b.ctx, o.task, "bob", "stock fixed"))
		body := getPage(t, bob, taskURL, true, http.StatusOK)
		if owned(t, body) != "bob" || testidTag(body, "owner-forms") != "" {
			t.Errorf("a PENDING task's owner box:\n%s", testidElement(body, "owner-box"))
		}
		wantFlash(t, b, assign(bob, taskURL, "bob", ""), true, taskURL, false,
			fmt.Sprintf("Nothing changed: #%d is no longer in the queue (PENDING); its owner is kept as history.", o.task))
	})
}

// The API's assign is the same compare-and-set: from omitted is nobody,
// so a blind call takes a free task but not another's (409 TAKEN naming
// the owner); a name that cannot act is 422 BAD_ASSIGNEE; to is required;
// two tokens taking at once, one wins. Notes are 201, bounded, and read
// back with the task and the ticket; the lists filter by owner, "mine"
// being the token's actor.
func TestOwnerAPI(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		o := seedOwners(t, b)
		for _, base := range []string{fmt.Sprintf("/api/v1/tasks/%d", o.task), fmt.Sprintf("/api/v1/recon/tickets/%d", o.ticket)} {
			// Two tokens at once.
			codes := make([]int, 2)
			var wg sync.WaitGroup
			for i, who := range []*identity{o.alice, o.bob} {
				wg.Go(func() {
					codes[i] = b.as(who).call(http.MethodPost, base+"/assign", `{"to":"token:`+who.name+`"}`).Code
				})
			}
			wg.Wait()
			if codes[0]+codes[1] != http.StatusOK+http.StatusConflict {
				t.Fatalf("%s: two takes answered %v, want one 200 and one 409", base, codes)
			}
			winner := "token:alice"
			if codes[1] == http.StatusOK {
				winner = "token:bob"
			}
			msg := wantError(t, b.call(http.MethodPost, base+"/assign", `{"to":"bob"}`), http.StatusConflict, "TAKEN")
			if !strings.Contains(msg, winner) {
				t.Errorf("%s: TAKEN says %q, want it to name %s", base, msg, winner)
			}
			for _, bad := range []string{"vera", "dan", "nobody-here"} {
				wantError(t, b.call(http.MethodPost, base+"/assign", `{"to":"`+bad+`","from":"`+winner+`"}`), http.StatusUnprocessableEntity, "BAD_ASSIGNEE")
			}
			for _, bad := range []string{`{}`, `{"to":5}`, `{"to":"bob","from":[]}`, `{"to":"bob","who":"x"}`} {
				wantError(t, b.call(http.MethodPost, base+"/assign", bad), http.StatusBadRequest, "INVALID_INPUT")
			}
			got := must[map[string]any](t, b, http.StatusOK, http.MethodPost, base+"/assign", `{"to":"alice","from":"`+winner+`"}`)
			if got["owner"] != "alice" || got["owned_since"] == nil {
				t.Errorf("%s hand-over answered %v", base, got)
			}
			got = must[map[string]any](t, b, http.StatusOK, http.MethodPost, base+"/assign", `{"to":null,"from":"alice"}`)
			if got["owner"] != nil || got["owned_since"] != nil {
				t.Errorf("%s let go answered %v", base, got)
			}
			must[map[string]any](t, b, http.StatusOK, http.MethodPost, base+"/assign", `{"to":"token:root"}`)

			for _, bad := range []string{`{"text":" "}`, `{"text":"` + strings.Repeat("x", models.MaxNoteLen+1) + `"}`, `{}`} {
				wantError(t, b.call(http.MethodPost, base+"/notes", bad), http.StatusBadRequest, "INVALID_INPUT")
			}
			n := must[models.Note](t, b, http.StatusCreated, http.MethodPost, base+"/notes", `{"text":"from the API"}`)
			if n.Author != "token:root" || n.Text != "from the API" {
				t.Errorf("%s note = %+v", base, n)
			}
			item := must[map[string]any](t, b, http.StatusOK, http.MethodGet, base, "")
			if notes, _ := item["notes"].([]any); item["owner"] != "token:root" || len(notes) != 1 {
				t.Errorf("%s reads owner %v, notes %v", base, item["owner"], item["notes"])
			}
		}
		for _, c := range []struct {
			path string
			want int
		}{
			{"/api/v1/tasks?owner=mine", 1},
			{"/api/v1/tasks?owner=nobody", 0},
			{"/api/v1/tasks?owner=alice", 0},
			{"/api/v1/recon/tickets?owner=mine", 1},
			{"/api/v1/recon/tickets?owner=token:root", 1},
			{"/api/v1/recon/tickets?owner=nobody", 0},
		} {
			page := must[map[string]any](t, b, http.StatusOK, http.MethodGet, c.path, "")
			if items, _ := page["items"].([]any); len(items) != c.want {
				t.Errorf("%s lists %d, want %d", c.path, len(items), c.want)
			}
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/tasks?owner="+strings.Repeat("a", 300), ""), http.StatusBadRequest, "INVALID_INPUT")
	})
}
