// Package peerauth holds the credentials the control service sends to the
// A2A peer agents it calls (--a2a-peer-credentials,
// AR_A2A_PEER_CREDENTIALS; docs/a2a.md, "Calling a peer"). The file is
// YAML the operator may commit: each entry names the hosts it is for (a
// host[:port] pattern, as --a2a-peers takes), a scheme, and where the
// secret is (a file, or an environment variable), never the secret:
//
//	peers:
//	  - host: painter.example:443
//	    scheme: bearer            # Authorization: Bearer <secret>
//	    secret_file: /run/secrets/painter-token
//	  - host: "*.agents.example"
//	    scheme: api_key           # <header>: <secret>
//	    header: X-API-Key
//	    secret_env: AGENTS_API_KEY
//
// A request is given the first entry whose pattern holds its own host and
// port, and nothing when none does.
package peerauth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
)

// Schemes a credential may have.
const (
	// Bearer sends "Authorization: Bearer <secret>".
	Bearer = "bearer"
	// APIKey sends "<header>: <secret>".
	APIKey = "api_key"
)

// Set is the credentials of a file; the zero Set (and nil) holds none.
type Set struct {
	entries []entry
}

type entry struct {
	pattern string
	hosts   hostallow.List
	header  string
	value   string
}

type file struct {
	Peers []struct {
		Host       string `yaml:"host"`
		Scheme     string `yaml:"scheme"`
		Header     string `yaml:"header"`
		SecretFile string `yaml:"secret_file"`
		SecretEnv  string `yaml:"secret_env"`
	} `yaml:"peers"`
}

// Load reads the credentials file at path, and each secret it points at.
// An error names the file and the entry (peers[i]) and never holds a
// secret.
func Load(path string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Set{}
	for i, p := range f.Peers {
		at := fmt.Sprintf("%s: peers[%d]", path, i)
		if strings.TrimSpace(p.Host) == "" {
			return nil, fmt.Errorf("%s.host: required (a host[:port] pattern, as --a2a-peers takes)", at)
		}
		hosts, err := hostallow.Parse([]string{p.Host})
		if err != nil {
			return nil, fmt.Errorf("%s.host: %w", at, err)
		}
		e := entry{pattern: p.Host, hosts: hosts}
		switch p.Scheme {
		case Bearer:
			if p.Header != "" {
				return nil, fmt.Errorf("%s.header: only an %s credential names its header (a bearer token goes in Authorization)", at, APIKey)
			}
			e.header = "Authorization"
		case APIKey:
			if !httpguts.ValidHeaderFieldName(p.Header) {
				return nil, fmt.Errorf("%s.header: %q is not an HTTP header name (an %s credential needs one, e.g. X-API-Key)", at, p.Header, APIKey)
			}
			e.header = http.CanonicalHeaderKey(p.Header)
		case "":
			return nil, fmt.Errorf("%s.scheme: required (%s or %s)", at, Bearer, APIKey)
		default:
			return nil, fmt.Errorf("%s.scheme: %q is not a scheme this runtime sends (%s or %s)", at, p.Scheme, Bearer, APIKey)
		}
		secret, err := readSecret(at, p.SecretFile, p.SecretEnv)
		if err != nil {
			return nil, err
		}
		if e.value = secret; p.Scheme == Bearer {
			e.value = "Bearer " + secret
		}
		s.entries = append(s.entries, e)
	}
	return s, nil
}

// readSecret reads the secret from a file (its surrounding white space
// dropped) or an environment variable: exactly one of them.
func readSecret(at, path, env string) (string, error) {
	var secret string
	switch {
	case path != "" && env != "":
		return "", fmt.Errorf("%s: secret_file and secret_env both given; one of them", at)
	case path != "":
		raw, err := os.ReadFile(path)
		if err != nil {
			// The error names the path, never what it holds.
			return "", fmt.Errorf("%s.secret_file: %w", at, err)
		}
		secret = strings.TrimSpace(string(raw))
		if secret == "" {
			return "", fmt.Errorf("%s.secret_file: %s is empty", at, path)
		}
	case env != "":
		secret = strings.TrimSpace(os.Getenv(env))
		if secret == "" {
			return "", fmt.Errorf("%s.secret_env: the environment variable %s is unset or empty", at, env)
		}
	default:
		return "", fmt.Errorf("%s: secret_file or secret_env is required (where the secret is; the file holds none)", at)
	}
	if !httpguts.ValidHeaderFieldValue(secret) {
		return "", fmt.Errorf("%s: the secret is not a valid HTTP header value (a line break or a control character)", at)
	}
	return secret, nil
}

// Header is the header a request to host:port carries (ok false: none):
// the first entry whose pattern holds them.
func (s *Set) Header(host, port string) (name, value string, ok bool) {
	if s == nil {
		return "", "", false
	}
	for _, e := range s.entries {
		if e.hosts.Allows(host, port) {
			return e.header, e.value, true
		}
	}
	return "", "", false
}

// Len is the number of entries.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}
