package models_test

import (
	"errors"
	"testing"

	"unhold/models"
)

func TestParseOrderStatus(t *testing.T) {
	t.Parallel()
	for _, st := range models.OrderStatuses {
		if got, err := models.ParseOrderStatus(string(st)); err != nil || got != st {
			t.Errorf("ParseOrderStatus(%s) = %s, %v", st, got, err)
		}
	}
	if _, err := models.ParseOrderStatus("paid"); !errors.Is(err, models.ErrInvalid) {
		t.Errorf("ParseOrderStatus(paid) = %v, want ErrInvalid", err)
	}
}

// Every failure class a try can end in parses back from its stored name,
// the remote service's too.
func TestParseErrorClass(t *testing.T) {
	t.Parallel()
	for _, c := range append(models.ErrorClasses, models.ClassRemoteBusy, models.ClassRemoteRejected) {
		if got, err := models.ParseErrorClass(string(c)); err != nil || got != c {
			t.Errorf("ParseErrorClass(%s) = %s, %v", c, got, err)
		}
	}
	if _, err := models.ParseErrorClass("remote_busy"); !errors.Is(err, models.ErrInvalid) {
		t.Errorf("ParseErrorClass(remote_busy) = %v, want ErrInvalid", err)
	}
}
