package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"unhold/models"
)

// demoAtPayment are the demo's SKUs made to order, which take their stock
// at payment (docs/stock-models.md); none is a flash-sale SKU.
var demoAtPayment = []string{"SKU-1004", "SKU-1012"}

// demoLife gives the demo's paid orders a life after payment, on the
// shop's clock: most are shipped a day later, some refunded before
// shipping (whole, or one line), and of the shipped some come back, sent
// back or refused at the door, and are taken in by the warehouse a day
// after, restocked or written off. Some customers cancel part of a line
// before paying. It draws from its own generator, so the orders placed
// are the same with it or without.
type demoLife struct {
	s     *models.Store
	rng   *rand.Rand
	steps []demoStep
}

type demoStep struct {
	no   string
	at   time.Time
	kind string // ship, refund, part-refund, return, inbound
}

func newDemoLife(s *models.Store) *demoLife {
	return &demoLife{s: s, rng: rand.New(rand.NewPCG(2026, 12))}
}

func (l *demoLife) plan(no string, at time.Time, kind string) {
	l.steps = append(l.steps, demoStep{no: no, at: at, kind: kind})
}

// paid plans what becomes of an order paid at at.
func (l *demoLife) paid(no string, at time.Time) {
	later := func(d time.Duration) time.Time { return at.Add(d + time.Duration(l.rng.Int64N(int64(6*time.Hour)))) }
	switch roll := l.rng.IntN(100); {
	case roll < 6:
		l.plan(no, later(2*time.Hour), "refund")
	case roll < 10:
		l.plan(no, later(4*time.Hour), "part-refund")
	default:
		l.plan(no, later(20*time.Hour), "ship")
	}
}

// due runs every planned step due by now, in time order.
func (l *demoLife) due(ctx context.Context, now time.Time) error {
	slices.SortStableFunc(l.steps, func(a, b demoStep) int { return a.at.Compare(b.at) })
	n := 0
	for n < len(l.steps) && !l.steps[n].at.After(now) {
		n++
	}
	todo := slices.Clone(l.steps[:n])
	l.steps = slices.Delete(l.steps, 0, n)
	for _, st := range todo {
		if err := l.run(ctx, st); err != nil {
			var be *models.Error
			if errors.As(err, &be) {
				continue // the order moved on meanwhile: a real shop's calls are refused too
			}
			return fmt.Errorf("demo %s of %s: %w", st.kind, st.no, err)
		}
	}
	return nil
}

// lines reads an order's lines as they stand.
func (l *demoLife) lines(ctx context.Context, no string) ([]models.Hold, error) {
	var hs []models.Hold
	err := l.s.R.WithContext(ctx).Where("order_no = ? AND resource_type = ?", no, models.ResInventory).Order("biz_key").Find(&hs).Error
	return hs, err
}

func (l *demoLife) run(ctx context.Context, st demoStep) error {
	hs, err := l.lines(ctx, st.no)
	if err != nil || len(hs) == 0 {
		return err
	}
	unshipped := func(h models.Hold) int64 { return h.Deducted - h.Shipped - h.Refunded }
	switch st.kind {
	case "refund":
		_, err = l.s.Refund(ctx, st.no, "RF"+st.no, nil, "customer changed their mind before shipping", "cs:demo")
	case "part-refund":
		h := hs[0]
		if unshipped(h) == 0 {
			return nil
		}
		_, err = l.s.Refund(ctx, st.no, "RF"+st.no, []models.LineQty{{SkuID: h.BizKey, Qty: 1}}, "out of stock at the supplier", "cs:demo")
		if err == nil {
			l.plan(st.no, st.at.Add(20*time.Hour), "ship")
		}
	case "ship":
		var ls []models.LineQty
		for _, h := range hs {
			if n := unshipped(h); n > 0 {
				ls = append(ls, models.LineQty{SkuID: h.BizKey, Qty: n})
			}
		}
		if len(ls) == 0 {
			return nil
		}
		if _, err = l.s.Ship(ctx, st.no, "SH"+st.no, ls, "wms:demo"); err == nil && l.rng.IntN(100) < 8 {
			l.plan(st.no, st.at.Add(48*time.Hour+time.Duration(l.rng.Int64N(int64(24*time.Hour)))), "return")
		}
	case "return":
		reason := "did not fit"
		if l.rng.IntN(3) == 0 {
			reason = "delivery refused at the door"
		}
		// A one-line order comes back whole; otherwise its first line.
		h := hs[0]
		if h.Shipped-h.Returned == 0 {
			return nil
		}
		_, err = l.s.Return(ctx, st.no, "RT"+st.no, []models.LineQty{{SkuID: h.BizKey, Qty: h.Shipped - h.Returned}}, reason, "cs:demo")
		if err == nil {
			l.plan(st.no, st.at.Add(20*time.Hour+time.Duration(l.rng.Int64N(int64(12*time.Hour)))), "inbound")
		}
	case "inbound":
		h := hs[0]
		n := h.Returned - h.Restocked - h.WrittenOff
		if n == 0 {
			return nil
		}
		restock, off := n, int64(0)
		if l.rng.IntN(4) == 0 {
			restock, off = n-1, 1 // one arrived damaged
		}
		var ls []models.LineQty
		for _, part := range []struct {
			qty int64
			in  bool
		}{{restock, true}, {off, false}} {
			if part.qty > 0 {
				ls = append(ls, models.LineQty{SkuID: h.BizKey, Qty: part.qty, Restock: &part.in})
			}
		}
		_, err = l.s.Inbound(ctx, "RT"+st.no, ls, "wms:demo")
	}
	return err
}

// cancelLine has about one customer in twenty cancel one unit of a line
// of two or more before paying, naming the version the line was at.
func (l *demoLife) cancelLine(ctx context.Context, no string) error {
	if l.rng.IntN(20) != 0 {
		return nil
	}
	hs, err := l.lines(ctx, no)
	if err != nil {
		return err
	}
	for _, h := range hs {
		if h.Qty-h.Released >= 2 || h.DeductAt == models.DeductAtPayment && h.Ordered >= 2 {
			_, err := l.s.CancelLine(ctx, no, h.BizKey, 1, h.Version, "", "one is enough", "user:demo")
			return err
		}
	}
	return nil
}
