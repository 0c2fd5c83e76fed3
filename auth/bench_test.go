package auth_test

import (
	"testing"

	"unhold/auth"
)

// BenchmarkPasswordHash is one argon2id hash with the stored parameters
// (19 MiB, t=2, p=1): what every login and password change costs.
func BenchmarkPasswordHash(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		if _, err := auth.HashPassword("correct horse battery"); err != nil {
			b.Fatal(err)
		}
	}
}
