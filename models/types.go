package models

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// OrderStatus is where an order is in its life: PENDING → PAID or CLOSED;
// a payment that arrives after close → PAID (late) or REFUND_PENDING; after
// payment, shipments, refunds and returns move it on (the transitions are
// orderTransitions, models/order_life.go).
type OrderStatus string

// Order statuses.
const (
	OrderPending       OrderStatus = "PENDING"
	OrderPaid          OrderStatus = "PAID"
	OrderClosed        OrderStatus = "CLOSED"
	OrderRefundPending OrderStatus = "REFUND_PENDING"
	// OrderPartShipped: some of what was paid for went out, some has not
	// (and was not refunded).
	OrderPartShipped OrderStatus = "PARTIALLY_SHIPPED"
	// OrderShipped: everything paid for and not refunded went out.
	OrderShipped OrderStatus = "SHIPPED"
	// OrderPartRefunded: some of what was paid for came back to stock
	// before it was shipped; nothing was shipped.
	OrderPartRefunded OrderStatus = "PARTIALLY_REFUNDED"
	// OrderRefunded: the whole order was refunded (or a REFUND_PENDING
	// order's money went back).
	OrderRefunded OrderStatus = "REFUNDED"
	// OrderReturning: goods are on their way back; the warehouse has not
	// confirmed them all.
	OrderReturning OrderStatus = "RETURNING"
	// OrderReturned: everything shipped came back and was confirmed.
	OrderReturned OrderStatus = "RETURNED"
)

// OrderStatuses lists every order status in the order an order moves through them.
var OrderStatuses = []OrderStatus{OrderPending, OrderPaid, OrderClosed, OrderRefundPending,
	OrderPartShipped, OrderShipped, OrderPartRefunded, OrderRefunded, OrderReturning, OrderReturned}

// ParseOrderStatus accepts an order status as stored.
func ParseOrderStatus(s string) (OrderStatus, error) {
	if st := OrderStatus(s); slices.Contains(OrderStatuses, st) {
		return st, nil
	}
	return "", fmt.Errorf("%w: unknown order status %q", ErrInvalid, s)
}

// TaskStatus is the state of one release task in the outbox.
type TaskStatus string

// Task statuses. SUPERSEDED marks a task whose hold a late payment took
// over; ABANDONED one an admin gave up on, releasing nothing.
const (
	TaskPending    TaskStatus = "PENDING"
	TaskDone       TaskStatus = "DONE"
	TaskRetry      TaskStatus = "RETRY"
	TaskManual     TaskStatus = "MANUAL"
	TaskSuperseded TaskStatus = "SUPERSEDED"
	TaskAbandoned  TaskStatus = "ABANDONED"
)

// TaskStatuses lists every task status.
var TaskStatuses = []TaskStatus{TaskPending, TaskRetry, TaskManual, TaskDone, TaskSuperseded, TaskAbandoned}

// ParseTaskStatus accepts a status as stored.
func ParseTaskStatus(s string) (TaskStatus, error) {
	if st := TaskStatus(s); slices.Contains(TaskStatuses, st) {
		return st, nil
	}
	return "", fmt.Errorf("%w: unknown task status %q", ErrInvalid, s)
}

// ResourceType names one kind of held resource; it is the path segment of the
// rerun API and the value stored in tasks and holds.
type ResourceType string

// Resource types.
const (
	ResInventory ResourceType = "inventory"
	ResCoupon    ResourceType = "coupon"
	ResBalance   ResourceType = "balance"
	ResPoints    ResourceType = "points"
	ResQuota     ResourceType = "quota"
	ResSlot      ResourceType = "slot"
)

// ResourceTypes lists every resource type in the order holds are taken.
var ResourceTypes = []ResourceType{ResInventory, ResCoupon, ResBalance, ResPoints, ResQuota, ResSlot}

var typeNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{1,31}$`)

// ValidTypeName tells whether s may name a resource type: 2 to 32
// lowercase letters, digits or underscores, a letter first. Whether a type
// of that name exists is the registry's to say (Store.ParseType).
func ValidTypeName(s string) bool { return typeNamePattern.MatchString(s) }

// ParseResourceType accepts the name of a built-in resource type.
func ParseResourceType(s string) (ResourceType, error) {
	for _, t := range ResourceTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("%w: unknown resource type %q", ErrInvalid, s)
}

// FlowType is the kind of one ledger row.
type FlowType string

// Ledger row types.
const (
	FlowLock    FlowType = "LOCK"
	FlowDeduct  FlowType = "DEDUCT"
	FlowRelease FlowType = "RELEASE"
	FlowAdjust  FlowType = "ADJUST"
	// FlowRefund gives back what a payment consumed, before it was
	// shipped: spent → available (a coupon USED → UNUSED, a slot SOLD →
	// FREE).
	FlowRefund FlowType = "REFUND"
	// FlowRestock puts returned goods the warehouse confirmed back on
	// sale: sold → available.
	FlowRestock FlowType = "RESTOCK"
	// FlowWriteOff records returned goods the warehouse confirmed but
	// could not sell again; no amount moves (they stay counted as sold).
	FlowWriteOff FlowType = "WRITE_OFF"
)

// Trigger says what caused a change: it is kept on every ledger row.
type Trigger string

// Triggers.
const (
	TriggerPlace       Trigger = "PLACE"
	TriggerPay         Trigger = "PAY"
	TriggerUserCancel  Trigger = "USER_CANCEL"
	TriggerTimeout     Trigger = "TIMEOUT"
	TriggerAdmin       Trigger = "ADMIN"
	TriggerRerun       Trigger = "RERUN"
	TriggerLatePayment Trigger = "LATE_PAYMENT"
	TriggerSetup       Trigger = "SETUP"
	// TriggerPlaceAborted closes an order whose placement failed after it
	// committed: a remote type's service refused its lock or did not
	// answer, so what it holds is given back.
	TriggerPlaceAborted Trigger = "PLACE_ABORTED"
)

// ParseCloseReason accepts the reasons an order may be closed for.
func ParseCloseReason(s string) (Trigger, error) {
	switch t := Trigger(s); t {
	case TriggerUserCancel, TriggerTimeout, TriggerAdmin:
		return t, nil
	}
	return "", fmt.Errorf("%w: close reason must be USER_CANCEL, TIMEOUT or ADMIN, not %q", ErrInvalid, s)
}

// DeductAt is a SKU's stock model: when an order takes its stock.
type DeductAt string

// Stock models.
const (
	// DeductAtOrder locks the stock at placement and releases it at close.
	DeductAtOrder DeductAt = "order"
	// DeductAtPayment holds nothing while the order is unpaid: the payment
	// takes the stock from what is available then.
	DeductAtPayment DeductAt = "payment"
)

// ParseDeductAt accepts a stock model.
func ParseDeductAt(s string) (DeductAt, error) {
	switch d := DeductAt(s); d {
	case DeductAtOrder, DeductAtPayment:
		return d, nil
	}
	return "", fmt.Errorf("%w: deduct_at must be \"order\" or \"payment\", not %q", ErrInvalid, s)
}

// TriggerStockGone closes an order whose payment found its deduct-at-payment
// stock gone: nothing is deducted, the money is to be refunded.
const TriggerStockGone Trigger = "STOCK_GONE"

// Asset is what an account holds: money or points.
type Asset string

// Assets.
const (
	AssetBalance Asset = "BALANCE"
	AssetPoints  Asset = "POINTS"
)

// ParseAsset accepts an asset name.
func ParseAsset(s string) (Asset, error) {
	switch a := Asset(s); a {
	case AssetBalance, AssetPoints:
		return a, nil
	}
	return "", fmt.Errorf("%w: asset must be BALANCE or POINTS, not %q", ErrInvalid, s)
}

// CouponOwner is who bears a coupon's cost.
type CouponOwner string

// Coupon owners.
const (
	CouponPlatform CouponOwner = "PLATFORM"
	CouponMerchant CouponOwner = "MERCHANT"
)

// ParseCouponOwner accepts a cost bearer.
func ParseCouponOwner(s string) (CouponOwner, error) {
	switch o := CouponOwner(s); o {
	case CouponPlatform, CouponMerchant:
		return o, nil
	}
	return "", fmt.Errorf("%w: owner must be PLATFORM or MERCHANT, not %q", ErrInvalid, s)
}

// CouponStatus is a coupon's state.
type CouponStatus string

// Coupon statuses.
const (
	CouponUnused  CouponStatus = "UNUSED"
	CouponLocked  CouponStatus = "LOCKED"
	CouponUsed    CouponStatus = "USED"
	CouponExpired CouponStatus = "EXPIRED"
)

// CouponExpiryPolicy says what a returned coupon's expiry becomes.
type CouponExpiryPolicy string

// Coupon expiry policies: extend pushes expire_at to at least now + N days;
// keep leaves it, so a coupon past its expiry comes back EXPIRED.
const (
	CouponExtend CouponExpiryPolicy = "extend"
	CouponKeep   CouponExpiryPolicy = "keep"
)

// ParseCouponExpiryPolicy accepts extend or keep.
func ParseCouponExpiryPolicy(s string) (CouponExpiryPolicy, error) {
	switch p := CouponExpiryPolicy(s); p {
	case CouponExtend, CouponKeep:
		return p, nil
	}
	return "", fmt.Errorf("%w: coupon expiry policy must be extend or keep, not %q", ErrInvalid, s)
}

// CouponPolicy configures coupon return.
type CouponPolicy struct {
	Expiry     CouponExpiryPolicy
	ExtendDays int
}

// extendFloor is the least expiry what comes back at now gets under the
// policy, and whether it extends at all (keep does not).
func (p CouponPolicy) extendFloor(now time.Time) (time.Time, bool) {
	if p.Expiry != CouponExtend {
		return time.Time{}, false
	}
	return now.Add(time.Duration(p.ExtendDays) * 24 * time.Hour), true
}

// DefaultCouponPolicy extends returned coupons to at least three days.
var DefaultCouponPolicy = CouponPolicy{Expiry: CouponExtend, ExtendDays: 3}

// SlotStatus is a seat or time slot's state.
type SlotStatus string

// Slot statuses.
const (
	SlotFree SlotStatus = "FREE"
	SlotHeld SlotStatus = "HELD"
	SlotSold SlotStatus = "SOLD"
)

// ErrorClass classifies a release failure.
type ErrorClass string

// Error classes. Permanent ones send the task to MANUAL at once. CRASHED is
// a try that panicked or whose lease expired without an outcome (its
// process was killed); RETRY_EXHAUSTED is the class of a task whose
// retryable failures reached MaxFailures, with the last one's class kept
// in LastErrorClass.
const (
	ClassLockedShort    ErrorClass = "LOCKED_SHORT"
	ClassStateMismatch  ErrorClass = "STATE_MISMATCH"
	ClassNotFound       ErrorClass = "NOT_FOUND"
	ClassTimeout        ErrorClass = "TIMEOUT"
	ClassDBBusy         ErrorClass = "DB_BUSY"
	ClassConnection     ErrorClass = "CONNECTION"
	ClassUnknown        ErrorClass = "UNKNOWN"
	ClassCrashed        ErrorClass = "CRASHED"
	ClassRetryExhausted ErrorClass = "RETRY_EXHAUSTED"
	ClassRemoteBusy     ErrorClass = "REMOTE_BUSY"     // a remote service answered 408, 425, 429 or 5xx
	ClassRemoteRejected ErrorClass = "REMOTE_REJECTED" // a remote service refused the call (any other 4xx): permanent
	ClassRemoteProtocol ErrorClass = "REMOTE_PROTOCOL" // a remote service answered 2xx without proving the call was ours
)

// ParseErrorClass accepts a release failure class as stored.
func ParseErrorClass(s string) (ErrorClass, error) {
	if c := ErrorClass(s); slices.Contains(ErrorClasses, c) {
		return c, nil
	}
	return "", fmt.Errorf("%w: unknown error class %q", ErrInvalid, s)
}

// ErrorClasses lists every failure class, permanent ones first.
var ErrorClasses = []ErrorClass{ClassLockedShort, ClassStateMismatch, ClassNotFound, ClassRemoteRejected,
	ClassTimeout, ClassDBBusy, ClassConnection, ClassRemoteBusy, ClassRemoteProtocol, ClassUnknown, ClassCrashed, ClassRetryExhausted}

// Attempt outcomes, one per try of a task.
const (
	OutcomeDone      = "DONE"
	OutcomeDuplicate = "DUPLICATE"
	OutcomeRetry     = "RETRY"
	OutcomeManual    = "MANUAL"
)

// RetrySchedule is the default retry policy's wait after the 1st, 2nd, ...
// transient failure; the last entry repeats. MaxFailures failures send a
// task to MANUAL. Options.RetryDefault and Options.Retry change them.
var RetrySchedule = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}

// MaxFailures is how many transient failures (crashes included) a task may
// have since its last rerun before MANUAL.
const MaxFailures = 8

// RetryDelay is the default policy's wait after the n-th consecutive
// failure (n from 1).
func RetryDelay(n int) time.Duration { return DefaultRetryPolicy.Delay(n) }
