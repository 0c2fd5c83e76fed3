package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Balances are fen shown as yuan with two decimals and the unit, points
// as points, anything else as the number.
func TestAmountUnits(t *testing.T) {
	t.Parallel()
	zh, en := Page{Lang: LangZH}, Page{Lang: LangEN}
	cases := []struct{ got, want string }{
		{zh.Amount("balance", 123456), "1,234.56 元"},
		{zh.Amount("BALANCE", 0), "0.00 元"},
		{zh.Amount("balance", 5), "0.05 元"},
		{zh.Amount("balance", -105), "-1.05 元"},
		{en.Amount("BALANCE", 100000000), "1,000,000.00 yuan"},
		{zh.Amount("points", 1234), "1,234 积分"},
		{en.Amount("POINTS", 1), "1 points"},
		{zh.Amount("inventory", 1234), "1,234"},
		{en.Amount("", 7), "7"},
		{zh.Yuan(-9223372036854775808), "-92,233,720,368,547,758.08"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d = %q, want %q", i, c.got, c.want)
		}
	}
}

// A list's total says "more than" when the count stopped at its cap.
func TestOrdersTotal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lang  Lang
		total int64
		over  bool
		want  string
	}{
		{LangZH, 7, false, "共 7 单"},
		{LangZH, 10000, true, "超过 10,000 单"},
		{LangEN, 10000, true, "Orders: more than 10,000"},
		{LangEN, 1, false, "Orders: 1"},
	} {
		var buf bytes.Buffer
		if err := OrdersTotal(Page{Lang: c.lang}, c.total, c.over).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("total %d over %v (%s) = %q, want %q", c.total, c.over, c.lang, buf.String(), c.want)
		}
	}
}
