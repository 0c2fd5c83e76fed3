package main

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"unhold/auth"
	"unhold/buildinfo"
	"unhold/config"
	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/web"
)

// role is what one process runs: unhold serve runs both halves, unhold web
// only the dashboard and the API, unhold worker only the release workers
// and the periodic jobs.
type role struct {
	name string
	http bool // dashboard and JSON API
	work bool // release workers, release sweep and the other periodic jobs
}

// rerunWait is how long a rerun from a task's page waits to say how its
// try ended: a local worker woken at once releases in well under that.
const rerunWait = 3 * time.Second

var (
	roleServe  = role{name: "serve", http: true, work: true}
	roleWeb    = role{name: "web", http: true}
	roleWorker = role{name: "worker", work: true}
)

// serve runs what r says until ctx ends, then shuts down in order: HTTP
// first (no new requests, those in flight finish), then the workers (stop
// claiming, roll back the try in hand, hand back every claimed task), then
// cron, then the database.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer, r role) error {
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	// The demo's gift-card service outlives the workers that call it: its
	// Close is deferred first, so it runs last.
	cfg, demoSvc, err := demoRemote(cfg, log)
	if err != nil {
		return err
	}
	if demoSvc != nil {
		defer func() {
			if err := demoSvc.Close(); err != nil {
				log.Warn("demo gift-card service shutdown", slog.Any("err", err))
			}
		}()
	}
	info, err := binaryInfo()
	if err != nil {
		return err
	}
	s, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	a := auth.New(s, auth.Options{Logger: log})
	if demoSvc != nil {
		if err := demoSvc.replay(ctx, s); err != nil {
			return err
		}
	}
	if cfg.Demo {
		if err := seedDemo(ctx, cfg, s, a, log, stdout); err != nil {
			return err
		}
	}
	loc, err := time.LoadLocation(cfg.TZ)
	if err != nil {
		return err
	}
	m := metrics.New(s, log)

	// Workers and cron outlive ctx: each is stopped in its turn below.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	cronCtx, stopCron := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCron()
	var workers sync.WaitGroup
	var sched *jobs.Scheduler
	// After HTTP, on every way out, before the database closes: workers,
	// then cron.
	defer func() {
		stopWork()
		workers.Wait()
		if sched != nil {
			sched.Stop()
		}
	}()
	var wake func() // nil without a worker: a close then wakes nothing
	var ids []string
	if r.work {
		seq := jobs.NewEventSequencer(s, jobs.EventSequenceEvery, log)
		workers.Add(1)
		go func() { defer workers.Done(); seq.Run(workCtx) }()
		pools := newPools(s, cfg, m, seq, log)
		for _, w := range pools {
			ids = append(ids, w.ID())
			workers.Add(1)
			go func() { defer workers.Done(); w.Run(workCtx) }()
		}
		wake = pools[0].Wake
		if s.Dialect == models.Postgres {
			// Closes and reruns committed by other instances wake these pools too.
			workers.Add(1)
			go func() { defer workers.Done(); jobs.ListenDue(workCtx, cfg.DB, wake, log) }()
		}
		// Webhooks go out from a loop of their own, so a slow subscriber
		// never holds a release back.
		hooks := jobs.NewWebhookSender(s, cfg.WorkerID+"-webhooks", cfg.WebhookTimeout, jobs.DefaultWebhookSends, log).WithMetrics(m)
		workers.Add(1)
		go func() { defer workers.Done(); hooks.Run(workCtx) }()
		if sched, err = startCron(cronCtx, cfg, s, a, pools[0], loc, log); err != nil {
			return err
		}
		wake()
	}

	var srv *http.Server
	var ln net.Listener
	var flushWeb func(context.Context) // see web.Deps.AtShutdown
	scheme := "http"
	switch {
	case r.http:
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		// The Host names are those of the port actually bound (-addr may say :0).
		listening := cfg
		listening.Addr = ln.Addr().String()
		srv = httpServer(web.New(web.Deps{Store: s, Auth: a, Log: log, Wake: wake, RerunWait: rerunWait, Location: loc, Metrics: m, Scheduler: sched,
			Sessions: auth.SessionPolicy{Idle: cfg.SessionIdle, Absolute: cfg.SessionMax}, MetricsToken: cfg.MetricsToken,
			TrustedProxies: cfg.TrustedProxies, Hosts: listening.Hosts(), AtShutdown: func(f func(context.Context)) { flushWeb = f }, Version: info}))
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
	case cfg.MetricsAddr != "":
		if ln, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		srv = httpServer(workerMux(s, m, cfg.MetricsToken, info))
	}

	switch r {
	case roleServe:
		fmt.Fprintf(stdout, "unhold serving on %s://%s (database %s, worker %s)\n", scheme, ln.Addr(), cfg.DB, strings.Join(ids, ", "))
	case roleWeb:
		fmt.Fprintf(stdout, "unhold web serving on %s://%s (database %s, no worker)\n", scheme, ln.Addr(), cfg.DB)
	case roleWorker:
		where := "no HTTP listener"
		if ln != nil {
			where = "/healthz and /metrics on http://" + ln.Addr().String()
		}
		fmt.Fprintf(stdout, "unhold worker running %s (database %s, %s)\n", strings.Join(ids, ", "), cfg.DB, where)
	}
	if r.http {
		if users, err := a.Users(ctx); err != nil {
			return err
		} else if len(users) == 0 {
			fmt.Fprintln(stdout, "no users yet: create the first with  unhold user add --role admin NAME")
		}
	}
	errc := make(chan error, 1)
	if srv != nil {
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", slog.Any("err", err))
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if srv != nil {
		shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutCtx); err != nil {
			log.Error("http shutdown", slog.Any("err", err))
		}
		if flushWeb != nil {
			// A time of its own: a slow request may have used up the
			// shutdown's, and the refusals it sums up would be lost.
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			flushWeb(flushCtx)
		}
	}
	return nil
}

// newPools makes cfg.Pools workers sharing the outbox, each its own lease
// owner: the worker id alone for one pool, "<worker-id>-<i>" for several.
// A pool that claims a full batch wakes the next one; each wakes seq after
// its releases.
func newPools(s *models.Store, cfg config.Config, m *metrics.Metrics, seq *jobs.EventSequencer, log *slog.Logger) []*jobs.Worker {
	pools := make([]*jobs.Worker, cfg.Pools)
	for i := range pools {
		id := cfg.WorkerID
		if cfg.Pools > 1 {
			id += "-" + strconv.Itoa(i+1)
		}
		pools[i] = jobs.NewWorker(s, id, cfg.WorkerBatch, cfg.LeaseDuration, log).WithMetrics(m).WithEvents(seq)
	}
	for i := 1; i < len(pools); i++ {
		pools[i-1].WakeAlso(pools[i])
	}
	return pools
}

// startCron starts the periodic jobs; the sweep and the timeout close wake w.
func startCron(ctx context.Context, cfg config.Config, s *models.Store, a *auth.Store, w *jobs.Worker, loc *time.Location, log *slog.Logger) (*jobs.Scheduler, error) {
	reconcileFn := func(ctx context.Context) (string, error) {
		run, err := s.RunReconciliation(ctx, models.ReconByCron, "cron:"+cfg.WorkerID)
		if err != nil {
			return "", err
		}
		sum := fmt.Sprintf("run %d: %d diffs, %d new tickets, %d closed", run.ID, run.Found, run.Opened, run.Closed)
		if run.Status == models.ReconPartial {
			sum += "; partial: " + run.Unchecked()
		}
		return sum, nil
	}
	list, err := jobs.List(jobs.Deps{Store: s, Auth: a, Worker: w, Reconcile: reconcileFn, Log: log}, jobs.Schedule{
		Sweep: cfg.SweepEvery, TimeoutClose: cfg.TimeoutCloseEvery, LeaseRescue: cfg.LeaseRescueEvery,
		ReconcileAt: cfg.ReconcileAt, LedgerReport: cfg.LedgerReportSchedule, Cleanup: cfg.CleanupSchedule,
		AttemptRetention: time.Duration(cfg.AttemptRetentionDays) * 24 * time.Hour, EventsKeep: cfg.EventsKeep, Location: loc,
		BackupDir: cfg.BackupDir, Backup: cfg.BackupSchedule, BackupKeep: cfg.BackupKeep,
	})
	if err != nil {
		return nil, err
	}
	sched, err := jobs.New(ctx, list, jobs.Options{Store: s, Instance: cfg.WorkerID, Location: loc, Lease: cfg.JobLease, Log: log})
	if err != nil {
		return nil, err
	}
	sched.Start()
	return sched, nil
}

func httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// workerMux is what unhold worker serves on -metrics-addr: its release
// counters and close-to-release histogram live in this process, so only it
// can export them. /metrics answers the loopback, or the metrics token, as
// the dashboard's does.
func workerMux(s *models.Store, m *metrics.Metrics, token string, info buildinfo.Info) http.Handler {
	mux := http.NewServeMux()
	// The dashboard's /healthz answer: alive, and which binary.
	health := struct {
		Status  string         `json:"status"`
		Version buildinfo.Info `json:"version"`
	}{"ok", info}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(health)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Ready(r.Context()); err != nil {
			http.Error(w, "database not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		ip := net.ParseIP(host)
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if (ip == nil || !ip.IsLoopback()) && (token == "" || !ok || subtle.ConstantTimeCompare([]byte(bearer), []byte(token)) != 1) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		m.Handler().ServeHTTP(w, r)
	})
	return mux
}
