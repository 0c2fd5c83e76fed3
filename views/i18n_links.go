package views

// linksText is the text of what links the pages together: units, the
// orders list's release state and total, the user page, the chain's
// links to tickets and tasks.
var linksText = text{
	"unit.yuan":   {"%s 元", "%s yuan"},
	"unit.points": {"%s 积分", "%s points"},

	"links.release":           {"释放情况", "Release"},
	"links.release.MANUAL":    {"需人工处理", "MANUAL"},
	"links.release.RETRY":     {"重试中", "RETRY"},
	"links.release.RELEASING": {"释放中", "releasing"},
	"links.release.HOLDING":   {"占用中", "holding"},
	"links.release.RELEASED":  {"已全部释放", "all released"},
	"links.release.NONE":      {"无占用", "nothing held"},
	"links.release.help": {"释放情况取最需要处理的一项：有任务需人工处理 → 需人工处理；否则有任务在重试 → 重试中；否则有任务待执行 → 释放中；否则仍有占用 → 占用中（待支付订单，或任务结束后仍未释放）；否则有释放过 → 已全部释放；否则 → 无占用（未占用任何资源，或已全部随支付扣减）。",
		"The release shows what most needs a look: a task MANUAL → MANUAL; else a task retrying → RETRY; else a task waiting to run → releasing; else something still held → holding (an unpaid order, or a hold its finished tasks left); else something released → all released; else → nothing held (the order held nothing, or paid for all of it)."},

	"links.orders.total":      {"共 %s 单", "Orders: %s"},
	"links.skus.total":        {"共 %s 个 SKU", "SKUs: %s"},
	"links.skus.total.over":   {"超过 %s 个 SKU", "SKUs: more than %s"},
	"links.orders.total.over": {"超过 %s 单", "Orders: more than %s"},

	"links.task":        {"任务 #%d", "task #%d"},
	"links.ticket":      {"工单 #%d", "ticket #%d"},
	"links.ticket.none": {"尚无工单：下次对账会开出", "no ticket yet: the next reconciliation opens one"},
	"links.deducted":    {"已随支付扣减 %s", "%s deducted by payment"},
	"links.ev.counter":  {"可用 %s→%s，占用 %s→%s，已用 %s→%s", "available %s→%s, held %s→%s, spent %s→%s"},

	"links.user.title":          {"用户", "User"},
	"links.user.h1":             {"用户 %s", "User %s"},
	"links.user.orders":         {"订单（新的在前）", "Orders (newest first)"},
	"links.user.orders.none":    {"这个用户没有订单。", "This user has no order."},
	"links.user.accounts":       {"账户", "Accounts"},
	"links.user.accounts.none":  {"这个用户没有余额或积分账户。", "This user has no balance or points account."},
	"links.user.ledger":         {"账户流水", "Account ledger"},
	"links.user.coupons":        {"优惠券", "Coupons"},
	"links.user.coupons.none":   {"这个用户没有优惠券。", "This user has no coupon."},
	"links.user.coupons.all":    {"全部优惠券与流水", "All coupons and their ledger"},
	"links.user.notfound.title": {"用户不存在", "No such user"},
	"links.user.notfound.text": {"没有找到用户 %s：没有订单、账户或优惠券带有这个 ID。请检查用户 ID 是否完整。",
		"There is no user %s: no order, account or coupon carries this id. Check the user id."},
}
