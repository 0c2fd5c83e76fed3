package models

import "net/url"

// MaxBalance is the most an account may hold of one asset, available,
// frozen and spent together, in the asset's smallest unit (10^15 fen is ten
// trillion yuan). Credit refuses a credit that would pass it, and a CHECK
// on accounts holds each column to it whatever writes the row. Lock, deduct
// and release only move amounts between the columns, so the total never
// grows but by a credit, and no column can pass the bound or overflow.
const MaxBalance = 1_000_000_000_000_000

// accountResource is one asset of user accounts: available → frozen → spent.
// Balance and points are two instances; the key is the user id.
func accountResource(s *Store, t ResourceType, asset Asset, short *Error) *counter {
	c := &counter{
		maxQty: MaxAmount,
		s:      s, typ: t, table: "accounts", ledger: "account_flows", key: "uid",
		fixedCol: "asset", fixedVal: string(asset), side: string(asset), userKeyed: true,
		avail: "available", held: "frozen", spent: "spent",
		short: short, missing: short,
		maxTotal: MaxBalance, overflow: ErrBalanceOverflow,
		page: func(key string) string {
			return "/balances?" + url.Values{"user": {key}, "asset": {string(asset)}}.Encode()
		},
	}
	// Points expire account by account; a balance never does.
	if asset == AssetPoints {
		c.expires, c.expired = true, ErrPointsExpired
	}
	return c
}

// assetResource is the resource type an account asset is released as.
func assetResource(a Asset) ResourceType {
	if a == AssetPoints {
		return ResPoints
	}
	return ResBalance
}
