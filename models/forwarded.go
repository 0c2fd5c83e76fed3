package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ForwardedSighting is the last request that carried a forwarding header
// while the server trusted no proxy: when, from which peer (the proxy, as
// far as the server can tell) and which header.
type ForwardedSighting struct {
	ID         int64 `gorm:"primaryKey"`
	LastSeenAt time.Time
	Peer       string
	Header     string
}

// TableName is the sightings' table: one row.
func (ForwardedSighting) TableName() string { return "forwarded_sightings" }

// NoteForwarded records, now, that a request from peer carried header
// while no proxy was trusted.
func (s *Store) NoteForwarded(ctx context.Context, peer, header string) error {
	row := ForwardedSighting{ID: 1, LastSeenAt: s.Now(), Peer: clip(peer, maxAuditShortLen), Header: clip(header, maxAuditShortLen)}
	if err := s.W.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("note forwarded request: %w", err)
	}
	return nil
}

// ForwardedSince is the last sighting if it is at or after since, or nil.
func (s *Store) ForwardedSince(ctx context.Context, since time.Time) (*ForwardedSighting, error) {
	var row ForwardedSighting
	err := s.R.WithContext(ctx).Where("id = 1 AND last_seen_at >= ?", since.UTC()).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("forwarded sightings: %w", err)
	}
	return &row, nil
}
