package views

// errorsText is the text of the refused releases and locks that the models
// store in English (errors_text.go): Chinese, and the English shape as
// stored, filled with the same parts.
var errorsText = text{
	"err.state.holder": {"%[1]s %[2]s 状态为「%[3]s」，%[4]s；释放要求它由订单 %[5]s 占用",
		"resource is not in the state the release expects: %[1]s %[2]s is %[3]s, held by %[4]s, not by order %[5]s"},
	"err.state.hold": {"订单 %[1]s 在%[3]s %[4]s 上的占用不足 %[2]s，与释放的数量不符",
		"resource is not in the state the release expects: order %[1]s does not hold %[2]s of %[3]s %[4]s"},
	"err.state.unregistered": {"资源类型 %[1]s 未注册：资源声明文件里还有它吗？",
		"resource is not in the state the release expects: resource type %[1]s is not registered: is it still in the resources file?"},
	"err.short":   {"%[1]s %[2]s 当前占用少于订单 %[3]s 要%[4]s的 %[5]s", "held amount is smaller than the release: %[1]s %[2]s, order %[3]s, %[4]s %[5]s"},
	"err.missing": {"%[1]s %[2]s 的记录已不存在", "resource row does not exist: %[1]s %[2]s"},
	"err.lock.short": {"%[1]s：%[2]s %[3]s 可用 %[4]s，订单 %[5]s 需要 %[6]s",
		"%[1]s: %[2]s %[3]s has %[4]s, order %[5]s asks %[6]s"},
	"err.lock.missing": {"%[1]s：%[2]s %[3]s 无记录", "%[1]s: %[2]s %[3]s"},
	"err.lock.expired": {"积分已过期：%[1]s %[2]s 已于 %[3]s 过期，订单 %[4]s 需要 %[5]s",
		"the account's points have expired: %[1]s %[2]s expired at %[3]s, order %[4]s asks %[5]s"},
	"err.lock.coupon":   {"优惠券不可用：优惠券 %[1]s 状态为「%[2]s」，到期时间 %[3]s", "coupon cannot be used: coupon %[1]s is %[2]s, expires %[3]s"},
	"err.lock.taken":    {"%[1]s：%[2]s %[3]s 状态为「%[4]s」", "%[1]s: %[2]s %[3]s is %[4]s"},
	"err.lock.nocoupon": {"优惠券不可用：优惠券 %[1]s 不存在", "coupon cannot be used: coupon %[1]s does not exist"},
	"err.place":         {"订单 %[1]s 下单失败：%[2]s", "place order %[1]s: %[2]s"},
	// Who holds a coupon or a seat, as the state shape above says it.
	"err.holder.nobody": {"未被任何订单占用", "held by nobody"},
	"err.holder.order":  {"却由订单 %s 占用", "held by order %s"},
	// The raw text's hover title says what it is.
	"err.raw": {"原文：%s", "As stored: %s"},
}
