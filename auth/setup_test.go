package auth_test

import (
	"context"
	"testing"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// bundle is what a test works with: the accounts, the store whose database
// they are on, its clock, and a context.
type bundle struct {
	a     *auth.Store
	s     *models.Store
	clock *modelstest.Clock
	ctx   context.Context
}

// eachEngine runs fn as a parallel subtest on SQLite and on PostgreSQL.
func eachEngine(t *testing.T, fn func(t *testing.T, b bundle)) {
	t.Helper()
	eachEngineWith(t, auth.Options{}, fn)
}

// eachEngineWith is eachEngine with auth options.
func eachEngineWith(t *testing.T, opt auth.Options, fn func(t *testing.T, b bundle)) {
	t.Helper()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, d, opt))
		})
	}
}

func setup(t *testing.T, d models.Dialect, opt auth.Options) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	return bundle{a: auth.New(s, opt), s: s, clock: clock, ctx: context.Background()}
}

func must(t testing.TB, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
}
