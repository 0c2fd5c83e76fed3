package models

import (
	"context"
	"fmt"
	"sort"

	"gorm.io/gorm"
)

// Chain is everything about one order's holds and their release: the order,
// what it holds, every release task with its attempts, and every ledger row
// of every resource that names it.
type Chain struct {
	Order Order        `json:"order"`
	Holds []Hold       `json:"holds"`
	Tasks []ChainTask  `json:"tasks"`
	Flows []Flow       `json:"flows"`
	Audit []AuditEntry `json:"audit"`
	// Ops are the order's life after placement: line cancels, shipments,
	// refunds, returns, inbounds, oldest first.
	Ops []OrderOp `json:"ops"`
}

// ChainTask is a task with its attempts.
type ChainTask struct {
	ReleaseTask
	AttemptLog []TaskAttempt `json:"attempt_log"`
}

// OrderChain reads one order's whole release chain, in one snapshot.
func (s *Store) OrderChain(ctx context.Context, orderNo string) (*Chain, error) {
	var c *Chain
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		c, err = s.orderChain(tx, orderNo)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// OrderChainReconciled reads one order's chain and ReconcileKeys's answer
// for every key it holds from the same snapshot, so the page never shows a
// chain from one moment beside a "does it reconcile" from another.
func (s *Store) OrderChainReconciled(ctx context.Context, orderNo string) (*Chain, []Diff, error) {
	var c *Chain
	var diffs []Diff
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		if c, err = s.orderChain(tx, orderNo); err != nil {
			return err
		}
		if err := s.betweenReads(); err != nil {
			return err
		}
		keys := make([]ResourceKey, 0, len(c.Holds))
		for _, h := range c.Holds {
			keys = append(keys, ResourceKey{Type: h.ResourceType, Key: h.BizKey})
		}
		diffs, err = s.reconcileKeys(tx, keys)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return c, diffs, nil
}

// orderChain reads the chain inside tx.
func (s *Store) orderChain(db *gorm.DB, orderNo string) (*Chain, error) {
	c := &Chain{}
	if err := take(db.Where("order_no = ?", orderNo), &c.Order, "order "+orderNo); err != nil {
		return nil, err
	}
	if err := s.betweenReads(); err != nil {
		return nil, err
	}
	if err := db.Where("order_no = ?", orderNo).Order("resource_type, biz_key").Find(&c.Holds).Error; err != nil {
		return nil, fmt.Errorf("read holds of %s: %w", orderNo, err)
	}
	var tasks []ReleaseTask
	if err := db.Where("order_no = ?", orderNo).Order("id").Find(&tasks).Error; err != nil {
		return nil, fmt.Errorf("read tasks of %s: %w", orderNo, err)
	}
	var attempts []TaskAttempt
	if err := db.Where("order_no = ?", orderNo).Order("id").Find(&attempts).Error; err != nil {
		return nil, fmt.Errorf("read attempts of %s: %w", orderNo, err)
	}
	byTask := map[int64][]TaskAttempt{}
	for _, a := range attempts {
		byTask[a.TaskID] = append(byTask[a.TaskID], a)
	}
	c.Tasks = make([]ChainTask, 0, len(tasks))
	for _, t := range tasks {
		c.Tasks = append(c.Tasks, ChainTask{ReleaseTask: t, AttemptLog: append([]TaskAttempt{}, byTask[t.ID]...)})
	}
	c.Flows = []Flow{}
	for _, t := range s.types {
		fs, err := s.resources[t].Flows(db, orderNo)
		if err != nil {
			return nil, err
		}
		c.Flows = append(c.Flows, fs...)
	}
	sort.SliceStable(c.Flows, func(i, j int) bool { return c.Flows[i].CreatedAt.Before(c.Flows[j].CreatedAt) })
	targets := make([]string, 0, len(s.types))
	for _, t := range s.types {
		targets = append(targets, "order:"+orderNo+"/"+string(t))
	}
	targets = append(targets, "order:"+orderNo)
	if err := db.Where("target IN ?", targets).Order("id").Find(&c.Audit).Error; err != nil {
		return nil, fmt.Errorf("read audit of %s: %w", orderNo, err)
	}
	c.Ops = []OrderOp{}
	if err := db.Raw("SELECT * FROM order_ops WHERE order_no = ? ORDER BY id", orderNo).Scan(&c.Ops).Error; err != nil {
		return nil, fmt.Errorf("read operations of %s: %w", orderNo, err)
	}
	return c, nil
}
