package web

import (
	"encoding/json"
	"slices"
	"strings"

	"unhold/models"
	"unhold/views"
)

// eventRows maps an order's events to its chain page's section.
func eventRows(evs []models.Event) []views.EventRow {
	rows := make([]views.EventRow, len(evs))
	for i, e := range evs {
		rows[i] = views.EventRow{Type: string(e.Type), At: e.OccurredAt, Summary: eventSummary(e.Data)}
	}
	return rows
}

// eventSummary is an event's data as "name=value" pairs in name order,
// leaving out the order the page is about; a string shows as it is,
// anything else as its JSON.
func eventSummary(data json.RawMessage) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return string(data)
	}
	delete(m, "order_no")
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}
