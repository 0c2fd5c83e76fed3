package models

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pages a write commits reach the database file without the write
// connection checkpointing: its own checkpoint waits for walBackstop pages,
// and the background one copies them within a few of its ticks. Close
// ends the background one.
func TestCheckpointsBesideTheWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var auto int
	if err := s.W.Raw("PRAGMA wal_autocheckpoint").Scan(&auto).Error; err != nil {
		t.Fatal(err)
	}
	if auto != walBackstop {
		t.Fatalf("the write connection checkpoints at %d pages, want %d", auto, walBackstop)
	}
	if err := s.W.Exec("CREATE TABLE pad (b BLOB NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	// 200 pages: below SQLite's default autocheckpoint (1000) as well.
	for range 200 {
		if err := s.W.Exec("INSERT INTO pad (b) VALUES (zeroblob(4000))").Error; err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); size() < before+200*4000; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes, %d before 800 kB were committed: nothing copied the WAL into it", size(), before)
		}
	}
	c := s.ckpt
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the background checkpoint runs on after Close")
	}
}

// An Open refused after the connections were made (here a retry policy of
// a type nobody registered) leaves none of them behind: nothing holds the
// file (a restore may replace it), and no background checkpoint started
// (it starts only once Open has nothing left to refuse).
func TestRefusedOpenLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "refused.db")
	s, err := Open(ctx, path, Options{Retry: []RetryPolicy{{Type: "no-such-type", Steps: []time.Duration{time.Second}, Tries: 1}}})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open took a retry policy of an unregistered type")
	}
	if err := notInUse(ctx, path); err != nil {
		t.Errorf("after the refused Open: %v", err)
	}
}
