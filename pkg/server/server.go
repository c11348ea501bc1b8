// Package server owns the gRPC server every agentruntime service runs on:
// health and reflection, OpenTelemetry tracing and metrics through the gRPC
// stats handler, and one interceptor chain that recovers panics, logs each
// call, authenticates the caller, enforces the role each method declares
// in its proto (docs/architecture.md, "Authorization and the trust model")
// and validates the request against its protovalidate rules before a
// handler sees it (docs/architecture.md, "The write path", "The deployed
// shape" and "Errors: one vocabulary, one mapping").
// Services only register their implementations and call MarkServing.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"buf.build/go/protovalidate"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/test/bufconn"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/telemetry"
)

const defaultShutdownTimeout = 10 * time.Second

// Config configures a Server. Only Authenticator is required.
type Config struct {
	Listen         string               // address for Listen, e.g. "127.0.0.1:7070"
	Logger         *slog.Logger         // nil discards logs
	TracerProvider trace.TracerProvider // nil records no spans; never the global
	MeterProvider  metric.MeterProvider // nil records no metrics; never the global
	// Propagator reads trace context from incoming metadata; nil means
	// telemetry.Propagator() (W3C Trace Context + Baggage).
	Propagator    propagation.TextMapPropagator
	Authenticator auth.Authenticator // required; auth.Anonymous for dev mode
	// ShutdownTimeout bounds GracefulStop; streams still open after it are
	// cut by Stop. Default 10s.
	ShutdownTimeout time.Duration
	// GRPCOptions are appended to the kit's own server options and
	// override them (the stream cap and keepalive policy of limits.go,
	// message size limits, ...). They must not add interceptors or stats
	// handlers that bypass the kit's chain.
	GRPCOptions []grpc.ServerOption
	// CORSOrigins are the browser origins ("https://console.example.com")
	// allowed to call the API over Connect and gRPC-Web; "*" allows any.
	// Empty: loopback origins when the server listens on loopback, none
	// otherwise.
	CORSOrigins []string
	// Descriptors are looked in for the role declarations of registered
	// methods before protoregistry.GlobalFiles (which holds every generated
	// agentruntime proto); nil means only the global registry.
	Descriptors DescriptorResolver
	// Console, when set, serves GET and HEAD requests for paths that are
	// not RPCs on the same port (the web console; see console.go).
	Console http.Handler
	// LoopbackHosts serves an HTTP request only when its Host is a loopback
	// name (localhost, 127.0.0.1, [::1]) with the listening port, and its
	// Origin, when it has one, is such a host and port too or one of
	// CORSOrigins; anything else is refused before any handler, the console
	// included (421 for the Host, 403 for the Origin). For a server without
	// credentials on loopback (dev without --auth): a web page whose own
	// name has been rebound to 127.0.0.1 reaches the port, but its
	// requests still carry its name (see http.go).
	LoopbackHosts bool
	// TLS, when set, makes the port serve TLS and nothing else: its
	// Certificates (or GetCertificate) are the server's. The server sets
	// NextProtos and GetConfigForClient: a client that offers only h2 in
	// ALPN (gRPC clients) gets gRPC's own transport, one that offers
	// HTTP/1.1 too (browsers, curl, proxies) an HTTP/2 server that sends
	// gRPC requests to the gRPC server and the rest to the transcoder, one
	// that negotiates HTTP/1.1 the transcoder (tls.go). The certificate is
	// read once: a renewed one takes a restart, unless GetCertificate
	// reloads it.
	TLS *tls.Config
	// Quota, when set, charges what each authenticated unary call appends
	// to its tenant's append quota and refuses a call beyond it
	// (ResourceExhausted with RetryInfo; pkg/quota). Nil: no quotas.
	Quota *quota.Limiter
}

// Server is a gRPC server with the kit's cross-cutting behaviour installed.
type Server struct {
	cfg       Config
	log       *slog.Logger
	grpc      *grpc.Server
	health    *health.Server
	validator protovalidate.Validator
	authn     auth.Authenticator
	access    accessTable
	// routes are the HTTP handlers mounted beside the API (Handle).
	routes map[string]http.Handler
	// foreign are the services registered with RegisterForeign.
	foreign map[string]bool
	// local is the in-memory listener Local's connection reaches the
	// server through; localConn that connection.
	local     *bufconn.Listener
	localConn *grpc.ClientConn
}

// New builds a Server. Register services on GRPC(), then MarkServing and
// Serve.
func New(cfg Config) (*Server, error) {
	if cfg.Authenticator == nil {
		return nil, errors.New("server: Authenticator is required (use auth.Anonymous for single-user dev mode)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = tracenoop.NewTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = metricnoop.NewMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = telemetry.Propagator()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = defaultShutdownTimeout
	}
	// One validator for the server's lifetime: it caches the compiled rules
	// of every message type it has seen.
	validator, err := protovalidate.New()
	if err != nil {
		return nil, fmt.Errorf("server: protovalidate: %w", err)
	}
	streams, err := countStreams(cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		health:    health.NewServer(),
		validator: validator,
		authn:     cfg.Authenticator,
	}
	opts := []grpc.ServerOption{
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(cfg.TracerProvider),
			otelgrpc.WithMeterProvider(cfg.MeterProvider),
			otelgrpc.WithPropagators(cfg.Propagator),
			// Probes arrive every few seconds and would drown real traces.
			otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
		)),
		grpc.ChainUnaryInterceptor(s.recoverUnary, s.logUnary, s.authUnary, s.authorizeUnary, s.validateUnary),
		grpc.ChainStreamInterceptor(s.recoverStream, watchLimit(maxHealthWatches), streams, s.logStream, s.authStream, s.authorizeStream, s.validateStream),
	}
	// Stream caps and keepalive enforcement (limits.go) come first so that
	// GRPCOptions can override them.
	opts = append(opts, grpcLimits()...)
	s.grpc = grpc.NewServer(append(opts, cfg.GRPCOptions...)...)
	s.routes = map[string]http.Handler{}
	s.foreign = map[string]bool{}
	s.local = bufconn.Listen(localBuffer)
	s.localConn, err = grpc.NewClient("passthrough:///local",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return s.local.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("server: local connection: %w", err)
	}

	// Not serving until the service says it is ready: a readiness probe
	// must not send traffic to a process still replaying its projections.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s, nil
}

// GRPC returns the underlying server to register services on. Register
// before Serve.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// localBuffer is the in-memory pipe's buffer of Local's connection.
const localBuffer = 1 << 20

// Local returns a client connection to this server that never leaves the
// process: its calls run the same interceptor chain as a caller's on the
// port (authentication from the "authorization" metadata the caller puts
// on the outgoing context, authorization, validation, logging). Handlers
// mounted with Handle call the API through it, as any client would. It
// works once Serve has started and closes when Serve returns.
func (s *Server) Local() grpc.ClientConnInterface { return s.localConn }

// Handle mounts h at the exact path, or below it when it ends with a
// slash, on the HTTP side of the port (where
// Connect, gRPC-Web and the console are served), inside the CORS policy and
// the loopback guard; h authenticates its own requests, typically by
// calling the API through Local with the request's credentials. Mount
// before Serve.
func (s *Server) Handle(path string, h http.Handler) { s.routes[path] = h }

// RegisterForeign registers a gRPC service of a protocol this runtime
// speaks but whose protos it did not write (A2A's lf.a2a.v1.A2AService),
// so they declare no role. Like a handler mounted with Handle it holds no
// privilege of its own: it calls the API through Local with the caller's
// credentials, where each call is authorized. So any authenticated caller
// of at least the viewer role reaches it (not a worker's key), and it is
// served over native gRPC only: no Connect, gRPC-Web or REST transcoding of
// its protos' own HTTP annotations. Register before Serve.
func (s *Server) RegisterForeign(desc *grpc.ServiceDesc, impl any) {
	s.grpc.RegisterService(desc, impl)
	s.foreign[desc.ServiceName] = true
}

// MarkServing reports the named services (full names such as
// "agentruntime.control.v1.ControlService") and the server as a whole ("")
// as SERVING. After shutdown has begun it has no effect.
func (s *Server) MarkServing(names ...string) {
	for _, name := range names {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
}

// MarkNotServing reports the named services NOT_SERVING (readiness: a
// projector failing or lagging); MarkServing turns them back. The server as
// a whole ("", liveness) is not touched. After shutdown has begun it has no
// effect.
func (s *Server) MarkNotServing(names ...string) {
	for _, name := range names {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING)
	}
}

// Listen opens a TCP listener on Config.Listen.
func (s *Server) Listen() (net.Listener, error) {
	if s.cfg.Listen == "" {
		return nil, errors.New("server: Config.Listen is empty")
	}
	lis, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", s.cfg.Listen, err)
	}
	return lis, nil
}

// Serve accepts connections on lis until ctx is done, then shuts down:
// every health status turns NOT_SERVING (so probes and clients watching
// health move away), in-flight calls get up to ShutdownTimeout to finish,
// and whatever is still open after that is cut. Native gRPC connections are
// served by gRPC's own transport; HTTP/1.1 connections (Connect, gRPC-Web,
// curl with JSON) by the transcoder in http.go. With Config.TLS every
// connection is TLS, split the same way after its handshake (tls.go). It returns nil after a
// shutdown caused by ctx, or the error that stopped serving.
//
// It refuses to start when a registered method declares no role: such a
// method could be called by nobody, or, worse, by anybody.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	if err := s.checkDeclarations(); err != nil {
		return err
	}
	handler, err := s.httpHandler(originPolicy(s.cfg.CORSOrigins, lis.Addr()))
	if err != nil {
		return err
	}
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
	}
	mux := newConnMux(lis, s.log, s.cfg.TLS)
	pages := withConsole(s.cfg.Console, handler)
	// guard is the loopback Host and Origin check, when configured, of
	// every HTTP request; native gRPC connections do not pass it.
	guard := func(h http.Handler) http.Handler { return h }
	if s.cfg.LoopbackHosts {
		guard = func(h http.Handler) http.Handler { return loopbackHostsOnly(h, lis.Addr(), s.cfg.CORSOrigins, scheme) }
	}
	root := guard(pages)
	// HTTP/1.1 only: one request at a time per connection, so no stream
	// cap is needed on this side (HTTP/2 connections are native gRPC and
	// go to s.grpc, whose cap is maxStreamsPerConn, or, with TLS, to the
	// HTTP/2 server of tls.go, capped the same). ReadTimeout cuts off
	// a client that trickles its request; server streams (subscriptions,
	// health watches) outlive it, because net/http lifts the read deadline
	// once the request body has been read (limits.go).
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	httpSrv := &http.Server{
		Handler:           root,
		ReadTimeout:       httpReadTimeout,
		ReadHeaderTimeout: sniffTimeout,
		IdleTimeout:       httpIdleTimeout,
		Protocols:         &protocols,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// With TLS, a third server: HTTP/2 from clients that offered HTTP/1.1
	// too (tls.go). It stops with the HTTP/1.1 one.
	var h2Srv *http.Server
	if mux.h2 != nil {
		h2Srv = s.mixedHTTP2(guard(s.grpcOr(pages)))
	}
	go mux.run()
	// The in-memory listener of Local: Stop and GracefulStop close it
	// with the others.
	go func() { _ = s.grpc.Serve(s.local) }()
	defer s.localConn.Close()
	grpcServed := make(chan error, 1)
	go func() { grpcServed <- s.grpc.Serve(mux.grpc) }()
	httpServed := make(chan error, 1)
	go func() {
		if h2Srv == nil {
			httpServed <- httpServeErr(httpSrv.Serve(mux.http))
			return
		}
		h2Served := make(chan error, 1)
		go func() { h2Served <- httpServeErr(h2Srv.Serve(mux.h2)) }()
		err := httpServeErr(httpSrv.Serve(mux.http))
		if err != nil {
			_ = h2Srv.Close()
		}
		// After a shutdown, h2Srv's own Shutdown drains it.
		httpServed <- errors.Join(err, <-h2Served)
	}()

	select {
	case err := <-grpcServed:
		s.health.Shutdown()
		_ = lis.Close()
		_ = httpSrv.Close()
		if h2Srv != nil {
			_ = h2Srv.Close()
		}
		<-httpServed
		if err != nil {
			return fmt.Errorf("server: serve: %w", err)
		}
		return nil
	case err := <-httpServed:
		s.health.Shutdown()
		_ = lis.Close()
		s.grpc.Stop()
		<-grpcServed
		return fmt.Errorf("server: serve http: %w", cmp.Or(err, net.ErrClosed))
	case <-ctx.Done():
	}

	s.log.Info("grpc server shutting down", "addr", lis.Addr().String(), "timeout", s.cfg.ShutdownTimeout)
	s.health.Shutdown()
	_ = lis.Close()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		// GracefulStop drains native connections; Shutdown waits for the
		// HTTP calls in flight and closes idle HTTP connections.
		var both sync.WaitGroup
		both.Go(s.grpc.GracefulStop)
		both.Go(func() { _ = httpSrv.Shutdown(shutdownCtx) })
		if h2Srv != nil {
			both.Go(func() { _ = h2Srv.Shutdown(shutdownCtx) })
		}
		both.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-shutdownCtx.Done():
		// Long-lived streams (event subscriptions, health watches) never end
		// on their own; their clients resume from their last cursor.
		s.log.Warn("graceful stop timed out; closing remaining calls", "timeout", s.cfg.ShutdownTimeout)
		s.grpc.Stop()
		_ = httpSrv.Close()
		if h2Srv != nil {
			_ = h2Srv.Close()
		}
		<-stopped
	}
	<-grpcServed // Serve returns nil once GracefulStop or Stop has run.
	<-httpServed
	s.log.Info("grpc server stopped")
	return nil
}
