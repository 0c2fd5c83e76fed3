package views

// Error classes whose MANUAL task the data, not a retry, must fix.
const (
	classLockedShort    = "LOCKED_SHORT"
	classStateMismatch  = "STATE_MISMATCH"
	classNotFound       = "NOT_FOUND"
	classRemoteRejected = "REMOTE_REJECTED"
)

// Where a LOCKED_SHORT task's key stands (models.ShortCause).
const (
	shortChanged = "row"
	shortGone    = "gone"
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
		// The reason reads the numbers it shows, as the task's cause
		// does (models.CounterLedger.Short): a held amount that is not the
		// ledger's was changed by hand; one that agrees and covers what
		// orders and tasks hold makes the cause gone.
		switch held := *r.HeldNow; {
		case r.Short == shortChanged:
			return p.Tf("tasks.why.short.row", p.Code(r.Type), held, r.LedgerHeld)
		case r.Short == shortGone && r.Type == "inventory":
			return p.Tf("tasks.why.short.stock.fixed", held, r.ExpectedHeld)
		case r.Short == shortGone:
			return p.Tf("tasks.why.short.fixed", p.Code(r.Type), held, r.ExpectedHeld)
		case r.Type == "inventory":
			return p.Tf("tasks.why.short.stock", held, r.ExpectedHeld)
		}
		return p.Tf("tasks.why.short", p.Code(r.Type), *r.HeldNow, r.ExpectedHeld)
	case classStateMismatch:
		return p.Tf("tasks.why.state", p.Code(r.Type), last)
	case classNotFound:
		return p.Tf("tasks.why.notfound", p.Code(r.Type), r.Key)
	case classRemoteRejected:
		return p.Tf("tasks.why.rejected", last)
	}
	return p.Tf("tasks.why.other", p.Class(r.Class), r.Failures, r.Attempts, last)
}
