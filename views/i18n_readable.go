package views

// readableText is the text of the readable pass (issue 13): the header's
// hover titles, the audit entry's own page, the daily report's zone and
// CSV, and the known English shapes of job summaries, audit details and
// attempt notes, translated at render time (see say.go).
var readableText = text{
	"account.password.title": {"修改登录密码", "Change password"},

	"audit.entry.title":   {"审计记录", "Audit entry"},
	"audit.entry.detail":  {"详情", "Detail"},
	"audit.entry.ip":      {"来源地址", "Address"},
	"audit.entry.ua":      {"浏览器或客户端", "Browser or client"},
	"audit.entry.request": {"请求号", "Request id"},
	// Stored English sentences (say.go): Chinese, and the English shape as
	// stored, filled with the same parts.
	"say.rescue":             {"记为崩溃的尝试 %[1]s 次（租约到期而没有结果）", "counted %[1]s crashed tries (leases expired without an outcome)"},
	"say.timeout_close":      {"关闭了 %[1]s 个超过支付截止的未支付订单，分 %[2]s 批", "closed %[1]s unpaid orders past their deadline, %[2]s pages"},
	"say.ledger_report":      {"%[1]s（%[2]s）：账本 %[3]s 行%[4]s", "%[1]s (%[2]s): %[3]s ledger rows%[4]s"},
	"say.ledger_report.line": {"%[1]s%[2]s %[3]s：%[4]s 行，数量 %[5]s", "%[1]s%[2]s %[3]s: %[4]s rows, qty %[5]s"},
	"say.parts":              {"——%s", " — %s"},
	"say.comma":              {"，", ", "},
	"say.cleanup": {"删除了 %[3]s 之前已完成任务的尝试记录 %[1]s 条、定时任务运行记录 %[2]s 条（保留 %[4]s），%[6]s 之前的概览汇总 %[5]s 行；已结束的会话与登录限流 %[7]s 条",
		"deleted %[1]s attempts of finished tasks and %[2]s job runs from before %[3]s (kept %[4]s), %[5]s overview rollup rows from before %[6]s; %[7]s ended sessions and login throttles"},
	"say.days":             {"%d 天", "%d days"},
	"say.recon_run":        {"第 %[1]s 次对账：发现差异 %[2]s 处，新开工单 %[3]s 个，自动关闭 %[4]s 个", "run %[1]s: %[2]s diffs, %[3]s new tickets, %[4]s closed"},
	"say.job_timeout":      {"超过 %[1]s 未完成：%[2]s", "timed out after %[1]s: %[2]s"},
	"say.job_running":      {"定时任务 %[1]s 已在 %[2]s 上运行，始于 %[3]s", "job %[1]s already running on %[2]s since %[3]s"},
	"say.job_held":         {"由 %[1]s（%[2]s）持有，始于 %[3]s", "held by %[1]s (%[2]s) since %[3]s"},
	"say.made_due":         {"%[1]s 个任务已重新排队", "%[1]s task(s) made due"},
	"say.nothing_to_rerun": {"没有可重跑的任务", "nothing to rerun"},
	"say.rerun_by":         {"%[1]s 重跑：%[2]s", "rerun by %[1]s: %[2]s"},
	"say.available":        {"可用 %[1]s → %[2]s", "available %[1]s → %[2]s"},
	"say.available_delay":  {"可用 %[1]s → %[2]s，释放延迟 %[3]s 秒", "available %[1]s → %[2]s, release delay %[3]ss"},
	"say.coupon_create":    {"给 %[2]s 的%[1]s，%[3]s 到期", "%[1]s coupon for %[2]s, expires %[3]s"},
	"say.credit":           {"%[1]s +%[2]s", "%[1]s +%[2]s"},
	"say.total":            {"总量 %[1]s", "total %[1]s"},
	"say.created_free":     {"已创建，空闲", "created FREE"},
	"say.exists_already":   {"已存在", "exists already"},
	"say.background":       {"已在后台开始", "started in the background"},
	"say.now":              {"现为%[1]s", "now %[1]s"},
	"say.late_partial":     {"迟到支付未能取回全部占用：%[1]s", "late payment could not take back every hold: %[1]s"},
	"say.sessions_ended":   {"结束了 %[1]s 个会话", "%[1]s session(s) ended"},
	"say.user_changed":     {"登录过程中用户被修改", "user changed during login"},
	"say.locked_here":      {"此地址失败 %[1]s 次后锁定该用户名", "name locked at this address after %[1]s failures"},
	"say.locked_all":       {"所有地址共失败 %[1]s 次后锁定该用户名", "name locked after %[1]s failures from all addresses"},
	"say.attempts_from":    {"来自 %[2]s 的尝试 %[1]s 次", "%[1]s attempts from %[2]s"},
	"say.coded":            {"%[1]s：%[2]s", "%[1]s: %[2]s"},
	"say.phrase.0":         {"占用量小于要释放的数量", "held amount is smaller than the release"},
	"say.phrase.1":         {"资源不在释放所要求的状态", "resource is not in the state the release expects"},
	"say.phrase.2":         {"资源记录不存在", "resource row does not exist"},
	"say.phrase.3":         {"账本已有这笔变动", "ledger already holds this change"},
	"say.phrase.4":         {"租约已失：任务已归其他 worker 或已结束", "lease lost: another worker owns the task or it is finished"},
	"say.phrase.5":         {"超时未应答", "context deadline exceeded"},
	"say.phrase.6":         {"仓库库存服务超时", "warehouse stock service timed out"},
	"say.phrase.7":         {"注入故障：服务繁忙", "injected: the service is busy"},
	"say.phrase.8":         {"保管该资源的服务没有应答", "the service that keeps the resource did not answer"},
}
