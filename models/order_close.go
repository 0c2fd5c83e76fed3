package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// CloseResult is the answer to a close: the order's status and how many
// release tasks it has. Won is true only for the call that flipped it.
type CloseResult struct {
	Status OrderStatus `json:"status"`
	Tasks  int64       `json:"tasks"`
	Won    bool        `json:"-"`
}

// CloseOrder flips a PENDING order to CLOSED and writes one release task per
// outstanding hold in the same transaction. Closing a CLOSED order answers
// the same result and writes nothing; closing a PAID order is refused.
func (s *Store) CloseOrder(ctx context.Context, orderNo string, reason Trigger, actor string) (CloseResult, error) {
	if _, err := ParseCloseReason(string(reason)); err != nil {
		return CloseResult{}, err
	}
	var out CloseResult
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		res := tx.Exec(`UPDATE orders SET status = 'CLOSED', close_reason = ?, closed_at = ?, updated_at = ?, version = version + 1
			WHERE order_no = ? AND status = 'PENDING'`, reason, now, now, orderNo)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			out.Won = true
			var hs []Hold
			if err := tx.Where("order_no = ?", orderNo).Find(&hs).Error; err != nil {
				return err
			}
			sortHolds(hs)
			for _, h := range hs {
				if h.Outstanding() == 0 {
					continue
				}
				delay, err := s.resources[h.ResourceType].ReleaseDelay(tx, h.BizKey)
				if err != nil {
					return err
				}
				t := ReleaseTask{OrderNo: orderNo, ResourceType: h.ResourceType, BizKey: h.BizKey, Qty: h.Outstanding(),
					Status: TaskPending, Trigger: reason, NextAt: now.Add(delay), CreatedAt: now, UpdatedAt: now}
				if err := tx.Create(&t).Error; err != nil {
					return err
				}
			}
		} else {
			st, err := orderStatus(tx, orderNo)
			if err != nil {
				return err
			}
			if st != OrderClosed {
				return fmt.Errorf("%w: order %s is %s", ErrOrderNotClosable, orderNo, st)
			}
		}
		out.Status = OrderClosed
		return tx.Model(&ReleaseTask{}).Where("order_no = ?", orderNo).Count(&out.Tasks).Error
	})
	if err != nil {
		return CloseResult{}, fmt.Errorf("close order %s: %w", orderNo, err)
	}
	return out, nil
}

func orderStatus(tx *gorm.DB, orderNo string) (OrderStatus, error) {
	var o Order
	err := tx.Select("status").Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("%w: order %s", ErrNotFound, orderNo)
	}
	return o.Status, err
}

// CloseExpired closes, with reason TIMEOUT, up to limit PENDING orders whose
// pay deadline has passed, and returns the numbers it closed.
func (s *Store) CloseExpired(ctx context.Context, limit int) ([]string, error) {
	var nos []string
	err := s.R.WithContext(ctx).Model(&Order{}).Where("status = ? AND pay_deadline < ?", OrderPending, s.Now()).
		Order("pay_deadline").Limit(limit).Pluck("order_no", &nos).Error
	if err != nil {
		return nil, fmt.Errorf("find expired orders: %w", err)
	}
	var closed []string
	for _, no := range nos {
		res, err := s.CloseOrder(ctx, no, TriggerTimeout, "system:timeout")
		if errors.Is(err, ErrOrderNotClosable) {
			continue // paid between the scan and the close
		}
		if err != nil {
			return closed, err
		}
		if res.Won {
			closed = append(closed, no)
		}
	}
	return closed, nil
}
