package web

import (
	"encoding/json"

	"unhold/models"
	"unhold/views"
)

// lifeView maps an order's lines and operations to the chain's section on
// its life after placement.
func lifeView(ch *models.Chain) views.LifeView {
	var v views.LifeView
	for _, h := range ch.Holds {
		if h.ResourceType != models.ResInventory {
			continue
		}
		v.Lines = append(v.Lines, views.LifeLine{SKU: h.BizKey, Qty: h.Qty, AtPayment: h.DeductAt == models.DeductAtPayment,
			Ordered: h.Ordered, Released: h.Released, Deducted: h.Deducted,
			Held: h.Outstanding(), Shipped: h.Shipped, Refunded: h.Refunded, Returned: h.Returned, Restocked: h.Restocked,
			WrittenOff: h.WrittenOff, Version: h.Version})
	}
	for _, o := range ch.Ops {
		v.Ops = append(v.Ops, views.LifeOp{Kind: string(o.Kind), ID: o.OpID, Status: string(o.Status), Reason: o.Reason,
			Actor: o.Actor, Lines: opLines(o.Request), Epoch: o.Epoch, At: o.CreatedAt})
	}
	return v
}

// opLines reads an operation's lines from its recorded request.
func opLines(request string) []views.LifeOpLine {
	var r struct {
		Lines []models.LineQty `json:"lines"`
	}
	if err := json.Unmarshal([]byte(request), &r); err != nil {
		return nil
	}
	out := make([]views.LifeOpLine, len(r.Lines))
	for i, l := range r.Lines {
		out[i] = views.LifeOpLine{SKU: l.SkuID, Qty: l.Qty, Restock: l.Restock}
	}
	return out
}
