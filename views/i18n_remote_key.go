package views

// remoteKeyText is a remote type's key page's text.
var remoteKeyText = text{
	"rkey.intro": {"这个键的数量由对方服务保管。下面是 unhold 自己的调用台账、现在持有它的订单与任务；操作员可以当场向服务询问它持有多少。",
		"This key's amounts are kept by its service. Below are unhold's own ledger of calls and the orders and tasks holding it now; an operator can ask the service what it holds, now."},
	"rkey.ledger.held": {"台账所示持有", "Held by the ledger of calls"},
	"rkey.expected":    {"应持有", "Should hold"},
	"rkey.check": {"应持有 = 未支付订单持有 %s（%s 单）+ 待完成释放任务 %s（%s 个）。台账：",
		"Should hold = PENDING orders' holds %s (%s orders) + unfinished release tasks %s (%s tasks). The ledger: "},
	"rkey.ledger.bad":   {"台账与应持有相差 %s", "differs from it by %s"},
	"rkey.ask.title":    {"向服务询问", "Ask the service"},
	"rkey.ask.submit":   {"现在询问 GET /holds/{key}", "Ask GET /holds/{key} now"},
	"rkey.ask.help":     {"与对账相同的请求、超时和应答解析；每次询问记入审计日志。", "The same call, timeout and reading of the answer as reconciliation; every question is written to the audit log."},
	"rkey.asked":        {"询问时间", "Asked"},
	"rkey.service.held": {"服务所示持有", "The service holds"},
	"rkey.not.offered":  {"服务不提供 GET /holds（应答 404）", "The service offers no GET /holds (it answered 404)"},
	"rkey.verdict":      {"比较", "Compared"},
	"rkey.agrees":       {"一致", "agrees"},
	"rkey.differs":      {"服务比应持有多 %s（负数为少）", "the service holds %s more than it should (negative: less)"},
	"rkey.busy":         {"这个键有调用可能正在进行或结果未知，差异未必是真的。", "A call of this key may be under way or done unseen: a difference may be no diff."},
	"rkey.ledger":       {"调用台账", "Ledger of calls"},
	"rkey.answer":       {"服务应答", "Answer"},
	"rkey.actor":        {"操作人", "Actor"},
}
