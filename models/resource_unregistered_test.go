package models_test

import (
	"context"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// A task whose type the resources file no longer declares goes MANUAL at
// once, saying so, instead of crashing its worker eight times: the store
// that placed and closed the order declared gift_wrap, the store that
// releases it does not.
func TestTaskOfAnUndeclaredTypeGoesManual(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		clock := modelstest.NewClock()
		dsn := modelstest.MigratedDSN(t, d)
		open := func(opt models.Options) *models.Store {
			opt.Now = clock.Now
			s, err := models.Open(ctx, dsn, opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		before := open(models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}}})
		if _, err := before.SetDeclared(ctx, "gift_wrap", "box", 5, "test"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := before.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: "gift_wrap", Key: "box", Qty: 2}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := before.CloseOrder(ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		after := open(models.Options{})
		tasks, err := after.ClaimTasks(ctx, "w", 10, time.Minute)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claim: %d, %v", len(tasks), err)
		}
		res, err := after.ReleaseBatch(ctx, tasks, "w")
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != models.OutcomeManual || res[0].Class != models.ClassStateMismatch {
			t.Fatalf("release = %+v, want MANUAL STATE_MISMATCH", res[0])
		}
	})
}
