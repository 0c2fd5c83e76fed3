package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBenchWebhookDelay: -webhook-delay is read and bounded, and its
// subscriber answers 200 only after the delay, counting what it answered.
func TestBenchWebhookDelay(t *testing.T) {
	t.Parallel()
	o, err := parseBenchFlags([]string{"-webhook-delay", "2s"})
	if err != nil || o.webhookDelay != 2*time.Second {
		t.Fatalf("-webhook-delay 2s: %v, %v", o.webhookDelay, err)
	}
	if _, err := parseBenchFlags([]string{"-webhook-delay", "-1s"}); err == nil || !strings.Contains(err.Error(), "-webhook-delay") {
		t.Fatalf("-webhook-delay -1s: %v", err)
	}
	sb, err := startBenchSubscriber(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	start := time.Now()
	resp, err := http.Post(sb.url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusOK || took < 50*time.Millisecond || sb.got.Load() != 1 {
		t.Fatalf("answered %d after %s, counted %d", resp.StatusCode, took, sb.got.Load())
	}
}
