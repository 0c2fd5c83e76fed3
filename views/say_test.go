package views

import (
	"strings"
	"testing"
)

// Stored English sentences, as the code writes them, come out in Chinese;
// English viewers see them as stored, and a text of no known shape is
// left as it is.
func TestSay(t *testing.T) {
	t.Parallel()
	zh, en := Page{Lang: LangZH}, Page{Lang: LangEN}
	hit := map[string]bool{}
	for _, c := range []struct{ stored, want string }{
		{"closed 1 unpaid orders past their deadline, 1 pages", "关闭了 1 个超过支付截止的未支付订单，分 1 批"},
		{"counted 2 crashed tries (leases expired without an outcome)", "记为崩溃的尝试 2 次（租约到期而没有结果）"},
		{"2026-11-28 (Asia/Shanghai): 0 ledger rows", "2026-11-28（Asia/Shanghai）：账本 0 行"},
		{"2026-11-28 (UTC): 5 ledger rows — inventory 3, coupon 2", "2026-11-28（UTC）：账本 5 行——库存 3，优惠券 2"},
		{"coupon PLATFORM RELEASE: 2 rows, qty 2\ninventory LOCK: 3 rows, qty -4", "优惠券 平台券 释放：2 行，数量 2\n库存 锁定：3 行，数量 -4"},
		{"deleted 3 attempts of finished tasks and 1 job runs from before 2026-08-31 10:00Z (kept 90 days), 7 overview rollup rows from before 2026-11-20 10:00Z; 0 ended sessions and login throttles",
			"删除了 2026-08-31 10:00Z 之前已完成任务的尝试记录 3 条、定时任务运行记录 1 条（保留 90 天），2026-11-20 10:00Z 之前的概览汇总 7 行；已结束的会话与登录限流 0 条"},
		{"wrote unhold-20261205T031500Z.db (1048576 bytes); removed 1 older backups, keeping the newest 7",
			"已写入备份 unhold-20261205T031500Z.db（1048576 字节）；删除较旧的备份 1 个，保留最新的 7 个"},
		{"deleted 3 attempts of finished tasks and 1 job runs from before 2026-08-31 10:00Z (kept 90 days), 2 webhook deliveries delivered before 2026-11-22 10:00Z, 7 overview rollup rows from before 2026-11-20 10:00Z, 5 events from before 2026-11-28 10:00Z (kept 7 days); 0 ended sessions and login throttles",
			"删除了 2026-08-31 10:00Z 之前已完成任务的尝试记录 3 条、定时任务运行记录 1 条（保留 90 天），2026-11-22 10:00Z 之前已送达的 Webhook 投递 2 条，2026-11-20 10:00Z 之前的概览汇总 7 行，2026-11-28 10:00Z 之前的事件 5 条（保留 7 天）；已结束的会话与登录限流 0 条"},
		{"1 task(s) made due", "1 个任务已重新排队"},
		{"run 4: 2 diffs, 1 new tickets, 0 closed", "第 4 次对账：发现差异 2 处，新开工单 1 个，自动关闭 0 个"},
		{"run 5: 0 diffs, 0 new tickets, 0 closed; partial: giftcard 8 keys not checked (no answer 5, answered for another key 3); seat 2 keys not checked (refused 2)",
			"第 5 次对账（部分完成）：发现差异 0 处，新开工单 0 个，自动关闭 0 个；未能核对：giftcard 8 个键未核对（对方未应答 5，答非所问 3）；seat 2 个键未核对（对方拒绝 2）"},
		{"giftcard 1 keys not checked (outcome unknown 1)", "giftcard 1 个键未核对（结果未知 1）"},
		{"PLATFORM coupon for u1, expires 2026-12-01 10:00:00Z", "给 u1 的平台券，2026-12-01 10:00:00Z 到期"},
		{"TIMEOUT: warehouse stock service timed out", "超时：仓库库存服务超时"},
		{"timed out after 10m0s: context deadline exceeded", "超过 10m0s 未完成：超时未应答"},
		{"inventory sku-1: held amount is smaller than the release", "inventory sku-1: 占用量小于要释放的数量"},
		{"rerun by ops-li: stock fixed", "ops-li 重跑：stock fixed"},
		{"something nobody wrote down", "something nobody wrote down"},
		{"job reconcile already running on node-1 since 2026-11-29T10:00:00Z", "定时任务 reconcile 已在 node-1 上运行，始于 2026-11-29T10:00:00Z"},
		{"held by node-1 (cron) since 2026-11-29T10:00:00Z", "由 node-1（cron）持有，始于 2026-11-29T10:00:00Z"},
		{"nothing to rerun", "没有可重跑的任务"},
		{"available 5 → 7", "可用 5 → 7"},
		{"available 5 → 7, release delay 30s", "可用 5 → 7，释放延迟 30 秒"},
		{"BALANCE +100", "余额 +100"},
		{"total 400", "总量 400"},
		{"created FREE", "已创建，空闲"},
		{"exists already", "已存在"},
		{"started in the background", "已在后台开始"},
		{"now ACKED", "现为ACKED"},
		{"late payment could not take back every hold: inventory sku-1", "迟到支付未能取回全部占用：inventory sku-1"},
		{"2 session(s) ended", "结束了 2 个会话"},
		{"viewer", "客服（只读）"},
		{"viewer→operator", "客服（只读）→运维"},
		{"operator, uh_abcd1234…", "运维，uh_abcd1234…"},
		{"uh_abcd1234…; its creator user:li was disabled", "uh_abcd1234…；创建者 user:li 已被停用"},
		{"user changed during login", "登录过程中用户被修改"},
		{"name locked at this address after 5 failures", "此地址失败 5 次后锁定该用户名"},
		{"name locked after 20 failures from all addresses", "所有地址共失败 20 次后锁定该用户名"},
		{"30 attempts from 10.0.0.1", "来自 10.0.0.1 的尝试 30 次"},
	} {
		if got := zh.Say(c.stored); got != c.want {
			t.Errorf("Say(%q) = %q, want %q", c.stored, got, c.want)
		}
		if got := en.Say(c.stored); got != c.stored {
			t.Errorf("English Say(%q) = %q, want it as stored", c.stored, got)
		}
		// The first line's shape, filled in English with the parts as
		// captured, is the stored sentence: pattern and catalog agree.
		line, _, _ := strings.Cut(c.stored, "\n")
		for _, sh := range shapes {
			if m := sh.re.FindStringSubmatch(line); m != nil {
				hit[sh.key] = true
				args := make([]any, len(m)-1)
				for i, a := range m[1:] {
					args[i] = a
				}
				if back := en.Tf(sh.key, args...); back != line {
					t.Errorf("%s in English = %q, stored %q", sh.key, back, line)
				}
				break
			}
		}
	}
	for _, sh := range shapes {
		if !hit[sh.key] {
			t.Errorf("shape %s has no example here", sh.key)
		}
	}
}
