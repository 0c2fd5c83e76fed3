package models

// declaredCounter is a counter type that a shop declares in its resources
// file (docs/resources-file.md) instead of writing code for it:
// available → locked → spent. Every declared counter type keeps its rows in
// declared_counters and its ledger in declared_counter_flows, each type's
// narrowed to its own by resource_type, as balance and points share
// accounts by asset; the key is the biz_key its holds name.
//
// A LOCK that finds too little is INSUFFICIENT_STOCK, with the type and the
// key in its message: declared types share the error codes that the API
// and the dashboard already know, so that declaring one adds none.
func declaredCounter(s *Store, t ResourceType) *counter {
	return &counter{
		s: s, typ: t, table: "declared_counters", ledger: "declared_counter_flows", key: "biz_key",
		fixedCol: "resource_type", fixedVal: string(t),
		avail: "available", held: "locked", spent: "spent",
		short: ErrInsufficientStock, missing: ErrResourceNotFound,
	}
}
