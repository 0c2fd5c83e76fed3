package models

// inventoryResource is stock: available → locked → sold, with a per-SKU
// release delay for flash-sale SKUs.
func inventoryResource(s *Store) *counter {
	return &counter{
		s: s, typ: ResInventory, table: "inventory", ledger: "inventory_flows", key: "sku_id",
		avail: "available", held: "locked", spent: "sold",
		short: ErrInsufficientStock, missing: ErrResourceNotFound, delaySeconds: "release_delay_s",
	}
}
