package models

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite "modernc.org/sqlite"
)

// Error is a business error with a stable code that the API and the
// dashboard show. Compare with errors.Is against the sentinels below.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Sentinel business errors. Wrap them with %w to add detail.
var (
	ErrInvalid           = &Error{"INVALID_INPUT", "invalid input"}
	ErrNotFound          = &Error{"NOT_FOUND", "not found"}
	ErrResourceNotFound  = &Error{"RESOURCE_NOT_FOUND", "resource not found"}
	ErrOrderExists       = &Error{"ORDER_EXISTS", "order number already used"}
	ErrInsufficientStock = &Error{"INSUFFICIENT_STOCK", "not enough stock"}
	ErrCouponUnavailable = &Error{"COUPON_UNAVAILABLE", "coupon cannot be used"}
	ErrInsufficientFunds = &Error{"INSUFFICIENT_BALANCE", "not enough balance"}
	ErrInsufficientPts   = &Error{"INSUFFICIENT_POINTS", "not enough points"}
	ErrPointsExpired     = &Error{"POINTS_EXPIRED", "the account's points have expired"}
	ErrQuotaExhausted    = &Error{"QUOTA_EXHAUSTED", "activity quota exhausted"}
	ErrSlotTaken         = &Error{"SLOT_TAKEN", "slot already taken"}
	ErrOrderNotClosable  = &Error{"ORDER_NOT_CLOSABLE", "order cannot be closed"}
	ErrOrderNotPayable   = &Error{"ORDER_NOT_PAYABLE", "order cannot be paid"}
	ErrNothingToRerun    = &Error{"NOTHING_TO_RERUN", "no RETRY or MANUAL task to rerun"}
	// ErrNothingToCorrect: the row already is what a correction would make
	// it; nothing is written.
	ErrNothingToCorrect = &Error{"NOTHING_TO_CORRECT", "the row already agrees with its ledger and the amount asked"}
	// ErrChangedSince: a correction's key changed after the operator read
	// it; nothing is written.
	ErrChangedSince      = &Error{"CHANGED_SINCE", "the key changed since its numbers were read"}
	ErrStockBelowHeld    = &Error{"STOCK_CONFLICT", "change would leave less than is held"}
	ErrBalanceOverflow   = &Error{"BALANCE_OVERFLOW", "credit would take the account past its maximum balance"}
	ErrRemoteRejected    = &Error{"REMOTE_REJECTED", "the service that keeps the resource refused it"}
	ErrRemoteUnavailable = &Error{"REMOTE_UNAVAILABLE", "the service that keeps the resource did not answer"}
	ErrRemoteProtocol    = &Error{"REMOTE_PROTOCOL", "the service's answer did not echo the idempotency key"}
	ErrPlacementPending  = &Error{"PLACEMENT_PENDING", "the order's placement has not finished: its remote locks are unanswered"}
	ErrUserLimit         = &Error{"USER_LIMIT", "the user has placed as many orders of this as the limit allows"}
)

// Release failures that no retry can fix: the task goes to MANUAL.
var (
	errShort         = errors.New("held amount is smaller than the release")
	errStateMismatch = errors.New("resource is not in the state the release expects")
	errMissing       = errors.New("resource row does not exist")
	errDuplicate     = errors.New("ledger already holds this change")
	errLeaseLost     = errors.New("lease lost: another worker owns the task or it is finished")
)

// classified is an error that knows its class and whether the retry
// schedule applies to it, as a remote service's answer does (remote.Error).
type classified interface {
	error
	ErrorClass() string
	Retryable() bool
}

// classOf maps a release failure to its class and whether a retry may help.
func classOf(err error) (ErrorClass, bool) {
	switch {
	case errors.Is(err, errShort):
		return ClassLockedShort, false
	case errors.Is(err, errStateMismatch):
		return ClassStateMismatch, false
	case errors.Is(err, errMissing):
		return ClassNotFound, false
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout, true
	}
	var te *TransientError
	if errors.As(err, &te) {
		return te.Class, true
	}
	var ce classified
	if errors.As(err, &ce) {
		return ErrorClass(ce.ErrorClass()), ce.Retryable()
	}
	if IsBusy(err) {
		return ClassDBBusy, true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "57014":
			return ClassTimeout, true
		case strings.HasPrefix(pg.Code, "08") || strings.HasPrefix(pg.Code, "57P"):
			return ClassConnection, true
		}
		return ClassUnknown, true
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		return ClassUnknown, true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return ClassConnection, true
	}
	return ClassUnknown, true
}

// IsBusy tells, by the driver's error code, that the database was too busy
// to answer and a retry later may pass: SQLite's BUSY or LOCKED once the
// busy timeout ran out, PostgreSQL's serialization failure, deadlock or
// lock not available; or a SQLite write that waited its turn as long as the
// busy timeout (writeGate). A release failing so is class DB_BUSY; a request,
// 503 BUSY.
func IsBusy(err error) bool {
	if errors.Is(err, errWriteQueueTimeout) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "40001" || pg.Code == "40P01" || pg.Code == "55P03"
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return false
}

// TransientError is a failure that a retry may fix, with its class. Fault
// injection in drills returns one.
type TransientError struct {
	Class ErrorClass
	Err   error
}

func (e *TransientError) Error() string { return string(e.Class) + ": " + e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// IsUniqueViolation tells a unique-key conflict by the driver's error code.
func IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		return lite.Code() == 2067 || lite.Code() == 1555 // CONSTRAINT_UNIQUE, CONSTRAINT_PRIMARYKEY
	}
	return false
}
