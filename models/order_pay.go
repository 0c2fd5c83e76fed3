package models

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// PayResult is the answer to a payment.
type PayResult struct {
	Status OrderStatus `json:"status"`
	Late   bool        `json:"late,omitempty"`
	Note   string      `json:"note,omitempty"`
}

// PayOrder records that the channel says the money arrived. A PENDING order
// becomes PAID and its holds are deducted. A CLOSED order takes the
// late-payment path. Paying a PAID or REFUND_PENDING order again answers
// the same result and changes nothing.
func (s *Store) PayOrder(ctx context.Context, orderNo, channelTxnID string) (PayResult, error) {
	if strings.TrimSpace(channelTxnID) == "" || len(channelTxnID) > 64 {
		return PayResult{}, invalid("channel_txn_id must be 1-64 characters")
	}
	var out PayResult
	err := s.writeShared(ctx, func(tx *gorm.DB) error {
		out = PayResult{} // a run again alone starts afresh (writeShared)
		now := s.Now()
		res := tx.Exec(`UPDATE orders SET status = 'PAID', paid_at = ?, channel_txn_id = ?, updated_at = ?, version = version + 1
			WHERE order_no = ? AND status = 'PENDING'`, now, channelTxnID, now, orderNo)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			out.Status = OrderPaid
			err := savepoint(tx, "pay", func() error { return s.deductAll(tx, orderNo, TriggerPay, 0) })
			if !errors.Is(err, errStockGone) {
				return err
			}
			out, err = s.payStockGone(tx, orderNo, err)
			return err
		}
		var o Order
		if err := tx.Where("order_no = ?", orderNo).Take(&o).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return fmt.Errorf("%w: order %s", ErrNotFound, orderNo)
			}
			return err
		}
		if o.Status == OrderClosed {
			r, err := s.payLate(tx, &o, channelTxnID)
			out = r
			return err
		}
		if o.Status != OrderPending && o.ChannelTxnID != channelTxnID {
			// Money from a second transaction: not a repeat, a double charge.
			return fmt.Errorf("%w: order %s is %s by transaction %s; refund %s", ErrOrderNotPayable, orderNo, o.Status, o.ChannelTxnID, channelTxnID)
		}
		out = PayResult{Status: o.Status, Late: o.LatePaid, Note: o.Note}
		return nil
	})
	if err != nil {
		return PayResult{}, fmt.Errorf("pay order %s: %w", orderNo, err)
	}
	return out, nil
}

// deductAll consumes every outstanding hold of an order and takes the stock
// of its lines deducted at payment (takeLine). A remote type's
// hold is deducted by its service, which the payment's transaction cannot
// call: it writes a DEDUCT task instead, which the worker calls and
// records as it does a release. An order whose remote locks were not all
// answered done is refused, ErrPlacementPending: the payment rolls back.
func (s *Store) deductAll(tx *gorm.DB, orderNo string, trig Trigger, epoch int) error {
	var o Order
	if err := tx.Select("user_id", "locks_answered_at").Where("order_no = ?", orderNo).Take(&o).Error; err != nil {
		return err
	}
	var hs []Hold
	if err := tx.Where("order_no = ?", orderNo).Find(&hs).Error; err != nil {
		return err
	}
	sortHolds(hs)
	now := s.Now()
	var tasks []ReleaseTask
	for _, h := range hs {
		if h.awaitsPayment() {
			// A line cancelled whole before payment (Ordered 0) takes nothing.
			if h.takesAtPayment() {
				if err := s.takeLine(tx, h, o.UserID, trig, epoch); err != nil {
					return err
				}
			}
			continue
		}
		if h.Outstanding() == 0 {
			continue
		}
		if _, ok := s.remotes[h.ResourceType]; ok {
			if o.LocksAnsweredAt == nil {
				return fmt.Errorf("%w: order %s, %s %s: pay again once the placement has answered", ErrPlacementPending,
					orderNo, h.ResourceType, h.BizKey)
			}
			tasks = append(tasks, ReleaseTask{OrderNo: orderNo, ResourceType: h.ResourceType, BizKey: h.BizKey,
				Qty: h.Outstanding(), Op: FlowDeduct, Trigger: trig, NextAt: now})
			continue
		}
		op := Op{Kind: FlowDeduct, OrderNo: orderNo, UserID: o.UserID, Key: h.BizKey, Qty: h.Outstanding(),
			Trigger: trig, Epoch: epoch, Actor: "channel", Now: now}
		if err := s.apply(tx, h.ResourceType, op); err != nil {
			return err
		}
	}
	return insertTasks(tx, tasks, now)
}

// payLate handles money that arrived for a CLOSED order. It never returns the
// order to PENDING. Tasks not yet done are SUPERSEDED and their holds
// deducted; holds already released are re-acquired with the same conditional
// updates and deducted. If anything cannot be taken back, all of that is
// rolled back and the order goes to REFUND_PENDING instead: what could be
// re-acquired is re-acquired and released again, so the ledger shows the
// attempt, and unfinished tasks go on releasing as before. An order that
// held a remote type's resource always goes to REFUND_PENDING
// (remoteRefusal).
func (s *Store) payLate(tx *gorm.DB, o *Order, channelTxnID string) (PayResult, error) {
	now := s.Now()
	// Take the order row first: a second late callback waits here and then
	// finds the order no longer CLOSED.
	res := tx.Exec("UPDATE orders SET version = version + 1, updated_at = ? WHERE order_no = ? AND status = 'CLOSED'", now, o.OrderNo)
	if res.Error != nil {
		return PayResult{}, res.Error
	}
	if res.RowsAffected == 0 {
		// Another callback settled it first.
		if err := tx.Where("order_no = ?", o.OrderNo).Take(o).Error; err != nil {
			return PayResult{}, err
		}
		if o.ChannelTxnID != channelTxnID {
			return PayResult{}, fmt.Errorf("%w: order %s is %s by transaction %s; refund %s", ErrOrderNotPayable, o.OrderNo, o.Status, o.ChannelTxnID, channelTxnID)
		}
		return PayResult{Status: o.Status, Late: o.LatePaid, Note: o.Note}, nil
	}
	// Lock the order's tasks so no worker finishes one under us.
	var tasks []ReleaseTask
	if err := tx.Raw("SELECT * FROM release_tasks WHERE order_no = ? ORDER BY id"+s.forUpdate(), o.OrderNo).Scan(&tasks).Error; err != nil {
		return PayResult{}, err
	}
	op := func(kind FlowType, t ReleaseTask) Op {
		return Op{Kind: kind, OrderNo: o.OrderNo, UserID: o.UserID, Key: t.BizKey, Qty: t.Qty,
			Trigger: TriggerLatePayment, Epoch: 1, Actor: "channel", Now: now}
	}
	// Resource rows are locked in the one order every transaction uses.
	sortTasks(tasks)
	err := s.remoteRefusal(tasks)
	if err == nil && o.CloseReason == string(TriggerLineCancel) {
		// The customer gave back every line before paying: there are no
		// goods to take back (a line cancel releases at once, with no
		// task), so the money goes back rather than buying the rest alone.
		err = fmt.Errorf("%w: every line of order %s was cancelled before the payment came", errStateMismatch, o.OrderNo)
	}
	if err == nil {
		err = savepoint(tx, "late_payment", func() error {
			// Lines deducted at payment held nothing and have no task: a
			// late payment takes them as a payment would, in their place
			// among the tasks, so the whole takes its locks in the order
			// placement does.
			pay, err := s.awaitingPayment(tx, o.OrderNo)
			if err != nil {
				return err
			}
			for _, st := range latePaySteps(tasks, pay) {
				if st.line != nil {
					if err := s.takeLine(tx, *st.line, o.UserID, TriggerLatePayment, 1); err != nil {
						return err
					}
					continue
				}
				t := *st.task
				if t.Status == TaskDone {
					if err := s.apply(tx, t.ResourceType, op(FlowLock, t)); err != nil {
						return err
					}
				} else {
					res := tx.Exec("UPDATE release_tasks SET status = 'SUPERSEDED', updated_at = ? WHERE id = ? AND status IN ('PENDING','RETRY','MANUAL')", now, t.ID)
					if res.Error != nil {
						return res.Error
					}
					if res.RowsAffected == 0 {
						return fmt.Errorf("%w: task %d changed under the late payment", errStateMismatch, t.ID)
					}
				}
				if err := s.apply(tx, t.ResourceType, op(FlowDeduct, t)); err != nil {
					return err
				}
			}
			return tx.Exec(`UPDATE orders SET status = 'PAID', late_paid = ?, paid_at = ?, channel_txn_id = ?, updated_at = ?
			WHERE order_no = ? AND status = 'CLOSED'`, true, now, channelTxnID, now, o.OrderNo).Error
		})
	}
	if err == nil {
		return PayResult{Status: OrderPaid, Late: true}, nil
	}
	if !isBusinessRefusal(err) {
		return PayResult{}, err
	}
	failed := []string{err.Error()}
	for _, t := range tasks {
		if _, ok := s.remotes[t.ResourceType]; ok || t.Status != TaskDone {
			continue
		}
		err := savepoint(tx, "reacquire", func() error {
			if err := s.apply(tx, t.ResourceType, op(FlowLock, t)); err != nil {
				return err
			}
			return s.apply(tx, t.ResourceType, op(FlowRelease, t))
		})
		if err != nil && !isBusinessRefusal(err) {
			return PayResult{}, err
		}
	}
	note := clip("late payment could not take back every hold: "+strings.Join(failed, "; "), 500)
	err = tx.Exec(`UPDATE orders SET status = 'REFUND_PENDING', late_paid = ?, paid_at = ?, channel_txn_id = ?, note = ?, updated_at = ?
		WHERE order_no = ? AND status = 'CLOSED'`, true, now, channelTxnID, note, now, o.OrderNo).Error
	if err != nil {
		return PayResult{}, err
	}
	return PayResult{Status: OrderRefundPending, Late: true, Note: note}, nil
}

// remoteRefusal is why a late payment cannot take back the holds of
// tasks, or nil: a remote type's hold is released by a call the task may
// already have made, and taking it back would need a call inside the
// payment's transaction. Such an order goes to REFUND_PENDING, and its
// tasks go on releasing.
func (s *Store) remoteRefusal(tasks []ReleaseTask) error {
	for _, t := range tasks {
		if _, ok := s.remotes[t.ResourceType]; ok {
			return fmt.Errorf("%w: %s %s is kept by its service; a late payment does not take it back", errStateMismatch,
				t.ResourceType, t.BizKey)
		}
	}
	return nil
}

// savepoint runs fn so that its failure undoes only its own work: on error
// the transaction rolls back to before fn and stays usable (PostgreSQL
// needs that after a failed statement). The savepoint is released either
// way, so a loop of them does not pile up subtransactions.
func savepoint(tx *gorm.DB, name string, fn func() error) error {
	fnErr, err := inSavepoint(tx, name, fn)
	switch {
	case err == nil:
		return fnErr
	case fnErr == nil:
		return err
	}
	return errors.Join(fnErr, err)
}

// inSavepoint is savepoint with fn's error apart from that of the
// savepoint's own statements: when err is set, the transaction may not be
// usable any more, whatever fn did.
func inSavepoint(tx *gorm.DB, name string, fn func() error) (fnErr, err error) {
	if err := tx.Exec("SAVEPOINT " + name).Error; err != nil {
		return nil, err
	}
	if fnErr = fn(); fnErr != nil {
		if err := tx.Exec("ROLLBACK TO SAVEPOINT " + name).Error; err != nil {
			return fnErr, err
		}
	}
	return fnErr, tx.Exec("RELEASE SAVEPOINT " + name).Error
}

// isBusinessRefusal tells a "the data does not allow it" failure from a
// database failure that should abort the whole payment.
func isBusinessRefusal(err error) bool {
	var be *Error
	return errors.As(err, &be) || errors.Is(err, errShort) || errors.Is(err, errStateMismatch) ||
		errors.Is(err, errMissing) || errors.Is(err, errDuplicate)
}

// latePayStep is one step of a late payment: a task's hold to take back,
// or a line deducted at payment to take.
type latePayStep struct {
	task *ReleaseTask
	line *Hold
}

// latePaySteps merges tasks and lines, each sorted, into one list in the
// order placement locks resources in (type, then key).
func latePaySteps(tasks []ReleaseTask, lines []Hold) []latePayStep {
	steps := make([]latePayStep, 0, len(tasks)+len(lines))
	i, j := 0, 0
	for i < len(tasks) || j < len(lines) {
		if j == len(lines) || i < len(tasks) && resourceLess(tasks[i].ResourceType, lines[j].ResourceType, tasks[i].BizKey, lines[j].BizKey) {
			steps = append(steps, latePayStep{task: &tasks[i]})
			i++
			continue
		}
		steps = append(steps, latePayStep{line: &lines[j]})
		j++
	}
	return steps
}
