package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"unhold/models"
)

// defaultDB is the database the backup and restore commands work on
// without a flag: UNHOLD_DB, as the server reads it, or its default.
func defaultDB(getenv func(string) string) string {
	if db := getenv("UNHOLD_DB"); db != "" {
		return db
	}
	return "unhold.db"
}

// backup is "unhold backup -to FILE [-db PATH]": a consistent copy of a
// SQLite database, safe while a server writes to it
// (docs/backup-and-upgrade.md).
func backup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unhold backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", defaultDB(getenv), "SQLite database to back up ($UNHOLD_DB)")
	to := fs.String("to", "", "file to write the backup to; it must not exist")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("backup: unexpected argument %q", fs.Arg(0))
	}
	if *to == "" {
		return fmt.Errorf("backup: -to FILE is required: where to write the backup")
	}
	if err := models.BackupSQLite(ctx, *db, *to); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", *db, *to)
	return nil
}

// restore is "unhold restore -from FILE [-to PATH]": the backup replaces
// the SQLite database, once it is checked; the servers on it must be
// stopped (docs/backup-and-upgrade.md).
func restore(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unhold restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "backup file to restore")
	to := fs.String("to", defaultDB(getenv), "SQLite database the backup replaces ($UNHOLD_DB)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("restore: unexpected argument %q", fs.Arg(0))
	}
	if *from == "" {
		return fmt.Errorf("restore: -from FILE is required: the backup to restore")
	}
	if err := models.RestoreSQLite(ctx, *from, *to); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s from %s\n", *to, *from)
	return nil
}
