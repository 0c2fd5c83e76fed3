package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/static"
)

// routes lists every route of the server with the gate it needs. add is the
// only way a route is registered, so none can be left without a gate.
func (s *server) routes(e *echo.Echo) {
	const get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	add := func(method, path string, g gate, h echo.HandlerFunc) {
		ri := e.Add(method, path, h)
		s.gates[routeKey(ri.Method, ri.Path)] = g
	}

	add(get, "/healthz", gateOpen, s.healthz)
	add(get, "/readyz", gateOpen, s.readyz)
	ri := e.StaticFS("/static", static.FS)
	s.gates[routeKey(ri.Method, ri.Path)] = gateOpen
	add(get, "/metrics", gateMetrics, s.metricsHandler)

	// Signing in and out, and one's own password.
	add(get, "/login", gateOpen, s.loginForm)
	add(post, "/login", gateOpen, s.loginSubmit)
	add(post, "/logout", gateViewer, s.logout)
	add(get, "/lang", gateOpen, s.setLang)
	add(get, "/account/password", gateViewer, s.passwordForm)
	add(post, "/account/password", gateViewer, s.passwordSubmit)

	// Dashboard pages: customer service reads, ops act.
	add(get, "/", gateViewer, s.overview)
	add(get, "/orders", gateViewer, s.ordersList)
	add(get, "/orders/:order_no", gateViewer, s.orderChain)
	add(get, "/orders/:order_no/resources/:type/rerun", gateOperator, s.rerunPreview)
	add(post, "/orders/:order_no/resources/:type/rerun", gateOperator, s.rerunSubmit)
	add(get, "/tasks", gateViewer, s.tasksList)
	add(get, "/tasks/rerun", gateOperator, s.bulkRerunPreview)
	add(post, "/tasks/rerun", gateOperator, s.bulkRerunSubmit)
	add(get, "/tasks/:id", gateViewer, s.taskDetail)
	add(post, "/tasks/:id/rerun", gateOperator, s.taskRerun)
	add(post, "/tasks/:id/abandon", gateAdmin, s.taskAbandon)
	add(post, "/tasks/:id/assign", gateOperator, s.taskAssign)
	add(post, "/tasks/:id/notes", gateOperator, s.taskNote)
	add(get, "/inventory", gateViewer, s.inventoryList)
	add(get, "/inventory/:sku_id", gateViewer, s.skuLedger)
	add(get, "/coupons", gateViewer, s.couponLedger)
	add(get, "/balances", gateViewer, s.balanceLedger)
	add(get, "/users/:id", gateViewer, s.userPage)
	add(get, "/resources/:type", gateViewer, s.resourceList)
	add(get, "/resources/:type/:key", gateViewer, s.resourceKey)
	add(post, "/resources/:type/:key", gateOperator, s.resourceSet)
	add(post, "/resources/:type/:key/correct", gateOperator, s.correctSubmit)
	add(post, "/resources/:type/:key/holds", gateOperator, s.remoteKeyAsk)
	add(get, "/reports/daily", gateViewer, s.dailyReport)
	add(get, "/reports/daily.csv", gateViewer, s.dailyTotalsCSV)
	add(get, "/reports/daily-rows.csv", gateViewer, s.dailyRowsCSV)
	add(get, "/recon", gateViewer, s.reconPage)
	add(post, "/recon/run", gateOperator, s.reconRunNow)
	add(get, "/recon/diffs/:id", gateViewer, s.reconDiff)
	add(post, "/recon/diffs/:id/ack", gateOperator, s.reconAck)
	add(post, "/recon/diffs/:id/resolve", gateOperator, s.reconResolve)
	add(post, "/recon/diffs/:id/assign", gateOperator, s.ticketAssign)
	add(post, "/recon/diffs/:id/notes", gateOperator, s.ticketNote)
	add(get, "/jobs", gateViewer, s.jobsPage)
	add(post, "/jobs/:name/run", gateOperator, s.jobRunNow)
	// Any role reads the audit log; a non-admin its operational entries
	// only (orders, tasks, tickets, jobs, resources), without request
	// metadata: see auditShown.
	add(get, "/audit", gateViewer, s.auditPage)
	add(get, "/audit/:id", gateViewer, s.auditEntryPage)
	add(get, "/search", gateViewer, s.search)
	// A rerun or abandon of a task that moves money is a request another
	// person decides: anyone reads them, operators request and decide (an
	// abandon: admins, checked by the models as for the abandon itself).
	add(get, "/approvals", gateViewer, s.approvalsList)
	add(get, "/approvals/:id", gateViewer, s.approvalDetail)
	add(post, "/approvals/:id/approve", gateOperator, s.approvalDecide(true))
	add(post, "/approvals/:id/reject", gateOperator, s.approvalDecide(false))
	add(post, "/tasks/:id/requests", gateOperator, s.taskRequest)

	// Administration.
	add(get, "/admin/users", gateAdmin, s.usersPage)
	add(post, "/admin/users", gateAdmin, s.userCreate)
	add(post, "/admin/users/:id/role", gateAdmin, s.userRole)
	add(post, "/admin/users/:id/disable", gateAdmin, s.userDisable)
	add(post, "/admin/users/:id/enable", gateAdmin, s.userEnable)
	add(post, "/admin/users/:id/reset", gateAdmin, s.userReset)
	add(get, "/admin/tokens", gateAdmin, s.tokensPage)
	add(post, "/admin/tokens", gateAdmin, s.tokenCreate)
	add(post, "/admin/tokens/:id/revoke", gateAdmin, s.tokenRevoke)
	// Webhook subscriptions hold a URL the server sends to and a signing
	// secret: admins only, like users and tokens.
	add(get, "/webhooks", gateAdmin, s.webhooksPage)
	add(post, "/webhooks", gateAdmin, s.webhookCreate)
	add(get, "/webhooks/:id", gateAdmin, s.webhookPage)
	add(post, "/webhooks/:id/pause", gateAdmin, s.webhookPause)
	add(post, "/webhooks/:id/resume", gateAdmin, s.webhookResume)
	add(post, "/webhooks/:id/delete", gateAdmin, s.webhookDelete)
	add(post, "/webhooks/:id/deliveries/:did/redeliver", gateAdmin, s.webhookRedeliver)

	// JSON API, with bearer tokens: integrations read and write, ops rerun.
	const api = "/api/v1"
	add(put, api+"/skus/:sku_id", gateOperator, s.putSKU)
	add(get, api+"/skus/:sku_id", gateViewer, s.getSKU)
	add(get, api+"/resources", gateViewer, s.listResourceTypes)
	add(put, api+"/resources/:type/:key", gateOperator, s.putCounter)
	add(get, api+"/resources/:type/:key", gateViewer, s.getCounter)
	add(post, api+"/resources/:type/:key/correct", gateOperator, s.apiCorrect)
	add(post, api+"/coupons", gateOperator, s.createCoupon)
	add(get, api+"/coupons/:coupon_id", gateViewer, s.getCoupon)
	add(post, api+"/accounts/:uid/credit", gateOperator, s.creditAccount)
	add(get, api+"/accounts/:uid", gateViewer, s.getAccount)
	add(put, api+"/activities/:activity_id", gateOperator, s.putActivity)
	add(get, api+"/activities/:activity_id", gateViewer, s.getActivity)
	add(put, api+"/slots/:slot_id", gateOperator, s.putSlot)
	add(get, api+"/slots/:slot_id", gateViewer, s.getSlot)
	add(post, api+"/orders", gateOperator, s.placeOrder)
	add(get, api+"/orders/:order_no", gateViewer, s.getOrder)
	add(post, api+"/orders/:order_no/pay", gateOperator, s.payOrder)
	add(post, api+"/orders/:order_no/close", gateOperator, s.closeOrder)
	add(post, api+"/orders/:order_no/lines/:sku_id/cancel", gateOperator, s.cancelLine)
	add(post, api+"/orders/:order_no/ship", gateOperator, s.shipOrder)
	add(post, api+"/orders/:order_no/refunds", gateOperator, s.refundOrder)
	add(post, api+"/orders/:order_no/returns", gateOperator, s.returnOrder)
	add(post, api+"/returns/:return_id/inbound", gateOperator, s.returnInbound)
	add(post, api+"/orders/:order_no/resources/:type/rerun", gateOperator, s.rerun)
	add(post, api+"/reconcile", gateOperator, s.apiReconcile)
	add(get, api+"/orders", gateViewer, s.apiOrders)
	add(get, api+"/orders/:order_no/chain", gateViewer, s.apiOrderChain)
	add(get, api+"/tasks", gateViewer, s.apiTasks)
	add(get, api+"/tasks/:id", gateViewer, s.apiTask)
	add(post, api+"/tasks/:id/rerun", gateOperator, s.taskRerunAPI)
	add(post, api+"/tasks/:id/abandon", gateAdmin, s.taskAbandonAPI)
	add(post, api+"/tasks/:id/requests", gateOperator, s.taskRequestAPI)
	add(get, api+"/approvals", gateViewer, s.apiApprovals)
	add(get, api+"/approvals/:id", gateViewer, s.apiApproval)
	add(post, api+"/approvals/:id/approve", gateOperator, s.apiDecide(true))
	add(post, api+"/approvals/:id/reject", gateOperator, s.apiDecide(false))
	add(get, api+"/ledgers/:type", gateViewer, s.apiLedger)
	add(get, api+"/events", gateViewer, s.apiEvents)
	add(get, api+"/recon/tickets", gateViewer, s.apiReconTickets)
	add(get, api+"/recon/tickets/:ticket_id", gateViewer, s.apiTicket)
	add(post, api+"/tasks/:id/assign", gateOperator, s.taskAssignAPI)
	add(post, api+"/tasks/:id/notes", gateOperator, s.taskNoteAPI)
	add(post, api+"/recon/tickets/:ticket_id/assign", gateOperator, s.ticketAssignAPI)
	add(post, api+"/recon/tickets/:ticket_id/notes", gateOperator, s.ticketNoteAPI)
	// The audit log's policy is the pages': any role reads it, a
	// non-admin its operational entries only, without request metadata.
	add(get, api+"/audit", gateViewer, s.apiAudit)
	add(get, api+"/audit/:id", gateViewer, s.apiAuditEntry)
	// Webhook subscriptions: their URLs and secrets are the admins'.
	add(post, api+"/webhooks", gateAdmin, s.apiCreateWebhook)
	add(get, api+"/webhooks", gateAdmin, s.apiWebhooks)
	add(get, api+"/webhooks/:id", gateAdmin, s.apiWebhook)
	add(del, api+"/webhooks/:id", gateAdmin, s.apiDeleteWebhook)
	add(post, api+"/webhooks/:id/pause", gateAdmin, s.apiPauseWebhook)
	add(post, api+"/webhooks/:id/resume", gateAdmin, s.apiResumeWebhook)
	add(get, api+"/webhooks/:id/deliveries", gateAdmin, s.apiWebhookDeliveries)
	add(post, api+"/webhooks/:id/deliveries/:did/redeliver", gateAdmin, s.apiRedeliver)
	add(get, api+"/openapi.json", gateViewer, s.openAPI())
}
