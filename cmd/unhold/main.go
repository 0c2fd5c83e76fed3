// Command unhold serves the release dashboard, the JSON API and the release
// workers, in one process or split over several.
//
//	unhold serve [flags]    HTTP + workers + cron (migrates first)
//	unhold web [flags]      HTTP only: dashboard and JSON API
//	unhold worker [flags]   workers + cron only
//	unhold bench [flags]    measure releases end to end on a throwaway database
//	unhold migrate [flags]  apply schema migrations and exit
//	unhold demo [flags]     fill a fresh database with a demo shop and exit
//	unhold reconcile        run a reconciliation and print its tickets
//	unhold user add|reset   manage dashboard users
//	unhold token add        create an API token
//	unhold healthcheck      GET a health URL, exit 0 on 200 (for images without curl)
//	unhold version          the binary's version, commit, build time and schema version
//	unhold backup           copy a SQLite database, safe while it serves
//	unhold restore          replace a SQLite database with a backup
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // time zones work on machines without a zoneinfo database

	"unhold/auth"
	"unhold/config"
	"unhold/models"
	"unhold/remote"
)

const usage = `unhold releases what closed orders were holding, exactly once.

Usage:
  unhold serve [flags]     serve the dashboard, the API and the workers (migrates first)
  unhold web [flags]       serve only the dashboard and the API (no worker, no cron)
  unhold worker [flags]    run only the release workers (-pools N) and the periodic jobs
  unhold bench [flags]     place, close and release orders on a throwaway database and
                           report closes/s, releases/s and close-to-release latency
  unhold migrate [flags]   apply database migrations
  unhold demo [flags]      fill a fresh database with a demo shop
  unhold reconcile [flags] run a reconciliation now and print what it found
  unhold user add --role viewer|operator|admin NAME
                           create a dashboard user (password from a prompt or stdin)
  unhold user reset NAME   set a new password for a user and end their sessions
  unhold token add --role viewer|operator|admin NAME
                           create an API token and print it alone on stdout
  unhold healthcheck [-url U]
                           GET U (default http://127.0.0.1:8080/readyz): exit 0 on 200, 1 otherwise
  unhold version [-db DSN] [-json]
                           the module version, commit, build time, Go version and the
                           schema version this binary carries (with -db: the database's too)
  unhold backup -to FILE [-db PATH]
                           copy the SQLite database to FILE (a new file), safe while it serves
  unhold restore -from FILE [-to PATH]
                           replace the stopped SQLite database with a checked backup

Run "unhold serve -h" for the flags; each has an UNHOLD_* environment variable.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "unhold:", err)
		}
		os.Exit(exitStatus(err))
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd := args[0]
	if cmd == "user" || cmd == "token" {
		return accountCommand(ctx, args, getenv, stdin, stdout, stderr)
	}
	if cmd == "healthcheck" {
		return healthcheck(ctx, args[1:], stdout, stderr)
	}
	switch cmd {
	case "version":
		return version(ctx, args[1:], stdout, stderr)
	case "backup":
		return backup(ctx, args[1:], getenv, stdout, stderr)
	case "restore":
		return restore(ctx, args[1:], getenv, stdout, stderr)
	}
	if cmd == "bench" {
		return bench(ctx, args[1:], getenv, stdout, stderr)
	}
	cfg, err := config.Load(args[1:], getenv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, err)
		}
		return err
	}
	log := newLogger(cfg.LogFormat, stderr)
	// What the resources file allows but weakens (strict: false,
	// insecure_http: true) is said at every start, not only once.
	for _, r := range cfg.Resources {
		for _, w := range r.Warnings {
			log.Warn("resources file: "+w, slog.String("resource_type", string(r.Type)))
		}
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, log, stdout, roleServe)
	case "web":
		return serve(ctx, cfg, log, stdout, roleWeb)
	case "worker":
		// No requests write here: each pool may write while the others
		// do, as -pools asks.
		cfg.PGWriters = max(cfg.PGWriters, cfg.Pools)
		return serve(ctx, cfg, log, stdout, roleWorker)
	case "migrate":
		cfg.Migrate = true
		s, err := openStore(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Fprintln(stdout, "migrations applied")
		return nil
	case "demo":
		s, err := openStore(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer s.Close()
		return seedDemo(ctx, cfg, s, auth.New(s, auth.Options{Logger: log}), log, stdout)
	case "reconcile":
		s, err := openStore(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer s.Close()
		return reconcile(ctx, s, stdout)
	}
	return fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
}

// openStore opens the configured database and migrates it, or, with
// -migrate=false, checks its schema is this binary's. Either way a schema
// newer than the binary's is refused (models.ErrSchemaNewer).
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (*models.Store, error) {
	opt, err := storeOptions(cfg, log)
	if err != nil {
		return nil, err
	}
	if !cfg.Migrate && !models.IsPostgres(cfg.DB) {
		// Opening would make an empty database there, to be refused.
		if _, err := os.Stat(cfg.DB); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: no database at %s: run unhold migrate (of this binary) first, or check -db", models.ErrSchemaOlder, cfg.DB)
		}
	}
	s, err := models.Open(ctx, cfg.DB, opt)
	if err != nil {
		return nil, err
	}
	if !cfg.Migrate {
		if err := s.CheckSchema(ctx); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	n, err := s.Migrate(ctx)
	if err != nil {
		s.Close()
		return nil, err
	}
	if n > 0 {
		log.Info("applied migrations", slog.Int("count", n))
	}
	return s, nil
}

// storeFaults are the store's fault points (models.FaultFunc), nil but in
// the tests that run this binary to kill it at one.
var storeFaults models.FaultFunc

// storeOptions are the store's options of cfg: the declared counter types,
// and the remote types with a client of each one's service
// (docs/remote-resources.md).
func storeOptions(cfg config.Config, log *slog.Logger) (models.Options, error) {
	opt := models.Options{
		Logger:              log,
		Coupons:             models.CouponPolicy{Expiry: models.CouponExpiryPolicy(cfg.CouponExpiry), ExtendDays: cfg.CouponExtendDays},
		Points:              models.CouponPolicy{Expiry: models.CouponExpiryPolicy(cfg.PointsExpiry), ExtendDays: cfg.PointsExtendDays},
		ReconUncheckedAfter: cfg.ReconUncheckedAfter,
		ManualSLA:           cfg.ManualSLA,
		CloseGroup:          cfg.CloseGroup,
		Writers:             cfg.PGWriters,
		Faults:              storeFaults,
		ApprovalThreshold:   cfg.ApprovalThreshold,
		RetryDefault:        cfg.RetryDefault,
		Retry:               cfg.Retry,
	}
	for _, r := range cfg.Resources {
		label := models.Label{Zh: r.Label.ZH, En: r.Label.EN}
		if r.Approval {
			opt.ApprovalTypes = append(opt.ApprovalTypes, r.Type)
		}
		if r.Kind == config.KindCounter {
			opt.Declared = append(opt.Declared, models.DeclaredType{Type: r.Type, Label: label})
			continue
		}
		client, err := remote.New(remote.Config{Type: string(r.Type), URL: r.URL, Timeout: r.Timeout, Token: r.Token,
			Strict: r.Strict})
		if err != nil {
			return opt, fmt.Errorf("resources: %w", err)
		}
		opt.Remote = append(opt.Remote, models.RemoteType{Type: r.Type, Label: label, Client: client})
	}
	return opt, nil
}

// newLogger logs text on a terminal and JSON otherwise.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == config.LogFormatAuto {
		format = config.LogFormatJSON
		if f, ok := w.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				format = config.LogFormatText
			}
		}
	}
	if format == config.LogFormatText {
		return slog.New(slog.NewTextHandler(w, nil))
	}
	return slog.New(slog.NewJSONHandler(w, nil))
}

// reconcile runs a reconciliation and prints the run and its open tickets.
// It fails (exit 2) when any ticket is open, so scripts can alert on it.
func reconcile(ctx context.Context, s *models.Store, out io.Writer) error {
	host, _ := os.Hostname()
	run, err := s.RunReconciliation(ctx, models.ReconByCLI, "cli:"+host)
	if err != nil {
		return err
	}
	open, err := s.ListDiffs(ctx, models.DiffFilter{Statuses: []string{models.DiffOpen, models.DiffAcked}, Limit: 1000})
	if err != nil {
		return err
	}
	return reconReport(out, run, open)
}

// reconReport prints a run and the open tickets, and fails while any is
// open or the run left keys unchecked: a script that runs it must not
// read a run that could not look as clean.
func reconReport(out io.Writer, run *models.ReconRun, open []models.DiffTicket) error {
	fmt.Fprintf(out, "run %d %s: %d diffs found, %d new tickets, %d closed automatically, in %s\n",
		run.ID, run.Status, run.Found, run.Opened, run.Closed, run.FinishedAt.Sub(run.StartedAt).Round(time.Millisecond))
	if run.Status == models.ReconPartial {
		fmt.Fprintf(out, "partial: %s\n", run.Unchecked())
	}
	for _, d := range open {
		if d.Kind == models.TicketUnchecked {
			fmt.Fprintf(out, "#%d %s %s UNCHECKED %d runs in a row (%s) %s\n", d.ID, d.ResourceType, d.BizKey, d.Streak, d.Reasons, d.Status)
			continue
		}
		fmt.Fprintf(out, "#%d %s %s %s expected %d actual %d (%+d) %s orders %s\n",
			d.ID, d.ResourceType, d.BizKey, d.CheckName, d.Expected, d.Actual, d.Actual-d.Expected, d.Status, d.Orders)
	}
	var errs []error
	if run.Status == models.ReconPartial {
		errs = append(errs, fmt.Errorf("the run was partial: %s", run.Unchecked()))
	}
	if len(open) > 0 {
		errs = append(errs, fmt.Errorf("%d reconciliation ticket(s) open", len(open)))
	}
	return errors.Join(errs...)
}
