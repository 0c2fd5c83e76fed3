package views

// lifeText is the text of an order's life after payment: its statuses,
// the ledger rows of refunds, restocks and write-offs, abandoned tasks.
var lifeText = text{
	"code.PARTIALLY_SHIPPED":  {"部分发货", "PARTIALLY_SHIPPED"},
	"code.SHIPPED":            {"已发货", "SHIPPED"},
	"code.PARTIALLY_REFUNDED": {"部分退款", "PARTIALLY_REFUNDED"},
	"code.REFUNDED":           {"已退款", "REFUNDED"},
	"code.RETURNING":          {"退货中", "RETURNING"},
	"code.RETURNED":           {"已退货", "RETURNED"},
	"code.ABANDONED":          {"已放弃", "ABANDONED"},
	"code.REFUND":             {"退款回补", "REFUND"},
	"code.RESTOCK":            {"退货入库", "RESTOCK"},
	"code.WRITE_OFF":          {"报损", "WRITE_OFF"},
}

// lifeSection is the text of the chain's section on an order's life.
var lifeSection = text{
	"life.h2":              {"订单生命周期（按商品行）", "The order's life, line by line"},
	"life.explain":         {"每个商品行：下单占用多少，取消释放、支付扣减、发货、退款回补、退货及入库各多少。已发货的数量只能经退货入库回到库存。", "Each line: what was taken, and how much was cancelled, paid for, shipped, refunded, returned and taken back in. Shipped goods come back to stock only through a return's inbound."},
	"life.no_ops":          {"支付后还没有发货、退款或退货。", "Nothing shipped, refunded or returned since payment."},
	"life.col.sku":         {"商品", "SKU"},
	"life.col.qty":         {"下单", "Ordered"},
	"life.col.released":    {"已释放", "Released"},
	"life.col.held":        {"仍占用", "Held"},
	"life.col.deducted":    {"已支付", "Paid"},
	"life.col.shipped":     {"已发货", "Shipped"},
	"life.col.refunded":    {"已退款", "Refunded"},
	"life.col.returned":    {"已退货", "Returned"},
	"life.col.restocked":   {"已入库", "Restocked"},
	"life.col.written_off": {"已报损", "Written off"},
	"life.col.version":     {"版本", "Version"},
	"life.all_lines":       {"全部未发货的", "everything unshipped"},
	"life.restock":         {"入库", "restocked"},
	"life.write_off":       {"报损", "written off"},
	"life.col.at":          {"时间", "When"},
	"life.col.op":          {"操作", "Operation"},
	"life.col.id":          {"单号", "Id"},
	"life.col.lines":       {"商品行", "Lines"},
	"life.col.status":      {"之后状态", "Status after"},
	"life.col.epoch":       {"账本批次", "Ledger epoch"},
	"life.col.by":          {"操作人 / 原因", "By / reason"},
	"code.LINE_CANCEL":     {"取消商品行", "LINE_CANCEL"},
	"code.SHIP":            {"发货", "SHIP"},
	"code.RETURN":          {"退货", "RETURN"},
	"code.INBOUND":         {"退货入库确认", "INBOUND"},
	"code.RETURN_INBOUND":  {"退货入库", "RETURN_INBOUND"},

	"recon.check.LINE_HELD":            {"商品行占用与账本", "Line held vs ledger"},
	"recon.check.LINE_HELD.help":       {"每个订单商品行仍占用的量（下单 − 释放 − 支付）应等于它在账本里锁定减去释放和扣减的量；不等说明有人直接改了订单行。", "What each order line still holds (taken − released − paid) must equal its ledger's LOCK rows less its RELEASE and DEDUCT rows; a difference means the line was edited by hand."},
	"recon.check.LINE_AFTER_SALE":      {"商品行售后与账本", "Line after-sale vs ledger"},
	"recon.check.LINE_AFTER_SALE.help": {"每个订单商品行的退款、入库和报损数量应等于它在账本里的 REFUND、RESTOCK 和 WRITE_OFF 行；不等说明有人直接改了订单行。", "What each order line refunded, restocked and wrote off must equal its REFUND, RESTOCK and WRITE_OFF ledger rows; a difference means the line was edited by hand."},
}
