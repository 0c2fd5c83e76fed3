package models_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// BenchmarkRemoteReleaseBatch: releases of a remote type whose service
// (the fake, over loopback HTTP) answers at once, claimed 100 at a time:
// each claim's calls, 8 at a time, then one transaction that records the
// answers. What it adds to BenchmarkReleaseBatch is the calls' cost.
func BenchmarkRemoteReleaseBatch(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			svc := remotetest.New(remotetest.Options{})
			srv := httptest.NewServer(svc)
			b.Cleanup(srv.Close)
			client, err := remote.New(remote.Config{Type: "giftcard", URL: srv.URL, Strict: true})
			if err != nil {
				b.Fatal(err)
			}
			s := modelstest.Open(b, d, models.Options{Logger: modelstest.QuietLog(),
				Remote: []models.RemoteType{{Type: "giftcard", Client: client}}})
			ctx := context.Background()
			svc.SetAvailable("card-1", int64(b.N))
			for i := range b.N {
				no := fmt.Sprintf("g-%d", i)
				req := models.PlaceRequest{OrderNo: no, UserID: "u1", Holds: []models.HoldRequest{{Type: "giftcard", Key: "card-1", Qty: 1}}}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					b.Fatal(err)
				}
				if _, err := s.CloseOrder(ctx, no, models.TriggerTimeout, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for done := 0; done < b.N; {
				tasks, err := s.ClaimTasks(ctx, "bench", 100, time.Minute)
				if err != nil || len(tasks) == 0 {
					b.Fatalf("claim: %d, %v", len(tasks), err)
				}
				rs, err := s.ReleaseBatch(ctx, tasks, "bench")
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rs {
					if r.Outcome != models.OutcomeDone {
						b.Fatalf("release: %+v", r)
					}
				}
				done += len(tasks)
			}
			b.StopTimer()
			if st := svc.Stock("card-1"); st.Held != 0 {
				b.Fatalf("the service still holds %d", st.Held)
			}
		})
	}
}
