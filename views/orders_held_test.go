package views

import (
	"net/url"
	"testing"
)

// Every link the orders list makes keeps its held and close-date filters,
// and each of them alone makes the list filtered.
func TestOrdersFilterKeepsHeld(t *testing.T) {
	t.Parallel()
	f := OrdersFilter{HeldType: "coupon", HeldKey: "264", ClosedFrom: "2026-11-29", ClosedTo: "2026-11-30", Sort: "old"}
	u, err := url.Parse(f.URL("c1"))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"held_type": {"coupon"}, "held_key": {"264"}, "closed_from": {"2026-11-29"}, "closed_to": {"2026-11-30"},
		"sort": {"old"}, "after": {"c1"}}
	if u.Path != "/orders" || u.Query().Encode() != want.Encode() {
		t.Errorf("URL = %s, want /orders?%s", u, want.Encode())
	}
	for _, one := range []OrdersFilter{{HeldType: "coupon"}, {HeldKey: "264"}, {ClosedFrom: "2026-11-29"}, {ClosedTo: "2026-11-30"}} {
		if !one.Filtered() {
			t.Errorf("%+v is not filtered", one)
		}
	}
}
