package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"unhold/models"
)

// Passwords are argon2id with OWASP's minimum parameters (19 MiB, two
// passes, one lane), kept as PHC strings that carry their parameters, so
// that raising them later leaves old hashes readable.
const (
	argonMemory  = 19456 // KiB
	argonTime    = 2
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds on the parameters VerifyPassword accepts from a stored string, so
// a corrupt or planted hash cannot make one login allocate gigabytes or
// spin for minutes.
const (
	maxArgonMemory  = 128 * 1024 // KiB
	maxArgonTime    = 16
	maxArgonThreads = 16
)

// Password length limits. The maximum is in bytes and keeps a login from
// hashing megabytes; the minimum is in characters.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// errBadHash is a stored password hash VerifyPassword cannot read.
var errBadHash = errors.New("malformed argon2id password hash")

// dummyHash is a real hash, of a password nobody has, with the current
// parameters: a login for an unknown name verifies against it, so that it
// takes as long as one for a real name.
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$aXlC5UpMU6PlIiY1TJ74rw$vzq5fG0n7C1NuB4ftwWpnd+X8Lhcn44hu8NEhSG4y0A"

// NewPassword makes up a password for someone to change later: 18 random
// bytes, 24 characters of base64url.
func NewPassword() string { return randomSecret(18) }

// ValidPassword accepts a new password: at least MinPasswordLen characters
// and at most MaxPasswordLen bytes.
func ValidPassword(pw string) error {
	if len(pw) > MaxPasswordLen {
		return models.Invalid("password must be at most %d bytes", MaxPasswordLen)
	}
	if utf8.RuneCountInString(pw) < MinPasswordLen {
		return models.Invalid("password must be at least %d characters", MinPasswordLen)
	}
	return nil
}

// hashSlot waits for one of the store's hash slots, or for ctx to end; the
// returned func gives it back.
func (s *Store) hashSlot(ctx context.Context) (func(), error) {
	select {
	case s.hashSlots <- struct{}{}:
		return func() { <-s.hashSlots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait to hash a password: %w", ctx.Err())
	}
}

// hashPassword is HashPassword in one of the store's hash slots.
func (s *Store) hashPassword(ctx context.Context, pw string) (string, error) {
	done, err := s.hashSlot(ctx)
	if err != nil {
		return "", err
	}
	defer done()
	return HashPassword(pw)
}

// verifyPassword is VerifyPassword in one of the store's hash slots.
func (s *Store) verifyPassword(ctx context.Context, encoded, pw string) (bool, error) {
	done, err := s.hashSlot(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	return VerifyPassword(encoded, pw)
}

// HashPassword hashes pw with argon2id and a fresh salt into a PHC string:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>, base64 without padding.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword tells whether pw is the password encoded hashes, with the
// parameters the string names, comparing in constant time. A string that
// is not a well-formed argon2id hash is an error, never a panic.
func VerifyPassword(encoded, pw string) (bool, error) {
	p, err := parseArgon2id(encoded)
	if err != nil {
		return false, err
	}
	key := argon2.IDKey([]byte(pw), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1, nil
}

type argon2idHash struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

func parseArgon2id(encoded string) (argon2idHash, error) {
	var h argon2idHash
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return h, errBadHash
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return h, errBadHash
	}
	m, okM := argonParam(params[0], "m=", 8, maxArgonMemory)
	t, okT := argonParam(params[1], "t=", 1, maxArgonTime)
	p, okP := argonParam(params[2], "p=", 1, maxArgonThreads)
	if !okM || !okT || !okP {
		return h, errBadHash
	}
	b64 := base64.RawStdEncoding.Strict()
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 || len(salt) > 64 {
		return h, errBadHash
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 128 {
		return h, errBadHash
	}
	return argon2idHash{memory: uint32(m), time: uint32(t), threads: uint8(p), salt: salt, key: key}, nil
}

// argonParam reads one "name=value" parameter in canonical decimal within
// [lo, hi].
func argonParam(s, prefix string, lo, hi uint64) (uint64, bool) {
	v, ok := strings.CutPrefix(s, prefix)
	if !ok || v == "" || len(v) > 10 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}
