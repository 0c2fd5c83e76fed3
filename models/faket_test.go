package models_test

import "testing"

// fakeT records a failure instead of failing, to prove a checker can fail.
// Its Fatal methods panic; the caller recovers.
type fakeT struct {
	testing.TB
	failed bool
}

type fakeFatal struct{}

func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic(fakeFatal{}) }
func (f *fakeT) Fatal(...any)          { f.failed = true; panic(fakeFatal{}) }
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Helper()               {}
