package web_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// A RETRY task's page and its API read say where it stands on its retry
// policy: which try comes next, of how many, when, and the policy's
// name, "default" when no policy of the file applies. Breaks if the page
// kept the default's 8 tries for a task whose policy has others.
func TestTaskPageRetryPolicy(t *testing.T) {
	t.Parallel()
	policy := models.RetryPolicy{Type: models.ResInventory, Class: models.ClassTimeout,
		Steps: []time.Duration{30 * time.Second}, Tries: 3}
	tests := []struct {
		name   string
		retry  []models.RetryPolicy
		wait   time.Duration
		want   models.RetryStanding
		zh, en string
	}{
		{"a policy of type and class", []models.RetryPolicy{policy}, 30 * time.Second,
			models.RetryStanding{Policy: "inventory/TIMEOUT", Tries: 3, Try: 3},
			"第 3/3 次尝试，30 秒后重试（策略：inventory/TIMEOUT）", "try 3 of 3, next in 30 s (policy: inventory/TIMEOUT)"},
		{"the default", nil, 5 * time.Second,
			models.RetryStanding{Policy: "default", Tries: 8, Try: 3},
			"第 3/8 次尝试，5 秒后重试（策略：默认）", "try 3 of 8, next in 5 s (policy: default)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachEngineWith(t, func(t *testing.T, d models.Dialect) bundle {
				clock := modelstest.NewClock()
				s := modelstest.Open(t, d, models.Options{Now: clock.Now, Retry: tt.retry,
					Faults: func(point string, tk *models.ReleaseTask) error {
						if point == models.FaultAfterLedger {
							return &models.TransientError{Class: models.ClassTimeout, Err: errors.New("stock service timed out")}
						}
						return nil
					}})
				return newBundle(s, clock)
			}, func(t *testing.T, b bundle) {
				_, err := b.s.SetStock(b.ctx, "sku-a", 10, 0, "test")
				try(t, "stock", err)
				tkOrder(t, b, "r-1", "sku-a", "")
				drain(t, b)
				b.clock.Advance(time.Hour)
				drain(t, b)
				id := tkTasks(t, b)[0].ID
				path := "/tasks/" + strconv.FormatInt(id, 10)
				if got := testidTextOr(getPage(t, b, path, false, http.StatusOK), "task-try"); got != tt.zh {
					t.Errorf("zh: %q, want %q", got, tt.zh)
				}
				if got := testidTextOr(getPage(t, b, path, true, http.StatusOK), "task-try"); got != tt.en {
					t.Errorf("en: %q, want %q", got, tt.en)
				}
				task := must[struct {
					models.ChainTask
					Notes []models.Note `json:"notes"`
				}](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks/"+strconv.FormatInt(id, 10), "")
				if task.Retry != tt.want || !task.NextAt.Equal(b.clock.Now().Add(tt.wait)) {
					t.Errorf("API: %+v next at %s, want %+v in %s", task.Retry, task.NextAt, tt.want, tt.wait)
				}
			})
		})
	}
}

// testidTextOr is an element's text, "" when there is none.
func testidTextOr(body, id string) string {
	s, _ := testidText(body, id)
	return strings.TrimSpace(s)
}
