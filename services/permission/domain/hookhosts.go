package domain

import (
	"net"
	"net/url"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/hostallow"
)

// HookHosts are the hosts a hook's target may name: the permission
// service calls a hook from inside the deployment, so a target is a
// request the server makes on the hook registrar's behalf, and an
// unchecked one reaches any internal address. The patterns are
// pkg/hostallow's. A nil *HookHosts allows any target; an empty one none.
type HookHosts struct {
	list hostallow.List
}

// LoopbackHookHosts are the hosts `agentruntime dev` allows by default.
var LoopbackHookHosts = hostallow.Loopback

// ParseHookHosts parses patterns (empty items are skipped); an invalid one
// is an error naming it.
func ParseHookHosts(patterns []string) (*HookHosts, error) {
	l, err := hostallow.Parse(patterns)
	if err != nil {
		return nil, err
	}
	return &HookHosts{list: l}, nil
}

// allows reports whether host:port matches a pattern.
func (h *HookHosts) allows(host, port string) bool { return h.list.Allows(host, port) }

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
