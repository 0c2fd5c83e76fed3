package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
)

// DueChannel is the PostgreSQL channel migration 00016's triggers notify
// when a release task becomes due; the payload is the schema it is in.
const DueChannel = "unhold_release_due"

// Backoff bounds of a reconnecting listener: the first retry is quick (a
// restarted server is back in moments), later ones spread out.
const (
	listenRetryMin = 250 * time.Millisecond
	listenRetryMax = 15 * time.Second
)

// ListenDue wakes this process's workers (wake, the first pool's Wake)
// whenever another instance, or this one, commits a release task that is
// due now on PostgreSQL at dsn. It holds one connection of its own outside
// the store's pool, reconnects with backoff when it drops, logs once per
// outage, and returns when ctx ends. Notifications sent while it is away
// are lost: it wakes the workers on every (re)connect, and the periodic
// sweep stays the fallback.
func ListenDue(ctx context.Context, dsn string, wake func(), log *slog.Logger) {
	retry := listenRetryMin
	down := false
	for {
		err := listenDue(ctx, dsn, wake, func() {
			retry = listenRetryMin
			if down {
				log.Info("release wake-ups: listening again", slog.String("channel", DueChannel))
				down = false
			}
		})
		if ctx.Err() != nil {
			return
		}
		if !down {
			log.Warn("release wake-ups through PostgreSQL are off, reconnecting; the sweep still runs",
				slog.String("channel", DueChannel), slog.Any("err", err))
			down = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, listenRetryMax)
	}
}

// listenDue runs one connection: connect, LISTEN, call up, wake once, then
// wake on each notification for this schema until the connection fails or
// ctx ends.
func listenDue(ctx context.Context, dsn string, wake, up func()) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "unhold listener"
	}
	// The connection idles for hours between notifications; keepalives
	// find a peer that vanished without closing it within a minute.
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}}
	cfg.DialFunc = d.DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("listen: current schema: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+DueChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	up()
	wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen: wait: %w", err)
		}
		if n.Payload == schema {
			wake()
		}
	}
}
