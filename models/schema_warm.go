package models

import (
	"fmt"

	"gorm.io/gorm"
)

// warmModels are the models the store writes and reads through gorm.
var warmModels = []any{
	&Order{}, &Hold{}, &ReleaseTask{}, &TaskAttempt{}, &Flow{}, &Event{}, &AuditEntry{},
	&SKU{}, &AccountAsset{}, &Coupon{}, &Activity{}, &Slot{}, &Note{},
	&JobLock{}, &JobRun{}, &ApprovalRequest{}, &DiffTicket{}, &ReconCoverage{}, &uncheckedStreak{},
	&ForwardedSighting{}, &WebhookDelivery{},
}

// warmSchemas parses the gorm schema of each of warmModels once, before
// the store is used. gorm parses a model on its first use and caches it;
// two first uses of one model at once (two PostgreSQL writers placing
// their first orders) were caught by the race detector inside that cache.
// W and R have a cache each.
func warmSchemas(db *gorm.DB) error {
	for _, m := range warmModels {
		if err := (&gorm.Statement{DB: db}).Parse(m); err != nil {
			return fmt.Errorf("parse the model %T: %w", m, err)
		}
	}
	return nil
}
