package web_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// formula is an actor a spreadsheet would run as a command.
const formula = "=cmd|' /C calc'!A0"

// seedReportDay writes a known day of flows for a viewer in Asia/Shanghai:
// everything from 2026-11-29 18:00 to 19:00 there (10:00-11:00 UTC), then
// one stock decrease at 2026-11-30 01:00 there (17:00 UTC on the 29th).
func seedReportDay(t *testing.T, b bundle) {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "ops:1")
	try(t, "stock", err)
	_, err = b.s.SetStock(b.ctx, "sku-2", 5, 0, formula)
	try(t, "stock", err)
	exp := b.clock.Now().Add(30 * 24 * time.Hour)
	p, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, exp, "ops:1")
	try(t, "coupon", err)
	m, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, exp, "ops:1")
	try(t, "coupon", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "ops:1")
	try(t, "credit", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetPoints, 100, "ops:1")
	try(t, "credit", err)
	_, err = b.s.SetActivity(b.ctx, "act-1", 5, "ops:1")
	try(t, "activity", err)
	_, _, err = b.s.PutSlot(b.ctx, "seat-1", "ops:1")
	try(t, "slot", err)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}},
		CouponIDs: []int64{p.ID}, Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 300}}, ActivityID: "act-1", SlotID: "seat-1"})
	try(t, "place o-1", err)
	b.clock.Advance(time.Hour)
	_, err = b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1")
	try(t, "close", err)
	drain(t, b)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{m.ID}})
	try(t, "place o-2", err)
	_, err = b.s.PayOrder(b.ctx, "o-2", "txn-2")
	try(t, "pay", err)
	b.clock.Advance(6 * time.Hour) // 17:00 UTC: already the 30th in Shanghai
	_, err = b.s.SetStock(b.ctx, "sku-1", 6, 0, "ops:1")
	try(t, "stock", err)
}

const shanghai = "Asia/Shanghai"

// shanghaiShop is a bundle whose business zone (UNHOLD_TZ) is Shanghai.
func shanghaiShop(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	return jbBundle(s, clock, nil, jbShanghai(t))
}

// The daily report totals a day's flows by resource and type, with the
// day's bounds in the shop's business zone, and the days around it.
func TestDailyReportTotals(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, shanghaiShop, func(t *testing.T, b bundle) {
		seedReportDay(t, b)
		body := getPageBoth(t, b, "/reports/daily?date=2026-11-29", shanghai, http.StatusOK)
		want := map[string]string{
			"inventory-ADJUST": "2 15", "inventory-LOCK": "2 3", "inventory-RELEASE": "1 2", "inventory-DEDUCT": "1 1",
			"coupon-PLATFORM-ADJUST": "1 1", "coupon-PLATFORM-LOCK": "1 1", "coupon-PLATFORM-RELEASE": "1 1", "coupon-PLATFORM-DEDUCT": "0 0",
			"coupon-MERCHANT-ADJUST": "1 1", "coupon-MERCHANT-LOCK": "1 1", "coupon-MERCHANT-DEDUCT": "1 1", "coupon-MERCHANT-RELEASE": "0 0",
			"coupon-all-ADJUST": "2 2", "coupon-all-LOCK": "2 2", "coupon-all-RELEASE": "1 1", "coupon-all-DEDUCT": "1 1",
			"balance-ADJUST": "1 10.00 元", "balance-LOCK": "1 3.00 元", "balance-RELEASE": "1 3.00 元", "balance-DEDUCT": "0 0.00 元",
			"points-ADJUST": "1 100 积分", "points-LOCK": "0 0 积分",
			"quota-ADJUST": "1 5", "quota-LOCK": "1 1", "quota-RELEASE": "1 1",
			"slot-ADJUST": "1 1", "slot-LOCK": "1 1", "slot-RELEASE": "1 1",
		}
		for cell, nq := range want {
			n, q, _ := strings.Cut(nq, " ")
			requireText(t, body, "report-"+cell+"-n", n)
			requireText(t, body, "report-"+cell+"-q", q)
		}
		requireText(t, body, "report-total", "当天共 22 行流水。")
		prev, _ := testidHref(body, "report-prev")
		next, _ := testidHref(body, "report-next")
		csvURL, _ := testidHref(body, "report-csv")
		rowsURL, _ := testidHref(body, "report-rows-csv")
		if prev != "/reports/daily?date=2026-11-28" || next != "/reports/daily?date=2026-11-30" || csvURL != "/reports/daily.csv?date=2026-11-29" ||
			rowsURL != "/reports/daily-rows.csv?date=2026-11-29" {
			t.Fatalf("links: prev %q next %q csv %q rows %q", prev, next, csvURL, rowsURL)
		}
		requireElement(t, getPageBoth(t, b, prev, shanghai, http.StatusOK), "report-empty", true)

		// The 30th in Shanghai holds the late decrease, and is today there.
		today := getPageBoth(t, b, "/reports/daily", shanghai, http.StatusOK)
		requireText(t, today, "report-date", "2026-11-30")
		requireText(t, today, "report-inventory-ADJUST-n", "1")
		requireText(t, today, "report-inventory-ADJUST-q", "-3")
		requireText(t, today, "report-total", "当天共 1 行流水。")
		requireElement(t, today, "report-next", false)

		// A viewer whose browser is in UTC sees the same Shanghai days,
		// and is told which zone they are.
		utc := getPageBoth(t, b, "/reports/daily?date=2026-11-29", "UTC", http.StatusOK)
		requireText(t, utc, "report-inventory-ADJUST-n", "2")
		requireText(t, utc, "report-total", "当天共 22 行流水。")
		if zone, _ := testidText(utc, "report-zone"); !strings.Contains(zone, "Asia/Shanghai") {
			t.Errorf("the report does not say its zone: %q", zone)
		}
	})
}

// A shop whose business zone is UTC has the whole history on the 29th,
// for a viewer in Shanghai too.
func TestDailyReportBusinessZone(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedReportDay(t, b)
		body := getPageBoth(t, b, "/reports/daily?date=2026-11-29", shanghai, http.StatusOK)
		requireText(t, body, "report-inventory-ADJUST-n", "3")
		requireText(t, body, "report-inventory-ADJUST-q", "12")
		requireText(t, body, "report-range", "2026-11-29 00:00:00 至 2026-11-30 00:00:00（UTC）")
		rec := servePage(b, "/reports/daily-rows.csv?date=2026-11-29", "zh", shanghai)
		records, err := csv.NewReader(bytes.NewReader(rec.Body.Bytes()[3:])).ReadAll()
		if err != nil || len(records) != 24 || records[0][2] != "时间（UTC）" {
			t.Fatalf("csv of the UTC day: %v, %d records, header %q", err, len(records), records[0])
		}
	})
}

// The CSV of a day is every ledger row of that day in the business zone:
// UTF-8 with a BOM, header and codes in the viewer's language, RFC 4180
// quoting, formula cells neutralised and plain negative numbers left alone.
func TestDailyReportCSV(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, shanghaiShop, func(t *testing.T, b bundle) {
		seedReportDay(t, b)
		rec := servePage(b, "/reports/daily-rows.csv?date=2026-11-29", "en", "UTC")
		if rec.Code != http.StatusOK {
			t.Fatalf("csv = %d %s", rec.Code, rec.Body)
		}
		if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="unhold-ledger-2026-11-29.csv"` {
			t.Fatalf("Content-Disposition %q", cd)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8" {
			t.Fatalf("Content-Type %q", ct)
		}
		raw := rec.Body.Bytes()
		if !bytes.HasPrefix(raw, []byte{0xEF, 0xBB, 0xBF}) {
			t.Fatalf("no BOM: % x", raw[:8])
		}
		if !bytes.Contains(raw, []byte("\r\n")) {
			t.Fatal("records do not end in CRLF")
		}
		records, err := csv.NewReader(bytes.NewReader(raw[3:])).ReadAll()
		if err != nil {
			t.Fatalf("parse back: %v", err)
		}
		header := records[0]
		if header[0] != "Resource" || header[2] != "Time (Asia/Shanghai)" || header[len(header)-1] != "Actor" {
			t.Fatalf("header %q", header)
		}
		rows := records[1:]
		if len(rows) != 22 {
			t.Fatalf("%d rows, want 22", len(rows))
		}
		byResource := map[string]int{}
		var planted []string
		for _, r := range rows {
			byResource[r[0]]++
			if strings.Contains(r[len(r)-1], "cmd|") {
				planted = r
			}
		}
		if fmt.Sprint(byResource) != "map[Activity quota:3 Balance:3 Coupon:6 Points:1 Seat / slot:3 Stock:6]" {
			t.Fatalf("rows by resource %v", byResource)
		}
		if planted == nil || planted[len(planted)-1] != "'"+formula || planted[4] != "sku-2" || planted[8] != "5" {
			t.Fatalf("planted formula row %q", planted)
		}
		if !strings.HasPrefix(rows[0][2], "2026-11-29 18:00:00") {
			t.Fatalf("time not in the business zone: %q", rows[0][2])
		}
		for _, r := range rows {
			if r[0] == "Coupon" && r[5] != "PLATFORM" && r[5] != "MERCHANT" {
				t.Fatalf("coupon row without its owner: %q", r)
			}
		}

		next := servePage(b, "/reports/daily-rows.csv?date=2026-11-30", "zh", "UTC")
		records, err = csv.NewReader(bytes.NewReader(next.Body.Bytes()[3:])).ReadAll()
		if err != nil || len(records) != 2 {
			t.Fatalf("the 30th: %v, %q", err, records)
		}
		// A negative adjustment is a number, not a neutralised formula;
		// codes are in the viewer's language.
		if r := records[0]; r[0] != "资源" || r[2] != "时间（Asia/Shanghai）" {
			t.Fatalf("Chinese header %q", r)
		}
		if r := records[1]; r[0] != "库存" || r[6] != "调整" || r[7] != "初始化/调整" || r[8] != "-3" || r[9] != "9" || r[10] != "6" {
			t.Fatalf("decrease row %q", r)
		}
		empty := servePage(b, "/reports/daily-rows.csv?date=2026-11-28", "zh", shanghai)
		records, err = csv.NewReader(bytes.NewReader(empty.Body.Bytes()[3:])).ReadAll()
		if err != nil || len(records) != 1 {
			t.Fatalf("an empty day: %v, %q", err, records)
		}
	})
}

// The totals CSV is the report as the page shows it: a row per resource,
// per coupon bearer and their whole, each with its unit, a balance in yuan.
func TestDailyTotalsCSV(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, shanghaiShop, func(t *testing.T, b bundle) {
		seedReportDay(t, b)
		rec := servePage(b, "/reports/daily.csv?date=2026-11-29", "zh", "UTC")
		if cd := rec.Header().Get("Content-Disposition"); rec.Code != http.StatusOK || cd != `attachment; filename="unhold-totals-2026-11-29.csv"` {
			t.Fatalf("totals csv = %d, Content-Disposition %q", rec.Code, cd)
		}
		records, err := csv.NewReader(bytes.NewReader(rec.Body.Bytes()[3:])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		// Resource, bearer, unit, then rows and qty of LOCK, DEDUCT, RELEASE, ADJUST.
		got := map[string]string{}
		for _, r := range records {
			got[r[0]+"/"+r[1]] = strings.Join(r[2:], " ")
		}
		for k, want := range map[string]string{
			"资源/承担方":  "单位 锁定 笔数 锁定 数量 扣减 笔数 扣减 数量 释放 笔数 释放 数量 调整 笔数 调整 数量",
			"库存/":     "个 2 3 1 1 1 2 2 15",
			"优惠券/平台券": "个 1 1 0 0 1 1 1 1",
			"优惠券/商家券": "个 1 1 1 1 0 0 1 1",
			"优惠券/合计":  "个 2 2 1 1 1 1 2 2",
			"余额/":     "元 1 3.00 0 0.00 1 3.00 1 10.00",
			"积分/":     "积分 0 0 0 0 0 0 1 100",
		} {
			if got[k] != want {
				t.Errorf("%s: %q, want %q (all: %q)", k, got[k], want, records)
			}
		}
	})
}

// csvText's rule, cell by cell.
func TestDailyReportCSVNeutralises(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, actor := range []string{"+1", "-1", "@SUM(A1)", "\tx", "\rx", "=1"} {
			_, err := b.s.SetStock(b.ctx, "sku-1", 1, 0, actor)
			try(t, "stock", err)
			_, err = b.s.SetStock(b.ctx, "sku-1", 0, 0, "plain")
			try(t, "stock", err)
		}
		rec := servePage(b, "/reports/daily-rows.csv?date=2026-11-29", "zh", "")
		records, err := csv.NewReader(bytes.NewReader(rec.Body.Bytes()[3:])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range records[1:] {
			if a := r[len(r)-1]; a != "plain" {
				got = append(got, a)
			}
		}
		// encoding/csv writing CRLF drops a lone CR; the quote stays first.
		if fmt.Sprintf("%q", got) != `["'+1" "'-1" "'@SUM(A1)" "'\tx" "'x" "'=1"]` {
			t.Fatalf("actors %q", got)
		}
	})
}
