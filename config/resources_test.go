package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The example file, as a shop would write it.
const exampleResources = `resources:
  - type: gift_wrap
    kind: counter
    label: {zh: 礼品包装, en: Gift wrap}
  - type: giftcard
    kind: remote
    label: {zh: 礼品卡, en: Gift card}
    url: http://127.0.0.1:9400
    timeout: 2s
    token_env: GIFTCARD_TOKEN
`

func TestParseResources(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"GIFTCARD_TOKEN": "s3cret-token", "SEAT_TOKEN": "t"})
	tests := []struct {
		name, file string
		want       []DeclaredResource
	}{
		{"issue example", exampleResources, []DeclaredResource{
			{Type: "gift_wrap", Kind: KindCounter, Label: ResourceLabel{ZH: "礼品包装", EN: "Gift wrap"}},
			{Type: "giftcard", Kind: KindRemote, Label: ResourceLabel{ZH: "礼品卡", EN: "Gift card"},
				URL: "http://127.0.0.1:9400", Timeout: 2 * time.Second, TokenEnv: "GIFTCARD_TOKEN", Token: "s3cret-token", Strict: true},
		}},
		{"block style, default timeout, no token, path and trailing slash", `
resources:
- type: trial_seat
  kind: remote
  label:
    zh: "  试用席位 "
    en: Trial seat
  url: https://seats.example.com:8443/v1/
- type: p2
  kind: counter
  label: {en: P2, zh: 二}
`, []DeclaredResource{
			{Type: "trial_seat", Kind: KindRemote, Label: ResourceLabel{ZH: "试用席位", EN: "Trial seat"},
				URL: "https://seats.example.com:8443/v1", Timeout: DefaultRemoteTimeout, Strict: true},
			{Type: "p2", Kind: KindCounter, Label: ResourceLabel{ZH: "二", EN: "P2"}},
		}},
		{"approval", `resources:
  - {type: a1, kind: counter, label: {zh: 甲, en: A}, approval: true}
  - {type: a2, kind: remote, label: {zh: 乙, en: B}, url: "http://a", approval: false}
`, []DeclaredResource{
			{Type: "a1", Kind: KindCounter, Label: ResourceLabel{ZH: "甲", EN: "A"}, Approval: true},
			{Type: "a2", Kind: KindRemote, Label: ResourceLabel{ZH: "乙", EN: "B"}, URL: "http://a", Timeout: DefaultRemoteTimeout, Strict: true},
		}},
		{"timeout bounds", `resources:
  - {type: a1, kind: remote, label: {zh: 甲, en: A}, url: "http://a", timeout: 100ms}
  - {type: a2, kind: remote, label: {zh: 乙, en: B}, url: "https://b", timeout: 1m, token_env: SEAT_TOKEN}
`, []DeclaredResource{
			{Type: "a1", Kind: KindRemote, Label: ResourceLabel{ZH: "甲", EN: "A"}, URL: "http://a", Timeout: 100 * time.Millisecond,
				Strict: true},
			{Type: "a2", Kind: KindRemote, Label: ResourceLabel{ZH: "乙", EN: "B"}, URL: "https://b", Timeout: time.Minute,
				TokenEnv: "SEAT_TOKEN", Token: "t", Strict: true},
		}},
		{"a token over http to loopback", `resources:
  - {type: a1, kind: remote, label: {zh: 甲, en: A}, url: "http://127.0.0.2:9400", token_env: SEAT_TOKEN}
  - {type: a2, kind: remote, label: {zh: 乙, en: B}, url: "http://[::1]:9400/v1", token_env: SEAT_TOKEN, insecure_http: false}
  - {type: a3, kind: remote, label: {zh: 丙, en: C}, url: "http://LocalHost", token_env: SEAT_TOKEN, strict: true}
`, []DeclaredResource{
			{Type: "a1", Kind: KindRemote, Label: ResourceLabel{ZH: "甲", EN: "A"}, URL: "http://127.0.0.2:9400",
				Timeout: DefaultRemoteTimeout, TokenEnv: "SEAT_TOKEN", Token: "t", Strict: true},
			{Type: "a2", Kind: KindRemote, Label: ResourceLabel{ZH: "乙", EN: "B"}, URL: "http://[::1]:9400/v1",
				Timeout: DefaultRemoteTimeout, TokenEnv: "SEAT_TOKEN", Token: "t", Strict: true},
			{Type: "a3", Kind: KindRemote, Label: ResourceLabel{ZH: "丙", EN: "C"}, URL: "http://LocalHost",
				Timeout: DefaultRemoteTimeout, TokenEnv: "SEAT_TOKEN", Token: "t", Strict: true},
		}},
		{"insecure_http and strict: false, with warnings", `resources:
  - {type: a1, kind: remote, label: {zh: 甲, en: A}, url: "http://gift.internal:9400", token_env: SEAT_TOKEN, insecure_http: true}
  - {type: a2, kind: remote, label: {zh: 乙, en: B}, url: "http://10.0.0.7", strict: false}
  - {type: a3, kind: remote, label: {zh: 丙, en: C}, url: "http://10.0.0.8", insecure_http: true}
`, []DeclaredResource{
			{Type: "a1", Kind: KindRemote, Label: ResourceLabel{ZH: "甲", EN: "A"}, URL: "http://gift.internal:9400",
				Timeout: DefaultRemoteTimeout, TokenEnv: "SEAT_TOKEN", Token: "t", Strict: true, InsecureHTTP: true,
				Warnings: []string{"resources.yaml: resources[0] (a1): url: http://gift.internal:9400 is plain http to a host " +
					"other than loopback: the bearer token in SEAT_TOKEN travels in clear (insecure_http: true); use https"}},
			{Type: "a2", Kind: KindRemote, Label: ResourceLabel{ZH: "乙", EN: "B"}, URL: "http://10.0.0.7",
				Timeout: DefaultRemoteTimeout,
				Warnings: []string{"resources.yaml: resources[1] (a2): strict: false: an answer counts as done without " +
					"echoing the call's idempotency key, so a URL that points at another web server would hold and release " +
					"nothing, unseen (the dashboard marks the type unverified answers); remove it once the service echoes " +
					"idempotency_key"}},
			{Type: "a3", Kind: KindRemote, Label: ResourceLabel{ZH: "丙", EN: "C"}, URL: "http://10.0.0.8",
				Timeout: DefaultRemoteTimeout, Strict: true, InsecureHTTP: true},
		}},
		{"empty list", "resources: []\n", nil},
		{"null list", "resources:\n", nil},
		{"a 32-character name", `resources: [{type: a2345678901234567890123456789012, kind: counter, label: {zh: 长, en: Long}}]`,
			[]DeclaredResource{{Type: "a2345678901234567890123456789012", Kind: KindCounter, Label: ResourceLabel{ZH: "长", EN: "Long"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseResources("resources.yaml", []byte(tt.file), env)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseResourcesInvalid(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"GIFTCARD_TOKEN": "s3cret-token", "SPACED": "two words", "EMPTY": ""})
	// entry builds a one-entry file from an entry's keys in flow style.
	entry := func(keys string) string { return "resources:\n  - {" + keys + "}\n" }
	counter := `type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: Gift wrap}`
	remote := `type: giftcard, kind: remote, label: {zh: 礼品卡, en: Gift card}`
	tests := []struct {
		name, file string
		want       []string // the error's lines
	}{
		{"empty file", "", []string{"resources.yaml: empty; the file holds one key, resources:, a list of resource types"}},
		{"comments only", "# none yet\n", []string{"resources.yaml: empty; the file holds one key, resources:, a list of resource types"}},
		{"not yaml", "resources: [\n", []string{"resources.yaml: yaml: line 1: did not find expected node content"}},
		{"two documents", "resources: []\n---\nresources: []\n", []string{"resources.yaml: more than one YAML document; the file holds one"}},
		{"top level a list", "- type: a\n", []string{"resources.yaml: the file must be a mapping with one key, resources:"}},
		{"no resources key", "types: []\n", []string{"resources.yaml: types: unknown key; the file holds resources: and, optionally, retry:"}},
		{"resources twice", "resources: []\nresources: []\n", []string{"resources.yaml: resources: given twice"}},
		{"unknown top-level key", "resources: []\nversion: 2\n", []string{"resources.yaml: version: unknown key; the file holds resources: and, optionally, retry:"}},
		{"resources a mapping", "resources: {type: a}\n", []string{"resources.yaml: resources: must be a list of resource types"}},
		{"entry a string", "resources:\n  - gift_wrap\n", []string{
			"resources.yaml: resources[0]: must be a mapping of type, kind, label, approval and, for a remote type, url, timeout, token_env, strict and insecure_http"}},
		{"unknown key", entry(counter + ", colour: red"), []string{
			"resources.yaml: resources[0] (gift_wrap): colour: unknown key; an entry has type, kind, label, approval and, for a remote type, url, timeout, token_env, strict and insecure_http"}},
		{"misspelt key before the type", entry("kind: counter, typ: x, type: gift_wrap, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			"resources.yaml: resources[0] (gift_wrap): typ: unknown key; an entry has type, kind, label, approval and, for a remote type, url, timeout, token_env, strict and insecure_http"}},
		{"key twice", "resources:\n  - type: gift_wrap\n    kind: counter\n    kind: counter\n    label: {zh: 礼品包装, en: Gift wrap}\n", []string{
			"resources.yaml: resources[0] (gift_wrap): kind: given twice"}},
		{"approval not a bool", entry(counter + ", approval: yes please"), []string{
			"resources.yaml: resources[0] (gift_wrap): approval: must be true or false"}},
		{"no type", entry("kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			"resources.yaml: resources[0]: type: required"}},
		{"type a list", entry("type: [a], kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			"resources.yaml: resources[0]: type: must be text"}},
		{"type upper case", entry("type: Gift_Wrap, kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			`resources.yaml: resources[0] ("Gift_Wrap"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"type too short", entry("type: g, kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			`resources.yaml: resources[0] ("g"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"type too long", entry("type: a23456789012345678901234567890123, kind: counter, label: {zh: 长, en: Long}"), []string{
			`resources.yaml: resources[0] ("a23456789012345678901234567890123"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"type starts with a digit", entry("type: 2fa, kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			`resources.yaml: resources[0] ("2fa"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"type with a dash", entry("type: gift-wrap, kind: counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			`resources.yaml: resources[0] ("gift-wrap"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"type padded", entry(`type: " gift_wrap", kind: counter, label: {zh: 礼品包装, en: Gift wrap}`), []string{
			`resources.yaml: resources[0] (" gift_wrap"): type: must be 2 to 32 lowercase letters, digits or _, starting with a letter`}},
		{"built-in type", entry("type: inventory, kind: counter, label: {zh: 库存, en: Stock}"), []string{
			"resources.yaml: resources[0] (inventory): type: inventory is a built-in type; declare another name"}},
		{"another built-in type", entry("type: slot, kind: remote, label: {zh: 座位, en: Seat}, url: http://a"), []string{
			"resources.yaml: resources[0] (slot): type: slot is a built-in type; declare another name"}},
		{"type repeated", "resources:\n  - {" + counter + "}\n  - {" + remote + ", url: http://a}\n  - {" + counter + "}\n", []string{
			"resources.yaml: resources[2] (gift_wrap): type: declared again; first at resources[0]"}},
		{"no kind", entry("type: gift_wrap, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			"resources.yaml: resources[0] (gift_wrap): kind: required: counter or remote"}},
		{"kind unknown", entry("type: gift_wrap, kind: Counter, label: {zh: 礼品包装, en: Gift wrap}"), []string{
			`resources.yaml: resources[0] (gift_wrap): kind: must be counter or remote, not "Counter"`}},
		{"no label", entry("type: gift_wrap, kind: counter"), []string{
			"resources.yaml: resources[0] (gift_wrap): label: required: {zh: ..., en: ...}"}},
		{"label a string", entry("type: gift_wrap, kind: counter, label: Gift wrap"), []string{
			"resources.yaml: resources[0] (gift_wrap): label: must be a mapping {zh: ..., en: ...}"}},
		{"label without zh", entry("type: gift_wrap, kind: counter, label: {en: Gift wrap}"), []string{
			"resources.yaml: resources[0] (gift_wrap): label.zh: required and not blank"}},
		{"label en blank", entry(`type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: "  "}`), []string{
			"resources.yaml: resources[0] (gift_wrap): label.en: required and not blank"}},
		{"label en null", entry(`type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: ~}`), []string{
			"resources.yaml: resources[0] (gift_wrap): label.en: required and not blank"}},
		{"label in a third language", entry("type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: Gift wrap, fr: Emballage}"), []string{
			"resources.yaml: resources[0] (gift_wrap): label.fr: unknown key; a label has zh and en"}},
		{"label zh twice", entry("type: gift_wrap, kind: counter, label: {zh: 礼品包装, zh: 包装, en: Gift wrap}"), []string{
			"resources.yaml: resources[0] (gift_wrap): label.zh: given twice"}},
		{"label a list", entry("type: gift_wrap, kind: counter, label: {zh: [a], en: Gift wrap}"), []string{
			"resources.yaml: resources[0] (gift_wrap): label.zh: must be text"}},
		{"label too long", entry("type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: " + strings.Repeat("x", 65) + "}"), []string{
			"resources.yaml: resources[0] (gift_wrap): label.en: must be at most 64 characters"}},
		{"label on two lines", entry(`type: gift_wrap, kind: counter, label: {zh: 礼品包装, en: "Gift\nwrap"}`), []string{
			"resources.yaml: resources[0] (gift_wrap): label.en: must be one line without control characters"}},
		{"counter with remote keys", entry(counter + ", url: http://a, timeout: 2s, token_env: GIFTCARD_TOKEN"), []string{
			"resources.yaml: resources[0] (gift_wrap): url: only a remote type has one; a counter is kept by unhold",
			"resources.yaml: resources[0] (gift_wrap): timeout: only a remote type has one; a counter is kept by unhold",
			"resources.yaml: resources[0] (gift_wrap): token_env: only a remote type has one; a counter is kept by unhold"}},
		{"counter with a null url", entry(counter + ", url: ~"), []string{
			"resources.yaml: resources[0] (gift_wrap): url: only a remote type has one; a counter is kept by unhold"}},
		{"remote without url", entry(remote), []string{
			"resources.yaml: resources[0] (giftcard): url: required: the base URL of the service that keeps the holds"}},
		{"url not http", entry(remote + ", url: ftp://127.0.0.1:9400"), []string{
			"resources.yaml: resources[0] (giftcard): url: must be http or https"}},
		{"url without scheme", entry(remote + ", url: 127.0.0.1:9400"), []string{
			"resources.yaml: resources[0] (giftcard): url: must be a URL like http://127.0.0.1:9400"}},
		{"url host only", entry(remote + ", url: giftcard.internal"), []string{
			"resources.yaml: resources[0] (giftcard): url: must be http or https"}},
		{"url without host", entry(remote + ", url: http:///lock"), []string{
			"resources.yaml: resources[0] (giftcard): url: must name a host"}},
		{"url with a password", entry(remote + ", url: http://u:p@a"), []string{
			"resources.yaml: resources[0] (giftcard): url: must not hold a user or password; name the token's variable in token_env"}},
		{"url with a query", entry(remote + ", url: \"http://a/?x=1\""), []string{
			"resources.yaml: resources[0] (giftcard): url: must not have a query or fragment: the calls' paths are added to it"}},
		{"url with a fragment", entry(remote + ", url: http://a/#x"), []string{
			"resources.yaml: resources[0] (giftcard): url: must not have a query or fragment: the calls' paths are added to it"}},
		{"url a bad port", entry(remote + ", url: http://a:port"), []string{
			"resources.yaml: resources[0] (giftcard): url: must be a URL like http://127.0.0.1:9400"}},
		{"timeout short", entry(remote + ", url: http://a, timeout: 99ms"), []string{
			"resources.yaml: resources[0] (giftcard): timeout: must be a duration from 100ms to 60s, like 2s (absent: 2s)"}},
		{"timeout long", entry(remote + ", url: http://a, timeout: 61s"), []string{
			"resources.yaml: resources[0] (giftcard): timeout: must be a duration from 100ms to 60s, like 2s (absent: 2s)"}},
		{"timeout without unit", entry(remote + ", url: http://a, timeout: 2"), []string{
			"resources.yaml: resources[0] (giftcard): timeout: must be a duration from 100ms to 60s, like 2s (absent: 2s)"}},
		{"token_env not a name", entry(remote + ", url: http://a, token_env: $GIFTCARD_TOKEN"), []string{
			"resources.yaml: resources[0] (giftcard): token_env: must be the name of an environment variable: letters, digits and _, not starting with a digit"}},
		{"token_env unset", entry(remote + ", url: http://a, token_env: NOT_SET"), []string{
			"resources.yaml: resources[0] (giftcard): token_env: NOT_SET is not set or is empty; unset token_env if the service takes no token"}},
		{"token_env empty", entry(remote + ", url: http://a, token_env: EMPTY"), []string{
			"resources.yaml: resources[0] (giftcard): token_env: EMPTY is not set or is empty; unset token_env if the service takes no token"}},
		{"token with a space", entry(remote + ", url: http://a, token_env: SPACED"), []string{
			"resources.yaml: resources[0] (giftcard): token_env: SPACED holds spaces or control characters, which a bearer token cannot"}},
		{"a token over http to another host", entry(remote + ", url: http://gift.internal:9400/v1, token_env: GIFTCARD_TOKEN"), []string{
			"resources.yaml: resources[0] (giftcard): url: http://gift.internal:9400/v1 is plain http to a host other than " +
				"loopback, so the bearer token in GIFTCARD_TOKEN would travel in clear; use https, or set insecure_http: true to accept that"}},
		{"a token over http to a private address", entry(remote + ", url: http://10.0.0.7, token_env: GIFTCARD_TOKEN, insecure_http: false"), []string{
			"resources.yaml: resources[0] (giftcard): url: http://10.0.0.7 is plain http to a host other than " +
				"loopback, so the bearer token in GIFTCARD_TOKEN would travel in clear; use https, or set insecure_http: true to accept that"}},
		{"strict and insecure_http not booleans", entry(remote + `, url: http://a, strict: "false", insecure_http: yes`), []string{
			"resources.yaml: resources[0] (giftcard): strict: must be true or false",
			"resources.yaml: resources[0] (giftcard): insecure_http: must be true or false"}},
		{"strict a number, insecure_http a list", entry(remote + ", url: http://a, strict: 0, insecure_http: [true]"), []string{
			"resources.yaml: resources[0] (giftcard): strict: must be true or false",
			"resources.yaml: resources[0] (giftcard): insecure_http: must be true or false"}},
		{"counter with strict", entry(counter + ", strict: false, insecure_http: true"), []string{
			"resources.yaml: resources[0] (gift_wrap): strict: only a remote type has one; a counter is kept by unhold",
			"resources.yaml: resources[0] (gift_wrap): insecure_http: only a remote type has one; a counter is kept by unhold"}},
		{"every problem of every entry", `resources:
  - type: gift_wrap
    kind: counter
    label: {zh: 礼品包装, en: Gift wrap}
  - type: giftcard
    kind: remote
    label: {zh: 礼品卡}
    url: gopher://127.0.0.1:9400
    timeout: 2s
    token_env: GIFTCARD_TOKEN
  - type: points
    kind: counter
    label: {zh: 积分, en: Points}
`, []string{
			"resources.yaml: resources[1] (giftcard): label.en: required and not blank",
			"resources.yaml: resources[1] (giftcard): url: must be http or https",
			"resources.yaml: resources[2] (points): type: points is a built-in type; declare another name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseResources("resources.yaml", []byte(tt.file), env)
			if err == nil {
				t.Fatalf("parse = %+v, want the error\n%s", got, strings.Join(tt.want, "\n"))
			}
			if lines := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(lines, tt.want) {
				t.Errorf("error\n got %q\nwant %q", lines, tt.want)
			}
			if got != nil {
				t.Errorf("parse returned %+v with its error", got)
			}
		})
	}
}

// -resources and UNHOLD_RESOURCES name the file; the flag wins, and an
// empty value means no declared types.
func TestLoadResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "resources.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	other := filepath.Join(dir, "other.yaml")
	for path, body := range map[string]string{
		good:  exampleResources,
		bad:   strings.Replace(exampleResources, "http://127.0.0.1:9400", "gopher://127.0.0.1:9400", 1),
		other: "resources:\n  - {type: trial_seat, kind: counter, label: {zh: 试用席位, en: Trial seat}}\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	token := map[string]string{"GIFTCARD_TOKEN": "s3cret-token"}
	withEnv := func(path string) map[string]string {
		return map[string]string{"GIFTCARD_TOKEN": "s3cret-token", "UNHOLD_RESOURCES": path}
	}
	types := func(c Config) []string {
		var out []string
		for _, r := range c.Resources {
			out = append(out, string(r.Type))
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		env   map[string]string
		args  []string
		types []string
	}{
		{"none", token, nil, nil},
		{"env", withEnv(good), nil, []string{"gift_wrap", "giftcard"}},
		{"flag", token, []string{"-resources", other}, []string{"trial_seat"}},
		{"flag over env", withEnv(good), []string{"-resources", other}, []string{"trial_seat"}},
		{"empty flag over env", withEnv(good), []string{"-resources", ""}, nil},
		{"good flag hides bad env", withEnv(bad), []string{"-resources", other}, []string{"trial_seat"}},
	} {
		cfg, err := Load(tt.args, mapEnv(tt.env))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := types(cfg); !reflect.DeepEqual(got, tt.types) {
			t.Errorf("%s: declared types %q, want %q", tt.name, got, tt.types)
		}
	}
	cfg, err := Load(nil, mapEnv(withEnv(good)))
	if err != nil {
		t.Fatal(err)
	}
	if gc := cfg.Resources[1]; gc.Token != "s3cret-token" || gc.Timeout != 2*time.Second || gc.URL != "http://127.0.0.1:9400" {
		t.Errorf("giftcard = %+v", gc)
	}

	missing := filepath.Join(dir, "missing.yaml")
	for _, tt := range []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"missing file by flag", token, []string{"-resources", missing},
			"config: -resources: open " + missing + ": no such file or directory"},
		{"missing file by env", withEnv(missing), nil,
			"config: UNHOLD_RESOURCES: open " + missing + ": no such file or directory"},
		{"a directory", token, []string{"-resources", dir},
			"config: -resources: read " + dir + ": is a directory"},
		{"bad contents", withEnv(bad), nil,
			"config: " + bad + ": resources[1] (giftcard): url: must be http or https"},
		{"token variable unset", nil, []string{"-resources", good},
			"config: " + good + ": resources[1] (giftcard): token_env: GIFTCARD_TOKEN is not set or is empty; unset token_env if the service takes no token"},
	} {
		if _, err := Load(tt.args, mapEnv(tt.env)); err == nil || err.Error() != tt.wantErr {
			t.Errorf("%s: error\n got %v\nwant %s", tt.name, err, tt.wantErr)
		}
	}
}
