package models_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// The cache gives what the query gives, on both engines, while releases
// keep arriving for over two hours: released now, a second ahead of
// the clock (another instance's), 100 s late into a past minute (committed
// late, within the margin), on minute bounds and a microsecond either side
// of them (the current minute's start, the unsettled tail's start, the
// window's start), retried, rerun and not released. Several requests read
// it at once, the first of them on an empty cache; minutes that leave the
// window are dropped.
func TestLatencyCacheMatchesQuery(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{7 * time.Second, 23 * time.Second, time.Minute, 41*time.Second + 500*time.Millisecond,
		2*time.Minute + 13*time.Second, 59 * time.Second, 5 * time.Minute, 11*time.Second + 7*time.Microsecond}
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			c := models.NewLatencyCache(b.s)
			orders := 0
			plant := func(tasks ...doneTask) {
				orders++
				plantTasks(t, b.s, b.clock.Now(), fmt.Sprintf("o-%d", orders), tasks)
			}
			// Before the first read: an hour of releases, one every 40 s.
			var hour []doneTask
			for ago := 40 * time.Second; ago < time.Hour; ago += 40 * time.Second {
				hour = append(hour, doneTask{Latency: ago % (7 * time.Second), Ago: ago})
			}
			plant(hour...)
			for i := range 100 {
				now := b.clock.Now()
				minute, settled, since := now.Truncate(time.Minute), now.Add(-models.LatencySettle).Truncate(time.Minute), now.Add(-time.Hour)
				tasks := []doneTask{
					{Latency: ms(100 * (i % 30))},
					{Latency: 3 * time.Second, Ago: -time.Second},
					{Latency: ms(700), Ago: 100 * time.Second},
					{Latency: ms(40), Retried: 5 * time.Second, Ago: ms(300)},
					{Latency: 9 * time.Second, Rerun: true},
					{Latency: ms(1), NotDone: true},
				}
				// Just before the last settled minute's end would be older
				// than the margin, in a kept minute.
				for _, at := range []time.Time{minute.Add(-time.Microsecond), minute, minute.Add(time.Microsecond), settled, settled.Add(time.Microsecond)} {
					tasks = append(tasks, doneTask{Latency: ms(10 * (i%7 + 1)), Ago: now.Sub(at)})
				}
				// The window's start is in a partial minute, never kept,
				// unless it is a minute bound.
				if !since.Truncate(time.Minute).Equal(since) {
					tasks = append(tasks, doneTask{Latency: ms(1500), Ago: time.Hour}, doneTask{Latency: ms(1600), Ago: time.Hour + time.Microsecond})
				}
				plant(tasks...)

				want, err := b.s.ReleaseLatency(b.ctx)
				if err != nil {
					t.Fatal(err)
				}
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						got, err := c.ReleaseLatency(b.ctx)
						if err != nil {
							t.Error(err)
							return
						}
						if !reflect.DeepEqual(got, want) {
							t.Errorf("step %d at %s: cached\n%+v\nwant\n%+v", i, now.Format("15:04:05.000000"), got, want)
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				if n := c.Kept(); n > 60 {
					t.Fatalf("step %d: %d minutes kept, more than the window's", i, n)
				}
				b.clock.Advance(steps[i%len(steps)])
			}
			if elapsed := b.clock.Now().Sub(modelstest.NewClock().Now()); elapsed < 2*time.Hour {
				t.Fatalf("the releases arrived over %s only", elapsed)
			}
		})
	}
}

// A kept minute is not scanned again: a release committed into it later
// than the margin is missed, until the minute leaves the window. This is
// what the margin must rule out.
func TestLatencyCacheKeepsSettledMinutes(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			c := models.NewLatencyCache(b.s)
			b.clock.Advance(30 * time.Second)
			plantTasks(t, b.s, b.clock.Now(), "o-1", []doneTask{{Latency: ms(200), Ago: 20 * time.Minute}})
			if l, err := c.ReleaseLatency(b.ctx); err != nil || l.Count != 1 {
				t.Fatalf("first read: count %d, %v; want 1", l.Count, err)
			}
			if n := c.Kept(); n != 57 {
				t.Errorf("%d minutes kept, want 57 (09:01 to 09:57: 09:00:30 starts in a partial minute, 09:58 is within the margin)", n)
			}
			plantTasks(t, b.s, b.clock.Now(), "o-2", []doneTask{{Latency: ms(300), Ago: 10 * time.Minute}})
			direct, err := b.s.ReleaseLatency(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			cached, err := c.ReleaseLatency(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if direct.Count != 2 || cached.Count != 1 {
				t.Errorf("count direct %d, cached %d; want 2 and 1", direct.Count, cached.Count)
			}
			// A fresh cache scans the minute and sees it.
			if l, err := models.NewLatencyCache(b.s).ReleaseLatency(b.ctx); err != nil || l.Count != 2 {
				t.Errorf("fresh cache: count %d, %v; want 2", l.Count, err)
			}
		})
	}
}
