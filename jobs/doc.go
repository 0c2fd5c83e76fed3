// Package jobs runs unhold's background work: the release worker that drains
// the outbox, and the cron scheduler that ticks it and runs the periodic
// jobs. The database is the source of truth; cron is only a ticker.
package jobs
