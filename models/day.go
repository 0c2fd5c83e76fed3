package models

import "time"

// DayStart is the first instant of the day y-m-d (normalized, as time.Date
// does) on loc's clock: the shop's day on the dashboard's date filters, the
// daily report and the daily ledger job. Where the clocks skip midnight
// (Santiago, Cairo, Havana move them at 00:00), the day starts at 01:00:
// time.Date puts a midnight that does not exist at the day before's 23:00,
// in the zone period that ends where the day starts.
func DayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC); t.Day() != day.Day() {
		_, end := t.ZoneBounds()
		return end
	}
	return t
}
