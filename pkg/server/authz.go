package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	authv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/auth/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
)

// Reasons of the google.rpc.ErrorInfo a refusal carries.
const (
	// ReasonRoleNotPermitted: the caller's role may not call the method.
	ReasonRoleNotPermitted = "ROLE_NOT_PERMITTED"
	// ReasonAccessUndeclared: the method declares no role, so nobody may
	// call it (a server started with Serve never has such a method).
	ReasonAccessUndeclared = "ACCESS_UNDECLARED"
)

// DescriptorResolver finds descriptors by full name; *protoregistry.Files
// is one.
type DescriptorResolver interface {
	FindDescriptorByName(protoreflect.FullName) (protoreflect.Descriptor, error)
}

// accessTable maps full method names ("/pkg.Service/Method") to their
// declarations. It is built once, from the services registered when the
// first call (or Serve) needs it: gRPC accepts no registration after Serve.
type accessTable struct {
	once       sync.Once
	byMethod   map[string]*authv1.Access
	undeclared []string
}

func (s *Server) accessTable() *accessTable {
	t := &s.access
	t.once.Do(func() {
		t.byMethod = map[string]*authv1.Access{}
		for svc, info := range s.grpc.GetServiceInfo() {
			if exemptFromAuth("/" + svc + "/") {
				continue
			}
			for _, m := range info.Methods {
				full := "/" + svc + "/" + m.Name
				if s.foreign[svc] {
					t.byMethod[full] = &authv1.Access{MinRole: authv1.Role_ROLE_VIEWER}
					continue
				}
				if a, ok := s.lookupAccess(svc, m.Name); ok {
					t.byMethod[full] = a
				} else {
					t.undeclared = append(t.undeclared, strings.TrimPrefix(full, "/"))
				}
			}
		}
		sort.Strings(t.undeclared)
	})
	return t
}

func (s *Server) lookupAccess(svc, method string) (*authv1.Access, bool) {
	name := protoreflect.FullName(svc).Append(protoreflect.Name(method))
	for _, r := range []DescriptorResolver{s.cfg.Descriptors, protoregistry.GlobalFiles} {
		if r == nil {
			continue
		}
		d, err := r.FindDescriptorByName(name)
		if err != nil {
			continue
		}
		if md, ok := d.(protoreflect.MethodDescriptor); ok {
			return auth.AccessOf(md)
		}
	}
	return nil, false
}

// checkDeclarations fails when a registered method declares no role.
func (s *Server) checkDeclarations() error {
	if u := s.accessTable().undeclared; len(u) > 0 {
		return fmt.Errorf("server: %d method(s) declare no role (option (agentruntime.auth.v1.access) in their proto): %s", len(u), strings.Join(u, ", "))
	}
	return nil
}

// --- authorization --------------------------------------------------------

// authorizeUnary and authorizeStream are the one place roles are enforced:
// the authenticated principal's role against the method's declaration.

func (s *Server) authorizeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	if err := s.openDoor(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// openDoor turns a command (a method a viewer may not call) away while its
// tenant cannot append a single event (pkg/quota, Limiter.Open): it would
// be refused at its first append, after deciding. Reads always pass.
func (s *Server) openDoor(ctx context.Context, method string) error {
	if s.cfg.Quota == nil || exemptFromAuth(method) {
		return nil
	}
	if a, ok := s.accessTable().byMethod[method]; !ok || auth.Permits(a, auth.RoleViewer) {
		return nil
	}
	p, _ := auth.FromContext(ctx)
	if err := s.cfg.Quota.Open(ctx, p.Tenant); err != nil {
		return grpcerr.Status(err)
	}
	return nil
}

func (s *Server) authorizeStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

func (s *Server) authorize(ctx context.Context, method string) error {
	if exemptFromAuth(method) {
		return nil
	}
	p, _ := auth.FromContext(ctx)
	a, declared := s.accessTable().byMethod[method]
	if !declared {
		s.log.ErrorContext(ctx, "call to a method that declares no role refused", "grpc.method", method)
		return grpcerr.Status(fault.PermissionDenied(ReasonAccessUndeclared, strings.TrimPrefix(method, "/")+" declares no role; nobody may call it",
			map[string]string{"method": method, "held_role": p.Role}))
	}
	if auth.Permits(a, p.Role) {
		return nil
	}
	return grpcerr.Status(fault.PermissionDenied(ReasonRoleNotPermitted, auth.Denial(method, a, p.Role), map[string]string{
		"method":        method,
		"required_role": auth.Describe(a),
		"allowed_roles": strings.Join(auth.AllowedRoles(a), ","),
		"held_role":     p.Role,
	}))
}
