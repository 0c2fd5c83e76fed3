package views

// fixText is the text of corrections: a key's row beside its ledger, the
// form that corrects it, and what a correction did.
var fixText = text{
	"fix.title":  {"校正", "Correct the numbers"},
	"fix.row":    {"当前数值", "Now"},
	"fix.ledger": {"账本应为", "Ledger says"},
	"fix.agrees": {"当前数值与账本一致：没有人在 unhold 之外改过它。", "The numbers agree with the ledger: nobody changed them outside unhold."},
	"fix.differs": {"当前数值与账本不一致：有人在 unhold 之外改过它（手工改库、脚本）。释放可能因此停下；校正后再重跑。",
		"The numbers differ from the ledger: someone changed them outside unhold (a hand edit, a script). A release may stop on it; correct it, then rerun."},
	"fix.how": {"校正把锁定量和已用量恢复为账本的数（只有订单能占用或扣减），可用量设为你清点的数，并记一笔「校正」调整流水（与账本的差额）和一条审计记录。对账随后按新的数核对。",
		"A correction puts the held and spent amounts back to the ledger's (only orders hold or spend), sets available to what you counted, and writes a CORRECTION adjust row (the difference from the ledger) and an audit entry. Reconciliation then checks against the new numbers."},
	"fix.available":      {"%s（%s）", "%s (%s)"},
	"fix.available.help": {"账本为 %s，当前为 %s；实际清点与账本不同时填实际数。", "The ledger says %s, the row has %s; if what you counted differs from the ledger, type what you counted."},
	"fix.unit.fen":       {"单位：分", "in fen"},
	"fix.unit.points":    {"单位：积分", "in points"},
	"fix.unit.count":     {"数量", "a count"},
	"fix.reason":         {"原因（必填，写入审计）", "Reason (required, audited)"},
	"fix.submit":         {"校正", "Correct"},

	"fix.coupon.title":   {"校正优惠券 #%d", "Correct coupon #%d"},
	"fix.coupon.missing": {"这张券没有账本记录，无从恢复。", "This coupon has no ledger row to go back to."},
	"fix.coupon.status":  {"状态", "Status"},
	"fix.coupon.order":   {"占用订单", "Held by order"},
	"fix.coupon.expire":  {"到期时间", "Expires"},
	"fix.coupon.agrees":  {"这张券的状态与账本一致。", "The coupon's state agrees with its ledger."},
	"fix.coupon.differs": {"这张券的状态与账本不一致：有人在 unhold 之外改过它。释放会因此停下（状态不符）；恢复为账本的状态后再重跑，释放会留下完整流水。",
		"The coupon's state differs from its ledger: someone changed it outside unhold. A release stops on it (STATE_MISMATCH); put it back to the ledger's state, then rerun, and the release leaves a full ledger trail."},
	"fix.coupon.submit": {"恢复为账本状态", "Put back to the ledger's state"},

	"fix.flash.counter": {"已校正 %s：%s。", "Corrected %s: %s."},
	"fix.flash.coupon":  {"已把优惠券 #%s 恢复为 %s。", "Coupon #%s put back to %s."},
	"fix.flash.changed": {"%s 在你打开页面之后变了（有订单占用或释放），未做改动；请看下面的最新数值，核对后再校正。",
		"%s changed after you opened the page (an order held or gave back), so nothing was changed; check the numbers below as they are now, then correct again."},
	"fix.flash.nothing": {"%s 已与账本一致，未做改动。", "%s already agrees with its ledger: nothing changed."},
	"fix.flash.rerun":   {"现在可以重跑订单 %s 的释放。", "The release of order %s can be rerun now."},
	"fix.flash.bad":     {"可用量须为 0 到 %s 的整数，收到“%s”；未做改动。", "Available must be a whole number from 0 to %s, not “%s”; nothing changed."},
	"fix.change":        {"%s %s → %s", "%s %s → %s"},
	"fix.recorded":      {"数值未变，账本记入 %s", "numbers unchanged, %s recorded in the ledger"},
	"fix.sep":           {"，", ", "},

	"orders.flash.released": {"已重跑 %d 个任务：释放完成。", "Reran %d task(s): released."},

	"code.CORRECTION":         {"人工校正", "CORRECTION"},
	"code.audit.correct":      {"校正数值", "numbers corrected"},
	"code.NOTHING_TO_CORRECT": {"无需校正", "NOTHING_TO_CORRECT"},
}

// causeText says a stopped task's cause as read now (views.TaskCause).
var causeText = text{
	"cause.short.gone": {"原因已消除：当前锁定 %s，与账本一致，够待支付订单和未完成任务所需（含本任务 %s），重跑将释放。",
		"The cause is gone: %s held now agrees with the ledger and covers what pending orders and unfinished tasks need, this task's %s included; a rerun will release."},
	"cause.short.row": {"原因仍在：当前锁定 %s，账本记为 %s，说明有人在 unhold 之外改过它；此时重跑可能拿走别的订单的占用。先校正，再重跑。",
		"The cause is still there: %s held now, the ledger says %s, so someone changed it outside unhold; a rerun now could take another order's hold. Correct it first, then rerun."},
	"cause.short.ledger": {"原因仍在：当前锁定 %s，与账本一致，但待支付订单和未完成任务需要 %s（含本任务 %s）：差额已经以别的方式回来了，重跑无法如数释放。请管理员放弃此任务，并查看对账工单。",
		"The cause is still there: %s held now agrees with the ledger, but pending orders and unfinished tasks need %s, this task's %s included: the difference came back another way, and no rerun can give it back again. An admin abandons the task; see the reconciliation tickets."},
	"cause.coupon.gone": {"原因已消除：这张券又由本订单锁定，重跑将释放。", "The cause is gone: the coupon is held by this order again; a rerun will release."},
	"cause.coupon.row": {"原因仍在：这张券现在是%s（占用订单 %s），账本记的是%s，说明有人在 unhold 之外改过它。先恢复为账本状态，再重跑。",
		"The cause is still there: the coupon is %s now (held by %s), its ledger says %s, so someone changed it outside unhold. Put it back to the ledger's state first, then rerun."},
	"cause.coupon.ledger": {"原因仍在：这张券现在是%s（占用订单 %s），账本也记为%s：它已不由本订单占用，重跑无法释放。请管理员放弃此任务。",
		"The cause is still there: the coupon is %s now (held by %s), and its ledger says %s too: this order no longer holds it, and no rerun can release it. An admin abandons the task."},
	"cause.missing":      {"原因仍在：%s 不存在。", "The cause is still there: %s does not exist."},
	"cause.missing.gone": {"原因已消除：%s 现在存在，重跑将释放。", "The cause is gone: %s exists now; a rerun will release."},
	"cause.fix":          {"去校正 →", "Correct it →"},
	"cause.abandon":      {"查看任务 →", "Open the task →"},
}
