package views

// ordersHeldText is the text of the orders list's held column and of its
// filters by what an order held and when it was closed.
var ordersHeldText = text{
	"held.col": {"占用", "Held"},
	"held.col.help": {"订单占用过的每类资源，标记其现状（悬停可见各个键）：",
		"Each resource type the order held, marked by where its holds stand (hover for each key):"},
	"held.key": {"%s %s：%s", "%s %s: %s"},

	"held.type.inventory": {"库存", "stock"},
	"held.type.coupon":    {"券", "coupon"},
	"held.type.balance":   {"余额", "balance"},
	"held.type.points":    {"积分", "points"},
	"held.type.quota":     {"名额", "quota"},
	"held.type.slot":      {"座位", "seat"},

	"held.state.MANUAL":    {"释放失败，需人工处理", "MANUAL: its release needs ops"},
	"held.state.RETRY":     {"释放失败，重试中", "retrying its release"},
	"held.state.RELEASING": {"释放中", "releasing"},
	"held.state.HOLDING":   {"仍占用", "still held"},
	"held.state.RELEASED":  {"已退回", "released: came back"},
	"held.state.PAID":      {"已随支付扣减", "consumed by payment"},
	"held.state.NONE":      {"未占用", "held nothing"},

	"held.f.type":        {"占用类型", "Held type"},
	"held.f.key":         {"占用的键", "Held key"},
	"held.f.key.hint":    {"SKU、券号…，需选类型", "SKU, coupon id…; needs a type"},
	"held.f.closed_from": {"关闭日期自", "Closed from"},
	"held.f.closed_to":   {"关闭日期至", "Closed to"},
}
