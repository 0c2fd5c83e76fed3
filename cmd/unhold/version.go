package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"unhold/buildinfo"
	"unhold/models"
)

// buildTime is when the binary was built, set by make build and the
// Dockerfile with -ldflags "-X main.buildTime=...".
var buildTime string

// binaryInfo is this binary's build facts and schema version.
func binaryInfo() (buildinfo.Info, error) {
	schema, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		return buildinfo.Info{}, err
	}
	return buildinfo.Read(buildTime, schema), nil
}

// version is "unhold version [-db DSN] [-json]": the binary's facts, and
// with -db the schema version of that database, which it only reads.
func version(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unhold version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "", "also say the schema version of this database (SQLite file path or postgres:// URL)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected argument %q", fs.Arg(0))
	}
	info, err := binaryInfo()
	if err != nil {
		return fmt.Errorf("version: %w", err)
	}
	if *dsn != "" {
		v, err := dbSchema(ctx, *dsn)
		if err != nil {
			return fmt.Errorf("version: %w", err)
		}
		info.DBSchema = &v
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return info.WriteText(stdout)
}

// dbSchema is the schema version of the database at dsn; a SQLite file
// that does not exist is an error, not a new empty database.
func dbSchema(ctx context.Context, dsn string) (int64, error) {
	if !models.IsPostgres(dsn) {
		if _, err := os.Stat(dsn); errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("no database at %s", dsn)
		}
	}
	s, err := models.Open(ctx, dsn, models.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.DBSchemaVersion(ctx)
}
