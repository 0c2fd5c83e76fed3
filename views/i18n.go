package views

// text maps a catalog key to its Chinese and English text.
type text map[string][2]string

// catalogSets are the catalog's parts, each page's own set kept in its own
// file; a key belongs to one set only (a test checks).
var catalogSets = []text{commonText, overviewText, liveText, ordersText, tasksText, ledgerText, reconText, jobsText, authText, resourcesText,
	searchText, lifeText, lifeSection, readableText, linksText, actionsText, reconGroupText, stockText,
	fixText, causeText, errorsText, zoneText, ordersHeldText, ownersText, ageingText, approvalsText, retryText, remoteKeyText, opsText,
	eventsText, webhooksText}

// catalog is every string the dashboard shows.
var catalog = merge(catalogSets...)

func merge(sets ...text) text {
	out := text{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

// commonText is the layout's text and every status, class, trigger, type
// and error code, which any page may show.
var commonText = text{
	"app.tagline":   {"关单资源释放", "releases of closed orders' holds"},
	"nav.overview":  {"概览", "Overview"},
	"nav.orders":    {"订单", "Orders"},
	"nav.tasks":     {"释放任务", "Tasks"},
	"nav.inventory": {"库存", "Inventory"},
	"nav.coupons":   {"优惠券", "Coupons"},
	"nav.balances":  {"余额与积分", "Balances"},
	"nav.report":    {"日报", "Report"},
	"nav.recon":     {"对账", "Recon"},
	"nav.jobs":      {"定时任务", "Jobs"},
	"nav.main":      {"主导航", "Main navigation"},
	"print":         {"打印", "Print"},
	"filter":        {"筛选", "Filter"},
	"reset":         {"清除", "Reset"},
	"next":          {"下一页", "Next page"},
	"first":         {"第一页", "First page"},
	"pager":         {"翻页", "Pages"},
	"empty":         {"没有符合条件的记录。", "Nothing matches."},
	"yes":           {"是", "yes"},
	"no":            {"否", "no"},
	"all":           {"全部", "All"},

	"error.title":    {"出错了", "Something went wrong"},
	"error.back":     {"返回概览", "Back to the overview"},
	"error.notfound": {"页面不存在。请检查链接，或从导航重新进入。", "There is no such page. Check the link, or start again from the navigation."},
	"error.bad":      {"请求有误：", "The request is not valid: "},
	"error.internal": {"服务器内部错误。请稍后重试；若持续出现，请把此页链接发给运维。", "Internal error. Try again later; if it persists, send this page's link to ops."},
	"error.busy":     {"数据库正忙，请稍后重试。", "The database is busy; try again in a moment."},

	"ago.s":    {"%d 秒前", "%d s ago"},
	"ago.m":    {"%d 分钟前", "%d min ago"},
	"ago.h":    {"%d 小时前", "%d h ago"},
	"ago.d":    {"%d 天前", "%d days ago"},
	"ago.in.s": {"%d 秒后", "in %d s"},
	"ago.in.m": {"%d 分钟后", "in %d min"},
	"ago.in.h": {"%d 小时后", "in %d h"},
	"ago.in.d": {"%d 天后", "in %d days"},

	"code.PENDING":        {"待处理", "PENDING"},
	"code.PAID":           {"已支付", "PAID"},
	"code.CLOSED":         {"已关闭", "CLOSED"},
	"code.REFUND_PENDING": {"待退款", "REFUND_PENDING"},
	"code.DONE":           {"已完成", "DONE"},
	"code.RETRY":          {"重试中", "RETRY"},
	"code.MANUAL":         {"人工处理", "MANUAL"},
	"code.SUPERSEDED":     {"已被迟到支付接管", "SUPERSEDED"},
	"code.DUPLICATE":      {"重复（账本已有）", "DUPLICATE"},
	"code.LEASE_LOST":     {"租约已失", "LEASE_LOST"},

	"code.inventory": {"库存", "Stock"},
	"code.coupon":    {"优惠券", "Coupon"},
	"code.balance":   {"余额", "Balance"},
	"code.points":    {"积分", "Points"},
	"code.quota":     {"活动名额", "Activity quota"},
	"code.slot":      {"座位/时段", "Seat / slot"},

	"code.LOCK":    {"锁定", "LOCK"},
	"code.DEDUCT":  {"扣减", "DEDUCT"},
	"code.RELEASE": {"释放", "RELEASE"},
	"code.ADJUST":  {"调整", "ADJUST"},

	"code.PLACE":        {"下单", "PLACE"},
	"code.PAY":          {"支付", "PAY"},
	"code.USER_CANCEL":  {"用户取消", "USER_CANCEL"},
	"code.TIMEOUT":      {"超时关单", "TIMEOUT"},
	"code.ADMIN":        {"后台关单", "ADMIN"},
	"code.RERUN":        {"人工重跑", "RERUN"},
	"code.LATE_PAYMENT": {"迟到支付", "LATE_PAYMENT"},
	"code.SETUP":        {"初始化/调整", "SETUP"},
	// A placement whose remote lock was refused or not answered.
	"code.STOCK_GONE":    {"支付时库存已无", "STOCK_GONE"},
	"code.PLACE_ABORTED": {"下单中止", "PLACE_ABORTED"},
	// A remote type's LOCK ledger row, written before the lock is sent.
	"code.SENT": {"已发送", "SENT"},

	// Error classes; TIMEOUT as a class is not the TIMEOUT close trigger.
	"class.TIMEOUT":         {"超时", "TIMEOUT"},
	"class.LOCKED_SHORT":    {"锁定量不足", "LOCKED_SHORT"},
	"class.STATE_MISMATCH":  {"状态不符", "STATE_MISMATCH"},
	"class.NOT_FOUND":       {"资源不存在", "NOT_FOUND"},
	"class.DB_BUSY":         {"数据库繁忙", "DB_BUSY"},
	"class.CONNECTION":      {"连接中断", "CONNECTION"},
	"class.UNKNOWN":         {"未知错误", "UNKNOWN"},
	"class.CRASHED":         {"执行崩溃", "CRASHED"},
	"class.RETRY_EXHAUSTED": {"重试耗尽", "RETRY_EXHAUSTED"},
	"class.REMOTE_BUSY":     {"远程服务繁忙", "REMOTE_BUSY"},
	"class.REMOTE_REJECTED": {"远程服务拒绝", "REMOTE_REJECTED"},
	"class.REMOTE_PROTOCOL": {"远程应答不合协议", "REMOTE_PROTOCOL"},

	"code.UNUSED":  {"未使用", "UNUSED"},
	"code.LOCKED":  {"已锁定", "LOCKED"},
	"code.USED":    {"已使用", "USED"},
	"code.EXPIRED": {"已过期", "EXPIRED"},
	"code.FREE":    {"空闲", "FREE"},
	"code.HELD":    {"占用中", "HELD"},
	"code.SOLD":    {"已售", "SOLD"},

	"code.PLATFORM": {"平台券", "PLATFORM"},
	"code.MERCHANT": {"商家券", "MERCHANT"},
	"code.BALANCE":  {"余额", "BALANCE"},
	"code.POINTS":   {"积分", "POINTS"},

	"code.INVALID_INPUT":        {"输入无效", "INVALID_INPUT"},
	"code.RESOURCE_NOT_FOUND":   {"资源不存在", "RESOURCE_NOT_FOUND"},
	"code.ORDER_EXISTS":         {"订单号已存在", "ORDER_EXISTS"},
	"code.INSUFFICIENT_STOCK":   {"库存不足", "INSUFFICIENT_STOCK"},
	"code.COUPON_UNAVAILABLE":   {"优惠券不可用", "COUPON_UNAVAILABLE"},
	"code.INSUFFICIENT_BALANCE": {"余额不足", "INSUFFICIENT_BALANCE"},
	"code.INSUFFICIENT_POINTS":  {"积分不足", "INSUFFICIENT_POINTS"},
	"code.POINTS_EXPIRED":       {"积分已过期", "POINTS_EXPIRED"},
	"code.QUOTA_EXHAUSTED":      {"活动名额已满", "QUOTA_EXHAUSTED"},
	"code.SLOT_TAKEN":           {"座位/时段已被占用", "SLOT_TAKEN"},
	"code.ORDER_NOT_CLOSABLE":   {"订单不可关闭", "ORDER_NOT_CLOSABLE"},
	"code.ORDER_NOT_PAYABLE":    {"订单不可支付", "ORDER_NOT_PAYABLE"},
	"code.NOTHING_TO_RERUN":     {"没有可重跑的任务", "NOTHING_TO_RERUN"},
	"code.STOCK_CONFLICT":       {"调整会低于已占用量", "STOCK_CONFLICT"},
	"code.BALANCE_OVERFLOW":     {"超出账户余额上限", "BALANCE_OVERFLOW"},
	"code.REMOTE_REJECTED":      {"远程服务拒绝", "REMOTE_REJECTED"},
	"code.REMOTE_UNAVAILABLE":   {"远程服务无应答", "REMOTE_UNAVAILABLE"},
	"code.BUSY":                 {"数据库繁忙", "BUSY"},
	"code.URI_TOO_LONG":         {"请求地址过长", "URI_TOO_LONG"},
	"code.INTERNAL":             {"内部错误", "INTERNAL"},
	"code.NOT_FOUND":            {"不存在", "NOT_FOUND"},
}
