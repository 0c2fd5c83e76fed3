package models

import (
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Order is one customer order.
type Order struct {
	ID           int64       `json:"-"`
	OrderNo      string      `json:"order_no"`
	UserID       string      `json:"user_id"`
	Status       OrderStatus `json:"status"`
	PayDeadline  time.Time   `json:"pay_deadline"`
	CloseReason  string      `json:"close_reason,omitempty"`
	ChannelTxnID string      `json:"channel_txn_id,omitempty"`
	LatePaid     bool        `json:"late_paid"`
	Note         string      `json:"note,omitempty"`
	Version      int64       `json:"version"`
	CreatedAt    time.Time   `json:"created_at"`
	UpdatedAt    time.Time   `json:"updated_at"`
	PaidAt       *time.Time  `json:"paid_at,omitempty"`
	ClosedAt     *time.Time  `json:"closed_at,omitempty"`
	// LocksAnsweredAt is when every lock of the order's remote holds was
	// answered done; until then (and for ever, should the placement die
	// first) a payment is refused, PLACEMENT_PENDING. Nil for an order
	// without remote holds, which need no lock calls.
	// Read only: placement never writes it with the order (lockRemote sets
	// it after), so placing writes only the columns every schema since
	// 00003 has.
	LocksAnsweredAt *time.Time `json:"locks_answered_at,omitempty" gorm:"->"`
	// LastEpoch is the greatest ledger epoch the order's operations used
	// (order_life.go); read only, as LocksAnsweredAt.
	LastEpoch int64 `json:"-" gorm:"->"`
}

// Hold is one resource an order holds: qty taken at placement, of which
// released went back and deducted was consumed by payment.
type Hold struct {
	ID           int64        `json:"-"`
	OrderNo      string       `json:"order_no"`
	ResourceType ResourceType `json:"resource_type"`
	BizKey       string       `json:"biz_key"`
	Qty          int64        `json:"qty"`
	Released     int64        `json:"released"`
	Deducted     int64        `json:"deducted"`
	// DeductAt is when a SKU line takes its stock (docs/stock-models.md):
	// at placement, or at payment, when Qty stays 0 until the payment
	// takes Ordered.
	// Placement writes them after the row (markAtPayment).
	DeductAt DeductAt `json:"deduct_at,omitempty" gorm:"->"`
	Ordered  int64    `json:"ordered,omitempty" gorm:"->"`
	// After payment (order_life.go): of deducted, what was shipped and
	// what was refunded before shipping; of shipped, what came back, and
	// of that what the warehouse restocked or wrote off. Version counts
	// the line's changes. Read only: placement writes the columns above.
	Shipped    int64 `json:"shipped" gorm:"->"`
	Refunded   int64 `json:"refunded" gorm:"->"`
	Returned   int64 `json:"returned" gorm:"->"`
	Restocked  int64 `json:"restocked" gorm:"->"`
	WrittenOff int64 `json:"written_off" gorm:"->"`
	Version    int64 `json:"version" gorm:"->"`
}

// TableName is the hold table.
func (Hold) TableName() string { return "order_holds" }

// Outstanding is what the order still holds.
func (h Hold) Outstanding() int64 { return h.Qty - h.Released - h.Deducted }

// lineDeductAt is the line's stock model; a hold read from a schema older
// than the column has none, and took its stock at placement.
func (h Hold) lineDeductAt() DeductAt {
	if h.DeductAt == "" {
		return DeductAtOrder
	}
	return h.DeductAt
}

// ordered is what a line was ordered for: what it took at placement,
// or what a line deducted at payment orders now.
func (h Hold) ordered() int64 {
	if h.DeductAt == DeductAtPayment {
		return h.Ordered
	}
	return h.Qty
}

// awaitsPayment: a line deducted at payment that its payment has not
// taken yet; it holds nothing and orders Ordered (0 once cancelled whole).
func (h Hold) awaitsPayment() bool { return h.DeductAt == DeductAtPayment && h.Qty == 0 }

// takesAtPayment: a line its payment will take stock for, one that awaits
// payment and still orders something.
func (h Hold) takesAtPayment() bool { return h.awaitsPayment() && h.Ordered > 0 }

// ReleaseTask is one row of the outbox: give back one held resource.
type ReleaseTask struct {
	ID           int64        `json:"id"`
	OrderNo      string       `json:"order_no"`
	ResourceType ResourceType `json:"resource_type"`
	BizKey       string       `json:"biz_key"`
	Qty          int64        `json:"qty"`
	// Op is what the task does with the hold: RELEASE it, or, for a
	// remote type whose order was paid, DEDUCT it at the service.
	Op         FlowType   `json:"op" gorm:"default:RELEASE"`
	Status     TaskStatus `json:"status"`
	Trigger    Trigger    `json:"trigger" gorm:"column:trigger_type"`
	Attempts   int        `json:"attempts"`
	Failures   int        `json:"failures"`
	NextAt     time.Time  `json:"next_at"`
	LastError  string     `json:"last_error,omitempty"`
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	// LastErrorClass is the class of LastError; it differs from ErrorClass
	// only when ErrorClass is RETRY_EXHAUSTED.
	LastErrorClass ErrorClass `json:"last_error_class,omitempty"`
	LeaseOwner     string     `json:"lease_owner,omitempty"`
	LeaseToken     string     `json:"-"`
	LeaseUntil     *time.Time `json:"lease_until,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	DoneAt         *time.Time `json:"done_at,omitempty"`
	RerunBy        string     `json:"rerun_by,omitempty"`
	RerunReason    string     `json:"rerun_reason,omitempty"`
	// Owner is the operator who took the task while it was MANUAL ("":
	// nobody), and OwnedSince when; see AssignTask. It stays when the task
	// leaves MANUAL, as history.
	Owner      string     `json:"owner,omitempty"`
	OwnedSince *time.Time `json:"owned_since,omitempty"`
	// ManualSince is when the task last went MANUAL, which its age in
	// the manual queue counts from; a rerun clears it.
	ManualSince *time.Time `json:"manual_since,omitempty"`
	// answer is what a remote type's service answered this try's call,
	// kept so that recording it again (the batch did not commit, and the
	// task is tried alone) does not call again.
	answer *callAnswer
}

// TaskAttempt is one try of a task.
type TaskAttempt struct {
	ID           int64        `json:"id"`
	TaskID       int64        `json:"task_id"`
	OrderNo      string       `json:"order_no"`
	ResourceType ResourceType `json:"resource_type"`
	Worker       string       `json:"worker"`
	Outcome      string       `json:"outcome"`
	ErrorClass   ErrorClass   `json:"error_class,omitempty"`
	Error        string       `json:"error,omitempty"`
	Note         string       `json:"note,omitempty"`
	StartedAt    time.Time    `json:"started_at"`
	FinishedAt   time.Time    `json:"finished_at"`
}

// BeforeCreate clips the attempt's error and note (see clip): an error
// text can quote whatever input failed.
func (a *TaskAttempt) BeforeCreate(*gorm.DB) error {
	a.Error = clip(a.Error, maxErrorLen)
	a.Note = clip(a.Note, maxTextLen)
	return nil
}

// AuditEntry records one privileged action.
type AuditEntry struct {
	ID        int64     `json:"id"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	Reason    string    `json:"reason,omitempty"`
	Outcome   string    `json:"outcome"`
	Detail    string    `json:"detail,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Role      string    `json:"role,omitempty"` // the actor's role
	RequestID string    `json:"request_id,omitempty"`
	IP        string    `json:"ip,omitempty"`
	UserAgent string    `json:"user_agent,omitempty"`
}

// TableName is the audit table.
func (AuditEntry) TableName() string { return "audit_log" }

// Stored free text is capped, in bytes, so that one request cannot write
// megabytes into a row, nor an audit target longer than PostgreSQL's btree
// index on audit_log (target, id) takes (about 2,700 bytes an entry). What a
// user types is refused above its own, smaller rule before it gets here;
// what the server records for them (the path of a refused request, a
// User-Agent, an error text) is cut, and the cut is marked.
const (
	maxAuditTargetLen = 512  // audit_log.target
	maxAuditShortLen  = 256  // audit_log actor, action, outcome, role, request id, IP
	maxTextLen        = 4096 // audit reason and detail, an attempt's note
	maxErrorLen       = 1000 // a task's last error, an attempt's error
	cutMark           = "…[cut]"
)

// MaxUserAgentLen is how much of a User-Agent header is kept, in bytes: in
// an audit row and in a session.
const MaxUserAgentLen = 256

// TruncUTF8 cuts s to at most n bytes without splitting a character, and
// drops any invalid UTF-8.
func TruncUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clip makes s storable text of at most n bytes: invalid UTF-8 and NUL
// become U+FFFD, and a longer text is cut on a character boundary and ends
// with cutMark, so a reader knows there was more.
func clip(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	return TruncUTF8(s, n-len(cutMark)) + cutMark
}

// BeforeCreate fills the request fields left empty from the request
// metadata of the transaction's context (WithRequestMeta), so every audit
// row says where its request came from without each caller passing it on.
// Text fields are made storable and clipped: a refusal must be recorded
// even when what was refused held NUL, bytes that are not UTF-8 (which
// PostgreSQL cannot store) or a 60 KB path.
func (e *AuditEntry) BeforeCreate(tx *gorm.DB) error {
	m := RequestMetaFrom(tx.Statement.Context)
	if e.Role == "" {
		e.Role = m.Role
	}
	if e.RequestID == "" {
		e.RequestID = m.RequestID
	}
	if e.IP == "" {
		e.IP = m.IP
	}
	if e.UserAgent == "" {
		e.UserAgent = m.UserAgent
	}
	e.Target = clip(e.Target, maxAuditTargetLen)
	e.UserAgent = clip(e.UserAgent, MaxUserAgentLen)
	for _, f := range []*string{&e.Reason, &e.Detail} {
		*f = clip(*f, maxTextLen)
	}
	for _, f := range []*string{&e.Actor, &e.Action, &e.Outcome, &e.Role, &e.RequestID, &e.IP} {
		*f = clip(*f, maxAuditShortLen)
	}
	return nil
}

// Flow is one ledger row of any resource, in one shape for the chain view.
// Counter resources fill the numeric before/after fields; coupons and slots
// fill the status ones.
type Flow struct {
	ID           int64        `json:"id"`
	ResourceType ResourceType `json:"resource_type"`
	OrderNo      *string      `json:"order_no,omitempty"`
	BizKey       string       `json:"biz_key"`
	Type         FlowType     `json:"type"`
	Epoch        int          `json:"epoch"`
	Trigger      Trigger      `json:"trigger"`
	Qty          int64        `json:"qty"`
	AvailBefore  int64        `json:"avail_before"`
	AvailAfter   int64        `json:"avail_after"`
	HeldBefore   int64        `json:"held_before"`
	HeldAfter    int64        `json:"held_after"`
	SpentBefore  int64        `json:"spent_before"`
	SpentAfter   int64        `json:"spent_after"`
	StatusBefore string       `json:"status_before,omitempty"`
	StatusAfter  string       `json:"status_after,omitempty"`
	Owner        string       `json:"owner,omitempty"`
	// ExpireBefore and ExpireAfter are a points account's expiry around
	// the row, as the account ledger reads them (AccountFlows); nil for
	// never, and on every other ledger.
	ExpireBefore *time.Time `json:"expire_before,omitempty"`
	ExpireAfter  *time.Time `json:"expire_after,omitempty"`
	Actor        string     `json:"actor,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}
