package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// openAPIDoc fetches and decodes GET /api/v1/openapi.json.
func openAPIDoc(t *testing.T, b bundle) map[string]any {
	t.Helper()
	rec := b.call(http.MethodGet, "/api/v1/openapi.json", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.json = %d %s", rec.Code, rec.Body)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decode the document: %v", err)
	}
	return doc
}

// docParam is a route parameter for the test's own reading.
var docParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// seedReads is seedShop with held-1 closed (its release tasks, the first
// of them task 1, not yet run) and one reconciliation run, which opened
// ticket 1.
func seedReads(t *testing.T, b bundle) {
	t.Helper()
	seedShop(t, b)
	_, err := b.s.CloseOrder(b.ctx, "held-1", models.TriggerUserCancel, "test")
	try(t, "close held-1", err)
	// A hand edit of sku-1, so the run opens ticket 1 for the reads of a
	// ticket to find.
	try(t, "hand edit", b.s.W.Exec(`UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-1'`).Error)
	_, err = b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
	try(t, "reconcile", err)
	// Approval request 1, of a MANUAL balance task.
	_, err = b.s.RequestApproval(b.ctx, moneyTask(t, b, "money-1", 300), models.ApprovalRerun, models.Decider{Name: "olga"}, "ticket 7")
	try(t, "request", err)
	// Webhook 1, with delivery 1 waiting.
	_, _, err = b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: "http://127.0.0.1:9/hook"}, "test")
	try(t, "webhook", err)
	try(t, "event", b.s.W.Exec(`INSERT INTO events (type, order_no, occurred_at, data) VALUES ('order.closed', 'held-1', ?, '{}')`, b.clock.Now()).Error)
	_, err = b.s.FanOutWebhooks(b.ctx)
	try(t, "fan out", err)
}

// TestOpenAPIDocument holds the document to the router: every /api/v1
// route is in it and it names no other; every operation says its role,
// answers the error shape on 401, 403 and 503, and a write its body. Then
// every GET it documents is called with its examples against a seeded shop
// and must answer its documented status with a body its schema accepts:
// every required field, no undocumented one, the documented types.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedReads(t, b)
		doc := openAPIDoc(t, b)
		if doc["openapi"] != "3.1.0" {
			t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
		}
		paths := doc["paths"].(map[string]any)
		documented := map[string]bool{}
		for p, ops := range paths {
			for m := range ops.(map[string]any) {
				documented[strings.ToUpper(m)+" "+docParam.ReplaceAllString(p, ":$1")] = true
			}
		}
		var registered []string
		for _, r := range registeredRoutes(b) {
			if _, path, _ := strings.Cut(r, " "); strings.HasPrefix(path, "/api/v1/") {
				registered = append(registered, r)
				if !documented[r] {
					t.Errorf("route %s is not in the document", r)
				}
			}
		}
		for r := range documented {
			if !slices.Contains(registered, r) {
				t.Errorf("the document names %s, which is not a route", r)
			}
		}
		called, ids := 0, map[any]string{}
		for _, p := range sortedKeys(paths) {
			for _, m := range sortedKeys(paths[p].(map[string]any)) {
				op := paths[p].(map[string]any)[m].(map[string]any)
				name := strings.ToUpper(m) + " " + p
				if other, dup := ids[op["operationId"]]; dup {
					t.Errorf("%s and %s have the same operationId %v", other, name, op["operationId"])
				}
				ids[op["operationId"]] = name
				checkOperation(t, doc, name, op)
				if m == "get" {
					called++
					callDocumented(t, b, doc, p, op)
				}
			}
		}
		if called < 15 {
			t.Fatalf("called %d documented GET routes, want every one (15 or more)", called)
		}
	})
}

// checkOperation checks what every operation of the document must say.
func checkOperation(t *testing.T, doc map[string]any, name string, op map[string]any) {
	t.Helper()
	if op["summary"] == "" || op["operationId"] == "" {
		t.Errorf("%s has no summary or operationId", name)
	}
	if role := op["x-role"]; role != "viewer" && role != "operator" && role != "admin" {
		t.Errorf("%s: x-role = %v", name, role)
	}
	responses := op["responses"].(map[string]any)
	for _, st := range []string{"401", "403", "503"} {
		r, ok := responses[st].(map[string]any)
		if !ok {
			t.Errorf("%s does not document %s", name, st)
			continue
		}
		s := responseSchema(r)
		if err := validate(doc, s, map[string]any{"error": map[string]any{"code": "FORBIDDEN", "message": "x"}}, "$"); err != nil {
			t.Errorf("%s: its %s schema is not the error shape: %v", name, st, err)
		}
		if err := validate(doc, s, map[string]any{"code": "FORBIDDEN"}, "$"); err == nil {
			t.Errorf("%s: its %s schema takes what is not the error shape", name, st)
		}
	}
	if _, hasBody := op["requestBody"]; strings.HasPrefix(name, "GET ") == hasBody {
		t.Errorf("%s: requestBody documented = %v, want it for every write and no read", name, hasBody)
	}
}

// successStatus is the operation's one 2xx answer.
func successStatus(t *testing.T, name string, op map[string]any) (int, map[string]any) {
	t.Helper()
	var found []string
	for st := range op["responses"].(map[string]any) {
		if strings.HasPrefix(st, "2") {
			found = append(found, st)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s documents the successes %v, want one", name, found)
	}
	n, _ := strconv.Atoi(found[0])
	return n, responseSchema(op["responses"].(map[string]any)[found[0]].(map[string]any))
}

func responseSchema(r map[string]any) map[string]any {
	return r["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
}

// callDocumented calls one documented GET with its parameters' examples
// and checks the answer against the document.
func callDocumented(t *testing.T, b bundle, doc map[string]any, path string, op map[string]any) {
	t.Helper()
	name := "GET " + path
	q := url.Values{}
	params, _ := op["parameters"].([]any)
	for _, x := range params {
		p := x.(map[string]any)
		ex, has := p["example"].(string)
		switch {
		case p["in"] == "path" && !has:
			t.Fatalf("%s: path parameter %v has no example", name, p["name"])
		case p["in"] == "path":
			path = strings.ReplaceAll(path, "{"+p["name"].(string)+"}", url.PathEscape(ex))
		case has:
			q.Set(p["name"].(string), ex)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	want, schema := successStatus(t, name, op)
	rec := b.call(http.MethodGet, path, "")
	if rec.Code != want {
		t.Errorf("%s (%s) = %d %s, want %d", name, path, rec.Code, rec.Body, want)
		return
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if err := validate(doc, schema, v, "$"); err != nil {
		t.Errorf("%s (%s): the answer is not what the document says: %v\n%s", name, path, err, rec.Body)
	}
}

// validate checks v against a schema of the document: $ref, anyOf, type
// (one or a list), enum, properties, required, additionalProperties,
// items, pattern and format date-time: what the document uses.
func validate(doc, s map[string]any, v any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		def, ok := doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: $ref %s names no schema", at, ref)
		}
		return validate(doc, def, v, at)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, alt := range alts {
			err := validate(doc, alt.(map[string]any), v, at)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: none of anyOf: %s", at, strings.Join(errs, "; "))
	}
	if typ, ok := s["type"]; ok {
		var types []string
		switch tt := typ.(type) {
		case string:
			types = []string{tt}
		case []any:
			for _, x := range tt {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && (jsonType(v) != "number" || !slices.Contains(types, "integer")) {
			return fmt.Errorf("%s: %s, want %v", at, jsonType(v), types)
		}
		if jsonType(v) == "number" && slices.Contains(types, "integer") && !slices.Contains(types, "number") {
			if _, err := v.(json.Number).Int64(); err != nil {
				return fmt.Errorf("%s: %v is not an integer", at, v)
			}
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
	}
	switch x := v.(type) {
	case string:
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			return fmt.Errorf("%s: %q does not match %s", at, x, p)
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", at, x)
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				if err := validate(doc, items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := x[r.(string)]; !ok {
				return fmt.Errorf("%s: required field %v is missing", at, r)
			}
		}
		for k, e := range x {
			if ps, ok := props[k].(map[string]any); ok {
				if err := validate(doc, ps, e, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: field %s is not documented", at, k)
				}
			case map[string]any:
				if err := validate(doc, ap, e, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
