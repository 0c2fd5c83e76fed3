package web

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// reportPage is the report's page model: its times are in the shop's
// business zone (UNHOLD_TZ), whatever zone the viewer's browser is in, so
// every viewer's "2026-11-29" is the same day and the same rows.
func (s *server) reportPage(c *echo.Context) views.Page {
	p := s.page(c, "report.title", "report")
	p.Loc = s.loc
	return p
}

// reportDay reads the report's day: the date parameter, or today in the
// page's zone (the business zone); its bounds are that zone's midnights.
func reportDay(c *echo.Context, p views.Page) (day string, from, to time.Time, err error) {
	day = ledgerParam(c, "date")
	if day == "" {
		day = p.Now.In(p.Loc).Format(ledgerDayLayout)
	}
	if from, to, err = ledgerDay("date", day, p.Loc); err != nil {
		return "", from, to, err
	}
	return from.Format(ledgerDayLayout), from, to, nil
}

// dayBefore is the date before day (YYYY-MM-DD), counted on the calendar:
// a day before a shop's day may have no midnight to step back to.
func dayBefore(day string) string {
	d, _ := time.Parse(ledgerDayLayout, day)
	return d.AddDate(0, 0, -1).Format(ledgerDayLayout)
}

// reportRow is one row of the daily report: a resource type, or one cost
// bearer of it.
type reportRow struct {
	resource models.ResourceType
	owner    string
}

// reportRows are the daily report's rows in the registry's order; a type
// whose rows name who bears their cost (coupons) has a row per bearer.
func (s *server) reportRows() []reportRow {
	var rows []reportRow
	for _, t := range s.store.Types() {
		owners := s.store.Resource(t).Ledger().Owners
		if len(owners) == 0 {
			rows = append(rows, reportRow{resource: t})
		}
		for _, o := range owners {
			rows = append(rows, reportRow{resource: t, owner: o})
		}
	}
	return rows
}

// dailyReport shows one day's ledger totals by resource and type.
func (s *server) dailyReport(c *echo.Context) error {
	p := s.reportPage(c)
	v, err := s.reportView(c, p)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.DailyReportPage(p, v))
}

// reportView reads one day's ledger totals, as the page and its totals
// CSV show them.
func (s *server) reportView(c *echo.Context, p views.Page) (views.ReportView, error) {
	day, from, to, err := reportDay(c, p)
	if err != nil {
		return views.ReportView{}, err
	}
	totals, err := s.store.LedgerTotals(c.Request().Context(), from, to)
	if err != nil {
		return views.ReportView{}, err
	}
	today := p.Now.In(p.Loc).Format(ledgerDayLayout)
	v := views.ReportView{
		Date: day, Zone: p.Loc.String(), From: from, To: to,
		PrevURL:    views.Query("/reports/daily", "date", dayBefore(day)),
		TodayURL:   views.Query("/reports/daily", "date", today),
		CSVURL:     views.Query("/reports/daily.csv", "date", day),
		RowsCSVURL: views.Query("/reports/daily-rows.csv", "date", day),
	}
	if day < today {
		v.NextURL = views.Query("/reports/daily", "date", to.Format(ledgerDayLayout))
	}
	for _, r := range s.reportRows() {
		row := views.ReportRow{ID: string(r.resource), Resource: string(r.resource), Owner: r.owner, Cells: map[string]views.ReportCell{}}
		if r.owner != "" {
			row.ID += "-" + r.owner
		}
		for _, t := range totals {
			if t.Resource == r.resource && string(t.Owner) == r.owner {
				cell := row.Cells[string(t.Type)]
				cell.N += t.Rows
				cell.Q += t.Qty
				row.Cells[string(t.Type)] = cell
				v.Total += t.Rows
			}
		}
		v.Rows = append(v.Rows, row)
		// A type whose cost is borne by several (coupons: platform and
		// merchant) gets a row of its whole after its bearers' rows.
		if owners := s.store.Resource(r.resource).Ledger().Owners; len(owners) > 1 && r.owner == owners[len(owners)-1] {
			all := views.ReportRow{ID: string(r.resource) + "-all", Resource: string(r.resource), All: true, Cells: map[string]views.ReportCell{}}
			for _, o := range v.Rows[len(v.Rows)-len(owners):] {
				for t, cell := range o.Cells {
					sum := all.Cells[t]
					sum.N += cell.N
					sum.Q += cell.Q
					all.Cells[t] = sum
				}
			}
			v.Rows = append(v.Rows, all)
		}
	}
	return v, nil
}

// dailyTotalsCSV is the day's report as the page shows it, its totals
// with their units, as a CSV: what an owner files, not the raw rows.
func (s *server) dailyTotalsCSV(c *echo.Context) error {
	p := s.reportPage(c)
	v, err := s.reportView(c, p)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="unhold-totals-`+v.Date+`.csv"`)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(utf8BOM)); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // RFC 4180
	for _, rec := range views.ReportRecords(p, v) {
		// The text cells; the rest are numbers we wrote, a minus sign
		// being no formula.
		for i := range views.ReportTextColumns {
			rec[i] = csvText(rec[i])
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// utf8BOM makes Excel and WPS read the CSV as UTF-8, so Chinese shows.
const utf8BOM = "\xEF\xBB\xBF"

// dailyRowsCSV streams every ledger row of one day, from every ledger,
// as one CSV: rows are written as they are read, never held in memory.
func (s *server) dailyRowsCSV(c *echo.Context) error {
	p := s.reportPage(c)
	day, from, to, err := reportDay(c, p)
	if err != nil {
		return err
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="unhold-ledger-`+day+`.csv"`)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte(utf8BOM)); err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // RFC 4180
	// The header and the codes (resource, owner, type, trigger, status)
	// are in the page's language, as the report shows them.
	header := make([]string, len(csvColumns))
	for i, k := range csvColumns {
		header[i] = p.T("report.csv." + k)
	}
	header[2] = p.Tf("report.csv.time", p.Loc.String())
	if err := cw.Write(header); err != nil {
		return err
	}
	n := 0
	err = s.store.EachLedgerRow(c.Request().Context(), from, to, func(f *models.Flow) error {
		if err := cw.Write(csvRecord(f, s.store.Resource(f.ResourceType), p)); err != nil {
			return err
		}
		if n++; n%1000 == 0 {
			cw.Flush()
			_ = rc.Flush()
			return cw.Error()
		}
		return nil
	})
	if err != nil {
		// The status is sent already; the last line says the file is cut short.
		_ = cw.Write([]string{p.T("report.csv.cut"), csvText(err.Error())})
	}
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}

// csvColumns name the CSV's columns, as catalog keys under report.csv.
var csvColumns = []string{"resource", "id", "time", "order", "key", "side", "type", "trigger", "qty",
	"avail_before", "avail_after", "held_before", "held_after", "spent_before", "spent_after",
	"status_before", "status_after", "actor"}

// csvRecord is one ledger row as CSV cells, its codes in p's language and
// its time in p's zone. Text cells go through csvText; numbers are written
// as the digits strconv makes, so a negative adjustment stays -5 (a number
// to a spreadsheet, not a formula) instead of being turned into the text '-5.
func csvRecord(f *models.Flow, r models.Resource, p views.Page) []string {
	num := strconv.FormatInt
	side := f.Owner
	if side == "" && r != nil {
		side = r.Side()
	}
	orderNo := ""
	if f.OrderNo != nil {
		orderNo = *f.OrderNo
	}
	rec := []string{csvText(p.Code(string(f.ResourceType))), num(f.ID, 10), p.Time(f.CreatedAt),
		csvText(orderNo), csvText(f.BizKey), csvText(p.Code(side)), csvText(p.Code(string(f.Type))), csvText(p.Code(string(f.Trigger))), num(f.Qty, 10)}
	if r != nil && r.Kind() == models.KindSingle {
		// Held one at a time: a status moves, no amounts.
		rec = append(rec, "", "", "", "", "", "")
	} else {
		rec = append(rec, num(f.AvailBefore, 10), num(f.AvailAfter, 10), num(f.HeldBefore, 10), num(f.HeldAfter, 10),
			num(f.SpentBefore, 10), num(f.SpentAfter, 10))
	}
	return append(rec, csvText(p.Code(f.StatusBefore)), csvText(p.Code(f.StatusAfter)), csvText(f.Actor))
}

// csvText neutralises a text cell that a spreadsheet would run as a
// formula (it starts with = + - @, a tab or a carriage return) by putting a
// single quote in front, which Excel and WPS show as plain text.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
