package models

import (
	"context"
	"encoding/base64"
	"fmt"
)

// SiteSecret is the 32-byte secret called name that every instance on this
// database shares. The first call anywhere makes it; a concurrent first
// call on another instance loses the insert and reads the winner's.
func (s *Store) SiteSecret(ctx context.Context, name string) ([]byte, error) {
	err := s.W.WithContext(ctx).Exec(`INSERT INTO site_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
		name, randomSecret(32)).Error
	if err != nil {
		return nil, fmt.Errorf("site secret %s: %w", name, err)
	}
	var value string
	if err := s.W.WithContext(ctx).Raw(`SELECT value FROM site_secrets WHERE name = ?`, name).Scan(&value).Error; err != nil {
		return nil, fmt.Errorf("site secret %s: %w", name, err)
	}
	key, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("site secret %s: stored value is not 32 bytes of base64url", name)
	}
	return key, nil
}
