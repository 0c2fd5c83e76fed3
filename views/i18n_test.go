package views

import (
	"strings"
	"testing"
	"time"
)

// Every catalog entry has both languages, and the Chinese differs from the
// English wherever it is meant as a translation.
func TestCatalogComplete(t *testing.T) {
	t.Parallel()
	if len(catalog) < 100 {
		t.Fatalf("catalog has %d entries: the page catalogs were not merged", len(catalog))
	}
	for key, v := range catalog {
		if strings.TrimSpace(v[0]) == "" || strings.TrimSpace(v[1]) == "" {
			t.Errorf("%s lacks a language: %q", key, v)
		}
		if strings.Count(v[0], "%") != strings.Count(v[1], "%") {
			t.Errorf("%s: the two languages take different arguments: %q", key, v)
		}
	}
}

func TestPageHelpers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	zh := Page{Lang: LangZH, Now: now, Loc: time.FixedZone("CST", 8*3600)}
	en := zh
	en.Lang = LangEN
	cases := []struct{ got, want string }{
		{zh.Ago(now.Add(-3 * time.Minute)), "3 分钟前"},
		{en.Ago(now.Add(-3 * time.Minute)), "3 min ago"},
		{en.Ago(now.Add(2 * time.Hour)), "in 2 h"},
		{zh.Ago(now.Add(-50 * time.Hour)), "2 天前"},
		{zh.Time(now), "2026-11-29 18:00:00"},
		{zh.Num(-1234567), "-1,234,567"},
		{en.Num(999), "999"},
		{zh.Code("MANUAL"), "人工处理"},
		{en.Code("SOMETHING_NEW"), "SOMETHING_NEW"},
		{zh.Class("TIMEOUT"), "超时"},
		{zh.Code("TIMEOUT"), "超时关单"},
		{zh.T("no.such.key"), "⟦no.such.key⟧"},
		{Query("/orders", "status", "PAID", "user", ""), "/orders?status=PAID"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d = %q, want %q", i, c.got, c.want)
		}
	}
	zh.URL = "/orders?status=PAID"
	if got := zh.LangURL(); got != "/lang?back=%2Forders%3Fstatus%3DPAID&to=en" {
		t.Errorf("LangURL = %q", got)
	}
}

// A key lives in one page's set only: merging would silently keep one of
// two texts.
func TestCatalogKeysNotDuplicated(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	total := 0
	for i, set := range catalogSets {
		total += len(set)
		for key := range set {
			if j, ok := seen[key]; ok {
				t.Errorf("%s is in catalog sets %d and %d", key, j, i)
			}
			seen[key] = i
		}
	}
	if total != len(catalog) {
		t.Errorf("the sets hold %d keys, the catalog %d", total, len(catalog))
	}
}
