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
