// Package web is unhold's HTTP front: an echo server whose JSON API sets up
// resources, places, pays, closes and inspects orders, and makes failed
// releases due again. Handlers only parse input, call the models.Store and
// map its typed errors; the release itself is always the worker's job.
package web

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"unhold/auth"
	"unhold/buildinfo"
	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
)

// Deps is what the server needs.
type Deps struct {
	Store *models.Store
	Log   *slog.Logger
	// Auth is the accounts, sessions and tokens requests are signed in
	// with; nil is one on Store with the default policies.
	Auth *auth.Store
	// Wake, when set, tells the local worker that release tasks became due
	// (a close that won, a rerun), so it claims them without waiting for
	// its next sweep. It must not block.
	Wake func()
	// RerunWait is how long a task's rerun from its page waits for the
	// try it asked for, to say how it ended rather than that it will run;
	// zero does not wait.
	RerunWait time.Duration
	// Location is the time zone pages use until the viewer's browser tells
	// its own; nil means UTC.
	Location *time.Location
	// Scheduler, when set, lists the periodic jobs and runs one on demand.
	Scheduler *jobs.Scheduler
	// Metrics, when set, is served at /metrics.
	Metrics *metrics.Metrics
	// Sessions bounds dashboard sessions; zero fields take auth's defaults.
	Sessions auth.SessionPolicy
	// MetricsToken, when set, lets a scraper off the loopback read /metrics
	// with "Authorization: Bearer <token>".
	MetricsToken string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names the
	// client (for the audit log, login throttling and /metrics). With none,
	// the client is the connection's address and forwarding headers are
	// ignored.
	TrustedProxies []*net.IPNet
	// AtShutdown, when set, is handed what the server must do once it has
	// stopped serving and before the database closes: write the summaries
	// of the refused requests it counted this minute. The caller runs it.
	AtShutdown func(func(context.Context))
	// Hosts are the Host header values the server answers to (host, or
	// host:port, as browsers send it); any other is refused with 421
	// MISDIRECTED, closing DNS rebinding. cmd/unhold always sets them (see
	// config.Config.Hosts); empty accepts any Host.
	Hosts []string
	// Version is the binary's build facts and schema version, served on
	// /healthz; the zero value serves empty ones.
	Version buildinfo.Info
}

// server holds the dependencies every handler uses.
type server struct {
	store *models.Store
	auth  *auth.Store
	log   *slog.Logger
	wake  func()
	// rerunWait: see Deps.RerunWait.
	rerunWait time.Duration
	loc       *time.Location
	zones     zoneCache
	sched     *jobs.Scheduler
	metrics   *metrics.Metrics
	labels    map[string][2]string // the declared and remote resource types' names, zh and en
	// counters are the declared counter types, by name: the ones with
	// pages of their own under /resources.
	counters []string

	sessions     auth.SessionPolicy
	metricsToken string
	hosts        map[string]bool // lower case; empty: any
	gates        map[string]gate // by routeKey(method, route path)

	csrfMu     sync.Mutex
	csrfSecret []byte // see csrfKey

	refusals  refusalCounter
	forwarded *forwardedWatch // nil when proxies are trusted
	version   buildinfo.Info
}

// New builds the echo server with every route in routes.go.
func New(d Deps) *echo.Echo {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loc := d.Location
	if loc == nil {
		loc = time.UTC
	}
	a := d.Auth
	if a == nil {
		a = auth.New(d.Store, auth.Options{Logger: log})
	}
	s := &server{store: d.Store, auth: a, log: log, wake: d.Wake, rerunWait: d.RerunWait, loc: loc, sched: d.Scheduler, metrics: d.Metrics,
		sessions: d.Sessions.WithDefaults(), metricsToken: d.MetricsToken, hosts: map[string]bool{}, gates: map[string]gate{},
		version: d.Version}
	for _, h := range d.Hosts {
		s.hosts[strings.ToLower(h)] = true
	}
	s.labels = map[string][2]string{}
	for t, l := range d.Store.Labels() {
		s.labels[string(t)] = [2]string{l.Zh, l.En}
		if d.Store.Resource(t).Kind() == models.KindCounter {
			s.counters = append(s.counters, string(t))
		}
	}
	slices.Sort(s.counters)
	if len(d.TrustedProxies) == 0 {
		s.forwarded = &forwardedWatch{}
		s.warnForwardedAtStart()
	}
	if d.AtShutdown != nil {
		d.AtShutdown(func(ctx context.Context) {
			if err := s.writeSummaries(ctx, s.refusals.takeAll()); err != nil {
				log.Error("audit refused-request summaries at shutdown", slog.Any("err", err))
			}
		})
	}
	e := echo.NewWithConfig(echo.Config{
		Logger:           log,
		HTTPErrorHandler: s.handleError,
	})
	// A panic becomes an error for handleError: a 500 INTERNAL answer, with
	// the panic and the current goroutine's stack logged.
	// Outermost, so it sees the status the client got, panics included.
	e.Use(s.httpMetrics)
	if len(d.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range d.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
		// Whether the client came over HTTPS (Secure and __Host- cookies,
		// HSTS) is the same proxies' word, not any private address's.
		e.SchemeExtractor = echo.ExtractSchemeFromHeaders(trust...)
	}
	// Security headers on every answer, then no absurd URI past this point:
	// both before routing, authentication or any database work.
	e.Pre(s.harden, s.boundedURI)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true}))
	// The last minute's refusal summaries and forwarding headers no proxy
	// is trusted for, then who is asking, then storable text only, then
	// CSRF (which audits a refusal in their name), then whether their role
	// passes the route's gate.
	e.Use(s.refusalSummaries, s.watchForwarded, s.authenticate, s.plainText, s.csrf, s.authorize)
	s.routes(e)
	return e
}

// wakeWorker calls Wake when one is set.
func (s *server) wakeWorker() {
	if s.wake != nil {
		s.wake()
	}
}
