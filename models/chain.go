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
	// Events are the order's events (docs/events.md), in the order they
	// were written; on PostgreSQL one not yet sequenced has ID 0.
	Events []Event `json:"events"`
}

// ChainTask is a task with its attempts.
type ChainTask struct {
	ReleaseTask
	AttemptLog []TaskAttempt `json:"attempt_log"`
	Retry      RetryStanding `json:"retry"`
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
		c.Tasks = append(c.Tasks, ChainTask{ReleaseTask: t, AttemptLog: append([]TaskAttempt{}, byTask[t.ID]...), Retry: s.RetryOf(t)})
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
	evs, err := s.orderEvents(db, orderNo)
	if err != nil {
		return nil, err
	}
	c.Events = evs
	return c, nil
}

// OwnDiffs compares each of the order's holds with the order's own ledger
// rows of its key: what the hold still holds (taken − released − paid)
// against its LOCK rows less its RELEASE and DEDUCT rows (LINE_HELD), and
// what it refunded, restocked and wrote off against its REFUND, RESTOCK and
// WRITE_OFF rows (LINE_AFTER_SALE). A hold row moves in the transaction
// that writes its ledger row, so a difference here is this order's own: a
// hand edit of its hold or of one of its rows. Expected is the ledger's,
// Actual the hold's. What reconciling a key finds key-wide (ReconcileKeys,
// the runs' tickets) may be any order's, and is not here.
func (c *Chain) OwnDiffs() []Diff {
	type sums struct{ held, after int64 }
	rows := map[ResourceKey]sums{}
	for _, f := range c.Flows {
		k := ResourceKey{Type: f.ResourceType, Key: f.BizKey}
		s := rows[k]
		switch f.Type {
		case FlowLock:
			s.held += f.Qty
		case FlowRelease, FlowDeduct:
			s.held -= f.Qty
		case FlowRefund, FlowRestock, FlowWriteOff:
			s.after += f.Qty
		}
		rows[k] = s
	}
	var diffs []Diff
	for _, h := range c.Holds {
		s := rows[ResourceKey{Type: h.ResourceType, Key: h.BizKey}]
		if got := h.Outstanding(); got != s.held {
			diffs = append(diffs, Diff{Resource: h.ResourceType, Key: h.BizKey, Check: CheckLineHeld, Expected: s.held, Actual: got})
		}
		if got := h.Refunded + h.Restocked + h.WrittenOff; got != s.after {
			diffs = append(diffs, Diff{Resource: h.ResourceType, Key: h.BizKey, Check: CheckLineAfterSale, Expected: s.after, Actual: got})
		}
	}
	return diffs
}

// ChainRecon is what the chain says about reconciling the keys the order
// holds. Own are the disagreements of the order's holds with its own ledger
// rows (OwnDiffs) and, on a key where there are some, what reconciling the
// key finds now key-wide, which may be the order's doing; Reconciles is
// that the order's rows agree everywhere. Keys are about the other keys,
// whose trouble is not about this order: each open ticket (Live false) and
// each diff reconciling them finds now.
type ChainRecon struct {
	Reconciles bool        `json:"reconciles"`
	Own        []ReconNote `json:"own_diffs"`
	Keys       []ReconNote `json:"key_notes"`
}

// ReconNote is one disagreement or open ticket of a key. Live is that it is
// found now (Expected and Actual then say how); Ticket is the unresolved
// ticket that tracks it, 0 when none does yet.
type ReconNote struct {
	Diff
	Live   bool  `json:"live"`
	Ticket int64 `json:"ticket"`
}

// ReconcileChain sorts what the chain's keys do not reconcile into the
// order's own disagreements and the notes about its keys (ChainRecon).
// keyDiffs are ReconcileKeys's answer for the keys the order holds
// (OrderChainReconciled), tickets the keys' unresolved tickets
// (OpenTickets). A diff links to its key's ticket of its check, or to any
// ticket of its key when none is of its check: a run opens one ticket per
// key and lists the key's other checks in it.
func ReconcileChain(c *Chain, keyDiffs []Diff, tickets []OpenTicket) ChainRecon {
	type check struct {
		k     ResourceKey
		check string
	}
	ticketOf, anyTicket := map[check]int64{}, map[ResourceKey]int64{}
	for _, tk := range tickets {
		k := ResourceKey{Type: tk.Type, Key: tk.Key}
		if ch := (check{k, tk.Check}); ticketOf[ch] == 0 {
			ticketOf[ch] = tk.ID
		}
		if anyTicket[k] == 0 {
			anyTicket[k] = tk.ID
		}
	}
	note := func(d Diff) ReconNote {
		k := ResourceKey{Type: d.Resource, Key: d.Key}
		id := ticketOf[check{k, d.Check}]
		if id == 0 {
			id = anyTicket[k]
		}
		return ReconNote{Diff: d, Live: true, Ticket: id}
	}
	r := ChainRecon{Own: []ReconNote{}, Keys: []ReconNote{}}
	own := map[ResourceKey]bool{}
	for _, d := range c.OwnDiffs() {
		own[ResourceKey{Type: d.Resource, Key: d.Key}] = true
		r.Own = append(r.Own, note(d))
	}
	r.Reconciles = len(r.Own) == 0
	for _, tk := range tickets {
		if !own[ResourceKey{Type: tk.Type, Key: tk.Key}] {
			r.Keys = append(r.Keys, ReconNote{Diff: Diff{Resource: tk.Type, Key: tk.Key, Check: tk.Check}, Ticket: tk.ID})
		}
	}
	for _, d := range keyDiffs {
		if own[ResourceKey{Type: d.Resource, Key: d.Key}] {
			r.Own = append(r.Own, note(d))
		} else {
			r.Keys = append(r.Keys, note(d))
		}
	}
	return r
}
