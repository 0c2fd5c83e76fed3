package models

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"
)

// A SQLite commit appends pages to the WAL; a checkpoint copies them back
// into the database file and syncs it. Left to SQLite, the connection whose
// commit takes the WAL past wal_autocheckpoint pages checkpoints then and
// there, inside the write turn: every write queued behind it waits for the
// copy and two fsyncs. In a burst of closes that was a tenth of the one
// write connection's time and p99 stalls of 50 ms.
//
// So the copying is done beside the writes, on a connection of its own,
// a few times a second while writes come (a PASSIVE checkpoint takes no
// lock a writer or a reader waits for). The write connection keeps a
// checkpoint of its own at walBackstop pages: the WAL starts again from its
// beginning only when a writer finds every frame copied, which under a
// steady stream of writes is the writer's own checkpoint, by then copying
// the few frames the background one has not.
const (
	checkpointEvery = 50 * time.Millisecond
	walBackstop     = 10000 // pages (4 KiB each): a WAL of about 40 MiB; 55 MB seen in a burst, readers holding it
)

// checkpointer runs PASSIVE checkpoints on db while writes end (wrote).
type checkpointer struct {
	db     *sql.DB
	wrote  *atomic.Bool
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

func startCheckpointer(db *sql.DB, wrote *atomic.Bool, log *slog.Logger) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, wrote: wrote, log: log, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !c.wrote.Swap(false) {
			continue
		}
		var busy, frames, copied int
		err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			// The write connection's own checkpoint still bounds the
			// WAL; said once, until one passes again.
			c.log.Warn("sqlite: background checkpoint failed; the writer checkpoints alone", "err", err)
			failing = true
		case err == nil && failing:
			c.log.Info("sqlite: background checkpoint passes again")
			failing = false
		}
	}
}

// stop ends the checkpoints and closes their connection.
func (c *checkpointer) stop() error {
	c.cancel()
	<-c.done
	return c.db.Close()
}
