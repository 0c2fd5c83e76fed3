package views

import (
	"fmt"
	"regexp"
	"strings"
)

// The server stores what it did in plain English (job summaries, audit
// details, attempt notes, error texts), so the database, the logs and the
// JSON API read the same. A page shows them in the viewer's language: Say
// matches each stored text against the shapes below, the code's known
// sentences, and fills the matching catalog entry with the parts it
// captured. A text of no known shape is shown as stored.

// argKind says how a captured part is shown.
type argKind int

const (
	argRaw   argKind = iota // as stored: a number, an id, a time
	argCode                 // a status, type, trigger or class, through Page.Code
	argSpan                 // a retention such as "90 days"
	argParts                // "inventory 3, coupon 2": resource names with counts
	argSay                  // a stored text of its own, itself said (an error text through ErrText)
	argClass                // an error class or code, through Page.Class
	argRole                 // a dashboard role
	argSays                 // stored texts joined by "; ", each said
	argSkips                // "no answer 5, refused 1": reconciliation's skip reasons with counts
)

// shape is one known English sentence: re matches the whole text, key is
// the catalog entry whose texts are fmt formats over the captured parts
// (%[1]s, %[2]s, … in the order of re's groups), kinds say how each part
// is shown (missing: argRaw).
type shape struct {
	re    *regexp.Regexp
	key   string
	kinds []argKind
}

// shapes are the sentences the code stores, each with the file that writes
// it; TestSay holds an example of each and checks the English catalog text,
// filled with the parts, gives the example back.
var shapes = []shape{
	// jobs/periodic.go
	{regexp.MustCompile(`^counted (\d+) crashed tries \(leases expired without an outcome\)$`), "say.rescue", nil},
	{regexp.MustCompile(`^closed (\d+) unpaid orders past their deadline, (\d+) pages$`), "say.timeout_close", nil},
	{regexp.MustCompile(`^(\d{4}-\d\d-\d\d) \(([^)]+)\): (\d+) ledger rows((?: — .+)?)$`), "say.ledger_report", []argKind{argRaw, argRaw, argRaw, argParts}},
	{regexp.MustCompile(`^(\S+)((?: \S+)?) (\S+): (\d+) rows, qty (-?\d+)$`), "say.ledger_report.line", []argKind{argCode, argCode, argCode}},
	{regexp.MustCompile(`^deleted (\d+) attempts of finished tasks and (\d+) job runs from before (\S+ \S+) \(kept (.+)\), (\d+) webhook deliveries delivered before (\S+ \S+), (\d+) overview rollup rows from before (\S+ \S+), (\d+) events from before (\S+ \S+) \(kept (.+)\); (\d+) ended sessions and login throttles$`),
		"say.cleanup_events", []argKind{argRaw, argRaw, argRaw, argSpan, argRaw, argRaw, argRaw, argRaw, argRaw, argRaw, argSpan}},
	// the cleanup's summary before webhooks and events (runs recorded by earlier versions)
	{regexp.MustCompile(`^deleted (\d+) attempts of finished tasks and (\d+) job runs from before (\S+ \S+) \(kept (.+)\), (\d+) overview rollup rows from before (\S+ \S+); (\d+) ended sessions and login throttles$`),
		"say.cleanup", []argKind{argRaw, argRaw, argRaw, argSpan}},
	// jobs/backup.go
	{regexp.MustCompile(`^wrote (unhold-\S+\.db) \((\d+) bytes\); removed (\d+) older backups, keeping the newest (\d+)$`), "say.backup", nil},
	// cmd/unhold (the reconcile job, the reconcile command) and web/api_reconcile.go
	{regexp.MustCompile(`^run (\d+): (\d+) diffs(?: found)?, (\d+) new tickets, (\d+) closed$`), "say.recon_run", nil},
	{regexp.MustCompile(`^run (\d+): (\d+) diffs(?: found)?, (\d+) new tickets, (\d+) closed; partial: (.+)$`), "say.recon_partial",
		[]argKind{argRaw, argRaw, argRaw, argRaw, argSays}},
	// models/recon_coverage.go (ReconRun.Unchecked)
	{regexp.MustCompile(`^(\S+) (\d+) keys not checked \((.+)\)$`), "say.recon_unchecked", []argKind{argCode, argRaw, argSkips}},
	// jobs/run.go, jobs/scheduler.go
	{regexp.MustCompile(`^timed out after (\S+): (.+)$`), "say.job_timeout", []argKind{argRaw, argSay}},
	{regexp.MustCompile(`^job (\S+) already running on (\S+) since (\S+)$`), "say.job_running", nil},
	{regexp.MustCompile(`^held by (\S+) \((\S+)\) since (\S+)$`), "say.job_held", nil},
	// models: reruns, stock and resource set-up, reconciliation tickets
	{regexp.MustCompile(`^(\d+) task\(s\) made due$`), "say.made_due", nil},
	{regexp.MustCompile(`^nothing to rerun$`), "say.nothing_to_rerun", nil},
	{regexp.MustCompile(`^rerun by (\S+): (.*)$`), "say.rerun_by", nil},
	{regexp.MustCompile(`^available (-?\d+) → (-?\d+)$`), "say.available", nil},
	{regexp.MustCompile(`^available (-?\d+) → (-?\d+), release delay (\d+)s$`), "say.available_delay", nil},
	{regexp.MustCompile(`^([A-Z]+) coupon for (\S+), expires (.+)$`), "say.coupon_create", []argKind{argCode}},
	{regexp.MustCompile(`^([A-Z]+) \+(\d+)$`), "say.credit", []argKind{argCode}},
	{regexp.MustCompile(`^total (\d+)$`), "say.total", nil},
	{regexp.MustCompile(`^created FREE$`), "say.created_free", nil},
	{regexp.MustCompile(`^exists already$`), "say.exists_already", nil},
	{regexp.MustCompile(`^started in the background$`), "say.background", nil},
	{regexp.MustCompile(`^now ([A-Z_]+)$`), "say.now", []argKind{argCode}},
	{regexp.MustCompile(`^late payment could not take back every hold: (.*)$`), "say.late_partial", []argKind{argSay}},
	// auth: users, roles, tokens, sign-in throttling
	{regexp.MustCompile(`^(viewer|operator|admin)$`), "say.role", []argKind{argRole}},
	{regexp.MustCompile(`^(viewer|operator|admin)→(viewer|operator|admin)$`), "say.role_change", []argKind{argRole, argRole}},
	{regexp.MustCompile(`^(viewer|operator|admin), (\S+…)$`), "say.token_create", []argKind{argRole}},
	{regexp.MustCompile(`^(\S+…); its creator (\S+) was disabled$`), "say.token_revoked", nil},
	{regexp.MustCompile(`^(\d+) session\(s\) ended$`), "say.sessions_ended", nil},
	{regexp.MustCompile(`^user changed during login$`), "say.user_changed", nil},
	{regexp.MustCompile(`^name locked at this address after (\d+) failures$`), "say.locked_here", nil},
	{regexp.MustCompile(`^name locked after (\d+) failures from all addresses$`), "say.locked_all", nil},
	{regexp.MustCompile(`^(\d+) attempts from (\S+)$`), "say.attempts_from", nil},
	// A domain error or a release failure as stored: its code, then its words.
	{regexp.MustCompile(`^([A-Z][A-Z_]+[A-Z]): (.+)$`), "say.coded", []argKind{argClass, argSay}},
}

// phrases are the release failures' own words (models/errors.go and the
// remote client), which stored errors carry after what failed, such as
// "inventory SKU-1: held amount is smaller than the release".
var phrases = []string{
	"held amount is smaller than the release",
	"resource is not in the state the release expects",
	"resource row does not exist",
	"ledger already holds this change",
	"lease lost: another worker owns the task or it is finished",
	"context deadline exceeded",
	"warehouse stock service timed out",
	"injected: the service is busy",
	"the service that keeps the resource did not answer",
}

// Say shows a stored English text in the viewer's language: a known shape
// translated, known phrases within it translated, anything else as stored.
// Each line is said on its own. English viewers see the text as stored.
func (p Page) Say(s string) string {
	if p.Lang == LangEN || s == "" {
		return s
	}
	if strings.Contains(s, "\n") {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = p.Say(l)
		}
		return strings.Join(lines, "\n")
	}
	for _, sh := range shapes {
		m := sh.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		args := make([]any, len(m)-1)
		for i, part := range m[1:] {
			kind := argRaw
			if i < len(sh.kinds) {
				kind = sh.kinds[i]
			}
			args[i] = p.sayArg(kind, part)
		}
		return p.Tf(sh.key, args...)
	}
	for i, ph := range phrases {
		s = strings.ReplaceAll(s, ph, p.T(fmt.Sprintf("say.phrase.%d", i)))
	}
	return s
}

func (p Page) sayArg(kind argKind, part string) string {
	switch kind {
	case argCode:
		lead := part[:len(part)-len(strings.TrimLeft(part, " "))]
		return lead + p.Code(strings.TrimSpace(part))
	case argSpan:
		var n int
		if _, err := fmt.Sscanf(part, "%d days", &n); err == nil && fmt.Sprintf("%d days", n) == part {
			return p.Tf("say.days", n)
		}
		return part
	case argParts:
		// " — inventory 3, coupon 2", or nothing.
		list := strings.TrimPrefix(part, " — ")
		if list == "" {
			return ""
		}
		items := strings.Split(list, ", ")
		for i, it := range items {
			if name, n, ok := strings.Cut(it, " "); ok {
				items[i] = p.Code(name) + " " + n
			}
		}
		return p.Tf("say.parts", strings.Join(items, p.T("say.comma")))
	case argSay:
		return p.ErrText(part)
	case argSays:
		texts := strings.Split(part, "; ")
		for i, t := range texts {
			texts[i] = p.Say(t)
		}
		return strings.Join(texts, p.T("say.semicolon"))
	case argSkips:
		items := strings.Split(part, ", ")
		for i, it := range items {
			if cut := strings.LastIndexByte(it, ' '); cut > 0 {
				if _, ok := catalog["say.skip."+it[:cut]]; ok {
					items[i] = p.T("say.skip."+it[:cut]) + " " + it[cut+1:]
				}
			}
		}
		return strings.Join(items, p.T("say.comma"))
	case argClass:
		return p.Class(part)
	case argRole:
		return p.Code("role." + part)
	}
	return part
}
