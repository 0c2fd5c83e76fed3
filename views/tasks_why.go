package views

// Error classes whose MANUAL task the data, not a retry, must fix.
const (
	classLockedShort    = "LOCKED_SHORT"
	classStateMismatch  = "STATE_MISMATCH"
	classNotFound       = "NOT_FOUND"
	classRemoteRejected = "REMOTE_REJECTED"
)

// whyErrLen is how much of the last error a task's reason quotes.
const whyErrLen = 120

// TaskWhy says in words why a MANUAL task stopped and what to do, from its
// class, failures, attempts and last error: "8 of 8 tries failed, last:
// warehouse stock service timed out — …", or "stock short: locked 0,
// needed 2 — fix the stock, then rerun". Other tasks need no reason: "".
func TaskWhy(p Page, r TaskRow) string {
	if r.Status != "MANUAL" {
		return ""
	}
	// The reason quotes the error in the viewer's language.
	last := taskShort(p.ErrText(r.LastError), whyErrLen)
	switch r.Class {
	case classExhausted:
		return p.Tf("tasks.why.exhausted", r.Failures, r.MaxFailures, p.Class(r.LastClass), last)
	case classLockedShort:
		if r.HeldNow == nil {
			return p.Tf("tasks.why.short.unknown", p.Code(r.Type), r.Qty)
		}
		// The reason reads the numbers it shows: once the key holds
		// enough again, the cause is gone and a rerun will release.
		switch held := *r.HeldNow; {
		case held >= r.Qty && r.Type == "inventory":
			return p.Tf("tasks.why.short.stock.fixed", held, r.Qty)
		case held >= r.Qty:
			return p.Tf("tasks.why.short.fixed", p.Code(r.Type), held, r.Qty)
		case r.Type == "inventory":
			return p.Tf("tasks.why.short.stock", held, r.Qty)
		}
		return p.Tf("tasks.why.short", p.Code(r.Type), *r.HeldNow, r.Qty)
	case classStateMismatch:
		return p.Tf("tasks.why.state", p.Code(r.Type), last)
	case classNotFound:
		return p.Tf("tasks.why.notfound", p.Code(r.Type), r.Key)
	case classRemoteRejected:
		return p.Tf("tasks.why.rejected", last)
	}
	return p.Tf("tasks.why.other", p.Class(r.Class), r.Failures, r.Attempts, last)
}
