package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Slot is a seat or time slot that one order at a time may hold.
type Slot struct {
	SlotID    string     `json:"slot_id"`
	Status    SlotStatus `json:"status"`
	OrderNo   *string    `json:"order_no"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// TableName is the slot table.
func (Slot) TableName() string { return "slot_holds" }

// slotResource holds seats and time slots: FREE → HELD → SOLD, and a
// release returns HELD to FREE.
type slotResource struct{ s *Store }

func (r *slotResource) Type() ResourceType { return ResSlot }

func (r *slotResource) Kind() ResourceKind { return KindSingle }

func (r *slotResource) MaxQty() int64 { return 1 }

func (r *slotResource) UserKeyed() bool { return false }

func (r *slotResource) Side() string { return "" }

// Page is "": slots have no page of their own yet.
func (r *slotResource) Page(string) string { return "" }

func (r *slotResource) Ledger() LedgerSpec {
	return LedgerSpec{Table: "slot_flows", Key: "f.slot_id", Qty: "1"}
}

func (r *slotResource) ReleaseDelay(*gorm.DB, string) (time.Duration, error) { return 0, nil }

func (r *slotResource) reconcileKeys(db *gorm.DB, keys []string, pending, tasks map[ResourceKey]keyTotals) ([]Diff, error) {
	return reconcileSingleKeys(db, ResSlot, keys, pending, tasks,
		"SELECT slot_id AS k, status FROM slot_holds WHERE slot_id IN ?", string(SlotHeld), asAny)
}

func (r *slotResource) Apply(tx *gorm.DB, op Op) error {
	var rows []Slot
	if err := tx.Raw("SELECT * FROM slot_holds WHERE slot_id = ?"+r.s.forUpdate(), op.Key).Scan(&rows).Error; err != nil {
		return err
	}
	if len(rows) == 0 {
		if op.Kind == FlowLock {
			return fmt.Errorf("%w: slot %s", ErrResourceNotFound, op.Key)
		}
		return fmt.Errorf("%w: slot %s", errMissing, op.Key)
	}
	sl := rows[0]
	var from, to SlotStatus
	var holder any = op.OrderNo
	cond := "order_no IS NULL"
	// refusal is returned after the ledger insert, so a repeat is told as a
	// duplicate first.
	var refusal error
	switch op.Kind {
	case FlowLock:
		from, to = SlotFree, SlotHeld
		if sl.Status != SlotFree {
			refusal = fmt.Errorf("%w: slot %s is %s", ErrSlotTaken, op.Key, sl.Status)
		}
	case FlowDeduct, FlowRelease:
		from, to, cond = SlotHeld, SlotSold, "order_no = ?"
		if op.Kind == FlowRelease {
			to, holder = SlotFree, nil
		}
		if sl.Status != SlotHeld || sl.OrderNo == nil || *sl.OrderNo != op.OrderNo {
			refusal = fmt.Errorf("%w: slot %s is %s, held by %s, not by order %s", errStateMismatch, op.Key, sl.Status, strOr(sl.OrderNo, "nobody"), op.OrderNo)
		}
	case FlowRefund:
		from, to, cond, holder = SlotSold, SlotFree, "order_no = ?", nil
		if sl.Status != SlotSold || sl.OrderNo == nil || *sl.OrderNo != op.OrderNo {
			refusal = fmt.Errorf("%w: slot %s is %s, held by %s, not sold to order %s", errStateMismatch, op.Key, sl.Status, strOr(sl.OrderNo, "nobody"), op.OrderNo)
		}
	default:
		return fmt.Errorf("slot: unsupported op %s", op.Kind)
	}
	res := tx.Exec(`INSERT INTO slot_flows (order_no, slot_id, type, epoch, trigger_type, status_before, status_after, actor, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (order_no, slot_id, type, epoch) DO NOTHING`,
		op.OrderNo, op.Key, op.Kind, op.Epoch, op.Trigger, sl.Status, to, op.Actor, op.Now)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: slot %s %s of order %s", errDuplicate, op.Key, op.Kind, op.OrderNo)
	}
	if refusal != nil {
		return refusal
	}
	args := []any{to, holder, op.Now, op.Key, from}
	if cond != "order_no IS NULL" {
		args = append(args, op.OrderNo)
	}
	res = tx.Exec("UPDATE slot_holds SET status = ?, order_no = ?, updated_at = ? WHERE slot_id = ? AND status = ? AND "+cond, args...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		if op.Kind == FlowLock {
			return fmt.Errorf("%w: slot %s", ErrSlotTaken, op.Key)
		}
		return fmt.Errorf("%w: slot %s changed under the %s", errStateMismatch, op.Key, op.Kind)
	}
	return nil
}

func (r *slotResource) Flows(db *gorm.DB, orderNo string) ([]Flow, error) {
	var flows []Flow
	err := db.Raw(`SELECT id, order_no, slot_id AS biz_key, type, epoch, trigger_type AS trigger, 1 AS qty,
		status_before, status_after, actor, created_at FROM slot_flows WHERE order_no = ? ORDER BY id`, orderNo).Scan(&flows).Error
	if err != nil {
		return nil, fmt.Errorf("slot flows of %s: %w", orderNo, err)
	}
	for i := range flows {
		flows[i].ResourceType = ResSlot
	}
	return flows, nil
}

func (r *slotResource) Reconcile(ctx context.Context, db *gorm.DB) ([]Diff, error) {
	diffs, err := reconcileSingles(ctx, db, ResSlot, "SELECT slot_id AS k FROM slot_holds WHERE status = 'HELD'")
	if err != nil {
		return nil, err
	}
	if err := r.s.betweenReads(); err != nil {
		return nil, err
	}
	more, err := reconcileStates(ctx, db, ResSlot,
		`SELECT s.slot_id AS k FROM slot_holds s LEFT JOIN orders o ON o.order_no = s.order_no
			WHERE s.status = 'SOLD' AND (o.status IS NULL OR o.status NOT IN `+paidStatusesSQL+`)`,
		`SELECT s.slot_id AS k, s.status AS now, f.status_after AS ledger FROM slot_holds s
			JOIN slot_flows f ON f.id = (SELECT MAX(id) FROM slot_flows WHERE slot_id = s.slot_id)
			WHERE f.status_after <> s.status`,
		func(st string) bool { return st == string(SlotHeld) || st == string(SlotSold) })
	return append(diffs, more...), err
}
