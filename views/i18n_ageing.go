package views

// ageingText is the manual queue's ageing against the SLA: the overview's
// buckets, the lists' age column, filter and sort.
var ageingText = text{
	"ageing.title":          {"人工队列时效", "Manual queue by age"},
	"ageing.queue":          {"队列", "Queue"},
	"ageing.queue.tasks":    {"人工处理任务", "MANUAL tasks"},
	"ageing.queue.tickets":  {"未解决对账工单", "Unresolved tickets"},
	"ageing.oldest":         {"最久等待", "Oldest waiting"},
	"ageing.bucket.lt":      {"< %s", "< %s"},
	"ageing.bucket.between": {"%s – %s", "%s – %s"},
	"ageing.bucket.past":    {"≥ %s（超时）", "≥ %s (past the SLA)"},
	"ageing.dur.h":          {"%d 小时", "%d h"},
	"ageing.help": {"任务从转入人工处理时起算，工单从开单时起算；等待满 %s 即为超出时效（SLA）。每个数字链接到恰好这些条目的列表，按等待时长排序，最久的在前。",
		"A task's age counts from when it went MANUAL, a ticket's from when it was opened; one that has waited %s is past the SLA. Each number links to a list of exactly those items, longest waiting first."},
	"ageing.f.age":       {"等待时长", "Waiting"},
	"ageing.sort.age":    {"等待最久在前（人工处理）", "Longest waiting first (MANUAL)"},
	"ageing.col.waiting": {"已等待", "Waiting"},
	"ageing.past":        {"超时", "past SLA"},
	"ageing.sort.ticket": {"最早开单在前", "Oldest first"},
}
