package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"fmt"

	"unhold/models"
	"unhold/models/modelstest"
)

func TestScratchLoop(t *testing.T) {
	clock := modelstest.NewClock()
	b := newBundle(modelstest.Open(t, models.SQLite, models.Options{Now: clock.Now}), clock)
	manualTask(t, b)
	for i := 0; i < 3000; i++ {
		try(t, "x", b.s.W.Exec("UPDATE release_tasks SET status = 'MANUAL' WHERE order_no = 'm-1' AND resource_type = 'inventory'").Error)
		rec := postForm(b, "/orders/m-1/resources/inventory/rerun", url.Values{"reason": {fmt.Sprint("r", i)}}, false)
		if rec.Code != http.StatusSeeOther { t.Fatal(rec.Code) }
		page := servePage(b, "/audit?action=rerun", "", "")
		if page.Code != 200 { t.Fatal(page.Code) }
		if i%250 == 0 { t.Log(i) }
	}
}
