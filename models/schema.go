package models

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// gooseTable is where goose records the migrations applied to a database.
const gooseTable = "goose_db_version"

// Schema mismatches between a database and this binary. A newer schema
// than the binary knows is never touched: its code may write rows the
// newer schema forbids, or miss columns it needs. An older one is
// migrated forward, or refused where migrations are not run at start.
var (
	ErrSchemaNewer = errors.New("schema newer than this binary")
	ErrSchemaOlder = errors.New("schema older than this binary")
)

// SchemaVersion is the highest migration this binary carries for d: the
// schema version a database has once Migrate ran.
func SchemaVersion(d Dialect) (int64, error) {
	sub, err := Migrations(d)
	if err != nil {
		return 0, err
	}
	entries, err := fs.ReadDir(sub, ".")
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	var top int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("schema version: migration %s: %w", e.Name(), err)
		}
		top = max(top, v)
	}
	return top, nil
}

// DBSchemaVersion is the highest migration applied to the database (0 for
// a database no migration ever ran on). It only reads: goose's table is
// not created.
func (s *Store) DBSchemaVersion(ctx context.Context) (int64, error) {
	return dbSchemaVersion(s.W.WithContext(ctx))
}

func dbSchemaVersion(db *gorm.DB) (int64, error) {
	if !db.Migrator().HasTable(gooseTable) {
		return 0, nil
	}
	var v int64
	if err := db.Raw("SELECT COALESCE(MAX(version_id), 0) FROM " + gooseTable).Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("schema version of the database: %w", err)
	}
	return v, nil
}

// schemaVersions are the database's schema version and the binary's.
func (s *Store) schemaVersions(ctx context.Context) (db, binary int64, err error) {
	if binary, err = SchemaVersion(s.Dialect); err != nil {
		return 0, 0, err
	}
	db, err = s.DBSchemaVersion(ctx)
	return db, binary, err
}

func schemaNewer(db, binary int64) error {
	return fmt.Errorf("%w: the database's schema is %d, this binary knows up to %d: run the newer binary or restore a backup made by this one",
		ErrSchemaNewer, db, binary)
}

// CheckSchema refuses a database whose schema is not exactly this
// binary's: newer (ErrSchemaNewer) or older (ErrSchemaOlder). It is the
// start of a process that does not migrate (-migrate=false): its schema
// must already be the one "unhold migrate" of this binary makes.
func (s *Store) CheckSchema(ctx context.Context) error {
	db, binary, err := s.schemaVersions(ctx)
	if err != nil {
		return err
	}
	switch {
	case db > binary:
		return schemaNewer(db, binary)
	case db < binary:
		return fmt.Errorf("%w: the database's schema is %d, this binary needs %d: run unhold migrate (of this binary) first",
			ErrSchemaOlder, db, binary)
	}
	return nil
}
