package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// An order's life after placement, line by line (docs/order-life.md). A
// line is one SKU the order holds: its hold row counts what was taken
// (qty), given back before payment (released), paid for (deducted), and
// of that what was shipped, refunded before shipping, returned after it,
// and of the returns what the warehouse restocked or wrote off. CHECKs on
// the row keep shipped + refunded ≤ deducted, returned ≤ shipped and
// restocked + written_off ≤ returned; every operation moves the row by a
// conditional update under those bounds, in the transaction that moves the
// stock and writes its ledger row, under an epoch of its own.

// OpKind is an operation of an order's life after placement.
type OpKind string

// Operations.
const (
	OpLineCancel OpKind = "LINE_CANCEL"
	OpShip       OpKind = "SHIP"
	OpRefund     OpKind = "REFUND"
	OpReturn     OpKind = "RETURN"
	OpInbound    OpKind = "INBOUND"
)

// Triggers of the ledger rows the operations write.
const (
	TriggerLineCancel Trigger = "LINE_CANCEL"
	TriggerRefund     Trigger = "REFUND"
	TriggerInbound    Trigger = "RETURN_INBOUND"
)

// Errors of the operations.
var (
	ErrOrderStatus   = &Error{"ORDER_STATUS", "the order's status does not allow this"}
	ErrQtyExceeded   = &Error{"QTY_EXCEEDED", "more than the line has for this"}
	ErrLineNotFound  = &Error{"LINE_NOT_FOUND", "the order has no such line"}
	ErrVersionMoved  = &Error{"VERSION_CONFLICT", "the line changed since the version given"}
	ErrOpIDReused    = &Error{"ID_REUSED", "this id was used for a different request"}
	ErrInboundUneven = &Error{"INBOUND_MISMATCH", "an inbound must account for every returned unit"}
)

// orderTransitions lists, for each status, the statuses an operation may
// move an order to. A move not listed is refused, ErrOrderStatus; staying
// put is allowed only where listed.
var orderTransitions = map[OrderStatus][]OrderStatus{
	OrderPending:       {OrderPending, OrderPaid, OrderClosed},
	OrderClosed:        {OrderPaid, OrderRefundPending},
	OrderRefundPending: {OrderRefunded},
	OrderPaid:          {OrderPartShipped, OrderShipped, OrderPartRefunded, OrderRefunded},
	OrderPartRefunded:  {OrderPartRefunded, OrderPartShipped, OrderShipped, OrderRefunded},
	OrderPartShipped:   {OrderPartShipped, OrderShipped, OrderReturning, OrderReturned},
	OrderShipped:       {OrderReturning},
	OrderReturning:     {OrderReturning, OrderPartShipped, OrderShipped, OrderReturned},
	OrderReturned:      nil,
	OrderRefunded:      nil,
}

// CheckTransition refuses a move of an order from one status to another
// (or staying put) that orderTransitions does not list.
func CheckTransition(from, to OrderStatus) error {
	if slices.Contains(orderTransitions[from], to) {
		return nil
	}
	return fmt.Errorf("%w: an order cannot go from %s to %s", ErrOrderStatus, from, to)
}

// paidStatusesSQL lists the statuses of an order whose payment consumed what
// it held (a coupon USED, a slot SOLD by it), as an SQL list.
const paidStatusesSQL = "('PAID','PARTIALLY_SHIPPED','SHIPPED','PARTIALLY_REFUNDED','RETURNING','RETURNED')"

// opFrom lists the statuses each operation starts from.
var opFrom = map[OpKind][]OrderStatus{
	OpLineCancel: {OrderPending},
	OpShip:       {OrderPaid, OrderPartRefunded, OrderPartShipped, OrderReturning},
	OpRefund:     {OrderPaid, OrderPartRefunded, OrderPartShipped, OrderShipped, OrderReturning, OrderRefundPending},
	OpReturn:     {OrderPartShipped, OrderShipped, OrderReturning},
	OpInbound:    {OrderReturning},
}

// LineQty is one line of an operation: qty of a SKU. Restock is an
// inbound line's: true back to stock, false written off.
type LineQty struct {
	SkuID   string `json:"sku_id"`
	Qty     int64  `json:"qty"`
	Restock *bool  `json:"restock,omitempty"`
}

// Line is one SKU line of an order as its hold row counts it. Qty is what
// it took; a line cancel counts in Released. A line deducted at payment
// (DeductAt payment) takes nothing until its payment: Qty is 0 until then,
// and a cancel lowers Ordered, what the payment will take. Ordered of a
// line deducted at placement is its Qty.
type Line struct {
	SkuID      string   `json:"sku_id"`
	DeductAt   DeductAt `json:"deduct_at"`
	Ordered    int64    `json:"ordered"`
	Qty        int64    `json:"qty"`
	Released   int64    `json:"released"`
	Deducted   int64    `json:"deducted"`
	Shipped    int64    `json:"shipped"`
	Refunded   int64    `json:"refunded"`
	Returned   int64    `json:"returned"`
	Restocked  int64    `json:"restocked"`
	WrittenOff int64    `json:"written_off"`
	Version    int64    `json:"version"`
}

// LifeResult answers an operation: the order's status after it, the
// order's lines, and the operation as recorded. Repeat says the same
// request had been answered before and nothing changed now.
type LifeResult struct {
	OrderNo string      `json:"order_no"`
	Status  OrderStatus `json:"status"`
	Op      OpKind      `json:"op"`
	OpID    string      `json:"op_id"`
	Epoch   int         `json:"epoch"`
	Lines   []Line      `json:"lines"`
	Note    string      `json:"note,omitempty"`
	Repeat  bool        `json:"repeat,omitempty"`
}

// OrderOp is one recorded operation, as the chain shows it.
type OrderOp struct {
	ID        int64       `json:"id"`
	OrderNo   string      `json:"order_no"`
	Kind      OpKind      `json:"kind"`
	OpID      string      `json:"op_id"`
	Epoch     int         `json:"epoch"`
	Request   string      `json:"request"`
	Status    OrderStatus `json:"status"`
	Reason    string      `json:"reason,omitempty"`
	Actor     string      `json:"actor,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// lifeReq is one operation as asked, before it runs.
type lifeReq struct {
	kind    OpKind
	orderNo string
	opID    string
	lines   []LineQty
	reason  string
	actor   string
	// version is a line cancel's expected line version, or -1; cancelID
	// its caller's id when it gives none.
	version  int64
	cancelID string
}

// canon is the request's canonical JSON: what a repeat must match.
func (r lifeReq) canon() string {
	ls := slices.Clone(r.lines)
	slices.SortFunc(ls, func(a, b LineQty) int {
		if c := strings.Compare(a.SkuID, b.SkuID); c != 0 {
			return c
		}
		return compareBool(a.Restock, b.Restock)
	})
	b, _ := json.Marshal(struct {
		Order  string    `json:"order_no"`
		Lines  []LineQty `json:"lines"`
		Reason string    `json:"reason,omitempty"`
	}{r.orderNo, ls, r.reason})
	return string(b)
}

func compareBool(a, b *bool) int {
	v := func(p *bool) int {
		switch {
		case p == nil:
			return 0
		case *p:
			return 2
		}
		return 1
	}
	return v(a) - v(b)
}

// maxOpIDLen bounds a caller's id of a shipment, refund or return.
const maxOpIDLen = 64

func (r lifeReq) validate() error {
	if !ValidOrderNo(r.orderNo) {
		return invalid("order number %q: 1-40 letters, digits, _ or -", r.orderNo)
	}
	if r.kind != OpLineCancel && !ValidKey(r.opID) {
		return invalid("id %q: 1-%d letters, digits, _ . : or -", r.opID, maxOpIDLen)
	}
	if len(r.reason) > 500 {
		return invalid("reason is longer than 500 bytes")
	}
	if len(r.lines) == 0 && r.kind != OpRefund {
		return invalid("lines: at least one line is required")
	}
	if len(r.lines) > MaxItems {
		return invalid("lines: at most %d", MaxItems)
	}
	seen := map[string]bool{}
	for _, l := range r.lines {
		if !ValidKey(l.SkuID) {
			return invalid("sku_id %q: 1-64 letters, digits, _ . : or -", l.SkuID)
		}
		if l.Qty < 1 || l.Qty > MaxQty {
			return invalid("qty of %s must be from 1 to %d, not %d", l.SkuID, MaxQty, l.Qty)
		}
		if (l.Restock != nil) != (r.kind == OpInbound) {
			if r.kind == OpInbound {
				return invalid("line %s: restock (true or false) is required on an inbound line", l.SkuID)
			}
			return invalid("line %s: restock belongs to an inbound line only", l.SkuID)
		}
		k := l.SkuID
		if l.Restock != nil {
			k = fmt.Sprintf("%s/%v", k, *l.Restock)
		}
		if seen[k] {
			return invalid("line %s is named twice", k)
		}
		seen[k] = true
	}
	return nil
}

// errRepeat carries the answer to a request already answered: the
// transaction that found it rolls back, so a repeat changes nothing.
type errRepeat struct{ res LifeResult }

func (e *errRepeat) Error() string { return "repeat of " + e.res.OpID }

// CancelLine gives back qty of a PENDING order's line at once, in the
// same transaction: a RELEASE row under an epoch of its own, the line's
// released grown. A line deducted at payment holds nothing yet: its
// cancel lowers what it ordered, and no stock moves. Every cancel names
// what makes it idempotent, so a retry is never a second cancel: version,
// when not -1, is the line version the caller saw (the cancel applies
// only to it), or cancelID is the caller's own id for it, unique on the
// line; the same cancel sent again is answered as before. The order stays
// PENDING while any line holds stock or still orders some at payment;
// when none does, it is closed (LINE_CANCEL) and its other holds go back
// through the outbox.
func (s *Store) CancelLine(ctx context.Context, orderNo, skuID string, qty, version int64, cancelID, reason, actor string) (LifeResult, error) {
	r := lifeReq{kind: OpLineCancel, orderNo: orderNo, lines: []LineQty{{SkuID: skuID, Qty: qty}}, reason: reason, actor: actor,
		version: version, cancelID: cancelID}
	switch {
	case version < -1:
		return LifeResult{}, invalid("version must be 0 or more")
	case version == -1 && cancelID == "":
		return LifeResult{}, invalid("a line cancel needs the line's version or a cancel_id, so that sending it again does not cancel twice")
	case version != -1 && cancelID != "":
		return LifeResult{}, invalid("a line cancel takes the line's version or a cancel_id, not both")
	case cancelID != "" && !ValidKey(cancelID):
		return LifeResult{}, invalid("cancel_id %q: 1-%d letters, digits, _ . : or -", cancelID, maxOpIDLen)
	}
	return s.lifeOp(ctx, r)
}

// Ship records that qty of each line went out under shipmentID. What was
// shipped can never be released or refunded; returns come back through
// Return and Inbound.
func (s *Store) Ship(ctx context.Context, orderNo, shipmentID string, lines []LineQty, actor string) (LifeResult, error) {
	return s.lifeOp(ctx, lifeReq{kind: OpShip, orderNo: orderNo, opID: shipmentID, lines: lines, actor: actor, version: -1})
}

// Refund gives paid, unshipped quantities back to stock (no lines: all of
// them). When it leaves the whole order refunded, the order's other holds
// are given back too: coupons (under the coupon expiry policy), spent
// balance and points, activity quota, seats and slots. A REFUND_PENDING
// order's refund (it holds nothing) only records that the money went back.
func (s *Store) Refund(ctx context.Context, orderNo, refundID string, lines []LineQty, reason, actor string) (LifeResult, error) {
	return s.lifeOp(ctx, lifeReq{kind: OpRefund, orderNo: orderNo, opID: refundID, lines: lines, reason: reason, actor: actor, version: -1})
}

// Return records shipped goods on their way back (an after-sale return,
// a refused delivery). Nothing is restocked until Inbound.
func (s *Store) Return(ctx context.Context, orderNo, returnID string, lines []LineQty, reason, actor string) (LifeResult, error) {
	return s.lifeOp(ctx, lifeReq{kind: OpReturn, orderNo: orderNo, opID: returnID, lines: lines, reason: reason, actor: actor, version: -1})
}

// Inbound is the warehouse's confirmation of a return: every returned
// unit is either restocked (back to available, a RESTOCK row) or written
// off (a WRITE_OFF row; it stays counted as sold). One inbound a return.
func (s *Store) Inbound(ctx context.Context, returnID string, lines []LineQty, actor string) (LifeResult, error) {
	if !ValidKey(returnID) {
		return LifeResult{}, invalid("return id %q: 1-%d letters, digits, _ . : or -", returnID, maxOpIDLen)
	}
	var ret []OrderOp
	err := s.R.WithContext(ctx).Raw("SELECT order_no FROM order_ops WHERE kind = ? AND op_id = ?", OpReturn, returnID).Scan(&ret).Error
	if err != nil {
		return LifeResult{}, fmt.Errorf("inbound of return %s: %w", returnID, err)
	}
	if len(ret) == 0 {
		return LifeResult{}, fmt.Errorf("inbound: %w: no return %s", ErrNotFound, returnID)
	}
	return s.lifeOp(ctx, lifeReq{kind: OpInbound, orderNo: ret[0].OrderNo, opID: returnID, lines: lines, actor: actor, version: -1})
}

// lifeOp runs one operation in one write transaction: take the order's
// row, answer a repeat as before, check the status, move the lines and
// the stock, derive the status, record the operation.
func (s *Store) lifeOp(ctx context.Context, r lifeReq) (LifeResult, error) {
	if err := r.validate(); err != nil {
		return LifeResult{}, err
	}
	// The actor goes into ledger rows as well as the record: storable
	// text, as the record's is.
	r.actor = clip(r.actor, maxAuditShortLen)
	var out LifeResult
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.lifeTx(tx, r)
		return err
	})
	var rep *errRepeat
	if errors.As(err, &rep) {
		return rep.res, nil
	}
	if err != nil {
		return LifeResult{}, fmt.Errorf("%s of order %s: %w", strings.ToLower(string(r.kind)), r.orderNo, err)
	}
	return out, nil
}

func (s *Store) lifeTx(tx *gorm.DB, r lifeReq) (LifeResult, error) {
	now := s.Now()
	// The order's row first, as every writer of an order takes it: a
	// second request with the same id waits here, then finds the first's
	// record below.
	res := tx.Exec("UPDATE orders SET version = version + 1, last_epoch = last_epoch + 1, updated_at = ? WHERE order_no = ?", now, r.orderNo)
	if res.Error != nil {
		return LifeResult{}, res.Error
	}
	if res.RowsAffected == 0 {
		return LifeResult{}, fmt.Errorf("%w: order %s", ErrNotFound, r.orderNo)
	}
	var o Order
	if err := tx.Select("order_no", "user_id", "status", "last_epoch").Where("order_no = ?", r.orderNo).Take(&o).Error; err != nil {
		return LifeResult{}, err
	}
	hs, err := orderLines(tx, r.orderNo)
	if err != nil {
		return LifeResult{}, err
	}
	if r.kind == OpLineCancel {
		h := findLine(hs, r.lines[0].SkuID)
		if h == nil {
			return LifeResult{}, fmt.Errorf("%w: order %s has no line %s", ErrLineNotFound, r.orderNo, r.lines[0].SkuID)
		}
		// Ids are unique per kind across orders: a cancel's names its
		// order and line, then the version it was sent for or the
		// caller's id.
		if r.cancelID != "" {
			r.opID = fmt.Sprintf("%s/%s#%s", r.orderNo, h.BizKey, r.cancelID)
		} else {
			r.opID = fmt.Sprintf("%s/%s@%d", r.orderNo, h.BizKey, r.version)
		}
	}
	if rep, err := s.findRepeat(tx, r); err != nil || rep != nil {
		if err == nil {
			err = &errRepeat{*rep}
		}
		return LifeResult{}, err
	}
	if !slices.Contains(opFrom[r.kind], o.Status) {
		return LifeResult{}, fmt.Errorf("%w: order %s is %s; %s needs it %s", ErrOrderStatus, r.orderNo, o.Status,
			strings.ToLower(string(r.kind)), joinStatuses(opFrom[r.kind]))
	}
	lc := lifeCtx{s: s, tx: tx, o: o, r: r, epoch: int(o.LastEpoch), now: now, holds: hs}
	to, err := lc.run()
	if err != nil {
		return LifeResult{}, err
	}
	if err := CheckTransition(o.Status, to); err != nil {
		return LifeResult{}, err
	}
	if to != o.Status {
		if to != OrderClosed {
			if err := tx.Exec("UPDATE orders SET status = ?, updated_at = ? WHERE order_no = ? AND status = ?", to, now, r.orderNo, o.Status).Error; err != nil {
				return LifeResult{}, err
			}
		}
	}
	op := OrderOp{OrderNo: r.orderNo, Kind: r.kind, OpID: r.opID, Epoch: lc.epoch, Request: r.canon(), Status: to,
		Reason: clip(r.reason, maxTextLen), Actor: r.actor}
	if err := insertOp(tx, &op, lc.r.lines, now); err != nil {
		return LifeResult{}, err
	}
	if err := emitEvents(tx, lifeEvents(lc.r, to, now)); err != nil {
		return LifeResult{}, err
	}
	if err := auditIn(tx, &AuditEntry{Actor: r.actor, Action: "order." + strings.ToLower(string(r.kind)),
		Target: "order:" + r.orderNo, Reason: r.reason, Outcome: "OK", Detail: fmt.Sprintf("%s %s: %s → %s", r.kind, r.opID, o.Status, to)}, now); err != nil {
		return LifeResult{}, err
	}
	lines, err := orderLines(tx, r.orderNo)
	if err != nil {
		return LifeResult{}, err
	}
	return LifeResult{OrderNo: r.orderNo, Status: to, Op: r.kind, OpID: r.opID, Epoch: lc.epoch, Lines: asLines(lines), Note: lc.note}, nil
}

// lifeEvents are the events of operation r, recorded leaving the order
// to: a refund's, or an inbound of returned units'.
func lifeEvents(r lifeReq, to OrderStatus, now time.Time) []newEvent {
	d := lifeData{OrderNo: r.orderNo, Status: to, Lines: sortedLines(r.lines)}
	var typ EventType
	switch r.kind {
	case OpRefund:
		typ, d.RefundID = EventOrderRefunded, r.opID
	case OpInbound:
		typ, d.ReturnID = EventReturnInbound, r.opID
	default:
		return nil
	}
	if d.Lines == nil {
		d.Lines = []LineQty{}
	}
	return []newEvent{{Type: typ, OrderNo: r.orderNo, At: now, Data: d}}
}

func joinStatuses(sts []OrderStatus) string {
	parts := make([]string, len(sts))
	for i, st := range sts {
		parts[i] = string(st)
	}
	return strings.Join(parts, ", ")
}

// findRepeat returns the answer to r if an operation of its kind and id
// was recorded: the same request answers as it did, another is refused.
func (s *Store) findRepeat(tx *gorm.DB, r lifeReq) (*LifeResult, error) {
	var ops []OrderOp
	if err := tx.Raw("SELECT * FROM order_ops WHERE kind = ? AND op_id = ?", r.kind, r.opID).Scan(&ops).Error; err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, nil
	}
	op := ops[0]
	kind := strings.ReplaceAll(strings.ToLower(string(r.kind)), "_", " ")
	// Another order's request is that order's business: the refusal names
	// only the kind of operation that holds the id.
	if op.OrderNo != r.orderNo {
		return nil, fmt.Errorf("%w: %s id %s is taken by a %s of another order", ErrOpIDReused, kind, r.opID, kind)
	}
	if op.Request != r.canon() {
		return nil, fmt.Errorf("%w: %s id %s was used for another %s of this order: %s", ErrOpIDReused, kind, r.opID, kind, op.Request)
	}
	hs, err := orderLines(tx, r.orderNo)
	if err != nil {
		return nil, err
	}
	return &LifeResult{OrderNo: r.orderNo, Status: op.Status, Op: r.kind, OpID: r.opID, Epoch: op.Epoch, Lines: asLines(hs), Repeat: true}, nil
}

func insertOp(tx *gorm.DB, op *OrderOp, lines []LineQty, now time.Time) error {
	err := tx.Raw(`INSERT INTO order_ops (order_no, kind, op_id, epoch, request, status, reason, actor, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, op.OrderNo, op.Kind, op.OpID, op.Epoch, op.Request, op.Status,
		op.Reason, op.Actor, now).Scan(&op.ID).Error
	if err != nil {
		return err
	}
	for _, l := range lines {
		restock := 0
		if l.Restock != nil && *l.Restock {
			restock = 1
		}
		if err := tx.Exec("INSERT INTO order_op_lines (op_row, sku_id, restock, qty) VALUES (?, ?, ?, ?)", op.ID, l.SkuID, restock, l.Qty).Error; err != nil {
			return err
		}
	}
	return nil
}

// orderLines reads every hold of an order (its lines are the inventory
// ones), locked for the operation, in the order resources are locked in.
func orderLines(tx *gorm.DB, orderNo string) ([]Hold, error) {
	var hs []Hold
	if err := tx.Where("order_no = ?", orderNo).Find(&hs).Error; err != nil {
		return nil, err
	}
	sortHolds(hs)
	return hs, nil
}

func findLine(hs []Hold, sku string) *Hold {
	for i := range hs {
		if hs[i].ResourceType == ResInventory && hs[i].BizKey == sku {
			return &hs[i]
		}
	}
	return nil
}

func asLines(hs []Hold) []Line {
	out := []Line{}
	for _, h := range hs {
		if h.ResourceType != ResInventory {
			continue
		}
		out = append(out, Line{SkuID: h.BizKey, DeductAt: h.lineDeductAt(), Ordered: h.ordered(), Qty: h.Qty, Released: h.Released, Deducted: h.Deducted, Shipped: h.Shipped,
			Refunded: h.Refunded, Returned: h.Returned, Restocked: h.Restocked, WrittenOff: h.WrittenOff, Version: h.Version})
	}
	return out
}

// lifeCtx is one operation under way.
type lifeCtx struct {
	s     *Store
	tx    *gorm.DB
	o     Order
	r     lifeReq
	epoch int
	now   time.Time
	holds []Hold
	note  string
}

func (c *lifeCtx) run() (OrderStatus, error) {
	switch c.r.kind {
	case OpLineCancel:
		return c.cancelLine()
	case OpShip:
		return c.eachLine("shipped = shipped + ?", "deducted - shipped - refunded >= ?", "paid and not shipped or refunded", nil)
	case OpRefund:
		return c.refund()
	case OpReturn:
		return c.eachLine("returned = returned + ?", "shipped - returned >= ?", "shipped and not returned", nil)
	case OpInbound:
		return c.inbound()
	}
	return "", fmt.Errorf("unknown operation %s", c.r.kind)
}

// moveLine is the line's conditional update: set, only while cond holds
// for qty (each ? of cond is qty).
func (c *lifeCtx) moveLine(sku, set, cond string, qty int64, what string) error {
	h := findLine(c.holds, sku)
	if h == nil {
		return fmt.Errorf("%w: order %s has no line %s", ErrLineNotFound, c.r.orderNo, sku)
	}
	args := []any{}
	for range strings.Count(set, "?") {
		args = append(args, qty)
	}
	args = append(args, c.r.orderNo, ResInventory, sku)
	for range strings.Count(cond, "?") {
		args = append(args, qty)
	}
	res := c.tx.Exec("UPDATE order_holds SET "+set+", version = version + 1 WHERE order_no = ? AND resource_type = ? AND biz_key = ? AND "+cond, args...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: line %s of order %s has %s, asked %d (%s)", ErrQtyExceeded, sku, c.r.orderNo, what, qty, lineWords(*h))
	}
	return nil
}

// lineWords says a line's quantities, for an error message.
func lineWords(h Hold) string {
	return fmt.Sprintf("held %d, released %d, paid %d, shipped %d, refunded %d, returned %d, restocked %d, written off %d",
		h.Outstanding(), h.Released, h.Deducted, h.Shipped, h.Refunded, h.Returned, h.Restocked, h.WrittenOff)
}

// eachLine moves every line of the request and, with kind set, the
// stock: a ledger row of that kind under the operation's epoch.
func (c *lifeCtx) eachLine(set, cond, what string, kind *FlowType) (OrderStatus, error) {
	for _, l := range sortedLines(c.r.lines) {
		if err := c.moveLine(l.SkuID, set, cond, l.Qty, what); err != nil {
			return "", err
		}
		if kind != nil {
			if err := c.stock(*kind, l.SkuID, l.Qty); err != nil {
				return "", err
			}
		}
	}
	return c.derive()
}

func sortedLines(ls []LineQty) []LineQty {
	ls = slices.Clone(ls)
	slices.SortStableFunc(ls, func(a, b LineQty) int { return strings.Compare(a.SkuID, b.SkuID) })
	return ls
}

// stock applies one ledger-row change of a line's SKU under the
// operation's epoch.
func (c *lifeCtx) stock(kind FlowType, sku string, qty int64) error {
	return c.resourceOp(ResInventory, kind, sku, qty)
}

func (c *lifeCtx) resourceOp(t ResourceType, kind FlowType, key string, qty int64) error {
	trig := map[OpKind]Trigger{OpLineCancel: TriggerLineCancel, OpRefund: TriggerRefund, OpInbound: TriggerInbound}[c.r.kind]
	op := Op{Kind: kind, OrderNo: c.r.orderNo, UserID: c.o.UserID, Key: key, Qty: qty, Trigger: trig, Epoch: c.epoch,
		Actor: c.r.actor, Now: c.now}
	if err := c.s.resources[t].Apply(c.tx, op); err != nil {
		if errors.Is(err, errShort) || errors.Is(err, errStateMismatch) || errors.Is(err, errMissing) {
			// The line allowed it but the resource does not: the data
			// is already wrong, and reconciliation will say where.
			return fmt.Errorf("%w: %s %s cannot take %s %d: %v", ErrQtyExceeded, t, key, kind, qty, err)
		}
		return err
	}
	return nil
}

func (c *lifeCtx) cancelLine() (OrderStatus, error) {
	l := c.r.lines[0]
	h := findLine(c.holds, l.SkuID)
	if c.r.version >= 0 && h.Version != c.r.version {
		return "", fmt.Errorf("%w: line %s of order %s is at version %d, not %d", ErrVersionMoved, l.SkuID, c.r.orderNo, h.Version, c.r.version)
	}
	if h.awaitsPayment() {
		// Nothing is held: the line orders less, and its payment will
		// take only what is left.
		if err := c.moveLine(l.SkuID, "ordered = ordered - ?", "qty = 0 AND ordered >= ?", l.Qty, "not that much ordered"); err != nil {
			return "", err
		}
	} else {
		if err := c.moveLine(l.SkuID, "released = released + ?", "qty - released - deducted >= ?", l.Qty, "not that much held"); err != nil {
			return "", err
		}
		if err := c.stock(FlowRelease, l.SkuID, l.Qty); err != nil {
			return "", err
		}
		ev := newEvent{Type: EventHoldReleased, OrderNo: c.r.orderNo, At: c.now, Data: releasedData{OrderNo: c.r.orderNo,
			ResourceType: ResInventory, Key: l.SkuID, Qty: l.Qty, Trigger: TriggerLineCancel, Epoch: c.epoch}}
		if err := emitEvents(c.tx, []newEvent{ev}); err != nil {
			return "", err
		}
	}
	hs, err := orderLines(c.tx, c.r.orderNo)
	if err != nil {
		return "", err
	}
	for _, h := range hs {
		if h.ResourceType == ResInventory && (h.Outstanding() > 0 || h.takesAtPayment()) {
			return OrderPending, nil
		}
	}
	won, _, err := c.s.closeOrders(c.tx, []string{c.r.orderNo}, TriggerLineCancel)
	if err != nil {
		return "", err
	}
	if len(won) != 1 {
		return "", fmt.Errorf("%w: order %s changed under the line cancel", errStateMismatch, c.r.orderNo)
	}
	c.note = "no line holds or orders stock any more: the order is closed and its other holds go back"
	return OrderClosed, nil
}

func (c *lifeCtx) refund() (OrderStatus, error) {
	if c.o.Status == OrderRefundPending {
		if len(c.r.lines) > 0 {
			return "", fmt.Errorf("%w: order %s is REFUND_PENDING: nothing of it is paid for, so a refund names no lines", ErrQtyExceeded, c.r.orderNo)
		}
		c.note = "the late payment's money went back; the order held nothing"
		return OrderRefunded, nil
	}
	if len(c.r.lines) == 0 {
		for _, h := range c.holds {
			if n := h.Deducted - h.Shipped - h.Refunded; h.ResourceType == ResInventory && n > 0 {
				c.r.lines = append(c.r.lines, LineQty{SkuID: h.BizKey, Qty: n})
			}
		}
		if len(c.r.lines) == 0 && !c.wholeAfter(nil, nil) {
			return "", fmt.Errorf("%w: order %s has nothing paid and unshipped to refund", ErrQtyExceeded, c.r.orderNo)
		}
	}
	asked := map[string]int64{}
	for _, l := range c.r.lines {
		if findLine(c.holds, l.SkuID) == nil {
			return "", fmt.Errorf("%w: order %s has no line %s", ErrLineNotFound, c.r.orderNo, l.SkuID)
		}
		asked[l.SkuID] = l.Qty
	}
	return c.giveBack(c.wholeAfter(asked, nil), func(h Hold) error {
		n, ok := asked[h.BizKey]
		if !ok {
			return nil
		}
		if err := c.moveLine(h.BizKey, "refunded = refunded + ?", "deducted - shipped - refunded >= ?", n, "paid and not shipped or refunded"); err != nil {
			return err
		}
		return c.stock(FlowRefund, h.BizKey, n)
	})
}

// wholeAfter: once the operation refunds refund and takes in inbound (by
// SKU), every unit the order paid for is back: refunded before shipping,
// or shipped, returned and taken in by the warehouse. The order as a whole
// is then given back, and its other holds with it.
func (c *lifeCtx) wholeAfter(refund, inbound map[string]int64) bool {
	for _, h := range c.holds {
		if h.ResourceType != ResInventory {
			continue
		}
		if h.Refunded+refund[h.BizKey]+h.Shipped != h.Deducted || h.Returned != h.Shipped ||
			h.Restocked+h.WrittenOff+inbound[h.BizKey] != h.Returned {
			return false
		}
	}
	return true
}

// giveBack makes one pass over the order's holds in the order placement
// locks resources in (type, then key): each line is moved by line, and
// when the operation leaves the order given back whole, every other hold
// is refunded in the same transaction: coupons (under the coupon expiry
// policy), spent balance and points, activity quota, seats and slots. A
// remote type's hold stays with its service, which takes no refund, and
// the answer's note names it. Whether the order ends whole is known before
// anything moves (the order's row, taken first, keeps every other
// operation out): lines first and the rest after would lock in another
// order than a placement of the same user's, and PostgreSQL would abort
// one of the two.
func (c *lifeCtx) giveBack(whole bool, line func(Hold) error) (OrderStatus, error) {
	var kept []string
	for _, h := range c.holds {
		if h.ResourceType == ResInventory {
			if err := line(h); err != nil {
				return "", err
			}
			continue
		}
		if !whole {
			continue
		}
		if _, remote := c.s.remotes[h.ResourceType]; remote {
			// Deducted, or still to be by its DEDUCT task: either way the
			// service keeps it.
			if h.Qty-h.Released > 0 {
				kept = append(kept, fmt.Sprintf("%s %s", h.ResourceType, h.BizKey))
			}
			continue
		}
		n := h.Deducted - h.Refunded
		if n <= 0 {
			continue
		}
		if err := c.resourceOp(h.ResourceType, FlowRefund, h.BizKey, n); err != nil {
			return "", err
		}
		res := c.tx.Exec(`UPDATE order_holds SET refunded = refunded + ?, version = version + 1
			WHERE order_no = ? AND resource_type = ? AND biz_key = ? AND deducted - shipped - refunded >= ?`, n, c.r.orderNo, h.ResourceType, h.BizKey, n)
		if res.Error != nil {
			return "", res.Error
		}
		if res.RowsAffected == 0 {
			return "", fmt.Errorf("%w: %s %s of order %s changed under the %s", errStateMismatch, h.ResourceType, h.BizKey, c.r.orderNo,
				strings.ToLower(string(c.r.kind)))
		}
	}
	if len(kept) > 0 {
		c.note = "kept by their services, which take no refunds: " + strings.Join(kept, ", ")
	}
	to, err := c.derive()
	if err != nil || !whole {
		return to, err
	}
	if to == OrderPaid {
		// An order without lines (only seats, say) has no sums to say it.
		to = OrderRefunded
	}
	return to, nil
}

func (c *lifeCtx) inbound() (OrderStatus, error) {
	var ret []LineQty
	err := c.tx.Raw(`SELECT l.sku_id, l.qty FROM order_op_lines l JOIN order_ops o ON o.id = l.op_row
		WHERE o.kind = ? AND o.op_id = ?`, OpReturn, c.r.opID).Scan(&ret).Error
	if err != nil {
		return "", err
	}
	want := map[string]int64{}
	for _, l := range ret {
		want[l.SkuID] += l.Qty
	}
	got := map[string]int64{}
	for _, l := range c.r.lines {
		got[l.SkuID] += l.Qty
	}
	for sku, n := range want {
		if got[sku] != n {
			return "", fmt.Errorf("%w: return %s sent back %d of %s; the inbound accounts for %d (restock or write off each unit)",
				ErrInboundUneven, c.r.opID, n, sku, got[sku])
		}
	}
	for sku := range got {
		if _, ok := want[sku]; !ok {
			return "", fmt.Errorf("%w: return %s has no line %s", ErrInboundUneven, c.r.opID, sku)
		}
	}
	lines := sortedLines(c.r.lines)
	return c.giveBack(c.wholeAfter(nil, got), func(h Hold) error {
		for _, l := range lines {
			if l.SkuID != h.BizKey {
				continue
			}
			set, kind := "restocked = restocked + ?", FlowRestock
			if !*l.Restock {
				set, kind = "written_off = written_off + ?", FlowWriteOff
			}
			if err := c.moveLine(l.SkuID, set, "returned - restocked - written_off >= ?", l.Qty, "returned and not yet in"); err != nil {
				return err
			}
			if err := c.stock(kind, l.SkuID, l.Qty); err != nil {
				return err
			}
		}
		return nil
	})
}

// derive is the order's status from its lines, after an operation.
func (c *lifeCtx) derive() (OrderStatus, error) {
	hs, err := orderLines(c.tx, c.r.orderNo)
	if err != nil {
		return "", err
	}
	var d, sh, rf, rt, in int64
	for _, h := range hs {
		if h.ResourceType != ResInventory {
			continue
		}
		d += h.Deducted
		sh += h.Shipped
		rf += h.Refunded
		rt += h.Returned
		in += h.Restocked + h.WrittenOff
	}
	return lifeStatus(d, sh, rf, rt, in), nil
}

// lifeStatus is a paid order's status from its lines' sums: deducted,
// shipped, refunded, returned, and of the returns taken in.
func lifeStatus(d, sh, rf, rt, in int64) OrderStatus {
	switch {
	case rt > in:
		return OrderReturning
	case sh == 0 && rf == d && d > 0:
		return OrderRefunded
	case sh > 0 && rt == sh && sh+rf == d:
		return OrderReturned
	case sh > 0 && sh+rf == d:
		return OrderShipped
	case sh > 0:
		return OrderPartShipped
	case rf > 0:
		return OrderPartRefunded
	}
	return OrderPaid
}
