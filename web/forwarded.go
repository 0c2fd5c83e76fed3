package web

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/views"
)

// forwardedHeaders are the headers a reverse proxy names the client in.
var forwardedHeaders = []string{echo.HeaderXForwardedFor, echo.HeaderXRealIP, "Forwarded"}

// Without -trusted-proxies a request's address is the connection's: behind
// a proxy, every audit row, login throttle and session names the proxy.
// A forwarding header on a request says that is so.
const (
	// forwardedEvery is how often one instance writes that it saw one.
	forwardedEvery = time.Hour
	// forwardedRecent is how long a sighting keeps the warning up (at
	// start and on the overview) while the flag is still unset.
	forwardedRecent = 30 * 24 * time.Hour
	// forwardedHint is what the warnings ask for.
	forwardedHint = "if the peer is your reverse proxy, set -trusted-proxies (UNHOLD_TRUSTED_PROXIES) to its address or network, e.g. 10.0.0.5/32; if it is not, someone sent the header directly, and it is rightly ignored"
)

// forwardedWatch is what one server without trusted proxies remembers of
// the forwarding headers it has seen.
type forwardedWatch struct {
	warn  sync.Once    // the one WARN of this process
	wrote atomic.Int64 // unix time of the last write of a sighting; 0: none yet
}

// watchForwarded notices a forwarding header on a request while no proxy
// is trusted: one WARN per process, and a sighting in the database at
// most once per forwardedEvery. A failed write is logged; the request goes
// on.
func (s *server) watchForwarded(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		w := s.forwarded
		if w == nil {
			return next(c)
		}
		r := c.Request()
		header := ""
		for _, h := range forwardedHeaders {
			if r.Header.Get(h) != "" {
				header = h
				break
			}
		}
		if header == "" {
			return next(c)
		}
		peer, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			peer = r.RemoteAddr
		}
		ctx := r.Context()
		w.warn.Do(func() {
			s.log.WarnContext(ctx, "a request came through a proxy, but no proxy is trusted: the audit log, login throttling and sessions record the proxy's address, not the client's; "+forwardedHint,
				slog.String("header", header), slog.String("peer", peer))
		})
		now := s.store.Now()
		if last := w.wrote.Load(); (last == 0 || now.Unix()-last >= int64(forwardedEvery/time.Second)) && w.wrote.CompareAndSwap(last, now.Unix()) {
			if err := s.store.NoteForwarded(ctx, peer, header); err != nil {
				s.log.ErrorContext(ctx, "note forwarded request", slog.Any("err", err))
			}
		}
		return next(c)
	}
}

// warnForwardedAtStart logs a WARN when a server starting without trusted
// proxies was sent forwarding headers lately (by this or another
// instance, before a restart).
func (s *server) warnForwardedAtStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seen, err := s.store.ForwardedSince(ctx, s.store.Now().Add(-forwardedRecent))
	if err != nil {
		s.log.Error("read forwarded sightings", slog.Any("err", err))
		return
	}
	if seen != nil {
		s.log.Warn("requests came through a proxy, but no proxy is trusted: the audit log, login throttling and sessions record the proxy's address, not the client's; "+forwardedHint,
			slog.Time("last_seen", seen.LastSeenAt), slog.String("header", seen.Header), slog.String("peer", seen.Peer))
	}
}

// forwardedBanner is the overview's warning, for admins, while no proxy is
// trusted and forwarding headers came lately; nil otherwise.
func (s *server) forwardedBanner(ctx context.Context, admin bool) (*views.ForwardedWarning, error) {
	if s.forwarded == nil || !admin {
		return nil, nil
	}
	seen, err := s.store.ForwardedSince(ctx, s.store.Now().Add(-forwardedRecent))
	if err != nil || seen == nil {
		return nil, err
	}
	return &views.ForwardedWarning{At: seen.LastSeenAt, Peer: seen.Peer, Header: seen.Header}, nil
}
