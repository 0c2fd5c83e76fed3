package models

import "net/url"

// inventoryResource is stock: available → locked → sold, with a per-SKU
// release delay for flash-sale SKUs.
func inventoryResource(s *Store) *counter {
	return &counter{
		maxQty: MaxQty,
		s:      s, typ: ResInventory, table: "inventory", ledger: "inventory_flows", key: "sku_id",
		avail: "available", held: "locked", spent: "sold",
		short: ErrInsufficientStock, missing: ErrResourceNotFound, delaySeconds: "release_delay_s",
		page: func(key string) string { return "/inventory/" + url.PathEscape(key) },
	}
}
