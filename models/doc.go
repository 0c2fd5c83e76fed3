// Package models is unhold's domain: orders, the resources they hold, the
// release outbox, the ledgers, and the transactions that place, pay, close,
// release and reconcile. It owns every transaction; callers hand it a context
// and plain values and get typed errors back.
package models
