package jobs_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// The backup job is listed only with a directory; each run writes a copy
// named by the store's clock that opens as the database it copied, and
// keeps only the newest N of its own files, whatever else the directory
// holds.
func TestBackupJobWritesAndKeepsTheNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, models.SQLite, models.Options{Now: clock.Now, Logger: modelstest.QuietLog()})
	if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "backups")
	if list, _ := jobs.List(jobs.Deps{Store: s}, jobs.Schedule{}); slices.ContainsFunc(list, func(j jobs.Job) bool { return j.Name == jobs.JobBackup }) {
		t.Error("the backup job is listed without a backup directory")
	}
	list, err := jobs.List(jobs.Deps{Store: s}, jobs.Schedule{BackupDir: dir, BackupKeep: 2})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(j jobs.Job) bool { return j.Name == jobs.JobBackup })
	if i < 0 || list[i].Spec != "15 3 * * *" {
		t.Fatalf("jobs with a backup directory: %+v, want backup at 15 3 * * *", list)
	}
	job := list[i]

	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	var summary string
	for range 3 {
		if summary, err = job.Run(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
	}
	if !strings.HasPrefix(summary, "wrote unhold-20261201T100000Z.db (") || !strings.HasSuffix(summary, "removed 1 older backups, keeping the newest 2") {
		t.Errorf("summary = %q", summary)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"notes.txt", "unhold-20261130T100000Z.db", "unhold-20261201T100000Z.db"}
	if !slices.Equal(names, want) {
		t.Fatalf("backup directory = %q, want %q", names, want)
	}
	b, err := models.Open(ctx, filepath.Join(dir, want[2]), models.Options{Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if sku, err := b.GetSKU(ctx, "sku-1"); err != nil || sku.Available != 10 {
		t.Errorf("the backup's sku-1 = %+v, %v; want 10 available", sku, err)
	}
}
