package views

// actionsText is the text of acting on one task (its reason, rerun and
// abandon), of the bulk rerun's ticked list and of grouped tickets.
var actionsText = text{
	"tasks.f.key":  {"资源键（需选资源类型）", "Key (with its type)"},
	"tasks.f.from": {"创建于此后", "Created from"},
	"tasks.f.to":   {"创建于此前（不含）", "Created before"},

	"tasks.why.exhausted": {"%d/%d 次尝试均失败，最后一次（%s）：%s —— 排除故障后重跑", "%d of %d tries failed, last (%s): %s — fix the cause, then rerun"},
	"tasks.why.short.stock": {"库存不足：当前锁定 %d，待支付订单和未完成任务需要 %d —— 释放无法如数进行，核对后放弃此任务",
		"stock short: locked %d, pending orders and unfinished tasks need %d — no release can give it back; check, then abandon the task"},
	"tasks.why.short.row": {"%s的锁定量在 unhold 之外被改过：当前 %d，账本记为 %d —— 先校正，再重跑",
		"%s's held amount was changed outside unhold: %d now, the ledger says %d — correct it, then rerun"},
	"tasks.why.short": {"%s 占用不足：当前占用 %d，待支付订单和未完成任务需要 %d —— 释放无法如数进行，核对后放弃此任务",
		"%s held short: held %d, pending orders and unfinished tasks need %d — no release can give it back; check, then abandon the task"},
	"tasks.why.short.stock.fixed": {"库存已够：当前锁定 %d，需要释放 %d —— 原因已消除，重跑即可释放",
		"stock is enough again: locked %d, needed %d — the cause is gone; a rerun will release"},
	"tasks.why.short.fixed": {"%s 占用已够：当前占用 %d，需要释放 %d —— 原因已消除，重跑即可释放",
		"%s holds enough again: held %d, needed %d — the cause is gone; a rerun will release"},
	"tasks.why.short.unknown": {"%s 占用不足：需要释放 %d，但占用量已不够 —— 先修正占用量，再重跑",
		"%s held short: %d to release, and less is held — fix the held amount, then rerun"},
	"tasks.why.state": {"%s 状态不符，无法释放：%s —— 手工核对后重跑，若永远无法成功则放弃",
		"%s is not in the state a release needs: %s — check it by hand, then rerun, or abandon the task if it can never succeed"},
	"tasks.why.notfound": {"%s %s 已不存在 —— 重新创建后重跑，或放弃该任务",
		"%s %s no longer exists — create it again and rerun, or abandon the task"},
	"tasks.why.rejected": {"远程服务拒绝了释放：%s —— 与该服务核对后重跑，或放弃该任务",
		"the service refused the release: %s — settle it with the service, then rerun, or abandon the task"},
	"tasks.why.other": {"%s：失败 %d 次 / 尝试 %d 次，最后一次：%s —— 排除故障后重跑",
		"%s: %d failure(s) in %d tries, last: %s — fix the cause, then rerun"},

	"tasks.detail.tickets":   {"这个资源键有未解决的对账工单：", "This key has unresolved reconciliation tickets:"},
	"tasks.detail.ticket":    {"工单 #%d", "ticket #%d"},
	"tasks.one.rerun":        {"重跑此任务", "Rerun this task"},
	"tasks.one.rerun.help":   {"只让此任务立即重新到期，由 worker 执行；失败次数清零，并写入审计日志。", "Makes only this task due now; the worker releases it. Failures reset to 0, and the audit log keeps who and why."},
	"tasks.one.rerun.submit": {"重跑此任务", "Rerun this task"},
	"tasks.one.done":         {"任务 #%d 已置为待处理，等待 worker 执行。", "Task #%d made due; a worker will try it."},
	"tasks.one.released":     {"任务 #%d 已重跑：释放完成。", "Task #%d was rerun: released."},
	"tasks.one.failed":       {"任务 #%d 已重跑，但这次尝试仍失败，现为 %s（%s）：%s", "Task #%d was rerun, but the try failed again; it is %s now (%s): %s"},
	"tasks.one.waiting":      {"任务 #%d 已置为待处理，%s 内还没有 worker 执行完它；稍后刷新本页查看结果。", "Task #%d made due; no worker finished it within %s. Refresh this page later to see how it went."},
	"tasks.one.nothing":      {"未做任何更改（NOTHING_TO_RERUN）：任务 #%d 现在是 %s，只有 RETRY 或 MANUAL 任务可以重跑。", "Nothing was changed (NOTHING_TO_RERUN): task #%d is %s now; only RETRY or MANUAL tasks can be rerun."},
	"tasks.one.noreason":     {"请填写原因。未做任何更改。", "Give a reason. Nothing was changed."},

	"tasks.abandon":         {"放弃此任务（仅管理员）", "Abandon this task (admins only)"},
	"tasks.abandon.help":    {"用于永远无法成功的任务（资源已删除、占用已在别处手工处理）：任务结束为“已放弃”，不释放任何资源；审计日志记录操作人与原因；之后对账会为其留下的占用开工单。", "For a task that can never succeed (its key was deleted, its hold was settled by hand elsewhere): the task ends ABANDONED and nothing is released; the audit log keeps who and why; reconciliation then opens a ticket for what it left held."},
	"tasks.abandon.reason":  {"原因（必填，写入审计日志）", "Reason (required; kept in the audit log)"},
	"tasks.abandon.submit":  {"放弃此任务", "Abandon this task"},
	"tasks.abandon.confirm": {"确定放弃任务 #%d？不会释放任何资源。", "Abandon task #%d? Nothing will be released."},
	"tasks.abandon.done":    {"任务 #%d 已放弃，未释放任何资源。下次对账将为其占用开工单。", "Task #%d abandoned; nothing was released. The next reconciliation opens a ticket for what it holds."},
	"tasks.abandon.refused": {"未做任何更改（TASK_NOT_ABANDONABLE）：任务 #%d 现在是 %s，或正有 worker 在执行；只能放弃无人执行的 RETRY 或 MANUAL 任务。", "Nothing was changed (TASK_NOT_ABANDONABLE): task #%d is %s now, or a worker is trying it; only a RETRY or MANUAL task no worker is trying can be abandoned."},

	"tasks.history":        {"对此任务的操作", "What people did to this task"},
	"tasks.history.at":     {"时间", "When"},
	"tasks.history.who":    {"操作人", "Who"},
	"tasks.history.what":   {"操作", "What"},
	"tasks.history.reason": {"原因", "Reason"},

	"tasks.act.rerun.ok":             {"重跑", "Rerun"},
	"tasks.act.rerun.refused":        {"重跑被拒绝", "Rerun refused"},
	"tasks.act.abandon_task.ok":      {"放弃", "Abandoned"},
	"tasks.act.abandon_task.refused": {"放弃被拒绝", "Abandon refused"},

	"tasks.bulk.pick":      {"重跑", "Rerun"},
	"tasks.bulk.more":      {"符合条件的任务不止这些：此处只列出最早的 %d 个。重跑后再回来处理其余的。", "More tasks match: only the oldest %d are listed. Rerun these, then come back for the rest."},
	"tasks.picked.submit":  {"重跑勾选的任务", "Rerun the ticked tasks"},
	"tasks.picked.confirm": {"确定重跑勾选的任务？", "Rerun the ticked tasks?"},
	"tasks.picked.none":    {"请至少勾选一个任务。未做任何更改。", "Tick at least one task. Nothing was changed."},
	"tasks.picked.done":    {"已将 %d 个任务置为待处理，等待 worker 执行；结果见任务列表。", "%d task(s) made due; a worker will try them, and the list shows how each ends."},
	"tasks.picked.changed": {"另有 %d 个勾选的任务其间已变化，未重跑：%s", "%d ticked task(s) changed meanwhile and were left alone: %s"},
	"tasks.picked.nothing": {"未做任何更改（NOTHING_TO_RERUN）：勾选的任务其间都已变化：%s", "Nothing was changed (NOTHING_TO_RERUN): every ticked task changed meanwhile: %s"},
}

// reconGroupText is the text of a ticket that groups a key's checks and
// names the tasks abandoned on it.
var reconGroupText = text{
	"recon.checks":             {"不一致的检查项", "Checks that disagree"},
	"recon.checks.help":        {"同一资源键的各项检查合并为一张工单，各自保留期望值与实际值；上面的期望/实际/差值为第一项。", "The checks of one key that disagree make one ticket, each keeping its expected and actual; the expected, actual and difference above are the first one's."},
	"recon.abandoned":          {"已放弃的任务", "Abandoned tasks"},
	"recon.abandoned.task.pre": {"仍占用 %d：任务", "still holding %d: task"},
	"recon.abandoned.task.by":  {"（订单），由 %s 放弃：%s", "(order), abandoned by %s: %s"},
	"recon.abandoned.help":     {"任务被放弃后不再计入“未完成”，它留下的占用因此超出预期；请手工处理这些占用后解决工单。", "An abandoned task no longer counts as unfinished, so what it left held exceeds what is expected: settle it by hand, then resolve the ticket."},
}
