package models

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Op is one change of one held resource: a LOCK at placement (or a late
// payment re-acquiring), a DEDUCT at payment, a RELEASE by the worker.
// Epoch 0 is the order's first cycle; a late payment writes epoch 1, so its
// rows never collide with the first cycle's in a ledger's unique key.
type Op struct {
	Kind    FlowType
	OrderNo string
	UserID  string
	Key     string
	Qty     int64
	Trigger Trigger
	Epoch   int
	Actor   string
	Now     time.Time
	// answer is a remote type's answer to the call op records (see
	// remoteResource.Apply); nil for every other type.
	answer *callAnswer
}

// ResourceKind says how a type's holds are kept.
type ResourceKind string

// Resource kinds.
const (
	// KindCounter moves amounts between available, held and spent: stock,
	// balance, points, activity quota.
	KindCounter ResourceKind = "counter"
	// KindSingle holds one thing at a time by its status: a coupon, a slot.
	KindSingle ResourceKind = "single"
)

// kindWords say how a kind's holds are kept, in messages.
var kindWords = map[ResourceKind]string{KindCounter: "counted", KindSingle: "held one at a time", KindRemote: "kept by its service"}

// LedgerSpec says where a type's ledger rows are, for the readers that
// treat every type's ledger alike (the invariant checks): the table, the
// row's key as an SQL expression over the alias f, its quantity (1 for a
// single), and a condition over f narrowing the table to the type ("" or
// " AND ..."). A counter's rows are in Counter.Table, under the same key
// column and narrowed by the same condition.
type LedgerSpec struct {
	Table, Key, Qty, Where string
	// Owner is the column of a row's cost bearer (a coupon's), or "";
	// Owners are the bearers it may name, in the order reports show them.
	Owner   string
	Owners  []string
	Counter *CounterSpec
	// Status is, for a type that is not a counter, a row's status before
	// and after it as two SQL columns over f, status_before and
	// status_after; "" reads the columns of those names.
	Status string
}

// CounterSpec names a counter's table and its three columns.
type CounterSpec struct {
	Table, Avail, Held, Spent string
}

// Resource is one kind of held resource. Adding a kind is one new file with
// its Resource, plus its tables in the migrations: everything the rest of
// the system asks about a type, it asks here.
type Resource interface {
	Type() ResourceType
	Kind() ResourceKind
	// Side is the second key every row of the type carries (an account's
	// asset), or "".
	Side() string
	// Page is the dashboard's page of one key, or "" when it has none.
	Page(key string) string
	// Ledger says where the type's ledger rows are.
	Ledger() LedgerSpec
	// MaxQty is the most one order may hold of one key (1: one at a time).
	MaxQty() int64
	// UserKeyed tells whether a key is a user's id (an account's): an
	// order may then hold only its own user's.
	UserKeyed() bool
	// Apply performs op inside tx and writes its ledger row in the same
	// transaction: first the ledger insert (errDuplicate when the ledger
	// already has it, nothing changed), then the conditional update. A LOCK
	// that cannot be met returns the resource's business error; a DEDUCT or
	// RELEASE that the data does not allow returns errShort,
	// errStateMismatch or errMissing.
	Apply(tx *gorm.DB, op Op) error
	// ReleaseDelay is how long after close a release of key becomes due.
	ReleaseDelay(tx *gorm.DB, key string) (time.Duration, error)
	// Flows lists the ledger rows that name an order, oldest first.
	Flows(db *gorm.DB, orderNo string) ([]Flow, error)
	// Reconcile compares each key's held amount with what PENDING orders and
	// unfinished release tasks say it should be.
	Reconcile(ctx context.Context, db *gorm.DB) ([]Diff, error)
	// reconcileKeys is Reconcile for some keys, with what PENDING orders
	// and unfinished tasks hold of them already read (expectedHeld).
	reconcileKeys(db *gorm.DB, keys []string, pending, tasks map[ResourceKey]keyTotals) ([]Diff, error)
}

// Diff is one disagreement found by reconciliation. A positive Delta
// (actual above expected) is a missed release; a negative one is a double
// release or rolled-back state.
type Diff struct {
	Resource ResourceType `json:"resource"`
	Key      string       `json:"key"`
	Check    string       `json:"check"`
	Expected int64        `json:"expected"`
	Actual   int64        `json:"actual"`
}

// Delta is actual minus expected.
func (d Diff) Delta() int64 { return d.Actual - d.Expected }

// Reconciliation checks. HELD: the held amount against what PENDING orders
// and unfinished release tasks hold. CONSERVATION: available + held + spent
// against what the ledger says was ever added. LEDGER_*: each column against
// the sum of the ledger's rows, so a hand edit of a resource table is
// caught. USED_UNPAID: a coupon USED or a slot SOLD for an order that is not
// PAID. LEDGER_STATUS: a coupon's or slot's status against its last ledger row.
const (
	CheckHeld         = "HELD"
	CheckConservation = "CONSERVATION"
	CheckLedgerAvail  = "LEDGER_AVAILABLE"
	CheckLedgerHeld   = "LEDGER_HELD"
	CheckLedgerSpent  = "LEDGER_SPENT"
	CheckUsedUnpaid   = "USED_UNPAID"
	CheckLedgerStatus = "LEDGER_STATUS"
)

// Label is a declared type's name as people read it, in the dashboard's
// two languages.
type Label struct{ Zh, En string }

// DeclaredType is a counter type a shop declares instead of coding it
// (docs/resources-file.md): its name and its label.
type DeclaredType struct {
	Type  ResourceType
	Label Label
}

// newRegistry registers the built-in types, then the declared counters,
// then the remote types, and sets s.labels and s.remotes. A declared or
// remote type must be a valid name that no other type has.
func newRegistry(s *Store, declared []DeclaredType, remotes []RemoteType) (map[ResourceType]Resource, []ResourceType, error) {
	rs := []Resource{
		inventoryResource(s),
		&couponResource{s: s},
		accountResource(s, ResBalance, AssetBalance, ErrInsufficientFunds),
		accountResource(s, ResPoints, AssetPoints, ErrInsufficientPts),
		quotaResource(s),
		&slotResource{s: s},
	}
	s.labels = map[ResourceType]Label{}
	for _, d := range declared {
		if !ValidTypeName(string(d.Type)) {
			return nil, nil, fmt.Errorf("%w: declared resource type %q is not a type name", ErrInvalid, d.Type)
		}
		rs = append(rs, declaredCounter(s, d.Type))
		s.labels[d.Type] = d.Label
	}
	s.remotes = map[ResourceType]*remoteResource{}
	for _, d := range remotes {
		if !ValidTypeName(string(d.Type)) || d.Client == nil {
			return nil, nil, fmt.Errorf("%w: remote resource type %q needs a type name and its service's client", ErrInvalid, d.Type)
		}
		r := &remoteResource{s: s, typ: d.Type, client: d.Client}
		rs = append(rs, r)
		s.labels[d.Type] = d.Label
		s.remotes[d.Type] = r
	}
	m := make(map[ResourceType]Resource, len(rs))
	types := make([]ResourceType, len(rs))
	for i, r := range rs {
		if _, dup := m[r.Type()]; dup {
			return nil, nil, fmt.Errorf("%w: resource type %q registered twice", ErrInvalid, r.Type())
		}
		m[r.Type()] = r
		types[i] = r.Type()
	}
	return m, types, nil
}

// Labels are the names of the declared types, by type; a built-in type's
// name is in the dashboard's catalog.
func (s *Store) Labels() map[ResourceType]Label { return maps.Clone(s.labels) }

// Types lists the resource types of the registry, in the order holds are
// taken.
func (s *Store) Types() []ResourceType { return slices.Clone(s.types) }

// TypeRank is t's place in the registry's order, the order holds are
// taken and pages list types in; an unknown type comes after them all.
func (s *Store) TypeRank(t ResourceType) int {
	if i := slices.Index(s.types, t); i >= 0 {
		return i
	}
	return len(s.types)
}

// ParseType accepts the name of a type in the registry.
func (s *Store) ParseType(name string) (ResourceType, error) {
	if _, ok := s.resources[ResourceType(name)]; ok {
		return ResourceType(name), nil
	}
	return "", fmt.Errorf("%w: unknown resource type %q", ErrInvalid, name)
}

// KeyPage is the dashboard's page of one key of type t, or "" when it has
// none or t is unknown.
func (s *Store) KeyPage(t ResourceType, key string) string {
	if r, ok := s.resources[t]; ok {
		return r.Page(key)
	}
	return ""
}

// Side is the second key every row of type t carries (an account's
// asset), or "" when it has none or t is unknown.
func (s *Store) Side(t ResourceType) string {
	if r, ok := s.resources[t]; ok {
		return r.Side()
	}
	return ""
}

// Resource returns the implementation of one resource type.
func (s *Store) Resource(t ResourceType) Resource { return s.resources[t] }

// apply runs op on resource t and keeps the order's hold row in step:
// a RELEASE adds to released, a DEDUCT to deducted, a re-acquiring LOCK
// (epoch > 0) takes back from released. The hold row's CHECKs and the
// conditions here make "at most what it holds" hold at the order level too.
func (s *Store) apply(tx *gorm.DB, t ResourceType, op Op) error {
	r, ok := s.resources[t]
	if !ok {
		// A task of a type the resources file no longer declares: an
		// operator must declare it again, or settle the hold by hand.
		return fmt.Errorf("%w: resource type %s is not registered: is it still in the resources file?", errStateMismatch, t)
	}
	if err := r.Apply(tx, op); err != nil {
		return err
	}
	var dRel, dDed int64
	switch {
	case op.Kind == FlowRelease:
		dRel = op.Qty
	case op.Kind == FlowDeduct:
		dDed = op.Qty
	case op.Kind == FlowLock && op.Epoch > 0:
		dRel = -op.Qty
	default:
		return nil
	}
	res := tx.Exec(`UPDATE order_holds SET released = released + ?, deducted = deducted + ?
		WHERE order_no = ? AND resource_type = ? AND biz_key = ?
		AND released + ? >= 0 AND qty - released - deducted - ? - ? >= 0`,
		dRel, dDed, op.OrderNo, t, op.Key, dRel, dRel, dDed)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: order %s does not hold %d of %s %s", errStateMismatch, op.OrderNo, op.Qty, t, op.Key)
	}
	return nil
}

// releaseHolds adds each released task's quantity to released on its
// order's hold row, as apply does for one RELEASE, in one guarded update,
// and returns how many rows it moved: a row the task would take past what
// it holds is left as it was, and so is a second task of the same hold.
func releaseHolds(tx *gorm.DB, tasks []ReleaseTask) (int64, error) {
	var q strings.Builder
	q.WriteString("WITH v(o, t, k, d) AS (VALUES ")
	args := make([]any, 0, 4*len(tasks))
	for i, t := range tasks {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, CAST(? AS BIGINT))")
		args = append(args, t.OrderNo, t.ResourceType, t.BizKey, t.Qty)
	}
	q.WriteString(`) UPDATE order_holds SET released = released + v.d FROM v
		WHERE order_holds.order_no = v.o AND order_holds.resource_type = v.t AND order_holds.biz_key = v.k
		AND order_holds.qty - order_holds.released - order_holds.deducted - v.d >= 0`)
	res := tx.Exec(q.String(), args...)
	return res.RowsAffected, res.Error
}
