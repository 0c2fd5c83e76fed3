package auth

import (
	"context"
	"encoding/base64"
	"fmt"
)

// SiteSecret is the 32-byte secret called name that every instance on this
// database shares. The first call anywhere makes it; a concurrent first
// call on another instance loses the insert and reads the winner's. Once it
// exists it is only read, so a busy writer never delays a page that needs it.
func (s *Store) SiteSecret(ctx context.Context, name string) ([]byte, error) {
	value, err := s.readSiteSecret(ctx, name)
	if err == nil && value == "" {
		err = s.db.W.WithContext(ctx).Exec(`INSERT INTO site_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
			name, randomSecret(32)).Error
		if err == nil {
			value, err = s.readSiteSecret(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("site secret %s: %w", name, err)
	}
	key, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("site secret %s: stored value is not 32 bytes of base64url", name)
	}
	return key, nil
}

// readSiteSecret reads a secret through the writer's connection, which on
// SQLite sees its own insert at once; "" when there is none yet.
func (s *Store) readSiteSecret(ctx context.Context, name string) (string, error) {
	var values []string
	if err := s.db.W.WithContext(ctx).Raw(`SELECT value FROM site_secrets WHERE name = ?`, name).Scan(&values).Error; err != nil {
		return "", err
	}
	if len(values) == 0 {
		return "", nil
	}
	return values[0], nil
}
