package views

// searchText is the text of the search box in the header and of its
// results page.
var searchText = text{
	"search.label": {"搜索", "Search"},
	// The placeholder fits the header's box at 1366 px (static/app.css);
	// the title says everything the box finds.
	"search.placeholder": {"搜索订单号、用户、券、SKU、任务…", "Order, user, SKU…"},
	"search.box.title":   {"搜索订单号、用户、券、SKU、任务或资源键", "Search orders, users, coupons, SKUs, tasks or resource keys"},
	"search.title":       {"搜索", "Search"},
	"search.submit":      {"搜索", "Search"},
	"search.hint": {"输入订单号、用户 ID、券号、SKU、任务号，或活动、座位/时段、资源的键：不区分大小写，输入开头几位即可。完全一致的那一项会直接打开。",
		"Type an order number, a user id, a coupon number, a SKU, a task number, or an activity's, a slot's or a resource's key: case does not matter, and the first few characters are enough. An exact match opens at once."},
	"search.bad": {"只能搜索 1–64 个字母、数字或 - _ . :，“%s”不行。没有执行搜索。",
		"A search is 1-64 letters, digits or - _ . :, and \"%s\" is not. Nothing was searched."},
	"search.none":   {"没有找到以“%s”开头的订单号、用户、SKU、活动、座位/时段或资源键，也没有这个号码的券或任务。", "No order number, user, SKU, activity, slot or resource key starts with \"%s\", and no coupon or task has that number."},
	"search.found":  {"以“%s”开头（不区分大小写）：", "Starting with \"%s\" (any case):"},
	"search.more":   {"超过 %d 项，只列出前 %d 项：请多输入几位。", "More than %d; the first %d are listed: type a few more characters."},
	"search.nopage": {"暂无页面", "no page yet"},

	"search.kind.order":    {"订单", "Orders"},
	"search.kind.user":     {"用户", "Users"},
	"search.kind.coupon":   {"优惠券", "Coupons"},
	"search.kind.sku":      {"SKU 库存", "SKU stock"},
	"search.kind.task":     {"释放任务", "Release tasks"},
	"search.kind.activity": {"活动名额", "Activity quotas"},
	"search.kind.slot":     {"座位/时段", "Seats / slots"},

	"search.col.key":     {"键", "Key"},
	"search.col.status":  {"状态", "Status"},
	"search.col.details": {"详情", "Details"},
	"search.user":        {"用户", "User"},
	"search.order":       {"订单", "Order"},
	"search.resource":    {"资源", "Resource"},
	"search.frozen":      {"冻结 %s", "froze %s"},
	"search.last":        {"最近订单", "Last order"},
	"search.account":     {"余额与积分", "Balance & points"},
	"search.comma":       {"，", ", "},
}
