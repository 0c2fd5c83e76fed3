package views

// liveText is the text of the self-refreshing pages (the stamp saying
// when a page was drawn, and its auto-refresh) and of the overview's time
// ranges.
var liveText = text{
	"live.drawn":   {"页面数据时间 %s", "drawn at %s"},
	"live.every":   {"每 %d 秒自动刷新", "refreshes every %d s"},
	"live.paused":  {"自动刷新暂停中：正在输入、选择或页面不可见", "auto-refresh paused while you type, select or the tab is hidden"},
	"live.idle":    {"自动刷新已暂停：10 分钟无操作（动一下鼠标或键盘即恢复）", "auto-refresh paused after 10 minutes without activity (move the mouse or press a key to resume)"},
	"live.off":     {"自动刷新已关闭", "auto-refresh is off"},
	"live.failed":  {"刷新失败，稍后再试", "refresh failed; trying again"},
	"live.stopped": {"登录已失效，自动刷新已停止；请重新载入页面", "signed out; auto-refresh stopped, reload the page"},
	"live.stop":    {"停止自动刷新", "Stop auto-refresh"},
	"live.start":   {"开启自动刷新", "Turn auto-refresh on"},

	"overview.range":           {"时间范围", "Range"},
	"overview.range.1h":        {"1 小时", "1 h"},
	"overview.range.24h":       {"24 小时", "24 h"},
	"overview.range.7d":        {"7 天", "7 d"},
	"overview.window.week":     {"最近 7 天", "Last 7 days"},
	"overview.week.success":    {"7 天成功", "Week: succeeded"},
	"overview.week.failures":   {"7 天失败", "Week: failed"},
	"overview.window.help":     {"点击数字打开该时间窗内的任务列表。", "Each number opens the task list of its window."},
	"overview.classes.none.7d": {"最近 7 天没有失败。", "No failures in the last 7 days."},
	"overview.chart.1h":        {"最近 1 小时每分钟释放数", "Releases per minute, last hour"},
	"overview.chart.24h":       {"最近 24 小时每 10 分钟释放数", "Releases per 10 minutes, last 24 hours"},
	"overview.chart.7d":        {"最近 7 天每小时释放数", "Releases per hour, last 7 days"},
	"overview.chart.peak.1h":   {"峰值 %d/分钟", "peak %d/min"},
	"overview.chart.peak.24h":  {"峰值 %d/10 分钟", "peak %d/10 min"},
	"overview.chart.peak.7d":   {"峰值 %d/小时", "peak %d/h"},
	"overview.types.1h":        {"最近 1 小时各资源类型失败次数", "Failures by resource type, last hour"},
	"overview.types.24h":       {"最近 24 小时各资源类型失败次数", "Failures by resource type, last 24 hours"},
	"overview.types.7d":        {"最近 7 天各资源类型失败次数", "Failures by resource type, last 7 days"},
}
