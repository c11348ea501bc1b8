package domain

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// HookHosts are the hosts a hook's target may name: the permission
// service calls a hook from inside the deployment, so a target is a
// request the server makes on the hook registrar's behalf, and an
// unchecked one reaches any internal address. Each pattern is host or
// host:port; a host is a name, an IPv4 address or a bracketed IPv6
// address, "*.example.com" matches any name below example.com, and a
// pattern without a port matches any port. Names are compared as written
// (case-insensitively), never resolved. A nil *HookHosts allows any target;
// an empty one none.
type HookHosts struct {
	patterns []hostPattern
}

type hostPattern struct {
	host string // lower case; "*.suffix" for a wildcard
	port string // empty: any
}

// LoopbackHookHosts are the hosts `agentruntime dev` allows by default.
var LoopbackHookHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// ParseHookHosts parses patterns (empty items are skipped); an invalid one
// is an error naming it.
func ParseHookHosts(patterns []string) (*HookHosts, error) {
	h := &HookHosts{}
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
			return nil, fmt.Errorf("%q is not a host[:port] pattern (a name, an address, [IPv6], or *.domain; a port is optional)", raw)
		}
		if port != "" {
			if strings.Trim(port, "0123456789") != "" || len(port) > 5 {
				return nil, fmt.Errorf("%q: port %q is not a number", raw, port)
			}
		}
		h.patterns = append(h.patterns, hostPattern{host: host, port: port})
	}
	return h, nil
}

// allows reports whether host:port matches a pattern.
func (h *HookHosts) allows(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range h.patterns {
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

// CheckHookTarget refuses a hook whose target's host is not allowed,
// naming the hook's target field: RegisterHook refuses to register it,
// and a hook registered before (the list narrowed since) is not called.
func (h *HookHosts) CheckHookTarget(hook *eventsv1.Hook) error {
	if h == nil {
		return nil
	}
	var field, host, port string
	switch t := hook.GetHandler().(type) {
	case *eventsv1.Hook_HttpUrl:
		field = "hook.http_url"
		u, err := url.Parse(t.HttpUrl)
		if err != nil {
			return fieldErr(field, "must be an http or https URL")
		}
		host, port = u.Hostname(), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
	case *eventsv1.Hook_GrpcTarget:
		field = "hook.grpc_target"
		target := t.GrpcTarget
		if scheme, rest, ok := strings.Cut(target, ":///"); ok {
			if scheme != "dns" && scheme != "passthrough" {
				return fieldErr(field, "%q: a hook's gRPC target is host:port (or dns:///host:port); the %s scheme is not allowed", target, scheme)
			}
			target = rest
		} else if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") || strings.HasPrefix(target, "vsock:") {
			return fieldErr(field, "%q: a hook's gRPC target is host:port (or dns:///host:port), not a local socket", target)
		}
		hp, pt, err := net.SplitHostPort(target)
		if err != nil {
			hp, pt = strings.Trim(target, "[]"), "443"
		}
		host, port = hp, pt
	default:
		return nil
	}
	if !h.allows(host, port) {
		return fieldErr(field, "host %s:%s is not allowed for hooks (--hook-allow-hosts, AR_HOOK_ALLOW_HOSTS; see docs/security.md)", host, port)
	}
	return nil
}
