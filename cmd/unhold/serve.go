package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"unhold/config"
	"unhold/jobs"
	"unhold/models"
	"unhold/web"
)

// serve runs HTTP, the worker and cron until ctx ends, then shuts down in
// order: HTTP first, then cron and the worker, then the database.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	s, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	if cfg.Demo {
		if err := seedDemo(ctx, cfg, s, log, stdout); err != nil {
			return err
		}
	}

	metrics := jobs.NewMetrics(s, log)
	w := jobs.NewWorker(s, cfg.WorkerID, cfg.WorkerBatch, cfg.LeaseDuration, log).WithMetrics(metrics)
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(jobCtx) }()
	loc, err := time.LoadLocation(cfg.TZ)
	if err != nil {
		return err
	}
	reconcileFn := func(ctx context.Context) (string, error) {
		run, err := s.RunReconciliation(ctx, models.ReconByCron, "cron:"+cfg.WorkerID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("run %d: %d diffs, %d new tickets, %d closed", run.ID, run.Found, run.Opened, run.Closed), nil
	}
	list, err := jobs.List(jobs.Deps{Store: s, Worker: w, Reconcile: reconcileFn, Log: log}, jobs.Schedule{
		Sweep: cfg.SweepEvery, TimeoutClose: cfg.TimeoutCloseEvery, LeaseRescue: cfg.LeaseRescueEvery,
		ReconcileAt: cfg.ReconcileAt, LedgerReport: cfg.LedgerReportSchedule, Cleanup: cfg.CleanupSchedule,
		AttemptRetention: time.Duration(cfg.AttemptRetentionDays) * 24 * time.Hour, Location: loc,
	})
	if err != nil {
		return err
	}
	sched, err := jobs.New(jobCtx, list, jobs.Options{Store: s, Instance: cfg.WorkerID, Location: loc, Lease: cfg.JobLease, Log: log})
	if err != nil {
		return err
	}
	sched.Start()
	w.Wake()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The Host names are those of the port actually bound (-addr may say :0).
	listening := cfg
	listening.Addr = ln.Addr().String()
	srv := &http.Server{
		Handler: web.New(web.Deps{Store: s, Log: log, Wake: w.Wake, Location: loc, Metrics: metrics, Scheduler: sched,
			Sessions: models.SessionPolicy{Idle: cfg.SessionIdle, Absolute: cfg.SessionMax}, MetricsToken: cfg.MetricsToken,
			TrustedProxies: cfg.TrustedProxies, Hosts: listening.Hosts()}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	scheme := "http"
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("tls: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	fmt.Fprintf(stdout, "unhold serving on %s://%s (database %s, worker %s)\n", scheme, ln.Addr(), cfg.DB, cfg.WorkerID)
	if users, err := s.Users(ctx); err != nil {
		return err
	} else if len(users) == 0 {
		fmt.Fprintln(stdout, "no users yet: create the first with  unhold user add --role admin NAME")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", slog.Any("err", err))
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("http shutdown", slog.Any("err", err))
	}
	sched.Stop()
	stopJobs()
	wg.Wait()
	return nil
}
