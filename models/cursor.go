package models

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cursor is a keyset pagination position: the (time, id) of the last row
// shown. Lists never use OFFSET, so page N costs what page 1 costs.
type Cursor struct {
	At time.Time
	ID int64
}

// String is the cursor as a URL parameter.
func (c Cursor) String() string {
	if c.ID == 0 {
		return ""
	}
	return strconv.FormatInt(c.At.UnixMicro(), 36) + "." + strconv.FormatInt(c.ID, 36)
}

// ParseCursor reads a cursor parameter; "" is the first page.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	at, id, ok := strings.Cut(s, ".")
	us, err1 := strconv.ParseInt(at, 36, 64)
	n, err2 := strconv.ParseInt(id, 36, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 {
		return Cursor{}, fmt.Errorf("%w: cursor %q is not one this server made", ErrInvalid, s)
	}
	return Cursor{At: time.UnixMicro(us).UTC(), ID: n}, nil
}
