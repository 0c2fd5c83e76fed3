// Package auth is who may use unhold: accounts with a role and an argon2id
// password, browser sessions, API tokens, login throttling, and the site
// secrets the server signs with. Its tables (users, sessions, api_tokens,
// login_throttle, site_secrets) are created by models' migrations, one goose
// sequence for the whole database; auth reads and writes them through the
// models.Store's connections and writes its audit rows to the same audit
// log as the domain.
package auth

import (
	"context"
	"log/slog"
	"runtime"

	"gorm.io/gorm"

	"unhold/models"
)

// Errors of accounts, sessions and API tokens. They are *models.Error, so
// the API and the dashboard answer them with their code as they do the
// domain's.
var (
	ErrUserExists     = &models.Error{Code: "USER_EXISTS", Message: "user name already taken"}
	ErrLastAdmin      = &models.Error{Code: "LAST_ADMIN", Message: "the last enabled admin cannot be disabled or demoted"}
	ErrBadCredentials = &models.Error{Code: "BAD_CREDENTIALS", Message: "wrong user name or password"}
	ErrNoSession      = &models.Error{Code: "NO_SESSION", Message: "not signed in or the session has ended"}
	ErrLoginThrottled = &models.Error{Code: "LOGIN_THROTTLED", Message: "too many login attempts"}
	ErrTokenExists    = &models.Error{Code: "TOKEN_EXISTS", Message: "an API token with this name exists"}
)

// Options tune a Store. The zero value is the production default.
type Options struct {
	Throttle ThrottlePolicy // login throttling; zero fields are the defaults
	Logger   *slog.Logger   // nil: slog.Default()
}

// Store is accounts, sessions and tokens on the database of a models.Store.
// One process should make one and share it: it bounds the password hashes
// the process runs at once.
type Store struct {
	db       *models.Store
	throttle ThrottlePolicy
	log      *slog.Logger
	// hashSlots bounds the argon2id hashes running at once: each takes
	// 19 MiB and a core for tens of milliseconds, so a burst of logins must
	// queue instead of exhausting memory.
	hashSlots chan struct{}
}

// New makes the Store of db's accounts.
func New(db *models.Store, opt Options) *Store {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Store{db: db, throttle: opt.Throttle.withDefaults(), log: log,
		hashSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// write runs fn in one write transaction on the writer, which on SQLite
// waits its turn for the one write connection like the domain's writes.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.W.WithContext(ctx).Transaction(fn)
}
