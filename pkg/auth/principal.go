// Package auth owns the answer to "who is calling, and for which tenant":
// the Principal carried in a request context, the Authenticator that derives
// it from a bearer token (API key or JWT), the YAML file that configures
// both, and what each role may call (access.go). The tenant always comes
// from the credentials, never from a request body (docs/architecture.md,
// "The write path").
package auth

import (
	"context"
	"fmt"
	"regexp"
)

// Authentication methods recorded in Principal.Method.
const (
	MethodAPIKey    = "api_key"
	MethodJWT       = "jwt"
	MethodAnonymous = "anonymous"
)

// Roles a principal can hold. Which role may call which method is declared
// in the protos (agentruntime.auth.v1.access) and enforced by the server
// kit with Permits; docs/security.md shows the matrix.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
	RoleWorker   = "worker"
)

// Principal is the authenticated caller.
type Principal struct {
	Tenant  string
	Subject string
	Role    string
	Method  string
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by NewContext. The boolean is
// false for calls that were never authenticated (health checks, reflection).
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Tenant ids become NATS subject tokens (ar.ev.<tenant>.>), so they must not
// contain '.', '*', '>' or whitespace, and their length is bounded.
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidateTenant reports whether id is a usable tenant id. Call it on tenant
// ids that come from flags or files before handing them to Anonymous.
func ValidateTenant(id string) error {
	if !tenantPattern.MatchString(id) {
		return fmt.Errorf("tenant %q is invalid: want 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit", id)
	}
	return nil
}

// ValidateRole reports whether role is one of the known roles.
func ValidateRole(role string) error {
	switch role {
	case RoleAdmin, RoleOperator, RoleViewer, RoleWorker:
		return nil
	}
	return fmt.Errorf("role %q is invalid: want one of admin, operator, viewer, worker", role)
}
