package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/buildinfo"
	"unhold/models"
	"unhold/models/modelstest"
)

func noEnv(string) string { return "" }

// unapplyNewest marks the newest migration, binary, unapplied in s, as if
// s were one migration behind, and returns the schema version s has then
// (migration numbers may skip one).
func unapplyNewest(t *testing.T, s *models.Store, binary int64) int64 {
	t.Helper()
	var prev int64
	if err := s.W.Raw("SELECT MAX(version_id) FROM goose_db_version WHERE version_id < ?", binary).Scan(&prev).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec("DELETE FROM goose_db_version WHERE version_id = ?", binary).Error; err != nil {
		t.Fatal(err)
	}
	return prev
}

// unhold version says the binary's facts as text and as JSON, and with -db
// the schema version of that database, which it does not change.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	binary, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(ctx, []string{"version"}, noEnv, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"version:", "commit:", "built:", "go:         " + runtime.Version(), fmt.Sprintf("schema:     %d ", binary)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("unhold version lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "db schema") {
		t.Errorf("unhold version without -db names a database schema:\n%s", out.String())
	}

	db, s := migratedSQLite(t)
	prev := unapplyNewest(t, s, binary)
	out.Reset()
	if err := run(ctx, []string{"version", "-json", "-db", db}, noEnv, nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("unhold version -json: %v\n%s", err, out.String())
	}
	if got.Schema != binary || got.DBSchema == nil || *got.DBSchema != prev || got.GoVersion != runtime.Version() {
		t.Errorf("unhold version -json -db = %s, want schema %d and db_schema %d", out.String(), binary, prev)
	}
	out.Reset()
	if err := run(ctx, []string{"version", "-db", db}, noEnv, nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), fmt.Sprintf("db schema:  %d\n", prev)) {
		t.Errorf("unhold version -db = %v:\n%s", err, out.String())
	}
	if v, _ := s.DBSchemaVersion(ctx); v != prev {
		t.Errorf("unhold version -db changed the schema to %d", v)
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	if err := run(ctx, []string{"version", "-db", missing}, noEnv, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "no database at") {
		t.Errorf("unhold version -db on a missing file = %v", err)
	}
}

// /healthz of unhold web and of unhold worker's -metrics-addr both carry
// the binary's version and schema.
func TestHealthzCarriesVersion(t *testing.T) {
	t.Parallel()
	db, _ := migratedSQLite(t)
	binary, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	web := startProcess(t, "web", "-addr", "127.0.0.1:0", "-db", db, "-log-format", "json")
	worker := startProcess(t, "worker", "-db", db, "-log-format", "json", "-metrics-addr", "127.0.0.1:0")
	for name, p := range map[string]*process{"web": web, "worker": worker} {
		res, err := http.Get(p.addr(t) + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Status  string
			Version buildinfo.Info
		}
		err = json.NewDecoder(res.Body).Decode(&h)
		res.Body.Close()
		if err != nil || h.Status != "ok" || h.Version.Schema != binary || h.Version.GoVersion != runtime.Version() {
			t.Errorf("%s /healthz = %+v (%v), want ok with schema %d and %s", name, h, err, binary, runtime.Version())
		}
	}
}

// A binary refuses a database whose schema is newer than it knows, at
// every start; with -migrate=false it also refuses an older schema (and
// migrates nothing), and starts on the current one.
func TestStartRefusesOtherSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	binary, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		t.Fatal(err)
	}

	newer, s := migratedSQLite(t)
	if err := s.W.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)", binary+2).Error; err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "-addr", "127.0.0.1:0"}, {"migrate"}, {"worker", "-migrate=false"}} {
		err := run(ctx, append(args, "-db", newer), noEnv, nil, io.Discard, io.Discard)
		want := fmt.Sprintf("the database's schema is %d, this binary knows up to %d", binary+2, binary)
		if !errors.Is(err, models.ErrSchemaNewer) || !strings.Contains(err.Error(), want) {
			t.Errorf("unhold %s on a newer schema = %v, want %q", args[0], err, want)
		}
	}

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	err = run(ctx, []string{"web", "-migrate=false", "-addr", "127.0.0.1:0", "-db", fresh}, noEnv, nil, io.Discard, io.Discard)
	if !errors.Is(err, models.ErrSchemaOlder) || !strings.Contains(err.Error(), "run unhold migrate") {
		t.Errorf("unhold web -migrate=false on an empty database = %v, want it to ask for unhold migrate", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unhold web -migrate=false made a database at a missing path: %v", err)
	}
	older, o := migratedSQLite(t)
	prev := unapplyNewest(t, o, binary)
	env := func(k string) string { return map[string]string{"UNHOLD_MIGRATE": "false"}[k] }
	err = run(ctx, []string{"worker", "-db", older}, env, nil, io.Discard, io.Discard)
	if !errors.Is(err, models.ErrSchemaOlder) {
		t.Errorf("UNHOLD_MIGRATE=false unhold worker one migration behind = %v, want ErrSchemaOlder", err)
	}
	if v, _ := o.DBSchemaVersion(ctx); v != prev {
		t.Errorf("a refused start migrated the database to %d", v)
	}
	current, _ := migratedSQLite(t)
	p := startProcess(t, "web", "-migrate=false", "-addr", "127.0.0.1:0", "-db", current, "-log-format", "json")
	if code := get(t, p.addr(t)+"/readyz"); code != http.StatusOK {
		t.Errorf("unhold web -migrate=false on the current schema: /readyz = %d", code)
	}
}

// unhold backup copies a SQLite database while orders are placed, closed
// and released on it; the copy, restored with unhold restore, opens and
// reconciles clean: it is the database as of one moment, not a mix.
func TestBackupRestoreWhileReleasesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := migratedSQLite(t)
	if _, err := s.SetStock(ctx, "sku-1", 100000, 0, "test"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var placed sync.WaitGroup
	placed.Add(2)
	for g := range 2 {
		wg.Add(1)
		go func() { // places and closes orders
			defer wg.Done()
			for i := 0; ; i++ {
				if i == 20 {
					placed.Done()
				}
				select {
				case <-stop:
					return
				default:
				}
				no := fmt.Sprintf("o-%d-%d", g, i)
				req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					continue // stays PENDING, holding its stock
				}
				if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // releases what the closes made due
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tasks, err := s.ClaimTasks(ctx, "w", 50, time.Minute)
			if err != nil {
				errs <- err
				return
			}
			for _, tk := range tasks {
				if _, err := s.ReleaseTask(ctx, tk, "w"); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	placed.Wait()
	backup := filepath.Join(t.TempDir(), "backup.db")
	var out strings.Builder
	err := run(ctx, []string{"backup", "-to", backup}, func(k string) string { return map[string]string{"UNHOLD_DB": db}[k] }, nil, &out, io.Discard)
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err != nil {
		t.Fatalf("unhold backup while releases run: %v", err)
	}
	if err := run(ctx, []string{"backup", "-db", db, "-to", backup}, noEnv, nil, io.Discard, io.Discard); !errors.Is(err, models.ErrInvalid) {
		t.Errorf("a second backup to the same file = %v, want refused", err)
	}
	if err := run(ctx, []string{"backup", "-db", "postgres://u@db/unhold", "-to", backup + "2"}, noEnv, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("unhold backup of a PostgreSQL DSN = %v, want refused naming pg_dump", err)
	}

	restored := filepath.Join(t.TempDir(), "restored.db")
	if err := run(ctx, []string{"restore", "-from", backup, "-to", restored}, noEnv, nil, &out, io.Discard); err != nil {
		t.Fatalf("unhold restore: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"reconcile", "-db", restored}, noEnv, nil, &out, io.Discard); err != nil {
		t.Fatalf("unhold reconcile on the restored backup: %v\n%s", err, out.String())
	}
	r, err := models.Open(ctx, restored, models.Options{Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var orders, pending int64
	r.R.Model(&models.Order{}).Count(&orders)
	r.R.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&pending)
	t.Logf("the backup holds %d orders, %d release tasks not done", orders, pending)
	if orders < 40 {
		t.Errorf("the restored backup holds %d orders, want at least the 40 placed before it", orders)
	}
}
