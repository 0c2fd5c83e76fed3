// Package webhookverify is how a subscriber checks unhold's
// Unhold-Signature header, as docs/webhooks.md shows it: the page's Go
// example is this file, and its test runs the page's shell example too.
package webhookverify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Verify checks the Unhold-Signature header of a webhook request whose
// body is body, byte for byte as received: a v1 signature must be the
// hex HMAC-SHA256, keyed with the subscription's secret, of "<t>.<body>",
// and t (Unix seconds) within tolerance of now, so that a request caught
// on the way cannot be replayed later.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("unhold signature: no timestamp")
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return errors.New("unhold signature: timestamp outside the tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("unhold signature: no v1 signature matches")
}
