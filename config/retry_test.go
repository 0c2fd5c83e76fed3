package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// retryFile is a resources file declaring giftcard, with retry: appended.
const retryFile = `resources:
  - {type: giftcard, kind: remote, label: {zh: 礼品卡, en: Gift card}, url: "http://127.0.0.1:9400"}
retry:
`

// readRetry writes body to a resources file and reads it as Load does,
// with def as the default policy; an error names the file resources.yaml,
// without the package's prefix.
func readRetry(t *testing.T, body string, def models.RetryPolicy) ([]models.RetryPolicy, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ps, err := declared(&setting{flag: "resources", value: path}, mapEnv(nil), def)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(strings.ReplaceAll(err.Error(), path, "resources.yaml"), "config: "))
	}
	return ps, nil
}

func TestParseRetry(t *testing.T) {
	t.Parallel()
	def := models.DefaultRetryPolicy
	s := time.Second
	tests := []struct {
		name, list string
		want       []models.RetryPolicy
	}{
		{"none", "", nil},
		{"empty", "  []\n", nil},
		{"type and class, type, class; unset fields from the default", `
  - {type: giftcard, class: REMOTE_BUSY, steps: [10s, 1m, 10m], tries: 20}
  - {type: inventory, class: "*", tries: 3}
  - {type: "*", class: TIMEOUT, steps: [2s]}
  - {type: "*", class: STATE_MISMATCH, tries: 1}
`, []models.RetryPolicy{
			{Type: "giftcard", Class: models.ClassRemoteBusy, Steps: []time.Duration{10 * s, time.Minute, 10 * time.Minute}, Tries: 20},
			{Type: models.ResInventory, Steps: def.Steps, Tries: 3},
			{Class: models.ClassTimeout, Steps: []time.Duration{2 * s}, Tries: def.Tries},
			{Class: models.ClassStateMismatch, Steps: def.Steps, Tries: 1},
		}},
		{"equal steps are in order", `
  - {type: giftcard, class: CONNECTION, steps: [5s, 5s]}
`, []models.RetryPolicy{{Type: "giftcard", Class: models.ClassConnection, Steps: []time.Duration{5 * s, 5 * s}, Tries: def.Tries}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readRetry(t, retryFile+tt.list, def)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("policies\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Each bad field of a policy stops the start with a line naming the
// file, the entry (index, type/class) and the field.
func TestParseRetryInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, list string
		want       []string // the error's lines
	}{
		{"not a list", "  {type: giftcard}\n", []string{
			"resources.yaml: retry: must be a list of policies, each with type (a resource type or *), class (an error class or *), and steps, tries or both"}},
		{"entry not a mapping", "  - giftcard\n", []string{
			"resources.yaml: retry[0]: must be a mapping of type (a resource type or *), class (an error class or *), and steps, tries or both"}},
		{"negative step", "  - {type: giftcard, class: REMOTE_BUSY, steps: [1s, -5s]}\n", []string{
			"resources.yaml: retry[0] (giftcard/REMOTE_BUSY): steps: wait 2 (-5s) is not more than 0; steps are " + stepsShape}},
		{"zero step", "  - {type: giftcard, class: REMOTE_BUSY, steps: [0s]}\n", []string{
			"resources.yaml: retry[0] (giftcard/REMOTE_BUSY): steps: wait 1 (0s) is not more than 0; steps are " + stepsShape}},
		{"unsorted steps", "  - {type: giftcard, class: \"*\", steps: [1m, 5s]}\n", []string{
			"resources.yaml: retry[0] (giftcard/*): steps: wait 2 (5s) is shorter than the one before (1m0s); steps are " + stepsShape}},
		{"no steps", "  - {type: giftcard, class: \"*\", steps: []}\n", []string{
			"resources.yaml: retry[0] (giftcard/*): steps: 0 waits; steps are " + stepsShape}},
		{"step not a duration", "  - {type: giftcard, class: \"*\", steps: [soon]}\n", []string{
			"resources.yaml: retry[0] (giftcard/*): steps: wait 1 (\"soon\") is not a duration like 30s or 5m; steps are " + stepsShape}},
		{"step too long", "  - {type: giftcard, class: \"*\", steps: [25h]}\n", []string{
			"resources.yaml: retry[0] (giftcard/*): steps: wait 1 (25h0m0s) is over 24h0m0s; steps are " + stepsShape}},
		{"unknown class", "  - {type: giftcard, class: REMOTE_SLOW, tries: 3}\n", []string{
			"resources.yaml: retry[0] (giftcard/REMOTE_SLOW): class: REMOTE_SLOW is not an error class; one of " + retryClasses()}},
		{"exhausted is no failure's class", "  - {type: \"*\", class: RETRY_EXHAUSTED, tries: 3}\n", []string{
			"resources.yaml: retry[0] (*/RETRY_EXHAUSTED): class: RETRY_EXHAUSTED is what a task becomes when its tries run out, not a failure's class"}},
		{"unknown type", "  - {type: seats, class: TIMEOUT, tries: 3}\n", []string{
			"resources.yaml: retry[0] (seats/TIMEOUT): type: seats is neither a built-in type nor one this file declares"}},
		{"type and class missing", "  - {tries: 3}\n", []string{
			"resources.yaml: retry[0]: type: required: a built-in or declared resource type, or * for any",
			"resources.yaml: retry[0]: class: required: an error class, or * for any"}},
		{"zero tries", "  - {type: giftcard, class: TIMEOUT, tries: 0}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): tries: must be a whole number from 1 to 1000, the failures in a row that send a task to MANUAL"}},
		{"negative tries", "  - {type: giftcard, class: TIMEOUT, tries: -2}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): tries: must be a whole number from 1 to 1000, the failures in a row that send a task to MANUAL"}},
		{"tries as text", "  - {type: giftcard, class: TIMEOUT, tries: \"3\"}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): tries: must be a whole number from 1 to 1000, the failures in a row that send a task to MANUAL"}},
		{"a permanent class retried", "  - {type: \"*\", class: STATE_MISMATCH, tries: 3}\n", []string{
			"resources.yaml: retry[0] (*/STATE_MISMATCH): tries: STATE_MISMATCH is permanent: a task goes MANUAL at its first such failure whatever a policy says, so tries can only be 1"}},
		{"neither steps nor tries", "  - {type: giftcard, class: TIMEOUT}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): gives neither steps nor tries"}},
		{"unknown key", "  - {type: giftcard, class: TIMEOUT, tries: 3, jitter: 1s}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): jitter: unknown key; a policy has type (a resource type or *), class (an error class or *), and steps, tries or both"}},
		{"key given twice", "  - {type: giftcard, class: TIMEOUT, tries: 3, tries: 4}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): tries: given twice"}},
		{"the default here", "  - {type: \"*\", class: \"*\", tries: 3}\n", []string{
			"resources.yaml: retry[0] (*/*): the default policy of any type and class is set by -retry-steps and -retry-tries (UNHOLD_RETRY_STEPS, UNHOLD_RETRY_TRIES), not here"}},
		{"duplicate", "  - {type: giftcard, class: TIMEOUT, tries: 3}\n  - {type: inventory, class: TIMEOUT, tries: 3}\n  - {type: giftcard, class: TIMEOUT, steps: [1s]}\n", []string{
			"resources.yaml: retry[2] (giftcard/TIMEOUT): a policy of giftcard/TIMEOUT is given again; first at retry[0]"}},
		{"every bad entry named", "  - {type: giftcard, class: TIMEOUT, tries: 0}\n  - {type: \"*\", class: CONNECTION, steps: [2s, 1s]}\n", []string{
			"resources.yaml: retry[0] (giftcard/TIMEOUT): tries: must be a whole number from 1 to 1000, the failures in a row that send a task to MANUAL",
			"resources.yaml: retry[1] (*/CONNECTION): steps: wait 2 (1s) is shorter than the one before (2s); steps are " + stepsShape}},
		{"retry twice", "  []\nretry: []\n", []string{"resources.yaml: retry: given twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readRetry(t, retryFile+tt.list, models.DefaultRetryPolicy)
			if err == nil {
				t.Fatalf("read = %+v, want the error\n%s", got, strings.Join(tt.want, "\n"))
			}
			if lines := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(lines, tt.want) {
				t.Errorf("error\n got %q\nwant %q", lines, tt.want)
			}
		})
	}
}

// A file may hold only retry policies, of built-in types.
func TestParseRetryWithoutResources(t *testing.T) {
	t.Parallel()
	got, err := readRetry(t, "retry:\n  - {type: balance, class: DB_BUSY, tries: 12}\n", models.DefaultRetryPolicy)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	want := []models.RetryPolicy{{Type: models.ResBalance, Class: models.ClassDBBusy, Steps: models.RetrySchedule, Tries: 12}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policies %+v, want %+v", got, want)
	}
}
