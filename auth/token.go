package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"unhold/models"
)

// API tokens let scripts call the API with a role of their own. The secret
// is shown once, at creation; the database keeps its SHA-256 and the first
// characters, to tell tokens apart.

// APITokenPrefix starts every API token secret, so a leaked one is easy to
// recognise (secret scanners, logs).
const APITokenPrefix = "uh_"

// apiTokenLen is the length of a secret: the prefix and 32 random bytes in
// unpadded base64url.
const apiTokenLen = len(APITokenPrefix) + 43

// APIToken is one API token.
type APIToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Role       Role       `json:"role"`
	TokenHash  string     `json:"-"`
	Prefix     string     `json:"prefix"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// TableName is the API token table.
func (APIToken) TableName() string { return "api_tokens" }

func tokenTarget(name string) string { return "token:" + name }

// CreateAPIToken issues a token and returns it with its secret, which is
// not stored and cannot be read again. ErrTokenExists when a live token has
// the name; names follow ValidUserName. ErrNoSession when actor is a user
// disabled meanwhile: a disabled user never has a live token.
func (s *Store) CreateAPIToken(ctx context.Context, name string, role Role, actor string) (*APIToken, string, error) {
	if err := ValidUserName(name); err != nil {
		return nil, "", err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return nil, "", err
	}
	secret := APITokenPrefix + randomSecret(32)
	now := s.db.Now()
	t := &APIToken{Name: name, Role: role, TokenHash: hashToken(secret), Prefix: secret[len(APITokenPrefix) : len(APITokenPrefix)+8],
		CreatedBy: actor, CreatedAt: now}
	err := s.write(ctx, func(tx *gorm.DB) error {
		// The creator's request was authenticated before this transaction;
		// a disable that committed since revoked their tokens and must not
		// miss this one. Locking the user's row waits for a disable in
		// progress on PostgreSQL (SQLite has one writer anyway).
		var creator []User
		err := tx.Raw(`SELECT * FROM users WHERE name = ?`+s.db.ForUpdate(), actor).Scan(&creator).Error
		if err != nil {
			return err
		}
		if len(creator) == 1 && creator[0].Disabled {
			return ErrNoSession
		}
		if err := tx.Create(t).Error; err != nil {
			return err
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: "token_create", Target: tokenTarget(name), Outcome: "ok",
			Detail: string(role) + ", " + t.Prefix + "…", CreatedAt: now}).Error
	})
	if models.IsUniqueViolation(err) {
		return nil, "", fmt.Errorf("create api token %s: %w", name, ErrTokenExists)
	}
	if err != nil {
		return nil, "", fmt.Errorf("create api token %s: %w", name, err)
	}
	return t, secret, nil
}

// APITokens reads every token: live ones first, then revoked ones, each by
// name.
func (s *Store) APITokens(ctx context.Context) ([]APIToken, error) {
	var out []APIToken
	err := s.db.R.WithContext(ctx).Order("revoked_at IS NOT NULL").Order("name").Order("id DESC").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("api tokens: %w", err)
	}
	return out, nil
}

// RevokeAPIToken revokes a live token; models.ErrNotFound when there is no
// live token with the id.
func (s *Store) RevokeAPIToken(ctx context.Context, id int64, actor string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		var t APIToken
		q := tx.Raw(`SELECT * FROM api_tokens WHERE id = ? AND revoked_at IS NULL`+s.db.ForUpdate(), id)
		if err := models.Take(q, &t, fmt.Sprintf("live api token %d", id)); err != nil {
			return err
		}
		now := s.db.Now()
		if err := tx.Exec(`UPDATE api_tokens SET revoked_at = ? WHERE id = ?`, now, id).Error; err != nil {
			return err
		}
		return tx.Create(&models.AuditEntry{Actor: actor, Action: "token_revoke", Target: tokenTarget(t.Name), Outcome: "ok",
			Detail: t.Prefix + "…", CreatedAt: now}).Error
	})
	if err != nil {
		return fmt.Errorf("revoke api token %d: %w", id, err)
	}
	return nil
}

// revokeTokensOf revokes, in tx, the live tokens the user named creator
// made (api_tokens.created_by holds the audit actor, which for a user is
// their name; names are unique, never renamed, and no user name has the
// ':' of other actors), with an audit row each, and returns how many.
func (s *Store) revokeTokensOf(tx *gorm.DB, creator, actor string, now time.Time) (int64, error) {
	var live []APIToken
	err := tx.Raw(`SELECT * FROM api_tokens WHERE created_by = ? AND revoked_at IS NULL ORDER BY id`+s.db.ForUpdate(), creator).
		Scan(&live).Error
	if err != nil {
		return 0, err
	}
	for _, t := range live {
		res := tx.Exec(`UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, now, t.ID)
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected != 1 {
			return 0, fmt.Errorf("api token %d changed while its creator was disabled", t.ID)
		}
		err := tx.Create(&models.AuditEntry{Actor: actor, Action: "token_revoke", Target: tokenTarget(t.Name), Outcome: "ok",
			Detail: t.Prefix + "…; its creator " + userTarget(creator) + " was disabled", CreatedAt: now}).Error
		if err != nil {
			return 0, err
		}
	}
	return int64(len(live)), nil
}

// LiveTokensByCreator counts the live API tokens by who created them, so
// the users page can say what disabling a user will revoke.
func (s *Store) LiveTokensByCreator(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		CreatedBy string
		N         int64
	}
	err := s.db.R.WithContext(ctx).Raw(`SELECT created_by, COUNT(*) AS n FROM api_tokens WHERE revoked_at IS NULL GROUP BY created_by`).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("live api tokens by creator: %w", err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.CreatedBy] = r.N
	}
	return out, nil
}

// AuthenticateToken finds the live token of a secret; ErrNoSession for an
// unknown, revoked or malformed one. last_used_at is written only when it
// is more than a minute old.
func (s *Store) AuthenticateToken(ctx context.Context, secret string) (*APIToken, error) {
	if len(secret) != apiTokenLen || !strings.HasPrefix(secret, APITokenPrefix) {
		return nil, ErrNoSession
	}
	var t APIToken
	err := s.db.R.WithContext(ctx).Where("token_hash = ? AND revoked_at IS NULL", hashToken(secret)).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("read api token: %w", err)
	}
	now := s.db.Now()
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > sessionTouchEvery {
		err := s.db.W.WithContext(ctx).Exec(`UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
			now, t.ID, now.Add(-sessionTouchEvery)).Error
		if err != nil {
			return nil, fmt.Errorf("touch api token %s: %w", t.Name, err)
		}
		t.LastUsedAt = &now
	}
	return &t, nil
}

// TokenActors names, as audit actors ("token:<name>"), every API token the
// user named creator made, revoked ones too: a person acts under each of
// them, and a second approval must come from another person (a request
// made with a token since revoked stays theirs).
func (s *Store) TokenActors(ctx context.Context, creator string) ([]string, error) {
	var names []string
	err := s.db.R.WithContext(ctx).Raw(`SELECT DISTINCT name FROM api_tokens WHERE created_by = ? ORDER BY name`, creator).
		Scan(&names).Error
	if err != nil {
		return nil, fmt.Errorf("api tokens of %s: %w", creator, err)
	}
	for i, n := range names {
		names[i] = tokenTarget(n)
	}
	return names, nil
}
