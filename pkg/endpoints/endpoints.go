// Package endpoints owns how a client of the runtime reaches each of the
// five services: one address for all of them (`agentruntime dev`, or a
// front door that routes by gRPC service name) or a per-service map
// ("control=HOST:PORT,tasks=...,routing=...,permission=...,evidence=...")
// where a service not named falls back to the one address. Conn is a
// grpc.ClientConnInterface that sends each call to its service's address,
// so generated clients and the worker need not know the shape they run in.
// Clients in other languages follow the same convention
// (docs/configuration.md).
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Services are the names a map may use, as in `agentruntime serve <name>`.
var Services = []string{"control", "tasks", "routing", "permission", "evidence"}

// Map says where each service is.
type Map struct {
	// Default serves every service the map does not name.
	Default string
	// Addrs by service name.
	Addrs map[string]string
}

// Parse reads "name=host:port,..." (spaces around items allowed; empty: no
// entries) over the fallback address. An unknown name, an entry without
// "=", a name given twice or an address that is not host:port is an error
// naming the entry.
func Parse(spec, fallback string) (Map, error) {
	m := Map{Default: fallback, Addrs: map[string]string{}}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
		if !ok || name == "" || addr == "" {
			return Map{}, fmt.Errorf("endpoint %q: want name=host:port", item)
		}
		if !slices.Contains(Services, name) {
			return Map{}, fmt.Errorf("endpoint %q: unknown service %q (want one of %s)", item, name, strings.Join(Services, ", "))
		}
		if _, dup := m.Addrs[name]; dup {
			return Map{}, fmt.Errorf("endpoint %q: %s is named twice", item, name)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return Map{}, fmt.Errorf("endpoint %q: %w", item, err)
		}
		m.Addrs[name] = addr
	}
	return m, nil
}

// Addr is where service is: its own address, else Default.
func (m Map) Addr(service string) string {
	if a, ok := m.Addrs[service]; ok {
		return a
	}
	return m.Default
}

// String is the map in Parse's form with the fallback for the others, for
// logs: "control=a:1,routing=b:2 (others: c:3)".
func (m Map) String() string {
	names := make([]string, 0, len(m.Addrs))
	for n := range m.Addrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n + "=" + m.Addrs[n])
	}
	if len(names) == len(Services) {
		return b.String()
	}
	if b.Len() == 0 {
		return m.Default
	}
	return b.String() + " (others: " + m.Default + ")"
}

// ServiceOfMethod is the service a full gRPC method belongs to:
// "/agentruntime.routing.v1.RoutingService/Decide" is "routing". Methods
// outside agentruntime.<service>.v1 (health, reflection) give "".
func ServiceOfMethod(method string) string {
	pkg, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return ServiceOfName(pkg)
}

// ServiceOfName is the service a full gRPC service name (as health checks
// name it) belongs to: "agentruntime.routing.v1.RoutingService" is
// "routing"; anything else gives "".
func ServiceOfName(full string) string {
	parts := strings.Split(full, ".")
	if len(parts) < 3 || parts[0] != "agentruntime" || !slices.Contains(Services, parts[1]) {
		return ""
	}
	return parts[1]
}

// HealthName is the full gRPC service name health checks ask for.
func HealthName(service string) string {
	if service == "" {
		return ""
	}
	return "agentruntime." + service + ".v1." + strings.ToUpper(service[:1]) + service[1:] + "Service"
}

// HealthServiceHeader carries, on a health check, the service the check
// names ("routing"), so a front door routing by header can send it to the
// process that serves that service.
const HealthServiceHeader = "agentruntime-service"

// Conn sends each call to the address of its service. Health checks go to
// the address of the service they name, so Check(service:
// "agentruntime.routing.v1.RoutingService") asks the process that serves
// routing. Everything else (reflection, health Watch) goes to Default.
type Conn struct {
	m     Map
	conns map[string]*grpc.ClientConn // by address
}

var _ grpc.ClientConnInterface = (*Conn)(nil)

// Dial creates one client connection per distinct address (lazily
// connected, as grpc.NewClient does).
func Dial(m Map, opts ...grpc.DialOption) (*Conn, error) {
	c := &Conn{m: m, conns: map[string]*grpc.ClientConn{}}
	addrs := []string{m.Default}
	for _, a := range m.Addrs {
		addrs = append(addrs, a)
	}
	for _, a := range addrs {
		if a == "" || c.conns[a] != nil {
			continue
		}
		cc, err := grpc.NewClient(a, opts...)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("dial %s: %w", a, err)
		}
		c.conns[a] = cc
	}
	return c, nil
}

// Map is where the connection sends each service's calls.
func (c *Conn) Map() Map { return c.m }

// Service is the connection to one service's address.
func (c *Conn) Service(service string) grpc.ClientConnInterface {
	return c.forAddr(c.m.Addr(service))
}

func (c *Conn) forAddr(addr string) grpc.ClientConnInterface {
	if cc := c.conns[addr]; cc != nil {
		return cc
	}
	return noAddress{}
}

// Invoke implements grpc.ClientConnInterface.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	service := ServiceOfMethod(method)
	if service == "" && method == healthpb.Health_Check_FullMethodName {
		if req, ok := args.(*healthpb.HealthCheckRequest); ok {
			service = ServiceOfName(req.GetService())
			if service != "" {
				// A front door cannot read the body: say it in a header
				// its routes match (deploy/k8s/base/gateway).
				ctx = metadata.AppendToOutgoingContext(ctx, HealthServiceHeader, service)
			}
		}
	}
	return c.Service(service).Invoke(ctx, method, args, reply, opts...)
}

// NewStream implements grpc.ClientConnInterface.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.Service(ServiceOfMethod(method)).NewStream(ctx, desc, method, opts...)
}

// Close closes every connection.
func (c *Conn) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// noAddress answers calls to a service with no address at all.
type noAddress struct{}

func (noAddress) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return errNoAddress
}

func (noAddress) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errNoAddress
}

var errNoAddress = status.Error(codes.Unavailable, "endpoints: no address for this service (set --addr or name it in --endpoints)")
