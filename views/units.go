package views

import (
	"strconv"
	"strings"
)

// Amount shows n, a quantity of resource type or account asset unit, in
// that unit: a balance is stored in fen and shows as yuan with two
// decimals ("12.34 元", "12.34 yuan"), points as points ("120 积分",
// "120 points"); anything else (stock, a coupon, a seat) as the number.
// It is the one place amounts get their unit, so every page agrees.
func (p Page) Amount(unit string, n int64) string {
	switch unitOf(unit) {
	case "yuan":
		return p.Tf("unit.yuan", p.Yuan(n))
	case "points":
		return p.Tf("unit.points", p.Num(n))
	}
	return p.Num(n)
}

// Yuan is an amount in fen as yuan with two decimals and thousands
// separators, without the unit: 123456 → "1,234.56", -5 → "-0.05".
func (p Page) Yuan(fen int64) string {
	neg := fen < 0
	u := uint64(fen)
	if neg {
		u = -u
	}
	cents := strconv.FormatUint(u%100, 10)
	if len(cents) < 2 {
		cents = "0" + cents
	}
	s := p.Num(int64(u/100)) + "." + cents
	if neg {
		return "-" + s
	}
	return s
}

// unitOf names the unit a quantity of resource type or account asset
// unit is counted in: "yuan", "points", or "count".
func unitOf(unit string) string {
	switch unit {
	case "balance", "BALANCE":
		return "yuan"
	case "points", "POINTS":
		return "points"
	}
	return "count"
}

// plainAmount is n in its unit as a spreadsheet reads a number: a balance
// in yuan with two decimals and no separators (1234.56, -0.05), anything
// else as the whole number.
func plainAmount(unit string, n int64) string {
	if unitOf(unit) != "yuan" {
		return strconv.FormatInt(n, 10)
	}
	return strings.ReplaceAll(Page{}.Yuan(n), ",", "")
}
