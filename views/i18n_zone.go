package views

// zoneText names the two time zones a page uses: the shop's, whose days
// every date filter reads, and the one its times are shown in.
var zoneText = text{
	"zone.shop":  {"按本店时区 %s", "shop time, %s"},
	"zone.shown": {"本页时间按 %s 时区显示", "Times on this page are shown in %s"},
}
