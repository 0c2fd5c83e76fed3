package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"gorm.io/gorm"

	"unhold/models"
)

// Accounts: users with a role and an argon2id password. Every change is
// one write transaction with its audit row; passwords are hashed before
// the transaction starts, because a hash takes tens of milliseconds and
// SQLite has one writer.

// Role is what a user or an API token may do.
type Role string

// Roles, each allowed everything the one before it is.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// Roles lists every role, least allowed first.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// ParseRole accepts a role as stored.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() > 0 {
		return r, nil
	}
	return "", fmt.Errorf("%w: role must be viewer, operator or admin, not %q", models.ErrInvalid, s)
}

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Allows tells whether r may do what needs the role need: admin ⊇ operator
// ⊇ viewer. An empty or unknown role allows nothing, and nothing allows an
// unknown need.
func (r Role) Allows(need Role) bool {
	return r.rank() > 0 && need.rank() > 0 && r.rank() >= need.rank()
}

// User is one account.
type User struct {
	ID                int64      `json:"id"`
	Name              string     `json:"name"`
	Role              Role       `json:"role"`
	PasswordHash      string     `json:"-"`
	Disabled          bool       `json:"disabled"`
	LastLoginAt       *time.Time `json:"last_login_at,omitempty"`
	PasswordChangedAt time.Time  `json:"password_changed_at"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// TableName is the account table.
func (User) TableName() string { return "users" }

// MaxNameLen is the longest user or token name, in characters.
const MaxNameLen = 64

// reservedNames are actors the code writes into ledgers and the audit log
// for what is not a user (compared without letter case); the prefixed ones
// ("token:erp", "worker:w1", "cli:host", "system:timeout",
// "anonymous:10.0.0.1", "user:u1") are kept out by refusing ':'. "mine"
// and "nobody" are the owner filter's words (models.OwnerMine,
// OwnerNobody): a user so named could not be filtered by name.
var reservedNames = []string{"unknown", "system", "anonymous", "channel", "cron", "demo", "worker", "token", "cli", "user",
	"mine", "nobody"}

// scriptSets are the scripts one name may mix: a name's letters are of one
// script, but Japanese writes Han with kana, Korean Han with Hangul, and
// Chinese Han with Bopomofo, and each of these may carry Latin (the
// "highly restrictive" level of Unicode TS #39). Latin with Cyrillic or
// Greek, whose letters look alike, is never one name.
var scriptSets = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Hangul"},
	{"Latin", "Han", "Bopomofo"},
}

// ValidUserName accepts a user (or API token) name: 1 to 64 characters of
// valid UTF-8 and
//   - no control, format (zero-width, bidirectional), other invisible,
//     private-use or unassigned characters, and no space but U+0020, never
//     leading or trailing: what cannot be seen could make one name read as
//     another in the users list and the audit log;
//   - letters and digits of one script (see scriptSets); punctuation,
//     symbols, ASCII digits and combining marks go with any script;
//   - composed (Unicode NFC), no letter or digit in a compatibility form
//     (one NFKC changes), and no two spaces in a row: a decomposed "é", a
//     fullwidth or mathematical "ａ" or "𝖺", a ligature, or a double space
//     (which HTML shows as one) would make a second name that reads as the
//     first. Fullwidth punctuation, as Chinese is typed, stays;
//   - no ':' and none of reservedNames, so a user never reads as an actor
//     that is not a user.
//
// Anything else, quotes and angle brackets included, is a name, stored and
// shown verbatim.
func ValidUserName(name string) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > MaxNameLen {
		return models.Invalid("name must be 1 to %d characters", MaxNameLen)
	}
	if !utf8.ValidString(name) {
		return models.Invalid("name must be valid UTF-8")
	}
	scripts := map[string]bool{}
	for _, c := range name {
		switch {
		case unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c):
			return models.Invalid("name must not contain control characters")
		case invisible(c):
			return models.Invalid("name must not contain invisible characters (U+%04X)", c)
		case c == ':':
			return models.Invalid("name must not contain ':'")
		}
		if s := scriptOf(c); s != "" {
			scripts[s] = true
		}
	}
	if !oneScript(scripts) {
		return models.Invalid("name must not mix scripts (%s): its letters must be of one script", strings.Join(slices.Sorted(maps.Keys(scripts)), ", "))
	}
	if name[0] == ' ' || name[len(name)-1] == ' ' {
		return models.Invalid("name must not start or end with a space")
	}
	if strings.Contains(name, "  ") {
		return models.Invalid("name must not contain two spaces in a row")
	}
	if !norm.NFC.IsNormalString(name) {
		return models.Invalid("name must be written with composed characters, as %q", norm.NFC.String(name))
	}
	for _, c := range name {
		if plain := norm.NFKC.String(string(c)); unicode.In(c, unicode.L, unicode.N) && plain != string(c) {
			return models.Invalid("name must not contain %q (U+%04X), a form of %q", c, c, plain)
		}
	}
	for _, r := range reservedNames {
		if strings.EqualFold(name, r) {
			return models.Invalid("name %q is reserved for what the logs record", name)
		}
	}
	return nil
}

// invisible tells whether c shows as nothing, or as a space other than the
// plain one: format characters (zero-width, joiners, bidi controls, the
// byte order mark), the other default-ignorable code points (Hangul
// fillers, variation selectors), other spaces and separators, private-use,
// surrogate and unassigned code points.
func invisible(c rune) bool {
	switch {
	case c == ' ':
		return false
	case unicode.In(c, unicode.Cf, unicode.Co, unicode.Cs, unicode.Z, unicode.Other_Default_Ignorable_Code_Point,
		unicode.Variation_Selector):
		return true
	}
	return !unicode.In(c, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// scriptOf is the script of a letter or digit c, "" for a character that
// goes with any script (Common and Inherited: punctuation, symbols, ASCII
// digits, combining marks).
func scriptOf(c rune) string {
	if unicode.In(c, unicode.Common, unicode.Inherited) {
		return ""
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, c) {
			return name
		}
	}
	return ""
}

// oneScript tells whether scripts are one script, or within one of
// scriptSets.
func oneScript(scripts map[string]bool) bool {
	if len(scripts) <= 1 {
		return true
	}
	for _, set := range scriptSets {
		if func() bool {
			for s := range scripts {
				if !slices.Contains(set, s) {
					return false
				}
			}
			return true
		}() {
			return true
		}
	}
	return false
}

func userTarget(name string) string { return "user:" + name }

// CreateUser adds an account; ErrUserExists when the name is taken.
func (s *Store) CreateUser(ctx context.Context, name string, role Role, password, actor string) (*User, error) {
	if err := ValidUserName(name); err != nil {
		return nil, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, err
	}
	if err := ValidPassword(password); err != nil {
		return nil, err
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return nil, fmt.Errorf("create user %s: %w", name, err)
	}
	now := s.db.Now()
	u := &User{Name: name, Role: role, PasswordHash: hash, PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
	err = s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(u).Error; err != nil {
			return err
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: "user_create", Target: userTarget(name), Outcome: "ok",
			Detail: string(role), CreatedAt: now}).Error
	})
	if models.IsUniqueViolation(err) {
		return nil, fmt.Errorf("create user %s: %w", name, ErrUserExists)
	}
	if err != nil {
		return nil, fmt.Errorf("create user %s: %w", name, err)
	}
	return u, nil
}

// Users reads every account, by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	var out []User
	if err := s.db.R.WithContext(ctx).Order("name").Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return out, nil
}

// UserByID reads one account; models.ErrNotFound when there is none.
func (s *Store) UserByID(ctx context.Context, id int64) (*User, error) {
	var out User
	if err := models.Take(s.db.R.WithContext(ctx).Where("id = ?", id), &out, fmt.Sprintf("user %d", id)); err != nil {
		return nil, err
	}
	return &out, nil
}

// UserByName reads one account by its exact name; models.ErrNotFound when
// there is none.
func (s *Store) UserByName(ctx context.Context, name string) (*User, error) {
	var out User
	if err := models.Take(s.db.R.WithContext(ctx).Where("name = ?", name), &out, "user "+name); err != nil {
		return nil, err
	}
	return &out, nil
}

// lockUserAndAdmins reads the user id and every enabled admin, locking the
// rows on PostgreSQL in id order (so two admins demoting each other wait
// instead of deadlocking), and returns the user and how many enabled
// admins other than the user there are.
func (s *Store) lockUserAndAdmins(tx *gorm.DB, id int64) (*User, int, error) {
	var rows []User
	err := tx.Raw(`SELECT * FROM users WHERE id = ? OR (role = ? AND disabled = ?) ORDER BY id`+s.db.ForUpdate(),
		id, RoleAdmin, false).Scan(&rows).Error
	if err != nil {
		return nil, 0, err
	}
	var u *User
	others := 0
	for i := range rows {
		switch {
		case rows[i].ID == id:
			u = &rows[i]
		case rows[i].Role == RoleAdmin && !rows[i].Disabled:
			others++
		}
	}
	if u == nil {
		return nil, 0, fmt.Errorf("%w: user %d", models.ErrNotFound, id)
	}
	return u, others, nil
}

// SetUserRole changes a user's role. The last enabled admin cannot be
// demoted. The user's sessions carry on and are renewed with the new role
// at their next request.
func (s *Store) SetUserRole(ctx context.Context, id int64, role Role, actor string) error {
	if _, err := ParseRole(string(role)); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		u, others, err := s.lockUserAndAdmins(tx, id)
		if err != nil {
			return err
		}
		if u.Role == role {
			return nil
		}
		if u.Role == RoleAdmin && !u.Disabled && others == 0 {
			return ErrLastAdmin
		}
		now := s.db.Now()
		if err := tx.Exec(`UPDATE users SET role = ?, updated_at = ? WHERE id = ?`, role, now, id).Error; err != nil {
			return err
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: "user_role", Target: userTarget(u.Name), Outcome: "ok",
			Detail: string(u.Role) + "→" + string(role), CreatedAt: now}).Error
	})
	if err != nil {
		return fmt.Errorf("set role of user %d: %w", id, err)
	}
	return nil
}

// SetUserDisabled disables or enables a user. Disabling ends every session
// of the user and revokes every live API token they created, in the same
// transaction, each token with its own audit row: a leaver's scripts stop
// with the leaver. revoked is how many tokens that was. The last enabled
// admin cannot be disabled.
func (s *Store) SetUserDisabled(ctx context.Context, id int64, disabled bool, actor string) (revoked int64, err error) {
	err = s.write(ctx, func(tx *gorm.DB) error {
		revoked = 0
		u, others, err := s.lockUserAndAdmins(tx, id)
		if err != nil {
			return err
		}
		if u.Disabled == disabled {
			return nil
		}
		if disabled && u.Role == RoleAdmin && others == 0 {
			return ErrLastAdmin
		}
		now := s.db.Now()
		if err := tx.Exec(`UPDATE users SET disabled = ?, updated_at = ? WHERE id = ?`, disabled, now, id).Error; err != nil {
			return err
		}
		action, detail := "user_enable", ""
		if disabled {
			res := tx.Exec(`DELETE FROM sessions WHERE user_id = ?`, id)
			if res.Error != nil {
				return res.Error
			}
			action, detail = "user_disable", fmt.Sprintf("%d session(s) ended", res.RowsAffected)
			if revoked, err = s.revokeTokensOf(tx, u.Name, actor, now); err != nil {
				return err
			}
			if revoked > 0 {
				detail += fmt.Sprintf("; %d API token(s) revoked", revoked)
			}
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: action, Target: userTarget(u.Name), Outcome: "ok",
			Detail: detail, CreatedAt: now}).Error
	})
	if err != nil {
		return 0, fmt.Errorf("set user %d disabled=%t: %w", id, disabled, err)
	}
	return revoked, nil
}

// ResetPassword sets a user's password, as an admin does for someone who
// lost theirs, ends every session of the user and lifts a login lock on
// their name, at every address.
func (s *Store) ResetPassword(ctx context.Context, id int64, password, actor string) error {
	if err := ValidPassword(password); err != nil {
		return err
	}
	hash, err := s.hashPassword(ctx, password)
	if err != nil {
		return fmt.Errorf("reset password of user %d: %w", id, err)
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		var u User
		if err := models.Take(tx.Raw(`SELECT * FROM users WHERE id = ?`+s.db.ForUpdate(), id), &u, fmt.Sprintf("user %d", id)); err != nil {
			return err
		}
		now := s.db.Now()
		err := tx.Exec(`UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?`,
			hash, now, now, id).Error
		if err != nil {
			return err
		}
		if err := liftLocks(tx, u.Name); err != nil {
			return err
		}
		res := tx.Exec(`DELETE FROM sessions WHERE user_id = ?`, id)
		if res.Error != nil {
			return res.Error
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: "user_reset_password", Target: userTarget(u.Name), Outcome: "ok",
			Detail: fmt.Sprintf("%d session(s) ended", res.RowsAffected), CreatedAt: now}).Error
	})
	if err != nil {
		return fmt.Errorf("reset password of user %d: %w", id, err)
	}
	return nil
}

// errPasswordMoved means the password changed between its check and the
// write that relies on it.
var errPasswordMoved = errors.New("password changed meanwhile")

// ChangePassword is a user changing their own password: oldPW must be the
// current one (ErrBadCredentials otherwise, audited as refused). Guesses at
// it count against the same throttle as logins, so a stolen session cannot
// try passwords without limit. Every other session of the user ends; the
// one whose token is keepSessionToken (the session making the change)
// stays.
func (s *Store) ChangePassword(ctx context.Context, userID int64, oldPW, newPW, keepSessionToken string) error {
	if err := ValidPassword(newPW); err != nil {
		return err
	}
	u, err := s.UserByID(ctx, userID)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	audit := func(outcome, detail string) *models.AuditEntry {
		return &models.AuditEntry{Actor: u.Name, Action: "password_change", Target: userTarget(u.Name), Outcome: outcome, Detail: detail}
	}
	ip := models.RequestMetaFrom(ctx).IP
	if err := s.reserveLogin(ctx, u.Name, ip, audit); err != nil {
		return fmt.Errorf("change password of %s: %w", u.Name, err)
	}
	ok := false
	if len(oldPW) <= MaxPasswordLen && !u.Disabled {
		if ok, err = s.verifyPassword(ctx, u.PasswordHash, oldPW); err != nil {
			return fmt.Errorf("change password of %s: %w", u.Name, err)
		}
	}
	if !ok {
		err := s.write(ctx, func(tx *gorm.DB) error {
			return models.AuditIn(tx, audit("refused", "wrong current password"), s.db.Now())
		})
		if err != nil {
			return fmt.Errorf("change password of %s: %w", u.Name, err)
		}
		return fmt.Errorf("change password of %s: %w", u.Name, ErrBadCredentials)
	}
	hash, err := s.hashPassword(ctx, newPW)
	if err != nil {
		return fmt.Errorf("change password of %s: %w", u.Name, err)
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.db.Now()
		// Only over the hash that was checked: a reset or another change in
		// between wins, and this one has to be made again.
		res := tx.Exec(`UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ?
			WHERE id = ? AND password_hash = ? AND disabled = ?`, hash, now, now, userID, u.PasswordHash, false)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return errPasswordMoved
		}
		res = tx.Exec(`DELETE FROM sessions WHERE user_id = ? AND token_hash <> ?`, userID, hashToken(keepSessionToken))
		if res.Error != nil {
			return res.Error
		}
		ended := res.RowsAffected
		if err := settleLogin(tx, u.Name, ip, now, s.throttle); err != nil {
			return err
		}
		return models.AuditIn(tx, audit("ok", fmt.Sprintf("%d other session(s) ended", ended)), now)
	})
	if errors.Is(err, errPasswordMoved) {
		return fmt.Errorf("change password of %s: %w", u.Name, ErrBadCredentials)
	}
	if err != nil {
		return fmt.Errorf("change password of %s: %w", u.Name, err)
	}
	return nil
}

// randomSecret is n random bytes, base64url without padding.
func randomSecret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead since Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is how session and API tokens are stored: SHA-256, hex. The
// tokens are 256 random bits, so no salt or slow hash is needed.
func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
