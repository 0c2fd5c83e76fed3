package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// The OpenAPI 3.1 document of the JSON API, served at
// GET /api/v1/openapi.json. It is built from the code: each route's
// request and response schemas come from the Go types its handler decodes
// and answers, read by reflection as encoding/json would write them, and
// each route's role from the gate routes.go gives it. What only words can
// say (summaries, parameters) is in apiOps below; TestOpenAPIDocument
// holds apiOps and the router to each other and calls every GET it lists.

// apiParam is one parameter of a route.
type apiParam struct {
	Name, Desc string
	Schema     map[string]any
	// Example is a value that works against the tests' seeded shop.
	Example string
	// Repeat says the parameter may be given more than once.
	Repeat   bool
	Required bool
}

// apiOp documents one route of the API.
type apiOp struct {
	Summary string
	Query   []apiParam
	// Body is the request body's Go type, as a zero value; nil, none.
	Body         any
	BodyOptional bool
	// Status and Resp are the answer when all goes well; Other are other
	// successful answers, by status.
	Status int
	Resp   any
	Other  map[int]any
	// Errors are the error statuses the route answers besides 401, 403
	// and 503, which any route may.
	Errors []int
}

// Parameter schemas.
var (
	keySchema     = map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_.:-]{1,64}$`}
	orderNoSchema = map[string]any{"type": "string", "pattern": `^[A-Za-z0-9_-]{1,40}$`}
	idSchema      = map[string]any{"type": "integer", "minimum": 1}
	daySchema     = map[string]any{"type": "string", "format": "date"}
	timeSchema    = map[string]any{"type": "string", "format": "date-time"}
	textSchema    = map[string]any{"type": "string"}
)

func limitParam(def, most int) apiParam {
	return apiParam{Name: "limit", Desc: fmt.Sprintf("rows in one page, 1 to %d; %d when absent", most, def),
		Schema: map[string]any{"type": "integer", "minimum": 1, "maximum": most, "default": def}}
}

func afterParam(of string) apiParam {
	return apiParam{Name: "after", Desc: "the next of the previous page (" + of + "); absent for the first page", Schema: textSchema}
}

// ageParam is a list's age bucket of the manual queue: what of its items
// have waited how long since they began to wait (since).
func ageParam(items, since string) apiParam {
	return apiParam{Name: "age", Desc: "only " + items + " of one age bucket, counted since they " + since +
		": lt_1h (under an hour and within the SLA), lt_sla (an hour or more, within it), past_sla (waited the -manual-sla or longer)",
		Schema: enumSchema(models.ManualAges)}
}

func sortParam() apiParam {
	return apiParam{Name: "sort", Desc: "new (newest created first, the default) or old",
		Schema: map[string]any{"type": "string", "enum": []string{"new", "old"}}}
}

// pathParams are the path parameters, by name, wherever they appear.
var pathParams = map[string]apiParam{
	"order_no":    {Desc: "the order number", Schema: orderNoSchema, Example: "held-1"},
	"sku_id":      {Desc: "the SKU", Schema: keySchema, Example: "sku-1"},
	"type":        {Desc: "a resource type the server has registered (built in, declared or remote)", Example: "inventory"},
	"key":         {Desc: "the key within the type", Schema: keySchema, Example: "sku-1"},
	"coupon_id":   {Desc: "the coupon's id", Schema: idSchema, Example: "1"},
	"uid":         {Desc: "the user", Schema: keySchema, Example: "u1"},
	"activity_id": {Desc: "the activity", Schema: keySchema, Example: "act-1"},
	"slot_id":     {Desc: "the seat or time slot", Schema: keySchema, Example: "seat-1"},
	"id":          {Desc: "the release task's id (under /tasks), the approval request's (under /approvals), or the webhook subscription's (under /webhooks)", Schema: idSchema, Example: "1"},
	"did":         {Desc: "the webhook delivery's id", Schema: idSchema, Example: "1"},
	"return_id":   {Desc: "the return's id, as its POST .../returns named it", Schema: keySchema, Example: "ret-1"},
	"ticket_id":   {Desc: "the reconciliation ticket's id", Schema: idSchema, Example: "1"},
}

// apiOps documents every route of the API, by routeKey.
var apiOps = map[string]apiOp{
	"PUT /api/v1/skus/:sku_id": {Summary: "Set a SKU's available stock and release delay, creating it when new",
		Body: putSKUBody{}, Status: http.StatusOK, Resp: skuView{}, Errors: []int{400, 409, 415}},
	"GET /api/v1/skus/:sku_id": {Summary: "Read a SKU's stock",
		Status: http.StatusOK, Resp: skuView{}, Errors: []int{400, 404}},
	"GET /api/v1/resources": {Summary: "List the resource types, built in, declared and remote; a remote type's service, its token only as whether one is sent, and unverified_answers when it is declared strict: false",
		Status: http.StatusOK, Resp: resourceTypesView{}},
	"PUT /api/v1/resources/:type/:key": {Summary: "Set a declared counter key's available amount, creating the key when new",
		Body: putCounterBody{}, Status: http.StatusOK, Resp: models.CounterState{}, Errors: []int{400, 404, 409, 415}},
	"GET /api/v1/resources/:type/:key": {Summary: "Read one key of any counter type, built in or declared",
		Status: http.StatusOK, Resp: models.CounterState{}, Errors: []int{400, 404}},
	"POST /api/v1/resources/:type/:key/correct": {Summary: "Correct a key changed outside unhold, with a reason: a counter's held and spent amounts go back to its ledger's and available becomes what was counted; a coupon goes back to its ledger's state. Written as an ADJUST row (trigger CORRECTION) and audited; 409 NOTHING_TO_CORRECT when it already agrees",
		Body: correctBody{}, Status: http.StatusOK, Resp: correctView{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/coupons": {Summary: "Issue an UNUSED coupon to a user",
		Body: createCouponBody{}, Status: http.StatusCreated, Resp: couponView{}, Errors: []int{400, 415}},
	"GET /api/v1/coupons/:coupon_id": {Summary: "Read a coupon",
		Status: http.StatusOK, Resp: couponView{}, Errors: []int{400, 404}},
	"POST /api/v1/accounts/:uid/credit": {Summary: "Add to a user's available balance or points; expire_at (POINTS only, in the future) moves the points' expiry to it if later",
		Body: creditBody{}, Status: http.StatusOK, Resp: accountView{}, Errors: []int{400, 409, 415}},
	"GET /api/v1/accounts/:uid": {Summary: "Read a user's balance and points",
		Status: http.StatusOK, Resp: accountView{}, Errors: []int{400}},
	"PUT /api/v1/activities/:activity_id": {Summary: "Set an activity's total quota, creating it when new",
		Body: putActivityBody{}, Status: http.StatusOK, Resp: activityView{}, Errors: []int{400, 409, 415}},
	"GET /api/v1/activities/:activity_id": {Summary: "Read an activity's quota",
		Status: http.StatusOK, Resp: activityView{}, Errors: []int{400, 404}},
	"PUT /api/v1/slots/:slot_id": {Summary: "Create a FREE slot (201), or answer an existing one as it is (200)",
		Body: putSlotBody{}, BodyOptional: true, Status: http.StatusCreated, Resp: slotView{},
		Other: map[int]any{http.StatusOK: slotView{}}, Errors: []int{400, 415}},
	"GET /api/v1/slots/:slot_id": {Summary: "Read a slot",
		Status: http.StatusOK, Resp: slotView{}, Errors: []int{400, 404}},
	"POST /api/v1/orders": {Summary: "Place a PENDING order holding everything it asks for, or nothing at all",
		Body: placeOrderBody{}, Status: http.StatusCreated, Resp: placeOrderView{}, Errors: []int{400, 409, 415, 502}},
	"GET /api/v1/orders": {Summary: "Search orders, as the orders page does, one keyset page at a time; each order with what it held, each hold with where its release stands",
		Query: []apiParam{
			{Name: "no", Desc: "an order number", Schema: orderNoSchema},
			{Name: "user", Desc: "a user", Schema: keySchema},
			{Name: "status", Desc: "an order status", Schema: enumSchema(models.OrderStatuses)},
			{Name: "release", Desc: "a release state (models.ReleaseState)", Schema: enumSchema(models.ReleaseStates)},
			{Name: "from", Desc: "created on or after this day, in the server's time zone", Schema: daySchema},
			{Name: "to", Desc: "created on or before this day, in the server's time zone", Schema: daySchema},
			{Name: "held_type", Desc: "orders that held something of this resource type", Example: "inventory"},
			{Name: "held_key", Desc: "orders that held this key (a SKU, a coupon id, an account …) of held_type; needs held_type",
				Schema: map[string]any{"type": "string", "maxLength": models.MaxTaskKeyLen}, Example: "sku-1"},
			{Name: "closed_from", Desc: "closed on or after this day, in the server's time zone", Schema: daySchema},
			{Name: "closed_to", Desc: "closed on or before this day, in the server's time zone", Schema: daySchema},
			sortParam(), afterParam("a (created_at, id) cursor"), limitParam(models.DefaultPageSize, maxListLimit),
		},
		Status: http.StatusOK, Resp: listPage[orderItem]{}, Errors: []int{400}},
	"GET /api/v1/orders/:order_no": {Summary: "Read an order's whole release chain",
		Status: http.StatusOK, Resp: models.Chain{}, Errors: []int{400, 404}},
	"GET /api/v1/orders/:order_no/chain": {Summary: "Read an order's chain and what reconciling the keys it holds finds now, as the order's page shows them",
		Status: http.StatusOK, Resp: orderChainView{}, Errors: []int{400, 404}},
	"POST /api/v1/orders/:order_no/pay": {Summary: "Record the payment channel's callback; a repeat is harmless",
		Body: payBody{}, Status: http.StatusOK, Resp: models.PayResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/close": {Summary: "Close a PENDING order (reason USER_CANCEL, TIMEOUT or ADMIN); closing it again answers the same",
		Body: closeBody{}, Status: http.StatusOK, Resp: models.CloseResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/lines/:sku_id/cancel": {Summary: "Give back part of a PENDING order's line at once (a line deducted at payment orders less); the order closes when no line holds or orders stock. Takes the line's version or a cancel_id: a repeat answers the same and changes nothing",
		Body: cancelLineBody{}, Status: http.StatusOK, Resp: models.LifeResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/ship": {Summary: "Record goods shipped; shipped goods are never released or refunded. A repeat of a shipment_id answers the same",
		Body: shipBody{}, Status: http.StatusOK, Resp: models.LifeResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/refunds": {Summary: "Refund paid, unshipped goods to stock (no lines: all); a whole refund gives back the order's other holds too. A repeat of a refund_id answers the same",
		Body: refundBody{}, Status: http.StatusOK, Resp: models.LifeResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/returns": {Summary: "Record shipped goods on their way back (an after-sale return, a refused delivery); nothing is restocked until the inbound",
		Body: returnBody{}, Status: http.StatusOK, Resp: models.LifeResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/returns/:return_id/inbound": {Summary: "The warehouse's confirmation of a return: each returned unit restocked or written off, once",
		Body: inboundBody{}, Status: http.StatusOK, Resp: models.LifeResult{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/orders/:order_no/resources/:type/rerun": {
		Summary: "Make an order's RETRY or MANUAL tasks of one type due now (202), with a reason; with dry_run=true, only say what it would make due (200)",
		Query:   []apiParam{{Name: "dry_run", Desc: "true: change nothing, answer what the rerun would make due", Schema: map[string]any{"type": "boolean"}}},
		Body:    rerunBody{}, BodyOptional: true, Status: http.StatusAccepted, Resp: rerunView{},
		Other: map[int]any{http.StatusOK: rerunPreviewView{}}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/reconcile": {Summary: "Run a reconciliation now: the run, the tickets it opened (at most 500; run.opened counts them all) and the unresolved tickets per resource",
		Body: struct{}{}, BodyOptional: true, Status: http.StatusOK, Resp: reconcileView{}, Errors: []int{400, 409, 415}},
	"GET /api/v1/tasks": {Summary: "List release tasks, as the tasks page does, one keyset page at a time",
		Query: []apiParam{
			{Name: "status", Desc: "task statuses, any of", Schema: enumSchema(models.TaskStatuses), Repeat: true},
			{Name: "type", Desc: "a resource type"},
			{Name: "class", Desc: "the error class of the task's last failure", Schema: enumSchema(models.ErrorClasses)},
			{Name: "older", Desc: "created at least this many minutes ago",
				Schema: map[string]any{"type": "integer", "minimum": 0, "maximum": models.MaxOlderMin}},
			{Name: "order", Desc: "an order number", Schema: orderNoSchema},
			{Name: "key", Desc: "one key of the type (a SKU, a coupon id, an account …); needs type",
				Schema: map[string]any{"type": "string", "maxLength": models.MaxTaskKeyLen}},
			{Name: "from", Desc: "created at or after this time (RFC 3339)", Schema: timeSchema},
			{Name: "to", Desc: "created before this time (RFC 3339)", Schema: timeSchema},
			{Name: "due", Desc: "1: only PENDING and RETRY tasks whose next try has come", Schema: map[string]any{"type": "string", "enum": []string{"1"}}},
			ownerParam("MANUAL tasks"),
			ageParam("MANUAL tasks", "went MANUAL"),
			{Name: "sort", Desc: "new (newest created first, the default), old, or age (MANUAL tasks only: longest waiting since they went MANUAL first; after is then that instant's cursor)",
				Schema: map[string]any{"type": "string", "enum": []string{"new", "old", "age"}}},
			afterParam("a (created_at, id) cursor"), limitParam(models.TaskPageSize, maxListLimit),
		},
		Status: http.StatusOK, Resp: listPage[models.ReleaseTask]{}, Errors: []int{400}},
	"GET /api/v1/tasks/:id": {Summary: "Read one release task, every attempt at it and its notes, oldest first; owner is who took it while it was MANUAL (kept as history after)",
		Status: http.StatusOK, Resp: taskView{}, Errors: []int{400, 404}},
	"POST /api/v1/tasks/:id/assign": {Summary: "Take (to: yourself), hand over (to: an enabled operator or admin) or let go (to: null) of a MANUAL task. A compare-and-set: from is who you believe has it (omitted or null: nobody), so a blind call never takes another's task; when the owner is not from, nothing changes and 409 TAKEN names who has it now. 409 NOT_OPEN when the task is not MANUAL; 422 BAD_ASSIGNEE for a viewer, a disabled or an unknown user. An API token takes as token:<name>",
		Body: assignDoc{}, Status: http.StatusOK, Resp: ownerView{}, Errors: []int{400, 404, 409, 415, 422}},
	"POST /api/v1/tasks/:id/notes": {Summary: "Append a note to a task (any status): text of 1 to 4096 bytes of UTF-8; notes are never changed or deleted",
		Body: noteBody{}, Status: http.StatusCreated, Resp: models.Note{}, Errors: []int{400, 404, 415}},
	"GET /api/v1/recon/tickets/:ticket_id": {Summary: "Read one reconciliation ticket, its owner and its notes, oldest first",
		Status: http.StatusOK, Resp: ticketView{}, Errors: []int{400, 404}},
	"POST /api/v1/recon/tickets/:ticket_id/assign": {Summary: "Take, hand over or let go of a ticket not yet resolved, as POST /api/v1/tasks/{id}/assign does a task",
		Body: assignDoc{}, Status: http.StatusOK, Resp: ownerView{}, Errors: []int{400, 404, 409, 415, 422}},
	"POST /api/v1/recon/tickets/:ticket_id/notes": {Summary: "Append a note to a ticket (any status), as POST /api/v1/tasks/{id}/notes does to a task",
		Body: noteBody{}, Status: http.StatusCreated, Resp: models.Note{}, Errors: []int{400, 404, 415}},
	"POST /api/v1/tasks/:id/rerun": {Summary: "Make one RETRY or MANUAL task due now (202), with a reason; 409 NOTHING_TO_RERUN in any other status, NEEDS_APPROVAL when its rerun needs a second person (request it: POST /api/v1/tasks/{id}/requests)",
		Body: rerunBody{}, Status: http.StatusAccepted, Resp: rerunView{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/tasks/:id/abandon": {Summary: "End a RETRY or MANUAL task no worker is trying as ABANDONED, with a reason: nothing is released, and reconciliation then opens a ticket for what it left held; 409 NEEDS_APPROVAL when its abandon needs a second person (request it: POST /api/v1/tasks/{id}/requests)",
		Body: rerunBody{}, Status: http.StatusOK, Resp: models.ChainTask{}, Errors: []int{400, 404, 409, 415}},
	"POST /api/v1/tasks/:id/requests": {Summary: "Request a rerun or an abandon of a task that needs approval (a balance, points or approval: true task at or above -approval-threshold; its rerun and abandon answer 409 NEEDS_APPROVAL): another operator, or admin for an abandon, approves it within 24 h. 201 with the request; 409 REQUEST_OPEN when one is open, APPROVAL_NOT_NEEDED when the task needs none; 403 APPROVER_ROLE for an abandon by a non-admin",
		Body: requestBody{}, Status: http.StatusCreated, Resp: models.ApprovalRequest{}, Errors: []int{400, 403, 404, 409, 415}},
	"GET /api/v1/approvals": {Summary: "List approval requests, pending first, newest first (at most 200); a PENDING request past its expiry reads EXPIRED",
		Query: []apiParam{
			{Name: "status", Desc: "one status, as read now", Schema: enumSchema(models.ApprovalStatuses)},
		},
		Status: http.StatusOK, Resp: approvalsView{}, Errors: []int{400}},
	"GET /api/v1/approvals/:id": {Summary: "Read one approval request, with the task as it was when requested and the decision",
		Status: http.StatusOK, Resp: models.ApprovalRequest{}, Errors: []int{400, 404}},
	"POST /api/v1/approvals/:id/approve": {Summary: "Approve a request with a reason and, in the same transaction, rerun or abandon its task, if it is still as it was when requested. 403 OWN_REQUEST for the requester, APPROVER_ROLE for a non-admin approving an abandon; 409 TASK_CHANGED (the request is closed STALE, nothing done), REQUEST_EXPIRED, REQUEST_CLOSED",
		Body: rerunBody{}, Status: http.StatusOK, Resp: models.ApprovalRequest{}, Errors: []int{400, 403, 404, 409, 415}},
	"POST /api/v1/approvals/:id/reject": {Summary: "Reject a request with a reason; the task is not changed. 403 OWN_REQUEST for the requester, APPROVER_ROLE for a non-admin rejecting an abandon; 409 REQUEST_CLOSED",
		Body: rerunBody{}, Status: http.StatusOK, Resp: models.ApprovalRequest{}, Errors: []int{400, 403, 404, 409, 415}},
	"POST /api/v1/webhooks": {Summary: "Subscribe a URL (http or https, no user or password in it, not a link-local address nor a name that resolves to one) to event types (none: every type), signed with a secret of 16 to 256 bytes (absent: 32 random bytes, hex). 201 with the subscription and its secret, shown this once; it hears the events from now on (docs/webhooks.md)",
		Body: createWebhookBody{}, Status: http.StatusCreated, Resp: createdWebhookView{}, Errors: []int{400, 415}},
	"GET /api/v1/webhooks": {Summary: "List the webhook subscriptions, oldest first, each with its backlog (PENDING and RETRY deliveries), its oldest waiting delivery, its FAILED count and whether it is paused; never a secret",
		Status: http.StatusOK, Resp: webhooksView{}},
	"GET /api/v1/webhooks/:id": {Summary: "Read one webhook subscription; never its secret",
		Status: http.StatusOK, Resp: models.WebhookSubscription{}, Errors: []int{400, 404}},
	"DELETE /api/v1/webhooks/:id": {Summary: "Delete a webhook subscription and its deliveries (204)",
		Body: noBody{}, BodyOptional: true, Status: http.StatusNoContent, Errors: []int{400, 404, 415}},
	"POST /api/v1/webhooks/:id/pause": {Summary: "Pause a subscription: nothing is sent to it, its events wait; harmless when paused already",
		Body: noBody{}, BodyOptional: true, Status: http.StatusOK, Resp: models.WebhookSubscription{}, Errors: []int{400, 404, 415}},
	"POST /api/v1/webhooks/:id/resume": {Summary: "Resume a paused subscription (by hand or after 24 h of failures): its failures are forgotten and its waiting deliveries are due at once; harmless when not paused",
		Body: noBody{}, BodyOptional: true, Status: http.StatusOK, Resp: models.WebhookSubscription{}, Errors: []int{400, 404, 415}},
	"GET /api/v1/webhooks/:id/deliveries": {Summary: "List a subscription's deliveries, newest first, one keyset page at a time (next: the before of the next page): status, tries, the last HTTP status, error and answer's first bytes",
		Query: []apiParam{
			{Name: "status", Desc: "one status", Schema: enumSchema(models.DeliveryStatuses)},
			{Name: "before", Desc: "the next of the previous page (a delivery id); absent for the first page", Schema: idSchema},
			limitParam(50, 500),
		},
		Status: http.StatusOK, Resp: models.DeliveryPage{}, Errors: []int{400, 404}},
	"POST /api/v1/webhooks/:id/deliveries/:did/redeliver": {Summary: "Send one FAILED, DELIVERED or RETRY delivery again, now (the same event id): 200 with it; 409 NOTHING_TO_REDELIVER when it waits or is being sent already",
		Body: noBody{}, BodyOptional: true, Status: http.StatusOK, Resp: models.WebhookDelivery{}, Errors: []int{400, 404, 409, 415}},
	"GET /api/v1/ledgers/:type": {Summary: "List one resource type's ledger rows, newest first, one keyset page at a time",
		Query: []apiParam{
			{Name: "key", Desc: "only this key's rows (a coupon's: its id)", Schema: keySchema},
			afterParam("a ledger row id"), limitParam(ledgerPageSize, maxListLimit),
		},
		Status: http.StatusOK, Resp: listPage[models.Flow]{}, Errors: []int{400}},
	"GET /api/v1/events": {Summary: "Poll the events (docs/events.md), oldest first, after an event id: next is never empty (the last id answered, or after again when nothing is new), so a poller loops on it. 410 EVENTS_GONE, with oldest, when after is before the oldest event kept (the ones between were cleaned up)",
		Query: []apiParam{
			{Name: "after", Desc: "the next of the previous answer; 0 or absent: from the oldest event kept",
				Schema: map[string]any{"type": "integer", "minimum": 0}},
			limitParam(eventsPageSize, maxEventsLimit),
			{Name: "type", Desc: "event types, comma-separated (" + eventTypeList() + "); absent: every type", Schema: textSchema},
		},
		Status: http.StatusOK, Resp: listPage[models.Event]{}, Errors: []int{400, 410}},
	"GET /api/v1/recon/tickets": {Summary: "List reconciliation tickets, as the reconciliation page does, newest first",
		Query: []apiParam{
			{Name: "status", Desc: "ticket statuses, any of; OPEN and ACKED when absent", Schema: enumSchema(models.DiffStatuses), Repeat: true},
			{Name: "resource", Desc: "a resource type"},
			{Name: "sign", Desc: "1: actual above expected (a missed release); -1: below",
				Schema: map[string]any{"type": "string", "enum": []string{"1", "-1"}}},
			ownerParam("tickets not yet resolved"),
			ageParam("unresolved tickets", "were opened"),
			{Name: "sort", Desc: "new (newest first, the default) or age (oldest first)",
				Schema: map[string]any{"type": "string", "enum": []string{"new", "age"}}},
			afterParam("a ticket id"), limitParam(models.DiffPageSize, maxListLimit),
		},
		Status: http.StatusOK, Resp: listPage[models.DiffTicket]{}, Errors: []int{400}},
	"GET /api/v1/audit": {Summary: "List audit entries, newest first, as the audit page does: every entry for an admin; for other roles the operational ones (orders, tasks, tickets, jobs, resources) without ip, user_agent and request_id",
		Query: []apiParam{
			{Name: "actor", Desc: "exactly this actor", Schema: map[string]any{"type": "string", "maxLength": maxAuditFilter}},
			{Name: "action", Desc: "exactly this action; it must be one the log holds", Schema: textSchema},
			{Name: "target", Desc: "targets starting with this (order:A1, diff:, ...)", Schema: map[string]any{"type": "string", "maxLength": maxAuditFilter}},
			{Name: "from", Desc: "on or after this day, in the server's time zone", Schema: daySchema},
			{Name: "to", Desc: "on or before this day, in the server's time zone", Schema: daySchema},
			afterParam("an audit entry id"), limitParam(models.AuditPageSize, models.MaxAuditPageSize),
		},
		Status: http.StatusOK, Resp: listPage[models.AuditEntry]{}, Errors: []int{400}},
	"GET /api/v1/audit/:id": {Summary: "One audit entry, as its page shows it; 403 for a non-admin asking for an admin-only entry (users, tokens, sign-ins, refusals)",
		Status: http.StatusOK, Resp: models.AuditEntry{}, Errors: []int{400, 403, 404}},
	"GET /api/v1/openapi.json": {Summary: "This document", Status: http.StatusOK, Resp: map[string]any{}},
}

// enumSchema is a string schema taking the given values.
func enumSchema[T ~string](vs []T) map[string]any {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return map[string]any{"type": "string", "enum": out}
}

// schemaEnums are the string types whose values the document lists.
var schemaEnums = map[reflect.Type]map[string]any{
	reflect.TypeFor[models.OrderStatus]():  enumSchema(models.OrderStatuses),
	reflect.TypeFor[models.TaskStatus]():   enumSchema(models.TaskStatuses),
	reflect.TypeFor[models.ErrorClass]():   enumSchema(models.ErrorClasses),
	reflect.TypeFor[models.ReleaseState](): enumSchema(models.ReleaseStates),
}

// openAPI is GET /api/v1/openapi.json. The document is built at the first
// request, when every route has its gate.
func (s *server) openAPI() echo.HandlerFunc {
	var once sync.Once
	var doc []byte
	var err error
	return func(c *echo.Context) error {
		once.Do(func() { doc, err = s.openAPIDocument() })
		if err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, doc)
	}
}

// openAPIDocument builds the document from apiOps, the routes' gates and
// the Go types of their bodies and answers.
func (s *server) openAPIDocument() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}, named: map[string]reflect.Type{}}
	typeSchema := enumSchema(s.store.Types())
	errRef := g.of(reflect.TypeFor[errorResponse]())
	paths := map[string]map[string]any{}
	for key, op := range apiOps {
		method, route, _ := strings.Cut(key, " ")
		gt, ok := s.gates[routeKey(method, route)]
		if !ok {
			return nil, fmt.Errorf("openapi: %s is documented but has no route", key)
		}
		var params []any
		var path []string
		for _, seg := range strings.Split(route, "/") {
			name, isParam := strings.CutPrefix(seg, ":")
			if !isParam {
				path = append(path, seg)
				continue
			}
			path = append(path, "{"+name+"}")
			p, ok := pathParams[name]
			if !ok {
				return nil, fmt.Errorf("openapi: path parameter %s of %s is not described", name, key)
			}
			p.Name, p.Required = name, true
			params = append(params, p.doc("path", typeSchema))
		}
		for _, p := range op.Query {
			params = append(params, p.doc("query", typeSchema))
		}
		responses := map[string]any{}
		addResp := func(status int, body any) {
			if body == nil {
				// 204: no body.
				responses[strconv.Itoa(status)] = map[string]any{"description": http.StatusText(status)}
				return
			}
			responses[strconv.Itoa(status)] = map[string]any{"description": http.StatusText(status),
				"content": map[string]any{echo.MIMEApplicationJSON: map[string]any{"schema": g.of(reflect.TypeOf(body))}}}
		}
		addResp(op.Status, op.Resp)
		for st, body := range op.Other {
			addResp(st, body)
		}
		for _, st := range append([]int{401, 403, 503}, op.Errors...) {
			responses[strconv.Itoa(st)] = map[string]any{"description": http.StatusText(st),
				"content": map[string]any{echo.MIMEApplicationJSON: map[string]any{"schema": errRef}}}
		}
		role := string(gt.role())
		o := map[string]any{
			"operationId": strings.ToLower(method) + strings.NewReplacer("/api/v1", "", "/", "_", ":", "", ".", "_").Replace(route),
			"summary":     op.Summary,
			"description": "Needs the " + role + " role or above (an API token: Authorization: Bearer <token>).",
			"x-role":      role,
			"responses":   responses,
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		if op.Body != nil {
			o["requestBody"] = map[string]any{"required": !op.BodyOptional,
				"content": map[string]any{echo.MIMEApplicationJSON: map[string]any{"schema": g.of(reflect.TypeOf(op.Body))}}}
		}
		p := strings.Join(path, "/")
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(method)] = o
	}
	if g.err != nil {
		return nil, g.err
	}
	return json.MarshalIndent(map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "unhold API", "version": "1",
			"description": "Places, pays and closes orders, sets up the resources they hold, reads what the dashboard shows, " +
				"and makes failed releases due again. Every error answers {\"error\": {\"code\", \"message\"}}. " +
				"Lists answer one keyset page, {\"items\", \"next\"}: next is \"\" on the last page, else send it back as ?after=."},
		"paths":      paths,
		"security":   []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{"schemas": g.defs, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
	}, "", "  ")
}

// doc is the parameter's OpenAPI object; a parameter without a schema
// names a resource type.
func (p apiParam) doc(in string, typeSchema map[string]any) map[string]any {
	schema := p.Schema
	if schema == nil {
		schema = typeSchema
	}
	if p.Repeat {
		schema = map[string]any{"type": "array", "items": schema}
	}
	o := map[string]any{"name": p.Name, "in": in, "description": p.Desc, "schema": schema}
	if p.Required {
		o["required"] = true
	}
	if p.Example != "" {
		o["example"] = p.Example
	}
	return o
}

// schemaGen writes the JSON Schema of Go types as encoding/json marshals
// them: a named struct once, in defs, and a $ref to it wherever it is used.
type schemaGen struct {
	defs  map[string]any
	named map[string]reflect.Type
	err   error
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	if t == reflect.TypeFor[time.Time]() {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		// An event's data: a JSON object whose fields depend on its type
		// (docs/events.md).
		return map[string]any{"type": "object"}
	}
	if t.Kind() == reflect.Pointer {
		return nullable(g.of(t.Elem()))
	}
	if s, ok := schemaEnums[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		name := t.Name()
		if name == "" || strings.Contains(name, "[") {
			return g.object(t)
		}
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if prev, ok := g.named[name]; ok {
			if prev != t && g.err == nil {
				g.err = fmt.Errorf("openapi: two types named %s: %v and %v", name, prev, t)
			}
			return ref
		}
		g.named[name] = t
		g.defs[name] = g.object(t)
		return ref
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

// nullable is s that also takes null, as a nil pointer marshals.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []string{typ, "null"}
		if enum, ok := s["enum"].([]string); ok {
			vals := make([]any, 0, len(enum)+1)
			for _, v := range enum {
				vals = append(vals, v)
			}
			out["enum"] = append(vals, nil)
		}
		return out
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// object is a struct's schema: a field marshalled always is required,
// one with omitempty is not, and no other property appears.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	sort.Strings(required)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// fields adds t's fields to props, those of an embedded struct as its own,
// as encoding/json does.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
		if !slices.Contains(strings.Split(opts, ","), "omitempty") {
			*required = append(*required, name)
		}
	}
}
