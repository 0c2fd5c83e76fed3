package models_test

import (
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// A page of stopped tasks reads its keys' ledgers at once: each counter
// key reads as it does alone, whatever its type (an account's asset, a
// declared type's name are part of its key), and keys that are no counter's
// or have no row are left out, not read as zeros.
func TestCounterLedgersOfReadsEachKeyAsAlone(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}}})
			cp := b.shop(t)
			must(t, func() error { _, err := b.s.SetDeclared(b.ctx, "gift_wrap", "red", 4, "test"); return err })
			if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
				t.Fatal(err)
			}
			must(t, func() error {
				return b.s.W.Exec("UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-1'").Error
			})
			must(t, func() error {
				return b.s.W.Exec("UPDATE accounts SET frozen = frozen + 7 WHERE uid = 'u1' AND asset = 'POINTS'").Error
			})
			counters := []models.ResourceKey{
				{Type: models.ResInventory, Key: "sku-1"}, {Type: models.ResInventory, Key: "sku-2"},
				{Type: models.ResBalance, Key: "u1"}, {Type: models.ResPoints, Key: "u1"},
				{Type: models.ResQuota, Key: "act-1"}, {Type: "gift_wrap", Key: "red"},
			}
			others := []models.ResourceKey{
				{Type: models.ResCoupon, Key: "1"}, {Type: models.ResSlot, Key: "seat-1"},
				{Type: models.ResInventory, Key: "sku-9"}, {Type: models.ResInventory, Key: "no key"},
				{Type: "nothing", Key: "x"},
			}
			got, err := b.s.CounterLedgersOf(b.ctx, append(append(append([]models.ResourceKey{}, others...), counters...), counters[0]))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range counters {
				want, err := b.s.CounterLedgerOf(b.ctx, k.Type, k.Key)
				if err != nil {
					t.Fatal(err)
				}
				if got[k] != want {
					t.Errorf("%s %s: %+v with the others, %+v alone", k.Type, k.Key, got[k], want)
				}
			}
			if len(got) != len(counters) {
				t.Errorf("read %d keys, want the %d counters' only: %+v", len(got), len(counters), got)
			}
			// The hand edits are seen: the batch reads rows and ledgers
			// of the right keys, not another type's.
			if l := got[counters[0]]; l.Short() != models.ShortChanged || l.Row.Locked != 0 || l.Ledger.Locked != 2 {
				t.Errorf("sku-1 moved by hand reads %+v (%s)", l, l.Short())
			}
			if l := got[counters[3]]; l.Row.Locked != 107 || l.Ledger.Locked != 100 || l.Expected != 100 {
				t.Errorf("u1's points frozen by hand read %+v", l)
			}
		})
	}
}

// A key's ledger sums are read from the ledger's key index alone (it
// carries type and qty), never from a table row per ledger row: a stopped
// stock key of a big shop has thousands.
func TestKeySumsReadTheKeyIndexAlone(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}}})
			for typ, index := range map[models.ResourceType]string{
				models.ResInventory: "inventory_flows_sku", models.ResBalance: "account_flows_account",
				models.ResPoints: "account_flows_account", models.ResQuota: "quota_flows_activity",
				"gift_wrap": "declared_counter_flows_key",
			} {
				plan, err := b.s.KeySumsPlan(typ, []string{"k-1", "k-2"})
				if err != nil {
					t.Fatal(err)
				}
				want := "USING COVERING INDEX " + index
				if d == models.Postgres {
					want = "Index Only Scan using " + index
				}
				if text := strings.Join(plan, "\n"); !strings.Contains(text, want) {
					t.Errorf("%s: the sums' plan does not say %q:\n%s", typ, want, text)
				}
			}
		})
	}
}
