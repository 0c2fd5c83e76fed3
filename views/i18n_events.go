package views

// eventsText is the text of the chain's section on an order's events.
var eventsText = text{
	"events.h2":       {"事件（对外通知）", "Events (what other systems hear)"},
	"events.explain":  {"与订单事实在同一事务中写下的事件，可经 GET /api/v1/events 轮询或由 webhook 推送；保留期满后清理。", "Events written in the same transaction as the order's facts, polled through GET /api/v1/events or sent by webhooks; cleaned up after they are kept for -events-keep."},
	"events.none":     {"还没有事件，或已过保留期被清理。", "No events yet, or they were cleaned up after their keeping time."},
	"events.col.at":   {"时间", "When"},
	"events.col.type": {"事件", "Event"},
	"events.col.data": {"数据", "Data"},

	"event.hold.released":       {"资源已释放", "Hold released"},
	"event.order.closed":        {"订单已关闭", "Order closed"},
	"event.order.refunded":      {"已退款", "Refunded"},
	"event.return.inbound":      {"退货已入库", "Return taken in"},
	"event.task.manual":         {"任务转人工", "Task went manual"},
	"event.recon.ticket_opened": {"对账开单", "Reconciliation ticket opened"},
}
