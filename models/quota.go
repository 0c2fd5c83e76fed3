package models

// quotaResource is an activity's places: available → locked → used, with a
// per-activity release delay, as inventory's per SKU.
func quotaResource(s *Store) *counter {
	return &counter{
		maxQty: MaxQty,
		s:      s, typ: ResQuota, table: "activity_quotas", ledger: "quota_flows", key: "activity_id",
		avail: "available", held: "locked", spent: "used",
		short: ErrQuotaExhausted, missing: ErrResourceNotFound, delaySeconds: "release_delay_s",
	}
}
