package models

import "time"

// RemoteService is how a remote type reaches its service, as the
// dashboard and the API show it: whether a token is sent, never the
// token.
type RemoteService struct {
	URL     string
	Timeout time.Duration
	Token   bool
	// Strict: a call is done only when the answer echoes its idempotency
	// key. Not strict, the type's answers are unverified.
	Strict bool
}

// RemoteService is remote type t's service; ok is false when t is not a
// remote type.
func (s *Store) RemoteService(t ResourceType) (rs RemoteService, ok bool) {
	r, ok := s.remotes[t]
	if !ok {
		return RemoteService{}, false
	}
	return RemoteService{URL: r.client.URL(), Timeout: r.client.Timeout(), Token: r.client.HasToken(),
		Strict: r.client.Strict()}, true
}
