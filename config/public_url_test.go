package config

import (
	"reflect"
	"strings"
	"testing"
)

// -public-url takes an http(s) origin and nothing else; the Host names the
// dashboard answers to are its host (with and without the default port),
// or by default the loopback names on the listen port.
func TestPublicURLHosts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{nil, nil, []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"}},
		{[]string{"-addr", "0.0.0.0:80"}, nil, []string{"127.0.0.1:80", "127.0.0.1", "localhost:80", "localhost", "[::1]:80", "[::1]"}},
		{[]string{"-public-url", "https://Unhold.Example.com/"}, nil, []string{"unhold.example.com", "unhold.example.com:443"}},
		{nil, map[string]string{"UNHOLD_PUBLIC_URL": "http://ops.example:8443"}, []string{"ops.example:8443"}},
		{[]string{"-public-url", "http://[2001:db8::1]"}, nil, []string{"[2001:db8::1]", "[2001:db8::1]:80"}},
	} {
		cfg, err := Load(c.args, func(k string) string { return c.env[k] })
		if err != nil {
			t.Fatalf("%v %v: %v", c.args, c.env, err)
		}
		if got := cfg.Hosts(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v %v: hosts %q, want %q", c.args, c.env, got, c.want)
		}
	}
	for _, bad := range []string{"unhold.example.com", "ftp://unhold.example.com", "https://", "https://u:p@unhold.example.com",
		"https://unhold.example.com/dashboard", "https://unhold.example.com/?x=1", "https://unhold.example.com/#top"} {
		_, err := Load([]string{"-public-url", bad}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "-public-url must be empty, or an origin like https://unhold.example.com") {
			t.Errorf("-public-url %q: %v", bad, err)
		}
	}
}
