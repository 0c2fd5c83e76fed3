package views

// resourcesText is the text of the declared resource types' pages: a
// type's keys, one key, and the page that says why there is none.
var resourcesText = text{
	"nav.resources": {"资源", "Resources"},

	"res.types":      {"本店声明的资源类型：", "Resource types this shop declared:"},
	"res.intro":      {"资源文件里声明的计数资源：每个键的可用、锁定、已用。点键查看谁在占用它，以及它的每一笔流水。", "A counter declared in the resources file: each key's available, locked and spent amounts. Open a key to see who holds it now and every ledger row behind it."},
	"res.prefix":     {"键前缀", "Key prefix"},
	"res.key":        {"键", "Key"},
	"res.total":      {"共 %s 个键", "%s keys in all"},
	"res.total.over": {"超过 %s 个键", "More than %s keys"},
	"res.empty":      {"没有符合条件的键。检查前缀（区分大小写），或清除筛选。", "No key matches. Check the prefix (it is case-sensitive), or reset the filter."},

	"res.set.title":  {"设置可用量", "Set the available amount"},
	"res.set.label":  {"可用量设为", "Available"},
	"res.set.submit": {"设置", "Set"},
	"res.set.help":   {"只改可用量，锁定和已用不变；写一条“调整”流水，并记入审计日志。", "Changes only the available amount, not locked or spent; writes one ADJUST ledger row and an audit entry."},
	"res.set.bad":    {"可用量必须是 0 到 %s 之间的整数，不能是“%s”。没有做任何修改。", "The available amount must be a whole number from 0 to %s, not \"%s\". Nothing was changed."},
	"res.flash.set":  {"%s 的可用量已从 %s 改为 %s。", "%s: available changed from %s to %s."},

	"res.holders":         {"当前占用", "Held now"},
	"res.check":           {"锁定 %s；应为待支付订单占用 %s（%s 单）加未完成释放任务 %s（%s 个）。", "Locked %s; it should be what PENDING orders hold, %s (%s orders), plus unfinished release tasks, %s (%s tasks)."},
	"res.locked.bad.help": {"多出来的锁定通常是漏释放，少了通常是重复释放。到“对账”查看，或交给运维处理。", "Too much locked usually means a missed release; too little, a double release. Look under Reconciliation, or ask ops."},
	"res.holders.empty":   {"现在没有订单占用这个键。", "No order holds this key now."},
	"res.holds":           {"待支付订单", "PENDING orders"},
	"res.holds.qty":       {"占用", "Holds"},
	"res.holds.created":   {"下单时间", "Placed"},
	"res.holds.deadline":  {"支付截止", "Pay by"},
	"res.tasks":           {"未完成的释放任务", "Unfinished release tasks"},
	"res.tasks.task":      {"任务", "Task"},
	"res.tasks.qty":       {"待释放", "To release"},
	"res.tasks.status":    {"状态", "Status"},
	"res.tasks.attempts":  {"尝试次数", "Attempts"},
	"res.tasks.next":      {"下次执行", "Next try"},
	"res.more":            {"只列出前 %d 个，共 %s 个。", "Only the first %d of %s are listed."},

	"res.notfound.title":        {"找不到这个资源", "No such resource"},
	"res.notfound.key":          {"%s 没有键“%s”。检查键是否完整（区分大小写）。", "%s has no key \"%s\". Check the key (it is case-sensitive)."},
	"res.notfound.builtin":      {"“%s”是内置资源类型，不在这里显示。", "\"%s\" is a built-in resource type, not shown here."},
	"res.notfound.builtin.page": {"去它自己的页面", "Go to its own page"},
	"res.notfound.type":         {"没有名为“%s”的资源类型。", "There is no resource type named \"%s\"."},
	"res.none":                  {"本店没有在资源文件里声明资源类型。", "This shop has declared no resource types in its resources file."},
}
