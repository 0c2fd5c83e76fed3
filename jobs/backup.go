package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"unhold/models"
)

// backupLayout is the file name of a backup taken at a time: names sort as
// their times do, so the newest are the last.
const backupLayout = "unhold-20060102T150405Z.db"

// backupFile tells the backup job's own files from anything else in its
// directory, which it never deletes.
var backupFile = regexp.MustCompile(`^unhold-\d{8}T\d{6}Z\.db$`)

// Backup writes a copy of the store's SQLite database to dir (made if
// missing), named by the store's clock in UTC, then deletes the job's
// older backups there beyond the keep newest. A failed copy deletes
// nothing.
func Backup(ctx context.Context, s *models.Store, dir string, keep int) (string, error) {
	if keep < 1 {
		return "", fmt.Errorf("backup: %w: keep at least 1 backup, got %d", models.ErrInvalid, keep)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	name := s.Now().UTC().Format(backupLayout)
	path := filepath.Join(dir, name)
	if err := s.Backup(ctx, path); err != nil {
		return "", err
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	var ours []string
	for _, e := range entries {
		if e.Type().IsRegular() && backupFile.MatchString(e.Name()) {
			ours = append(ours, e.Name())
		}
	}
	slices.Sort(ours)
	var removed int
	var errs []error
	for _, old := range ours[:max(0, len(ours)-keep)] {
		if err := os.Remove(filepath.Join(dir, old)); err != nil {
			errs = append(errs, fmt.Errorf("backup: remove an old backup: %w", err))
			continue
		}
		removed++
	}
	return fmt.Sprintf("wrote %s (%d bytes); removed %d older backups, keeping the newest %d", name, st.Size(), removed, keep),
		errors.Join(errs...)
}
