package views

// stockText is the SKU page's stock model and per-user limit.
var stockText = text{
	"stock.deduct_at":  {"扣减时机", "Stock taken at"},
	"stock.at.order":   {"下单（锁定至关单）", "order (locked until close)"},
	"stock.at.payment": {"支付（未支付不占库存）", "payment (nothing held while unpaid)"},
	"stock.limit":      {"每用户限购（单/秒）", "Per-user limit (orders / s)"},
	"stock.nolimit":    {"不限", "none"},
	"stock.seconds":    {" 秒", " s"},
}
