// Package remote is unhold's client for a resource type whose holds another
// team's service keeps. It makes the calls docs/remote-resources.md
// describes — POST lock, deduct and release, GET holds — and says what each
// answer means for the release task that made it: done, done before (a
// duplicate), or a failure with the class the retry schedule goes by.
//
// It imports nothing of unhold's own, so that models can call it: its
// classes are strings spelled as models.ErrorClass spells them (a test
// keeps them equal), and an *Error tells its class and whether a retry may
// help through methods a caller can test for without naming this package.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Op is one of the protocol's operations; it is the last segment of the
// call's URL and one of the inputs of its idempotency key.
type Op string

// The three operations on a hold.
const (
	OpLock    Op = "lock"
	OpDeduct  Op = "deduct"
	OpRelease Op = "release"
)

// opHolds names the holds query in errors.
const opHolds Op = "holds"

// Class is a failed call's class, spelled as models.ErrorClass spells it.
type Class string

// Failure classes. Only ClassRejected is permanent.
const (
	ClassBusy       Class = "REMOTE_BUSY"     // 408, 425, 429 or 5xx: retried
	ClassRejected   Class = "REMOTE_REJECTED" // any other answer but 2xx and 409 ALREADY_DONE: MANUAL
	ClassTimeout    Class = "TIMEOUT"         // no whole answer within the timeout: retried
	ClassConnection Class = "CONNECTION"      // refused, reset, closed without an answer: retried
	ClassProtocol   Class = "REMOTE_PROTOCOL" // a 2xx or 409 ALREADY_DONE whose body does not prove the call was ours: retried
)

// Why an answer that would count as done (a 2xx; for a call, a 409
// ALREADY_DONE) failed to prove itself (ClassProtocol): the cause of its
// *Error, for errors.Is.
var (
	ErrUnparseable = errors.New("the answer is not the JSON object the protocol asks for")
	ErrNoEcho      = errors.New("the answer does not echo the request")
	ErrOtherKey    = errors.New("the answer echoes another request")
)

// CodeAlreadyDone is the code of a 409 that means "done before, with this
// idempotency key": the call counts as a duplicate, not a failure.
const CodeAlreadyDone = "ALREADY_DONE"

// DefaultTimeout is a call's timeout when Config.Timeout is zero.
const DefaultTimeout = 2 * time.Second

const (
	// maxBody bounds how much of an answer is read: a service that streams
	// megabytes of error page must not cost the worker that memory.
	maxBody = 64 << 10
	// maxMessage bounds the service's message kept on an attempt; the
	// attempt's own bound (1000 bytes) also has to hold the call's name.
	maxMessage = 512
	// maxCode bounds the service's code kept on an error.
	maxCode = 64
	// maxIdempotencyKey bounds a key given by the caller: it travels in a
	// header and the service stores it.
	maxIdempotencyKey = 255
)

// ErrNoHolds says the service does not offer GET /holds/{key}: it answered
// 404. Reconciliation then goes by unhold's own ledger of calls.
var ErrNoHolds = errors.New("remote: the service offers no GET /holds/{key}")

// Config is one remote resource type's service.
type Config struct {
	Type    string        // the resource type, sent in every call
	URL     string        // the service's base URL: http or https, a host, no query
	Timeout time.Duration // a call's whole time, answer read included; 0: DefaultTimeout
	Token   string        // sent as "Authorization: Bearer <Token>" when not empty
	// Strict makes a call count as done only when its answer proves it:
	// a JSON object echoing the request's idempotency_key. Off, any 2xx
	// and any 409 ALREADY_DONE count, whatever their body.
	Strict bool
}

// Client calls one remote resource type's service. It is safe for
// concurrent use.
type Client struct {
	typ     string
	base    string
	token   string
	timeout time.Duration
	strict  bool
	http    *http.Client
}

// New checks cfg and makes its client. The client follows no redirect: a
// call is a POST with a body, and a service that has moved is a
// configuration to fix, not a place to resend a release to.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Type) == "" {
		return nil, errors.New("remote: the resource type is empty")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("remote %s: url %q must be an http or https base URL with a host and no user, query or fragment",
			cfg.Type, cfg.URL)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("remote %s: timeout %s is negative", cfg.Type, cfg.Timeout)
	}
	if strings.IndexFunc(cfg.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
		return nil, fmt.Errorf("remote %s: the token holds a space, a control character or a non-ASCII one", cfg.Type)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	// A connection pool of its own, kept apart from the process's other
	// HTTP traffic, with room for concurrent calls (Go's default keeps two
	// idle connections per host).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &Client{
		typ:     cfg.Type,
		base:    strings.TrimRight(u.String(), "/"),
		token:   cfg.Token,
		timeout: timeout,
		strict:  cfg.Strict,
		http: &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Call is one operation on one hold, as its JSON body carries it.
type Call struct {
	// IdempotencyKey is the same on every retry of one operation; empty,
	// it is IdempotencyKey(OrderNo, Type, Key, op, Epoch).
	IdempotencyKey string `json:"idempotency_key"`
	OrderNo        string `json:"order_no"`
	Type           string `json:"type"` // empty: the client's type
	Key            string `json:"key"`
	Qty            int64  `json:"qty"`
	Epoch          int    `json:"epoch"`
	Trigger        string `json:"trigger"`
}

// Result is a call the service did: now, or before (Duplicate: it answered
// 409 ALREADY_DONE).
type Result struct {
	IdempotencyKey string // the key sent
	Status         int    // the HTTP status answered
	Duplicate      bool
}

// Error is a call that failed: the service refused it or was busy, or no
// whole answer came.
type Error struct {
	Type    string
	Op      Op     // lock, deduct, release, or holds
	Class   Class  // what the retry schedule does with it
	Status  int    // the HTTP status; 0 when no answer came
	Code    string // the service's "code", when it sent one
	Message string // the service's message or body text, clipped; or what happened instead of an answer
	Err     error  // the cause when no answer came
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "remote %s %s: ", e.Type, e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorClass is the class as models stores it.
func (e *Error) ErrorClass() string { return string(e.Class) }

// Retryable says whether the retry schedule applies: false sends the task
// to MANUAL at once.
func (e *Error) Retryable() bool { return e.Class != ClassRejected }

// IdempotencyKey is the key of one operation on one hold: "uh1-" and 32
// hex digits, the first 128 bits of the SHA-256 of the order number, the
// resource type, the hold's key, the operation and the epoch, each written
// as its length in bytes, a colon and itself, so that no two different
// tuples hash the same bytes. It depends on nothing else, so every retry —
// after a timeout, a crash, a rerun — sends the same key; a late payment's
// cycle (epoch 1) and each operation get keys of their own. The "uh1"
// prefix names this derivation.
func IdempotencyKey(orderNo, typ, key string, op Op, epoch int) string {
	h := sha256.New()
	for _, f := range []string{orderNo, typ, key, string(op), strconv.Itoa(epoch)} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	return "uh1-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Timeout is the whole time one call may take.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Strict says whether a call's answer must echo its idempotency key to
// count as done (Config.Strict).
func (c *Client) Strict() bool { return c.strict }

// URL is the service's base URL, without a trailing slash.
func (c *Client) URL() string { return c.base }

// HasToken says whether calls carry a bearer token.
func (c *Client) HasToken() bool { return c.token != "" }

// Lock asks the service to hold call.Qty of call.Key for the order.
func (c *Client) Lock(ctx context.Context, call Call) (Result, error) {
	return c.call(ctx, OpLock, call)
}

// Deduct asks the service to spend what the order holds.
func (c *Client) Deduct(ctx context.Context, call Call) (Result, error) {
	return c.call(ctx, OpDeduct, call)
}

// Release asks the service to give back what the order holds.
func (c *Client) Release(ctx context.Context, call Call) (Result, error) {
	return c.call(ctx, OpRelease, call)
}

func (c *Client) call(ctx context.Context, op Op, call Call) (Result, error) {
	if call.Type == "" {
		call.Type = c.typ
	}
	if call.IdempotencyKey == "" {
		call.IdempotencyKey = IdempotencyKey(call.OrderNo, call.Type, call.Key, op, call.Epoch)
	}
	if msg := c.invalid(call); msg != "" {
		return Result{}, &Error{Type: c.typ, Op: op, Class: ClassRejected, Message: "not sent: " + msg}
	}
	body, _ := json.Marshal(call) // strings and integers always marshal
	status, answer, err := c.do(ctx, op, http.MethodPost, "/"+string(op), body, call.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	res := Result{IdempotencyKey: call.IdempotencyKey, Status: status}
	if status < 200 || status > 299 {
		e := c.answerError(op, status, answer)
		if status != http.StatusConflict || e.Code != CodeAlreadyDone {
			return Result{}, e
		}
		res.Duplicate = true
	}
	if c.strict {
		if why := echoes(answer, call.IdempotencyKey); why != nil {
			return Result{}, &Error{Type: c.typ, Op: op, Class: ClassProtocol, Status: status, Err: why,
				Message: bodyHead(c.redact(answer))}
		}
	}
	return res, nil
}

// echoes says why answer does not prove itself the answer to the call of
// idempotency key k, or nil when it does: it must be a JSON object whose
// idempotency_key is k. A service that cannot echo yet is declared
// strict: false instead.
func echoes(answer []byte, k string) error {
	m, err := members(answer)
	if err != nil {
		return ErrUnparseable
	}
	raw, ok := m["idempotency_key"]
	if !ok || string(raw) == "null" {
		return ErrNoEcho
	}
	var got string
	if json.Unmarshal(raw, &got) != nil {
		return ErrUnparseable
	}
	if got != k {
		return ErrOtherKey
	}
	return nil
}

// errAmbiguous is an object with two members whose names differ at most
// in case: encoding/json would take the last, or either, for one field.
var errAmbiguous = errors.New("two members of one name")

// members reads answer as one JSON object and nothing after it, member by
// member. Names are matched exactly, not as encoding/json matches fields,
// and an object naming a member twice, even in another case, is refused:
// an answer that says two things proves neither.
func members(answer []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(answer))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ErrUnparseable
	}
	m := map[string]json.RawMessage{}
	folded := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		if folded[strings.ToLower(name)] {
			return nil, errAmbiguous
		}
		folded[strings.ToLower(name)] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		m[name] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, ErrUnparseable
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrUnparseable
	}
	return m, nil
}

// redact blanks the client's bearer token out of an answer: whatever
// answered in the service's place may reflect the request's headers, and
// what an answer said is kept for people to read.
func (c *Client) redact(answer []byte) []byte {
	if c.token == "" {
		return answer
	}
	return bytes.ReplaceAll(answer, []byte(c.token), []byte("[redacted]"))
}

// maxHead bounds how much of an answer that did not prove itself is kept:
// enough for a person to see what answered instead of the service.
const maxHead = 200

// bodyHead is the answer's first maxHead bytes, made one line as clip
// does, marked "…" when there was more; "empty body" for none.
func bodyHead(answer []byte) string {
	if len(bytes.TrimSpace(answer)) == 0 {
		return "empty body"
	}
	head, more := answer, ""
	if len(head) > maxHead {
		cut := maxHead
		for cut > 0 && !utf8.RuneStart(head[cut]) {
			cut--
		}
		head, more = head[:cut], "…"
	}
	return clip(string(head), maxHead) + more
}

// invalid says what is wrong with call, or "" when nothing is: a call the
// service could only refuse is not sent.
func (c *Client) invalid(call Call) string {
	switch {
	case call.Type != c.typ:
		return fmt.Sprintf("the call is for type %q, the client for %q", call.Type, c.typ)
	case call.OrderNo == "":
		return "order_no is empty"
	case call.Key == "":
		return "key is empty"
	case call.Qty <= 0:
		return fmt.Sprintf("qty %d is not positive", call.Qty)
	case call.Epoch < 0:
		return fmt.Sprintf("epoch %d is negative", call.Epoch)
	case call.Trigger == "":
		return "trigger is empty"
	case len(call.IdempotencyKey) > maxIdempotencyKey ||
		strings.IndexFunc(call.IdempotencyKey, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return fmt.Sprintf("idempotency key %.40q is not at most %d printable ASCII characters", call.IdempotencyKey, maxIdempotencyKey)
	}
	return ""
}

// Holds is what GET /holds/{key} answers: how much of the key the service
// holds for all orders together.
type Holds struct {
	Key  string
	Held int64
}

// Holds asks the service how much of key it holds. ErrNoHolds: the service
// does not offer it.
func (c *Client) Holds(ctx context.Context, key string) (Holds, error) {
	switch key {
	case "":
		return Holds{}, &Error{Type: c.typ, Op: opHolds, Class: ClassRejected, Message: "not sent: key is empty"}
	case ".", "..":
		// A dot segment is resolved away by servers and proxies (/holds/..
		// is /), and their answer would be about another path.
		return Holds{}, &Error{Type: c.typ, Op: opHolds, Class: ClassRejected,
			Message: fmt.Sprintf("not sent: key %q cannot be a path segment of GET /holds/{key}", key)}
	}
	status, answer, err := c.do(ctx, opHolds, http.MethodGet, "/holds/"+url.PathEscape(key), nil, "")
	if err != nil {
		return Holds{}, err
	}
	if status == http.StatusNotFound {
		return Holds{}, ErrNoHolds
	}
	if status < 200 || status > 299 {
		return Holds{}, c.answerError(opHolds, status, answer)
	}
	var got string
	var held int64
	var why error
	m, err := members(answer)
	switch {
	case err != nil || json.Unmarshal(m["held"], &held) != nil || held < 0:
		why = ErrUnparseable
	case m["key"] == nil || string(m["key"]) == "null":
		why = ErrNoEcho
	case json.Unmarshal(m["key"], &got) != nil:
		why = ErrUnparseable
	case got != key:
		why = ErrOtherKey
	default:
		return Holds{Key: key, Held: held}, nil
	}
	return Holds{}, &Error{Type: c.typ, Op: opHolds, Class: ClassProtocol, Status: status, Err: why,
		Message: fmt.Sprintf("the answer is not {\"key\": %q, \"held\": n ≥ 0}: %s", key, clip(string(c.redact(answer)), maxMessage))}
}

// do sends one request within the client's timeout and reads at most
// maxBody of its answer. An error is always an *Error: no whole answer came.
func (c *Client) do(parent context.Context, op Op, method, path string, body []byte, idemKey string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, &Error{Type: c.typ, Op: op, Class: ClassRejected, Message: "not sent", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "unhold")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.noAnswer(parent, op, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	// Unstrict, a call's 2xx is the service's word that it did the call,
	// whatever its body; any other answer cut short is no answer at all.
	if err != nil && (method != http.MethodPost || resp.StatusCode < 200 || resp.StatusCode > 299 || c.strict) {
		return 0, nil, c.noAnswer(parent, op, err)
	}
	return resp.StatusCode, answer, nil
}

// noAnswer classifies a call that got no whole answer. It may have reached
// the service all the same, so every class here is retried with the same
// key. A caller that gave up (its own deadline, or the process stopping)
// gets its context's error back, wrapped.
func (c *Client) noAnswer(parent context.Context, op Op, err error) *Error {
	e := &Error{Type: c.typ, Op: op, Class: ClassConnection, Message: "no answer", Err: err}
	var ne net.Error
	switch {
	case parent.Err() != nil:
		e.Message, e.Err = "the caller gave up", parent.Err()
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			e.Class = ClassTimeout
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		e.Class, e.Message = ClassTimeout, fmt.Sprintf("no answer within %s", c.timeout)
	}
	return e
}

// answerError classifies an answer that is neither a 2xx nor, for a call,
// a 409 ALREADY_DONE, keeping the service's code and message.
func (c *Client) answerError(op Op, status int, answer []byte) *Error {
	var a struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	answer = c.redact(answer)
	msg := strings.TrimSpace(string(answer))
	if strings.HasPrefix(msg, "{") && json.Unmarshal(answer, &a) == nil {
		msg = a.Message
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	class := ClassRejected
	if status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests ||
		status >= 500 && status <= 599 {
		class = ClassBusy
	}
	return &Error{Type: c.typ, Op: op, Class: class, Status: status, Code: clip(a.Code, maxCode), Message: clip(msg, maxMessage)}
}

// clip makes s one printable line of valid UTF-8 of at most n bytes, cut on
// a character boundary and marked "…" when cut. Format characters (bidi
// overrides, zero-width ones) go too: they would reorder or hide what a
// person reads of an answer.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
