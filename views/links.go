package views

import (
	"net/url"
	"strconv"
)

// The pages every id links to (a SKU's is ledgerSKUURL, an order's
// OrderURL). A coupon's page is the coupon ledger filtered to it, and an
// account's the balances page of its user and asset: both show the one
// thing, with its whole ledger, so neither needs a page of its own.

// UserURL is the page of one shop user: their orders and accounts.
func UserURL(id string) string { return "/users/" + url.PathEscape(id) }

// TaskURL is one release task's page.
func TaskURL(id int64) string { return "/tasks/" + strconv.FormatInt(id, 10) }

// TicketURL is one reconciliation ticket's page.
func TicketURL(id int64) string { return "/recon/diffs/" + strconv.FormatInt(id, 10) }

// CouponURL is one coupon's page.
func CouponURL(id int64) string { return Query("/coupons", "coupon", strconv.FormatInt(id, 10)) }

// AccountURL is one account asset's page; asset "" shows both.
func AccountURL(uid, asset string) string { return Query("/balances", "user", uid, "asset", asset) }

// FlowAnchor is the id of a counter ledger row's line on its key's page.
func FlowAnchor(id int64) string { return "flow-" + strconv.FormatInt(id, 10) }

// CouponFlowAnchor is the id of a coupon ledger row's line.
func CouponFlowAnchor(id int64) string { return "coupon-flow-" + strconv.FormatInt(id, 10) }
