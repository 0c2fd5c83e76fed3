package models

// accountResource is one asset of user accounts: available → frozen → spent.
// Balance and points are two instances; the key is the user id.
func accountResource(s *Store, t ResourceType, asset Asset, short *Error) *counter {
	return &counter{
		s: s, typ: t, table: "accounts", ledger: "account_flows", key: "uid",
		fixedCol: "asset", fixedVal: string(asset),
		avail: "available", held: "frozen", spent: "spent",
		short: short, missing: short,
	}
}
