package web

import (
	"fmt"
	"testing"
	"time"
)

// Past maxRefusalActors actors in a minute, the refusals of any other
// actor are counted together as "others", so the memory stays bounded and
// the flood is still summed up.
func TestRefusalActorsBounded(t *testing.T) {
	t.Parallel()
	var r refusalCounter
	at := time.Date(2026, 12, 3, 12, 4, 5, 0, time.UTC)
	for i := range maxRefusalActors {
		if one, _ := r.count(fmt.Sprintf("anonymous:10.0.%d.%d", i/256, i%256), at); !one {
			t.Fatalf("actor %d's first refusal is not audited", i)
		}
	}
	audited := 0
	for i := range refusalsAudited + 5 {
		if one, _ := r.count(fmt.Sprintf("anonymous:10.9.0.%d", i), at); one {
			audited++
		}
	}
	if audited != refusalsAudited || len(r.seen) != maxRefusalActors+1 {
		t.Fatalf("%d refusals of new actors audited, %d actors counted; want %d and %d", audited, len(r.seen), refusalsAudited, maxRefusalActors+1)
	}
	sums := r.due(at.Add(time.Minute))
	if len(sums) != 1 || sums[0].Actor != refusalOthers || sums[0].Detail != "5 more refused in this minute (12:04 UTC)" {
		t.Fatalf("summaries = %+v", sums)
	}
}
