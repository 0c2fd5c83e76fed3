package main

import (
	"context"
	"testing"
	"time"

	"unhold/models"
)

// The demo shop spans a week with the rhythm of a real one: busy evenings
// and quiet nights in the shop's zone, one day of a flash sale; its MANUAL
// tasks are of every kind a shop meets (stock lock moved by hand, coupon
// given back by hand, tries exhausted), and its retries waited as
// RetrySchedule says.
func TestDemoShopSpansAWeek(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a demo shop of 1200 orders: tens of seconds")
	}
	t.Parallel()
	dsn, now, _ := sqliteDemoShop(t)
	s, err := models.Open(context.Background(), dsn, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var orders []models.Order
	if err := s.R.Select("created_at").Find(&orders).Error; err != nil {
		t.Fatal(err)
	}
	zone := time.FixedZone("CST", 8*3600)
	days, hours := map[string]int{}, map[int]int{}
	first, last := now, time.Time{}
	for _, o := range orders {
		days[o.CreatedAt.In(zone).Format("01-02")]++
		hours[o.CreatedAt.In(zone).Hour()]++
		first, last = minTime(first, o.CreatedAt), maxTime(last, o.CreatedAt)
	}
	if span := last.Sub(first); span < 6*24*time.Hour+12*time.Hour || last.After(now) {
		t.Errorf("orders from %s to %s: want a week up to now (%s)", first, last, now)
	}
	busiest, total := 0, 0
	for _, n := range days {
		busiest, total = max(busiest, n), total+n
	}
	if avg := total / len(days); busiest < 2*avg {
		t.Errorf("orders by day %v: no flash-sale day twice the average %d", days, avg)
	}
	if night, evening := hours[3]+hours[4], hours[19]+hours[21]; evening < 4*night {
		t.Errorf("orders by hour %v: evenings (%d) not far busier than nights (%d)", hours, evening, night)
	}
	// Paid orders lived on: shipped, refunded whole or in part, returned
	// and taken back in; customers cancelled part of a line, of SKUs
	// taken at payment too.
	var statuses []struct {
		Status models.OrderStatus
		N      int
	}
	if err := s.R.Raw("SELECT status, COUNT(*) AS n FROM orders GROUP BY status").Scan(&statuses).Error; err != nil {
		t.Fatal(err)
	}
	byStatus := map[models.OrderStatus]int{}
	for _, st := range statuses {
		byStatus[st.Status] = st.N
	}
	for _, st := range []models.OrderStatus{models.OrderShipped, models.OrderRefunded, models.OrderReturned, models.OrderRefundPending, models.OrderPending} {
		if byStatus[st] == 0 {
			t.Errorf("no %s order: %v", st, byStatus)
		}
	}
	var ops []struct {
		Kind models.OpKind
		N    int
	}
	if err := s.R.Raw("SELECT kind, COUNT(*) AS n FROM order_ops GROUP BY kind").Scan(&ops).Error; err != nil {
		t.Fatal(err)
	}
	byKind := map[models.OpKind]int{}
	for _, op := range ops {
		byKind[op.Kind] = op.N
	}
	for _, k := range []models.OpKind{models.OpLineCancel, models.OpShip, models.OpRefund, models.OpReturn, models.OpInbound} {
		if byKind[k] == 0 {
			t.Errorf("no %s operation: %v", k, byKind)
		}
	}
	var atPayment int64
	if err := s.R.Raw("SELECT COUNT(*) FROM order_holds WHERE deduct_at = 'payment' AND qty > 0").Scan(&atPayment).Error; err != nil {
		t.Fatal(err)
	}
	if atPayment == 0 {
		t.Error("no line of a SKU taken at payment was paid")
	}
	classes := map[models.ErrorClass]int{}
	var manual []models.ReleaseTask
	if err := s.R.Where("status = ?", models.TaskManual).Find(&manual).Error; err != nil {
		t.Fatal(err)
	}
	for _, tk := range manual {
		classes[tk.ErrorClass]++
	}
	for _, c := range []models.ErrorClass{models.ClassLockedShort, models.ClassStateMismatch, models.ClassRetryExhausted} {
		if classes[c] == 0 {
			t.Errorf("no MANUAL task of class %s: %v", c, classes)
		}
	}
	// A task that ran out of tries waited at least the schedule's delay
	// after each failure: no compressed backoff.
	var exhausted models.ReleaseTask
	if err := s.R.Where("status = ? AND error_class = ?", models.TaskManual, models.ClassRetryExhausted).Take(&exhausted).Error; err != nil {
		t.Fatal(err)
	}
	var tries []models.TaskAttempt
	if err := s.R.Where("task_id = ?", exhausted.ID).Order("id").Find(&tries).Error; err != nil {
		t.Fatal(err)
	}
	if len(tries) != models.MaxFailures {
		t.Fatalf("exhausted task %d has %d tries, want %d", exhausted.ID, len(tries), models.MaxFailures)
	}
	for i := 1; i < len(tries); i++ {
		if wait := tries[i].StartedAt.Sub(tries[i-1].FinishedAt); wait < models.RetryDelay(i) {
			t.Errorf("try %d started %s after try %d, before its delay %s", i+1, wait, i, models.RetryDelay(i))
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
