package endpoints_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
)

func TestParse(t *testing.T) {
	m, err := endpoints.Parse(" control=c:1, routing=r:2 ,", "d:0")
	if err != nil {
		t.Fatal(err)
	}
	for svc, want := range map[string]string{"control": "c:1", "routing": "r:2", "tasks": "d:0", "permission": "d:0", "evidence": "d:0"} {
		if got := m.Addr(svc); got != want {
			t.Errorf("Addr(%s) = %q, want %q", svc, got, want)
		}
	}
	if got, want := m.String(), "control=c:1,routing=r:2 (others: d:0)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for spec, wantErr := range map[string]string{
		"control":                 `"control": want name=host:port`,
		"=a:1":                    `want name=host:port`,
		"billing=a:1":             `unknown service "billing"`,
		"control=a:1,control=b:2": "control is named twice",
		"control=nohostport":      "missing port",
	} {
		_, err := endpoints.Parse(spec, "d:0")
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", spec, err, wantErr)
		}
	}
}

func TestServiceNames(t *testing.T) {
	for _, svc := range endpoints.Services {
		full := endpoints.HealthName(svc)
		if got := endpoints.ServiceOfName(full); got != svc {
			t.Errorf("ServiceOfName(%s) = %q, want %q", full, got, svc)
		}
	}
	if got := endpoints.HealthName("routing"); got != routingv1.RoutingService_ServiceDesc.ServiceName {
		t.Errorf("HealthName(routing) = %s, want %s", got, routingv1.RoutingService_ServiceDesc.ServiceName)
	}
	if got := endpoints.ServiceOfMethod(routingv1.RoutingService_DecideRoute_FullMethodName); got != "routing" {
		t.Errorf("ServiceOfMethod(DecideRoute) = %q", got)
	}
	if got := endpoints.ServiceOfMethod(healthpb.Health_Check_FullMethodName); got != "" {
		t.Errorf("ServiceOfMethod(health) = %q, want \"\"", got)
	}
}

// Two real servers: one serves routing (and says so in health), the other
// is the fallback. Calls and health checks land where the map says.
func TestConnRoutesCallsAndHealthByService(t *testing.T) {
	routingHeaders := make(chan []string, 16)
	routingAddr := serve(t, func(s *grpc.Server, h *health.Server) {
		routingv1.RegisterRoutingServiceServer(s, routingv1.UnimplementedRoutingServiceServer{})
		h.SetServingStatus(routingv1.RoutingService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	}, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == healthpb.Health_Check_FullMethodName {
			md, _ := metadata.FromIncomingContext(ctx)
			select {
			case routingHeaders <- md.Get(endpoints.HealthServiceHeader):
			default:
			}
		}
		return handler(ctx, req)
	}))
	fallback := serve(t, func(s *grpc.Server, h *health.Server) {
		controlv1.RegisterControlServiceServer(s, controlv1.UnimplementedControlServiceServer{})
		h.SetServingStatus(controlv1.ControlService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	})
	m, err := endpoints.Parse("routing="+routingAddr, fallback)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := endpoints.Dial(m, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Both services answer Unimplemented for the method (the servers embed
	// the Unimplemented stubs); a call to the wrong server would answer
	// "unknown service" instead.
	_, err = routingv1.NewRoutingServiceClient(conn).DecideRoute(ctx, &routingv1.DecideRouteRequest{})
	if st := status.Convert(err); st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "method DecideRoute not implemented") {
		t.Fatalf("DecideRoute through the map: %v, want routing's own Unimplemented", err)
	}
	_, err = controlv1.NewControlServiceClient(conn).GetSession(ctx, &controlv1.GetSessionRequest{})
	if st := status.Convert(err); st.Code() != codes.Unimplemented || !strings.Contains(st.Message(), "method GetSession not implemented") {
		t.Fatalf("GetSession through the fallback: %v, want control's own Unimplemented", err)
	}

	hc := healthpb.NewHealthClient(conn)
	for _, name := range []string{routingv1.RoutingService_ServiceDesc.ServiceName, controlv1.ControlService_ServiceDesc.ServiceName} {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %s through the map: %v %v, want SERVING", name, resp, err)
		}
	}
	// A health check says its service in a header, for a front door.
	if got := <-routingHeaders; !slices.Equal(got, []string{"routing"}) {
		t.Fatalf("health check header %s = %v, want [routing]", endpoints.HealthServiceHeader, got)
	}
	// Straight to the fallback, routing is unknown: the router did route.
	_, err = healthpb.NewHealthClient(conn.Service("tasks")).Check(ctx, &healthpb.HealthCheckRequest{Service: routingv1.RoutingService_ServiceDesc.ServiceName})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("routing's health at the fallback: %v, want NotFound", err)
	}
}

func serve(t *testing.T, register func(*grpc.Server, *health.Server), opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	h := health.NewServer()
	healthpb.RegisterHealthServer(s, h)
	register(s, h)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}
