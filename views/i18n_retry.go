package views

// retryText is the retry policies' text on the task pages.
var retryText = text{
	"retry.try":            {"第 %d/%d 次尝试，%s（策略：%s）", "try %d of %d, %s (policy: %s)"},
	"retry.next":           {"%s重试", "next %s"},
	"retry.due":            {"已到期，等待执行", "due now"},
	"retry.policy.default": {"默认", "default"},
}
