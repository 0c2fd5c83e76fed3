package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"unhold/models"
)

// Browser sessions. The cookie holds a random token; the database holds its
// SHA-256 only, with the role the session was issued for, so a role change
// by an admin takes effect at the user's next request.

// Session is one signed-in browser.
type Session struct {
	TokenHash  string    `json:"-" gorm:"primaryKey"`
	UserID     int64     `json:"user_id"`
	Role       Role      `json:"role"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	IP         string    `json:"ip"`
	UserAgent  string    `json:"user_agent"`
}

// TableName is the session table.
func (Session) TableName() string { return "sessions" }

// SessionPolicy is how long a session lasts: it ends after Idle without a
// request, and at the latest Absolute after the login.
type SessionPolicy struct {
	Idle, Absolute time.Duration
}

// Session policy defaults, for zero fields.
const (
	DefaultSessionIdle     = 30 * time.Minute
	DefaultSessionAbsolute = 12 * time.Hour
)

// WithDefaults is p with DefaultSessionIdle and DefaultSessionAbsolute in
// its zero fields.
func (p SessionPolicy) WithDefaults() SessionPolicy {
	if p.Idle <= 0 {
		p.Idle = DefaultSessionIdle
	}
	if p.Absolute <= 0 {
		p.Absolute = DefaultSessionAbsolute
	}
	return p
}

// sessionTouchEvery is how stale last_seen_at may get before a request
// writes it again: one write a minute per session, not one per request.
const sessionTouchEvery = time.Minute

// touchAfter is how stale last_seen_at may get under p: sessionTouchEvery,
// but at most a quarter of the idle limit, so that a session in use is
// never more than that short of its idle end (with a one-minute limit, a
// request every 20 s keeps it alive).
func (p SessionPolicy) touchAfter() time.Duration {
	return min(sessionTouchEvery, p.Idle/4)
}

// LoginRequest is one login form sent.
type LoginRequest struct {
	Name, Password string
	IP, UserAgent  string
	Policy         SessionPolicy
}

// errLoginMoved means the user was disabled or their password changed
// between the password check and the session's creation.
var errLoginMoved = errors.New("user changed during login")

// Login checks a name and password and opens a session, returning its raw
// token (the cookie value) and the user. Throttling comes first (see
// ThrottlePolicy); the password is verified outside any write transaction.
// An unknown name, a disabled user and a wrong password are all
// ErrBadCredentials and take the same time; a throttled attempt is a
// *ThrottledError.
func (s *Store) Login(ctx context.Context, r LoginRequest) (string, *User, error) {
	typed := models.TruncUTF8(r.Name, 4*MaxNameLen)
	ua := models.TruncUTF8(r.UserAgent, models.MaxUserAgentLen)
	// Read once, here: the audit rows name the user only when there is one,
	// and the password check needs them. openSession goes on only while the
	// row is still as read.
	var u *User
	// Any name that fits a users row is looked up, not only one today's
	// ValidUserName accepts: a user made under an earlier, looser rule keeps
	// signing in. No row holds a NUL, which PostgreSQL cannot even compare.
	if n := utf8.RuneCountInString(r.Name); n > 0 && n <= MaxNameLen && utf8.ValidString(r.Name) && !strings.ContainsRune(r.Name, 0) {
		found, err := s.UserByName(ctx, r.Name)
		switch {
		case err == nil:
			u = found
		case !errors.Is(err, models.ErrNotFound):
			return "", nil, fmt.Errorf("login: %w", err)
		}
	}
	shown := unknownName
	if u != nil {
		shown = typed
	}
	audit := func(outcome, detail string) *models.AuditEntry {
		return &models.AuditEntry{Actor: shown, Action: "login", Target: userTarget(shown), Outcome: outcome, Detail: detail,
			IP: r.IP, UserAgent: ua}
	}
	if err := s.reserveLogin(ctx, typed, r.IP, audit); err != nil {
		return "", nil, fmt.Errorf("login %s: %w", typed, err)
	}

	why, err := s.checkPassword(ctx, u, r.Password)
	if err != nil {
		return "", nil, fmt.Errorf("login %s: %w", typed, err)
	}
	if why == "" {
		token, err := s.openSession(ctx, u, r, audit("ok", ""))
		if err == nil {
			return token, u, nil
		}
		if !errors.Is(err, errLoginMoved) {
			return "", nil, fmt.Errorf("login %s: %w", typed, err)
		}
		why = "user changed during login"
	}
	err = s.write(ctx, func(tx *gorm.DB) error { return models.AuditIn(tx, audit("failed", why), s.db.Now()) })
	if err != nil {
		return "", nil, fmt.Errorf("login %s: %w", typed, err)
	}
	return "", nil, fmt.Errorf("login %s: %w", typed, ErrBadCredentials)
}

// unknownName stands in the audit log for a name that is no user's: people
// type their password into the name field, and the log is widely read. Not
// even a hash of it: an unsalted one could be checked against a password
// list offline. (The throttle still counts per name as typed.)
const unknownName = "unknown"

// checkPassword verifies pw for the user u (nil: no such user), outside
// any transaction. why is "" when the user may sign in, and otherwise says
// why not, for the audit row. Every way of failing takes one hash's time
// but an overlong password, which no account can have.
func (s *Store) checkPassword(ctx context.Context, u *User, pw string) (why string, err error) {
	switch {
	case len(pw) > MaxPasswordLen:
		return "password too long", nil
	case u == nil:
		if _, err := s.verifyPassword(ctx, dummyHash, pw); err != nil && ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "no such user", nil
	}
	ok, err := s.verifyPassword(ctx, u.PasswordHash, pw)
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		s.log.Error("login: stored password hash unreadable", slog.String("user", u.Name), slog.Any("err", err))
		return "stored password hash unreadable", nil
	case u.Disabled:
		return "user disabled", nil
	case !ok:
		return "wrong password", nil
	}
	return "", nil
}

// openSession settles a successful login in one transaction: the name's
// failures at the address go (see settleLogin), the session is created and last_login_at set, but
// only while the user is still enabled with the password just checked.
func (s *Store) openSession(ctx context.Context, u *User, r LoginRequest, a *models.AuditEntry) (string, error) {
	p := r.Policy.WithDefaults()
	token := randomSecret(32)
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.db.Now()
		if err := settleLogin(tx, u.Name, r.IP, now, s.throttle); err != nil {
			return err
		}
		res := tx.Exec(`UPDATE users SET last_login_at = ? WHERE id = ? AND disabled = ? AND password_hash = ?`,
			now, u.ID, false, u.PasswordHash)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return errLoginMoved
		}
		if err := tx.Where("id = ?", u.ID).Take(u).Error; err != nil {
			return err
		}
		sess := Session{TokenHash: hashToken(token), UserID: u.ID, Role: u.Role, CreatedAt: now, LastSeenAt: now,
			ExpiresAt: now.Add(p.Absolute), IP: r.IP, UserAgent: a.UserAgent}
		if err := tx.Create(&sess).Error; err != nil {
			return err
		}
		a.Role = string(u.Role)
		return models.AuditIn(tx, a, now)
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// renewGrace is how long a session's old token keeps working after a role
// change renewed it (with the new role), for requests racing the renewal.
const renewGrace = time.Minute

// SessionUser authenticates a session token. A missing or expired session
// (idle: no request for Idle; absolute: past its end) or one whose user is
// disabled is ErrNoSession, and an expired row is deleted. last_seen_at is
// written only when it is older than p.touchAfter(). When the user's role
// changed since the session was issued, the session is renewed: renewed is
// the new token (same end), to be set as the cookie, and "" otherwise. The
// old token takes the new role too and ends within renewGrace, so that a
// request racing the renewal with it (a second tab) is not signed out.
func (s *Store) SessionUser(ctx context.Context, token string, p SessionPolicy) (*User, *Session, string, error) {
	p = p.WithDefaults()
	if token == "" || len(token) > 128 {
		return nil, nil, "", ErrNoSession
	}
	hash := hashToken(token)
	var sess Session
	err := s.db.R.WithContext(ctx).Where("token_hash = ?", hash).Take(&sess).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, "", ErrNoSession
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("read session: %w", err)
	}
	now := s.db.Now()
	u, err := s.UserByID(ctx, sess.UserID)
	if err != nil && !errors.Is(err, models.ErrNotFound) {
		return nil, nil, "", err
	}
	if u == nil || u.Disabled || !sess.LastSeenAt.Add(p.Idle).After(now) || !sess.ExpiresAt.After(now) {
		if err := s.db.W.WithContext(ctx).Exec(`DELETE FROM sessions WHERE token_hash = ?`, hash).Error; err != nil {
			return nil, nil, "", fmt.Errorf("delete ended session: %w", err)
		}
		return nil, nil, "", ErrNoSession
	}
	if sess.Role != u.Role {
		renewed := randomSecret(32)
		next := sess
		next.TokenHash, next.Role, next.LastSeenAt = hashToken(renewed), u.Role, now
		old := sess
		old.Role = u.Role
		if grace := now.Add(renewGrace); grace.Before(old.ExpiresAt) {
			old.ExpiresAt = grace
		}
		won := false
		err := s.write(ctx, func(tx *gorm.DB) error {
			// Exactly one request renews a session: the one whose update
			// still finds the old role.
			res := tx.Exec(`UPDATE sessions SET role = ?, expires_at = ? WHERE token_hash = ? AND role = ?`,
				old.Role, old.ExpiresAt, hash, sess.Role)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				// Renewed by another request, or ended (logout, disable,
				// reset) since it was read: only the first goes on.
				var n int64
				if err := tx.Raw(`SELECT COUNT(*) FROM sessions WHERE token_hash = ?`, hash).Scan(&n).Error; err != nil {
					return err
				}
				if n == 0 {
					return ErrNoSession
				}
				return nil
			}
			won = true
			return tx.Create(&next).Error
		})
		if err != nil {
			return nil, nil, "", fmt.Errorf("renew session: %w", err)
		}
		if !won {
			// Another request renewed it a moment ago: this one goes
			// through with the new role and leaves the cookie alone.
			return u, &old, "", nil
		}
		return u, &next, renewed, nil
	}
	if every := p.touchAfter(); now.Sub(sess.LastSeenAt) > every {
		err := s.db.W.WithContext(ctx).Exec(`UPDATE sessions SET last_seen_at = ? WHERE token_hash = ? AND last_seen_at < ?`,
			now, hash, now.Add(-every)).Error
		if err != nil {
			return nil, nil, "", fmt.Errorf("touch session: %w", err)
		}
		sess.LastSeenAt = now
	}
	return u, &sess, "", nil
}

// Logout ends the session of token. An unknown token is not an error and
// is not audited: the session had ended already.
func (s *Store) Logout(ctx context.Context, token, actor string) error {
	if token == "" {
		return nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		var sess Session
		err := tx.Raw(`SELECT * FROM sessions WHERE token_hash = ?`+s.db.ForUpdate(), hashToken(token)).Scan(&sess).Error
		if err != nil || sess.TokenHash == "" {
			return err
		}
		res := tx.Exec(`DELETE FROM sessions WHERE token_hash = ?`, sess.TokenHash)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		var name string
		if err := tx.Raw(`SELECT name FROM users WHERE id = ?`, sess.UserID).Scan(&name).Error; err != nil {
			return err
		}
		return models.AuditIn(tx, &models.AuditEntry{Actor: actor, Action: "logout", Target: userTarget(name), Outcome: "ok"}, s.db.Now())
	})
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

// PruneSessions deletes the sessions past their absolute end at now, and
// the throttle rows whose window and lock are both over, and returns how
// many rows of both it deleted. Sessions that only went idle stay until
// their absolute end (the idle limit is the caller's policy); SessionUser
// refuses and deletes them meanwhile.
func (s *Store) PruneSessions(ctx context.Context, now time.Time) (int64, error) {
	now = now.UTC()
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`DELETE FROM sessions WHERE expires_at <= ?`, now)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		res = tx.Exec(`DELETE FROM login_throttle WHERE window_start <= ? AND (locked_until IS NULL OR locked_until <= ?)`,
			now.Add(-s.throttle.Window), now)
		if res.Error != nil {
			return res.Error
		}
		n += res.RowsAffected
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	return n, nil
}

// UserSessions counts a user's sessions not past their absolute end.
func (s *Store) UserSessions(ctx context.Context, userID int64) (int64, error) {
	var n int64
	err := s.db.R.WithContext(ctx).Model(&Session{}).Where("user_id = ? AND expires_at > ?", userID, s.db.Now()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("sessions of user %d: %w", userID, err)
	}
	return n, nil
}
