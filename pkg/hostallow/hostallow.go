// Package hostallow owns the allowlist of hosts the runtime may call on a
// caller's behalf (--hook-allow-hosts): the permission service's hook
// targets and the control service's webhook URLs. A request the server
// makes for a caller reaches whatever the caller names, internal addresses
// included, unless the name is checked against a list the operator chose.
package hostallow

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// List is an allowlist. Each pattern is host or host:port; a host is a
// name, an IPv4 address or a bracketed IPv6 address, "*.example.com"
// matches any name below example.com, and a pattern without a port
// matches any port. Names are compared as written (case-insensitively),
// never resolved. The zero List allows nothing.
type List struct {
	patterns []pattern
}

type pattern struct {
	host string // lower case; "*.suffix" for a wildcard
	port string // empty: any
}

// Loopback are the hosts `agentruntime dev` allows by default.
var Loopback = []string{"localhost", "127.0.0.1", "[::1]"}

// Parse parses patterns (empty items are skipped); an invalid one is an
// error naming it.
func Parse(patterns []string) (List, error) {
	var l List
	for _, raw := range patterns {
		p := strings.ToLower(strings.TrimSpace(raw))
		if p == "" {
			continue
		}
		host, port := p, ""
		if hp, pt, err := net.SplitHostPort(p); err == nil {
			host, port = hp, pt
		} else if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
			host = p[1 : len(p)-1]
		}
		if host == "" || strings.ContainsAny(host, "/@ \t") || (strings.Contains(host, "*") && (!strings.HasPrefix(host, "*.") || strings.Count(host, "*") > 1 || len(host) < 3)) {
			return List{}, fmt.Errorf("%q is not a host[:port] pattern (a name, an address, [IPv6], or *.domain; a port is optional)", raw)
		}
		if port != "" {
			if strings.Trim(port, "0123456789") != "" || len(port) > 5 {
				return List{}, fmt.Errorf("%q: port %q is not a number", raw, port)
			}
		}
		l.patterns = append(l.patterns, pattern{host: host, port: port})
	}
	return l, nil
}

// Allows reports whether host:port matches a pattern.
func (l List) Allows(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range l.patterns {
		if p.port != "" && p.port != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(p.host, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
			continue
		}
		if host == p.host {
			return true
		}
	}
	return false
}

// HostPort is an http or https URL's host and port (the scheme's default
// when it names none); an error says why raw is not such a URL.
func HostPort(raw string) (host, port string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("must be an http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", "", fmt.Errorf("must be an http or https URL, not %q", u.Scheme)
	}
	if u.User != nil {
		return "", "", fmt.Errorf("must not carry credentials in the URL")
	}
	host, port = u.Hostname(), u.Port()
	if host == "" {
		return "", "", fmt.Errorf("must name a host")
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return host, port, nil
}
