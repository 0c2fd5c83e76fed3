package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"unhold/models"
)

// ResourceKind is how a declared resource type keeps its holds.
type ResourceKind string

// Kinds of declared resource types.
const (
	// KindCounter is kept by unhold itself, in its declared counters'
	// tables: available → locked → spent, as stock is.
	KindCounter ResourceKind = "counter"
	// KindRemote is kept by another service that unhold calls over HTTP.
	KindRemote ResourceKind = "remote"
)

// A remote type's timeout per call: from MinRemoteTimeout to
// MaxRemoteTimeout, DefaultRemoteTimeout when the file gives none. The
// error message spells them out; change both together.
const (
	MinRemoteTimeout     = 100 * time.Millisecond
	MaxRemoteTimeout     = 60 * time.Second
	DefaultRemoteTimeout = 2 * time.Second
)

// maxLabelRunes bounds a label: it is a column heading and a menu entry.
const maxLabelRunes = 64

// DeclaredResource is one resource type declared in the resources file
// (docs/resources-file.md).
type DeclaredResource struct {
	Type  models.ResourceType
	Kind  ResourceKind
	Label ResourceLabel
	// A remote type's service: its base URL (no trailing slash), the
	// timeout of one call, and the environment variable naming its bearer
	// token with the token read from it at start; both "" when the
	// service takes no token.
	URL      string
	Timeout  time.Duration
	TokenEnv string
	Token    string
	// Strict makes a call count as done only when the service's answer
	// echoes its idempotency key (true unless the file says strict: false).
	// InsecureHTTP lets a token travel over plain http to a host other
	// than loopback.
	Strict       bool
	InsecureHTTP bool
	// Approval makes a rerun or abandon of the type's tasks a request that
	// a second person approves, as for balance and points
	// (-approval-threshold).
	Approval bool
	// Warnings are what the file allows but a person should read at every
	// start, each naming the file, the entry and the key, as errors do.
	Warnings []string
}

// ResourceLabel is a type's name as people read it, in both languages of
// the dashboard.
type ResourceLabel struct {
	ZH, EN string
}

var (
	typeName = regexp.MustCompile(`^[a-z][a-z0-9_]{1,31}$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// entryKeys are the keys an entry may have.
var entryKeys = []string{"type", "kind", "label", "url", "timeout", "token_env", "strict", "insecure_http", "approval"}

// remoteOnly are the keys only a remote type may have.
var remoteOnly = []string{"url", "timeout", "token_env", "strict", "insecure_http"}

// entryShape says what an entry holds, in errors.
const entryShape = "type, kind, label, approval and, for a remote type, url, timeout, token_env, strict and insecure_http"

// declared reads the resources file the setting names, if any: its types
// and its retry policies, whose unset fields are retryDef's. A file that
// cannot be read is named by the setting; a problem inside it, by the
// file, its entry and its key.
func declared(s *setting, getenv func(string) string, retryDef models.RetryPolicy) ([]DeclaredResource, []models.RetryPolicy, error) {
	if s.value == "" {
		return nil, nil, nil
	}
	data, err := os.ReadFile(s.value)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %s: %w", s.name(), err)
	}
	rs, err := parseResources(s.value, data, getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	types := slices.Clone(models.ResourceTypes)
	for _, r := range rs {
		types = append(types, r.Type)
	}
	retry, err := parseRetry(s.value, data, types, retryDef)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	return rs, retry, nil
}

// parseResources reads a resources file's contents: its declarations, or
// every problem in it, one a line, each naming the file (name, as the user
// gave it), the entry and the key. getenv reads the variables that
// token_env names.
//
// It walks the YAML nodes instead of decoding into a struct with
// KnownFields(true): that refuses unknown keys and keys given twice too,
// but its errors name a line and a Go type, not the entry and the key.
func parseResources(name string, data []byte, getenv func(string) string) ([]DeclaredResource, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, a...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fail("empty; the file holds one key, resources:, a list of resource types")
		}
		return nil, fail("%v", err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fail("more than one YAML document; the file holds one")
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fail("the file must be a mapping with one key, resources:")
	}
	root := doc.Content[0]
	var list *yaml.Node
	var errs []error
	hasRetry := false
	for i := 0; i < len(root.Content); i += 2 {
		switch k, v := root.Content[i].Value, root.Content[i+1]; {
		case k == "retry":
			// parseRetry reads it, once the types are known.
			hasRetry = true
		case k != "resources":
			errs = append(errs, fail("%s: unknown key; the file holds resources: and, optionally, retry:", k))
		case list != nil:
			errs = append(errs, fail("resources: given twice"))
		default:
			list = v
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if list == nil && hasRetry {
		return nil, nil
	}
	if list == nil {
		return nil, fail("resources: missing; the file holds one key, resources:, a list of resource types")
	}
	if list.Kind == yaml.ScalarNode && list.ShortTag() == "!!null" {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fail("resources: must be a list of resource types")
	}
	var out []DeclaredResource
	first := map[models.ResourceType]int{}
	for i, entry := range list.Content {
		r, entryErrs, warns := parseEntry(entry, getenv)
		where := fmt.Sprintf("resources[%d]", i)
		if r.Type != "" {
			if j, seen := first[r.Type]; seen {
				entryErrs.add("type", "declared again; first at resources[%d]", j)
			} else {
				first[r.Type] = i
			}
		}
		if t := entryType(entry); t != "" {
			if typeName.MatchString(t) {
				where += " (" + t + ")"
			} else {
				where += fmt.Sprintf(" (%q)", t)
			}
		}
		for _, e := range entryErrs {
			if e.field == "" {
				errs = append(errs, fail("%s: %s", where, e.msg))
			} else {
				errs = append(errs, fail("%s: %s: %s", where, e.field, e.msg))
			}
		}
		for _, w := range warns {
			r.Warnings = append(r.Warnings, fail("%s: %s: %s", where, w.field, w.msg).Error())
		}
		if len(entryErrs) == 0 {
			out = append(out, r)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// fieldError is one problem of one entry's key, or of the whole entry
// when field is "".
type fieldError struct{ field, msg string }

// fieldErrors are an entry's problems, in the order found.
type fieldErrors []fieldError

func (e *fieldErrors) add(field, format string, a ...any) {
	*e = append(*e, fieldError{field, fmt.Sprintf(format, a...)})
}

// mappingFields reads a list entry of the file, a mapping of keys (shape
// says them, for the messages; what names the entry: "an entry"), into its
// fields. An unknown or repeated key is reported to bad and left out; an
// entry that is not a mapping is reported, and ok is false.
func mappingFields(entry *yaml.Node, keys []string, what, shape string, bad func(string, string, ...any)) (fields map[string]*yaml.Node, ok bool) {
	if entry.Kind != yaml.MappingNode {
		bad("", "must be a mapping of "+shape)
		return nil, false
	}
	fields = map[string]*yaml.Node{}
	for i := 0; i < len(entry.Content); i += 2 {
		k, v := entry.Content[i].Value, entry.Content[i+1]
		switch _, dup := fields[k]; {
		case !slices.Contains(keys, k):
			bad(k, "unknown key; "+what+" has "+shape)
		case dup:
			bad(k, "given twice")
		default:
			fields[k] = v
		}
	}
	return fields, true
}

// entryType is an entry's type as written, to name the entry in errors.
func entryType(entry *yaml.Node) string {
	if entry.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i < len(entry.Content); i += 2 {
		if entry.Content[i].Value == "type" {
			t, _ := scalar(entry.Content[i+1])
			return t
		}
	}
	return ""
}

// parseEntry reads one entry of the list, with its problems and what it
// allows but warns of; r.Type is set when the type name is good, even if
// the entry has other problems.
func parseEntry(entry *yaml.Node, getenv func(string) string) (DeclaredResource, fieldErrors, fieldErrors) {
	var r DeclaredResource
	var errs, warns fieldErrors
	bad := errs.add
	fields, ok := mappingFields(entry, entryKeys, "an entry", entryShape, bad)
	if !ok {
		return r, errs, nil
	}

	t, ok := field(fields, "type")
	switch {
	case !ok:
		bad("type", "must be text")
	case t == "":
		bad("type", "required")
	case !typeName.MatchString(t):
		bad("type", "must be 2 to 32 lowercase letters, digits or _, starting with a letter")
	case slices.Contains(models.ResourceTypes, models.ResourceType(t)):
		bad("type", "%s is a built-in type; declare another name", t)
	default:
		r.Type = models.ResourceType(t)
	}

	kind, ok := field(fields, "kind")
	switch r.Kind = ResourceKind(kind); {
	case !ok:
		bad("kind", "must be text")
	case kind == "":
		bad("kind", "required: counter or remote")
	case r.Kind != KindCounter && r.Kind != KindRemote:
		bad("kind", "must be counter or remote, not %q", kind)
	}

	r.Label = parseLabel(fields["label"], &errs)
	r.Approval, _ = boolField(fields, "approval", &errs)

	if r.Kind == KindCounter {
		for _, k := range remoteOnly {
			if _, has := fields[k]; has {
				bad(k, "only a remote type has one; a counter is kept by unhold")
			}
		}
	}
	if r.Kind != KindRemote {
		return r, errs, nil
	}

	switch u, ok := field(fields, "url"); {
	case !ok:
		bad("url", "must be text")
	case u == "":
		bad("url", "required: the base URL of the service that keeps the holds")
	default:
		var msg string
		r.URL, msg = serviceURL(u)
		if msg != "" {
			bad("url", "%s", msg)
		}
	}

	r.Timeout = DefaultRemoteTimeout
	if tv, ok := field(fields, "timeout"); !ok || tv != "" {
		d, err := time.ParseDuration(tv)
		if !ok || err != nil || d < MinRemoteTimeout || d > MaxRemoteTimeout {
			bad("timeout", "must be a duration from 100ms to 60s, like 2s (absent: 2s)")
		} else {
			r.Timeout = d
		}
	}

	switch env, ok := field(fields, "token_env"); {
	case !ok:
		bad("token_env", "must be text")
	case env == "":
	case !envName.MatchString(env):
		bad("token_env", "must be the name of an environment variable: letters, digits and _, not starting with a digit")
	default:
		token := getenv(env)
		switch {
		case token == "":
			bad("token_env", "%s is not set or is empty; unset token_env if the service takes no token", env)
		case strings.ContainsFunc(token, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }):
			bad("token_env", "%s holds spaces or control characters, which a bearer token cannot", env)
		default:
			r.TokenEnv, r.Token = env, token
		}
	}

	r.Strict = true
	if v, ok := boolField(fields, "strict", &errs); ok {
		r.Strict = v
	}
	if !r.Strict {
		warns.add("strict", "false: an answer counts as done without echoing the call's idempotency key, so a URL that "+
			"points at another web server would hold and release nothing, unseen (the dashboard marks the type "+
			"unverified answers); remove it once the service echoes idempotency_key")
	}
	r.InsecureHTTP, _ = boolField(fields, "insecure_http", &errs)
	if r.Token != "" && plainToRemote(r.URL) {
		if r.InsecureHTTP {
			warns.add("url", "%s is plain http to a host other than loopback: the bearer token in %s travels in clear "+
				"(insecure_http: true); use https", r.URL, r.TokenEnv)
		} else {
			bad("url", "%s is plain http to a host other than loopback, so the bearer token in %s would travel in clear; "+
				"use https, or set insecure_http: true to accept that", r.URL, r.TokenEnv)
		}
	}
	return r, errs, warns
}

// boolField reads an optional true or false; ok is false when absent or null,
// and when it is anything else, which is added to errs.
func boolField(fields map[string]*yaml.Node, k string, errs *fieldErrors) (v, ok bool) {
	n, has := fields[k]
	if !has || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		return false, false
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if b, err := strconv.ParseBool(n.Value); err == nil {
			return b, true
		}
	}
	errs.add(k, "must be true or false")
	return false, false
}

// plainToRemote says whether u, a checked service URL, is plain http to a
// host other than loopback (127.0.0.0/8, ::1, localhost), where a token
// would cross a network in clear.
func plainToRemote(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "http" {
		return false
	}
	h := p.Hostname()
	if strings.EqualFold(h, "localhost") {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// parseLabel reads label: {zh: ..., en: ...}, both required.
func parseLabel(n *yaml.Node, errs *fieldErrors) ResourceLabel {
	var l ResourceLabel
	bad := errs.add
	if n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		bad("label", "required: {zh: ..., en: ...}")
		return l
	}
	if n.Kind != yaml.MappingNode {
		bad("label", "must be a mapping {zh: ..., en: ...}")
		return l
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		switch _, dup := fields[k]; {
		case k != "zh" && k != "en":
			bad("label."+k, "unknown key; a label has zh and en")
		case dup:
			bad("label."+k, "given twice")
		default:
			fields[k] = v
		}
	}
	for _, lang := range []struct {
		key string
		dst *string
	}{{"zh", &l.ZH}, {"en", &l.EN}} {
		v, ok := field(fields, lang.key)
		v = strings.TrimSpace(v)
		switch {
		case !ok:
			bad("label."+lang.key, "must be text")
		case v == "":
			bad("label."+lang.key, "required and not blank")
		case utf8.RuneCountInString(v) > maxLabelRunes:
			bad("label."+lang.key, "must be at most %d characters", maxLabelRunes)
		case strings.ContainsFunc(v, unicode.IsControl):
			bad("label."+lang.key, "must be one line without control characters")
		default:
			*lang.dst = v
		}
	}
	return l
}

// serviceURL checks a remote service's base URL and returns it without a
// trailing slash, since the calls append /lock, /deduct, /release and
// /holds/{key} to it; msg says what is wrong with it.
func serviceURL(raw string) (u string, msg string) {
	p, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", "must be a URL like http://127.0.0.1:9400"
	case p.Scheme != "http" && p.Scheme != "https":
		return "", "must be http or https"
	case p.Hostname() == "":
		return "", "must name a host"
	case p.User != nil:
		return "", "must not hold a user or password; name the token's variable in token_env"
	case strings.ContainsAny(raw, "?#"):
		return "", "must not have a query or fragment: the calls' paths are added to it"
	}
	return strings.TrimRight(raw, "/"), ""
}

// field is a key's text, "" when absent or null; ok is false when the
// value is a list or a mapping.
func field(fields map[string]*yaml.Node, k string) (string, bool) {
	n, has := fields[k]
	if !has {
		return "", true
	}
	return scalar(n)
}

// scalar is a node's text, "" for null; ok is false for a list, a mapping
// or an alias.
func scalar(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		return "", false
	}
	if n.ShortTag() == "!!null" {
		return "", true
	}
	return n.Value, true
}
