package peerauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An entry gives its header to the hosts its pattern holds, the first
// that holds them; a secret is read from its file (white space dropped)
// or its environment variable.
func TestHeaderIsTheFirstEntryThatHoldsTheHost(t *testing.T) {
	token := write(t, "token", "  tok-1\n")
	t.Setenv("PEER_KEY", "key-2")
	s, err := Load(write(t, "creds.yaml", `
peers:
  - host: painter.example:443
    scheme: bearer
    secret_file: `+token+`
  - host: "*.agents.example"
    scheme: api_key
    header: x-api-key
    secret_env: PEER_KEY
  - host: painter.example
    scheme: api_key
    header: X-Other
    secret_env: PEER_KEY
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ host, port, name, value string }{
		{"painter.example", "443", "Authorization", "Bearer tok-1"},
		{"PAINTER.example", "443", "Authorization", "Bearer tok-1"},
		{"painter.example", "8443", "X-Other", "key-2"},
		{"a.agents.example", "80", "X-Api-Key", "key-2"},
		{"agents.example", "80", "", ""},
		{"painter.example.evil", "443", "", ""},
	} {
		name, value, ok := s.Header(c.host, c.port)
		if name != c.name || value != c.value || ok != (c.name != "") {
			t.Errorf("Header(%s, %s) = %q %q %v, want %q %q", c.host, c.port, name, value, ok, c.name, c.value)
		}
	}
	var none *Set
	if _, _, ok := none.Header("painter.example", "443"); ok || none.Len() != 0 {
		t.Error("no set gave a header")
	}
}

// A bad file is refused naming the file and the entry, never a secret.
func TestABadFileNamesTheEntry(t *testing.T) {
	empty := write(t, "empty", "\n")
	secret := write(t, "secret", "s3cr3t-value\n")
	t.Setenv("EMPTY_KEY", "")
	for name, c := range map[string]struct{ yaml, want string }{
		"bad yaml":       {"peers: [", "creds.yaml"},
		"unknown field":  {"peers:\n  - {host: h, scheme: bearer, secret_env: X, token: t}\n", "token"},
		"no host":        {"peers:\n  - {scheme: bearer, secret_file: " + secret + "}\n", "peers[0].host"},
		"bad host":       {"peers:\n  - {host: \"a/b\", scheme: bearer, secret_file: " + secret + "}\n", "peers[0].host"},
		"no scheme":      {"peers:\n  - {host: h, secret_file: " + secret + "}\n", "peers[0].scheme: required"},
		"unknown scheme": {"peers:\n  - {host: h, scheme: basic, secret_file: " + secret + "}\n", `peers[0].scheme: "basic"`},
		"api key header": {"peers:\n  - {host: h, scheme: api_key, secret_file: " + secret + "}\n", "peers[0].header"},
		"bearer header":  {"peers:\n  - {host: h, scheme: bearer, header: X-Key, secret_file: " + secret + "}\n", "peers[0].header"},
		"no secret":      {"peers:\n  - {host: h, scheme: bearer}\n", "peers[0]: secret_file or secret_env is required"},
		"both secrets":   {"peers:\n  - {host: h, scheme: bearer, secret_file: " + secret + ", secret_env: X}\n", "peers[0]: secret_file and secret_env"},
		"empty file":     {"peers:\n  - {host: h, scheme: bearer, secret_file: " + secret + "}\n  - {host: g, scheme: bearer, secret_file: " + empty + "}\n", "peers[1].secret_file"},
		"missing file":   {"peers:\n  - {host: h, scheme: bearer, secret_file: /nonexistent/token}\n", "peers[0].secret_file"},
		"empty env":      {"peers:\n  - {host: h, scheme: bearer, secret_env: EMPTY_KEY}\n", "peers[0].secret_env: the environment variable EMPTY_KEY"},
	} {
		path := write(t, "creds.yaml", c.yaml)
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want an error naming %s and %q", name, err, path, c.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file loaded")
	}
	bad := write(t, "bad", "tok\x01en")
	if _, err := Load(write(t, "creds.yaml", "peers:\n  - {host: h, scheme: bearer, secret_file: "+bad+"}\n")); err == nil || !strings.Contains(err.Error(), "peers[0]") {
		t.Errorf("a secret that is no header value: %v", err)
	}
}
