package models_test

import (
	"errors"
	"testing"
	"time"

	"unhold/models"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := models.Cursor{At: time.Date(2026, 11, 29, 10, 0, 0, 123456000, time.UTC), ID: 987654}
	got, err := models.ParseCursor(c.String())
	if err != nil || !got.At.Equal(c.At) || got.ID != c.ID {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, c)
	}
	if first, err := models.ParseCursor(""); err != nil || first.ID != 0 {
		t.Fatalf("empty cursor = %+v, %v", first, err)
	}
	for _, bad := range []string{"x", "1.", ".1", "zz.-1", "1.0", "1;DROP TABLE orders"} {
		if _, err := models.ParseCursor(bad); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("ParseCursor(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
