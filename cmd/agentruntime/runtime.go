package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/a2a"
	"github.com/agentruntime/agentruntime/pkg/agui"
	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/config"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fanout"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/peerauth"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/telemetry"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/control/adapters/webhooks"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/kit"
	permdomain "github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/web"
)

// errUsage: the flag package has already printed what is wrong.
var errUsage = errors.New("usage")

// DefaultPort is where `agentruntime dev` listens unless told otherwise.
const DefaultPort = "7070"

// common are the flags every command that runs services shares.
type common struct {
	listen          string
	authFile        string
	logLevel        slog.Level
	otlpEndpoint    string
	otlpInsecure    bool
	runtimeID       string
	shutdownTimeout time.Duration
	modelsFile      string
	corsOrigins     string
	metricsListen   string
	readyMaxLag     uint64
	readyFailingFor time.Duration
	logMaxAge       time.Duration
	logMaxBytes     byteSize
	// logTenantMaxBytes is each tenant's share of the log per partition
	// (eventlog.KeepTenants); 0: none.
	logTenantMaxBytes byteSize
	maxQueuedTurns    int
	partitions        int
	// hookAllowHosts are the host[:port] patterns a hook's target may
	// name (registerHookHosts); webhook URLs too.
	hookAllowHosts string
	// a2aPeers are the host[:port] patterns of the A2A peers a remote
	// subagent may call (--a2a-peers).
	a2aPeers string
	// a2aPeerCredsFile names the credentials sent to A2A peers
	// (pkg/peerauth); a2aPeerCreds is what check loaded from it.
	a2aPeerCredsFile string
	a2aPeerCreds     *peerauth.Set
	// webhookKeyFile holds the key that seals webhook secrets; webhookKey
	// is the key check (or dev) loaded (nil: webhooks are off).
	webhookKeyFile string
	webhookKey     []byte
	// console serves the web console (web/) on the listen address.
	console bool
	// loopbackHosts: serve only requests addressed to a loopback host name
	// and the listening port (server.Config.LoopbackHosts); dev sets it
	// when it runs without --auth on loopback.
	loopbackHosts bool
	// tlsCert and tlsKey are the server's certificate and key files;
	// serverTLS is what check loaded from them (nil: plaintext).
	tlsCert, tlsKey string
	serverTLS       *tls.Config
	// a2aCardFile names the A2A agent card's name, description and
	// skills (pkg/a2a LoadCard); a2aCard is what check loaded.
	a2aCardFile string
	a2aCard     a2a.Config
	// healthListen serves grpc.health.v1 alone, in clear (probes that
	// speak no TLS); empty: nowhere.
	healthListen string
	// appendEvents and appendBytes are every tenant's default append
	// quota per process (pkg/quota); tenantLimits, the auth file's
	// per-tenant overrides, are set once it is loaded.
	appendEvents float64
	appendBytes  byteSize
	tenantLimits []auth.TenantConfig
	// maxStreams is every tenant's default bound on its open streams.
	maxStreams int
	// maxParked is every tenant's default bound on its parked turns.
	maxParked int
}

// Default append quotas per tenant and process: far above what one
// tenant's agents append (a streaming turn reports a few dozen facts a
// second, in batches) and above what the test suites drive through one
// process, yet a bound on a tenant that floods (docs/security.md,
// "Fairness between tenants").
const (
	defaultAppendEventsPerSecond = 10_000
	defaultAppendBytesPerSecond  = 64 << 20
	// defaultMaxStreams: a person's consoles and CLIs and a tenant's
	// workers follow a few sessions each; a thousand per process is far
	// beyond them, and bounds what one tenant's subscriptions hold of the
	// process's fan-out hub.
	defaultMaxStreams = 1000
	// defaultMaxParked: a product's end users each waiting on a review or
	// two; checkpoints are small (a transcript) and at most 3 MiB each.
	defaultMaxParked = 10000
)

func (c *common) register(fs *flag.FlagSet, defaultListen string) {
	fs.StringVar(&c.listen, "listen", defaultListen, "gRPC listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&c.authFile, "auth", "", "auth config file (API keys, JWT); see docs/configuration.md")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve TLS on the listen address with this certificate (PEM, the chain after the leaf); needs --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&c.healthListen, "health-listen", "", "also serve grpc.health.v1, and nothing else, in clear on this address (for probes that speak no TLS, e.g. :7071); empty serves it only on --listen")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn, error")
	fs.StringVar(&c.otlpEndpoint, "otlp-endpoint", "", "OTLP/gRPC collector for traces (host:port); empty exports nothing")
	fs.BoolVar(&c.otlpInsecure, "otlp-insecure", false, "talk to the OTLP collector without TLS")
	fs.StringVar(&c.runtimeID, "runtime-id", "", "runtime_id stamped into events (default: a new id per process)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "bound on graceful shutdown")
	fs.StringVar(&c.corsOrigins, "cors-origins", "", "browser origins allowed to call the API (Connect, gRPC-Web), comma-separated; \"*\" is any; default: loopback origins when listening on loopback, none otherwise")
	fs.Uint64Var(&c.readyMaxLag, "ready-max-lag", 10000, "readiness: a service whose projector or reactor lags the log by more events than this answers NOT_SERVING for its health name (0: no bound)")
	fs.DurationVar(&c.readyFailingFor, "ready-failing-for", 5*time.Second, "readiness: a service whose projector or reactor keeps failing this long answers NOT_SERVING for its health name")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464); empty serves none")
	fs.StringVar(&c.modelsFile, "models", "", "model registry YAML for the routing service (see deploy/config/models.example.yaml)")
	fs.DurationVar(&c.logMaxAge, "log-max-age", 0, "retention of the event log: events older than this are discarded (0 keeps them; see docs/configuration.md)")
	fs.Var(&c.logMaxBytes, "log-max-bytes", "retention of the event log: the oldest events are discarded beyond this size, e.g. 6GiB (0 keeps them)")
	fs.Var(&c.logTenantMaxBytes, "log-tenant-max-bytes", "retention per tenant: each tenant keeps at most this many bytes of its newest events in each partition of the log, its oldest discarded beyond, so one tenant's flood cannot make --log-max-bytes discard another's history, e.g. 512MiB (0: no per-tenant bound; see docs/security.md)")
	fs.IntVar(&c.partitions, "partitions", 1, "streams the event log is split into by a hash of the session, so their leaders spread over a NATS cluster; fixed for the life of a deployment (docs/scaling.md)")
	c.appendBytes = defaultAppendBytesPerSecond
	fs.Float64Var(&c.appendEvents, "append-events-per-second", defaultAppendEventsPerSecond, "per-tenant quota of events its calls append per second, in each process (0: no limit); the auth file's tenants override it (docs/security.md)")
	fs.Var(&c.appendBytes, "append-bytes-per-second", "per-tenant quota of bytes its calls append per second, in each process, e.g. 64MiB (0: no limit); the auth file's tenants override it")
	fs.IntVar(&c.maxStreams, "max-streams-per-tenant", defaultMaxStreams, "streams (SubscribeEvents) each tenant's callers may hold open at once in each process (0: no limit); the auth file's tenants override it")
	fs.IntVar(&c.maxParked, "max-parked-turns-per-tenant", defaultMaxParked, "turns each tenant may have parked at once, each holding a checkpoint (0: no limit); a park beyond it is refused and the turn waits in place; the auth file's tenants override it")
	fs.StringVar(&c.webhookKeyFile, "webhook-key-file", "", "control: file holding the 32-byte key (base64 or hex) that seals webhook secrets in the event log; empty turns webhooks off (dev: <data-dir>/webhook.key, made on first start; see docs/configuration.md)")
	fs.StringVar(&c.a2aPeers, "a2a-peers", "", "control: hosts of the A2A peer agents a subagent may be (spawn_agent's agent, SpawnSubagent's agent: a card URL), comma-separated host[:port] patterns (*.example.com matches below it); the card's interfaces must be on them too; empty: none (docs/a2a.md, \"Calling a peer\")")
	fs.StringVar(&c.a2aPeerCredsFile, "a2a-peer-credentials", "", "control: YAML file of the credentials sent to A2A peers, each entry a host[:port] pattern, a scheme (bearer, api_key) and where its secret is (secret_file or secret_env); a request carries only the credential of its own host; empty: none are sent (docs/a2a.md, \"Calling a peer\")")
	fs.StringVar(&c.a2aCardFile, "a2a-card", "", "YAML file of the A2A agent card's name, description and skills (docs/a2a.md); empty: the defaults")
	fs.IntVar(&c.maxQueuedTurns, "max-queued-turns", app.DefaultMaxQueuedTurns, "control: turns a thread may hold queued behind its active turn; a submit beyond it is ResourceExhausted QUEUE_FULL (at least 1)")
}

// registerHookHosts adds --hook-allow-hosts with the command's default.
func (c *common) registerHookHosts(fs *flag.FlagSet, def []string) {
	fs.StringVar(&c.hookAllowHosts, "hook-allow-hosts", strings.Join(def, ","), "permission and control: hosts a hook's target or a webhook's URL may name, comma-separated host[:port] patterns (*.example.com matches below it); RegisterHook and CreateWebhook refuse any other (see docs/security.md)")
}

// check refuses shared flag values no service can run with, and loads the
// TLS certificate.
func (c *common) check() error {
	var err error
	if c.serverTLS, err = loadServerTLS(c.tlsCert, c.tlsKey); err != nil {
		return err
	}
	if c.maxQueuedTurns < 1 {
		return fmt.Errorf("--max-queued-turns %d: a thread's queue needs a bound of at least 1", c.maxQueuedTurns)
	}
	if c.partitions < 1 || c.partitions > eventlog.MaxPartitions {
		return fmt.Errorf("--partitions %d: the event log takes 1 to %d partitions", c.partitions, eventlog.MaxPartitions)
	}
	if c.metricsListen != "" {
		if _, _, err := net.SplitHostPort(c.metricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v (want host:port)", c.metricsListen, err)
		}
	}
	if _, err := permdomain.ParseHookHosts(splitList(c.hookAllowHosts)); err != nil {
		return fmt.Errorf("--hook-allow-hosts: %w", err)
	}
	if _, err := hostallow.Parse(splitList(c.a2aPeers)); err != nil {
		return fmt.Errorf("--a2a-peers: %w", err)
	}
	if c.appendEvents < 0 || math.IsNaN(c.appendEvents) || math.IsInf(c.appendEvents, 0) {
		return fmt.Errorf("--append-events-per-second %v: a rate of 0 or more (0: no limit)", c.appendEvents)
	}
	if c.maxParked < 0 {
		return fmt.Errorf("--max-parked-turns-per-tenant %d: a bound of 0 or more (0: no limit)", c.maxParked)
	}
	if c.maxStreams < 0 {
		return fmt.Errorf("--max-streams-per-tenant %d: a bound of 0 or more (0: no limit)", c.maxStreams)
	}
	if c.logMaxBytes > 0 && c.logTenantMaxBytes > c.logMaxBytes {
		return fmt.Errorf("--log-tenant-max-bytes %d: a tenant's share cannot exceed --log-max-bytes %d", c.logTenantMaxBytes, c.logMaxBytes)
	}
	if c.webhookKeyFile != "" {
		raw, err := os.ReadFile(c.webhookKeyFile)
		if err != nil {
			return fmt.Errorf("--webhook-key-file: %w", err)
		}
		if c.webhookKey, err = webhooks.ParseKey(string(raw)); err != nil {
			return fmt.Errorf("--webhook-key-file %s: %w", c.webhookKeyFile, err)
		}
	}
	if c.a2aPeerCredsFile != "" {
		if c.a2aPeerCreds, err = peerauth.Load(c.a2aPeerCredsFile); err != nil {
			return fmt.Errorf("--a2a-peer-credentials: %w", err)
		}
	}
	if c.a2aCardFile != "" {
		if c.a2aCard, err = a2a.LoadCard(c.a2aCardFile); err != nil {
			return fmt.Errorf("--a2a-card: %w", err)
		}
	}
	if c.logMaxAge < 0 || (c.logMaxAge > 0 && c.logMaxAge < eventlog.DefaultDuplicateWindow) {
		return fmt.Errorf("--log-max-age %s: the event log keeps events at least %s, its de-duplication window (0 keeps them)", c.logMaxAge, eventlog.DefaultDuplicateWindow)
	}
	return nil
}

// a2aCardConfig is the A2A agent card's configuration.
func (c *common) a2aCardConfig() a2a.Config {
	cfg := c.a2aCard
	cfg.Version, cfg.Auth = version, c.authFile != ""
	return cfg
}

// logConfig is the event log's configuration from the shared flags.
func (c *common) logConfig(cfg eventlog.Config) eventlog.Config {
	cfg.MaxAge, cfg.MaxBytes = c.logMaxAge, int64(c.logMaxBytes)
	cfg.Partitions = c.partitions
	return cfg
}

// quota is the append quota every tenant's calls are held to in this
// process: the flags' defaults, each overridden by the auth file's tenants.
func (c *common) quota() quota.Config {
	cfg := quota.Config{Default: quota.Limits{EventsPerSecond: c.appendEvents, BytesPerSecond: float64(c.appendBytes), Streams: c.maxStreams, ParkedTurns: c.maxParked}}
	for _, tc := range c.tenantLimits {
		lim := cfg.Default
		if tc.AppendEventsPerSecond != nil {
			lim.EventsPerSecond = *tc.AppendEventsPerSecond
		}
		if tc.AppendBytesPerSecond != nil {
			lim.BytesPerSecond = *tc.AppendBytesPerSecond
		}
		if tc.MaxStreams != nil {
			lim.Streams = *tc.MaxStreams
		}
		if tc.MaxParkedTurns != nil {
			lim.ParkedTurns = *tc.MaxParkedTurns
		}
		if cfg.Tenants == nil {
			cfg.Tenants = map[string]quota.Limits{}
		}
		cfg.Tenants[tc.Tenant] = lim
	}
	return cfg
}

// byteSize is a flag of bytes with an optional unit: 1048576, 512KiB, 6GiB,
// 2GB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(v string) error {
	units := []struct {
		suffix string
		factor int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, factor := strings.TrimSpace(v), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB, GiB, KB, MB, GB)", v)
	}
	*b = byteSize(n * factor)
	return nil
}

// parseFlags applies AR_* environment defaults, then the command line. The
// flag package prints its own errors and usage, so those come back as
// errUsage; environment errors come back as they are.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := config.EnvDefault(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return nil
}

// runtime is the running composition: telemetry, services and the gRPC
// server around an open event log and projection store.
type runtime struct {
	server   *server.Server
	services []kit.Service
	// stores are the services' projection stores, by service.
	stores map[kit.Service]projection.Store
	tel    *telemetry.Providers
	logger *slog.Logger
	log    *eventlog.Log
	// metricsListen is where /metrics is served; empty: nowhere.
	metricsListen string
	// metricsAddr is the address it listens on once serving.
	metricsAddr string
	// healthListen is where health alone is served in clear; empty:
	// nowhere.
	healthListen string
	hub          *fanout.Hub
	ready        readyBounds
	// keepTenants is each tenant's share of the log that this process
	// enforces (eventlog.KeepTenants); 0: none.
	keepTenants int64
}

// readyBounds say when a service is not ready (its health name
// NOT_SERVING): a consumer lagging the log by more than maxLag events, or
// failing for failingFor; checked every every.
type readyBounds struct {
	maxLag     uint64
	failingFor time.Duration
	every      time.Duration
}

// backend is what the services run on: the log, a projection store per
// service, and Redis in a deployment.
type backend struct {
	log      *eventlog.Log
	storeFor func(service string) projection.Store
	redis    redis.UniversalClient
}

func newRuntime(ctx context.Context, c common, names []string, authn auth.Authenticator, be backend, stderr io.Writer) (*runtime, error) {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.logLevel}))
	tel, err := telemetry.Setup(ctx, telemetry.Config{
		ServiceName:    telemetryName(names),
		ServiceVersion: version,
		OTLPEndpoint:   c.otlpEndpoint,
		Insecure:       c.otlpInsecure,
	})
	if err != nil {
		return nil, err
	}
	limiter := quota.New(c.quota())
	if err := limiter.Instrument(tel.MeterProvider); err != nil {
		_ = tel.Shutdown(ctx)
		return nil, err
	}
	srv, err := server.New(server.Config{
		Listen:          c.listen,
		Logger:          logger,
		TracerProvider:  tel.TracerProvider,
		MeterProvider:   tel.MeterProvider,
		Authenticator:   authn,
		ShutdownTimeout: c.shutdownTimeout,
		CORSOrigins:     splitList(c.corsOrigins),
		Console:         consoleHandler(c.console),
		LoopbackHosts:   c.loopbackHosts,
		TLS:             c.serverTLS,
		Quota:           limiter,
	})
	if err != nil {
		_ = tel.Shutdown(ctx)
		return nil, err
	}
	// One fan-out hub per process feeds every subscription (ADR 0006).
	hub := fanout.New(be.log, fanout.Config{Logger: logger})
	rt := &runtime{server: srv, tel: tel, logger: logger, log: be.log, metricsListen: c.metricsListen, healthListen: c.healthListen, hub: hub,
		ready: readyBounds{maxLag: c.readyMaxLag, failingFor: c.readyFailingFor, every: time.Second}, stores: map[kit.Service]projection.Store{}}
	// Per-tenant retention runs where control runs (dev: the process;
	// serve: each control replica; its purges are idempotent).
	if slices.Contains(names, "control") {
		rt.keepTenants = int64(c.logTenantMaxBytes)
	}
	// What workers hold, read by every service: in Redis in a deployment,
	// one store in process for the services of dev.
	holds := held.NewMemory()
	if be.redis != nil {
		holds = held.New(lease.NewRedis(be.redis, held.RedisPrefix))
	}
	for _, name := range names {
		deps := kit.Deps{
			Held:           holds,
			Log:            be.log,
			Hub:            hub,
			Store:          be.storeFor(name),
			Redis:          be.redis,
			Logger:         logger.With("service", name),
			TracerProvider: tel.TracerProvider,
			MeterProvider:  tel.MeterProvider,
			Config: kit.Config{ModelsFile: c.modelsFile, MaxQueuedTurns: c.maxQueuedTurns,
				RestrictHookHosts: true, HookAllowHosts: splitList(c.hookAllowHosts), WebhookKey: c.webhookKey,
				A2APeers: splitList(c.a2aPeers), A2APeerCredentials: c.a2aPeerCreds},
		}
		svc, err := all.New(name, deps)
		if err != nil {
			_ = tel.Shutdown(ctx)
			return nil, err
		}
		svc.Register(srv.GRPC())
		rt.services = append(rt.services, svc)
		rt.stores[svc] = deps.Store
		if name == "control" {
			// AG-UI front ends: the control API as an AG-UI event
			// stream, called in process with the caller's credentials
			// (docs/ag-ui.md).
			srv.Handle(agui.Path, agui.New(controlv1.NewControlServiceClient(srv.Local()), logger.With("component", "ag-ui")))
			// A2A agents: the runtime as an A2A agent, called in process
			// with the caller's credentials like AG-UI (docs/a2a.md).
			a2aCfg := c.a2aCardConfig()
			// The card names the caller's tenant, and a request naming a
			// tenant is checked, by the API's own authenticator.
			a2aCfg.Tenant = func(ctx context.Context, authorization []string) (string, error) {
				p, err := authn.Authenticate(metadata.NewIncomingContext(ctx, metadata.MD{"authorization": authorization}))
				return p.Tenant, err
			}
			a2aHandler := a2a.New(controlv1.NewControlServiceClient(srv.Local()), a2aCfg, logger.With("component", "a2a"))
			srv.Handle(a2a.CardPath, a2aHandler.Card())
			srv.Handle(a2a.JSONRPCPath, a2aHandler.JSONRPC())
			srv.Handle(a2a.RESTPath+"/", a2aHandler.REST())
			srv.RegisterForeign(a2aHandler.GRPCService())
		}
	}
	return rt, nil
}

// serve listens, reports the address through ready, marks every service
// SERVING and blocks until ctx ends; then health turns NOT_SERVING and the
// server stops gracefully.
func (rt *runtime) serve(ctx context.Context, ready func(addr string)) error {
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = rt.tel.Shutdown(shutdownCtx)
	}()
	lis, err := rt.server.Listen()
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if rt.healthListen != "" {
		hl, err := net.Listen("tcp", rt.healthListen)
		if err != nil {
			_ = lis.Close()
			return fmt.Errorf("health listen: %w", err)
		}
		// Health stays up until the main port has stopped: probes see
		// NOT_SERVING during the graceful stop, not a refused connection.
		healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
		healthDone := make(chan error, 1)
		go func() { healthDone <- rt.server.ServeHealth(healthCtx, hl) }()
		defer func() {
			stopHealth()
			if err := <-healthDone; err != nil {
				rt.logger.Error("health endpoint stopped", "error", err)
			}
		}()
		rt.logger.Info("health alone, in clear", "listen", hl.Addr().String())
	}
	// Background work (projectors) runs until the server stops; a runner
	// that fails stops the process rather than serve stale read models.
	ctx, cancel := context.WithCancelCause(ctx)
	// On shutdown the hub ends every subscription with Unavailable and its
	// cursor, so the graceful stop does not wait for streams that never end.
	go func() {
		<-ctx.Done()
		rt.hub.Close()
	}()
	var runners sync.WaitGroup
	defer runners.Wait()
	defer cancel(nil)
	// Every projector and reactor of the process records a span per batch
	// and reports its progress to the consumer gauges, each under its own
	// name.
	consumers, err := metrics.NewConsumers(rt.tel.MeterProvider)
	if err != nil {
		return err
	}
	// The hub's subscriptions and position, read when a reader asks.
	if err := metrics.Observe(rt.tel.MeterProvider, func(context.Context) ([]metrics.Observation, error) {
		st := rt.hub.Stats()
		return []metrics.Observation{{Name: metrics.Subscriptions, Value: float64(st.Subscriptions)}, {Name: metrics.HubPosition, Value: float64(st.Position)}}, nil
	}, metrics.Subscriptions, metrics.HubPosition); err != nil {
		return err
	}
	// One feed reads the log once for every projector and reactor of the
	// process, each with its own checkpoint (ADR 0007).
	consumerCtx := projector.ContextWithOptions(ctx,
		projector.WithFeed(projector.NewFeed(rt.log)),
		projector.WithTracerProvider(rt.tel.TracerProvider),
		projector.WithProgress(func(p projector.Progress) {
			// One consumer may feed several projections ("control+control.claims").
			for _, name := range strings.Split(p.Name, "+") {
				consumers.Report(name, p.Checkpoint, p.Pending)
			}
		}))
	upgrades, err := rt.startUpgrades(ctx)
	if err != nil {
		return err
	}
	// Readiness per service: NOT_SERVING for its health name while one of
	// its projectors or reactors keeps failing or lags beyond the bound,
	// and while its read models are a generation being rebuilt.
	readiness := map[kit.Service]*projector.Readiness{}
	held := map[kit.Service]bool{}
	for _, s := range rt.services {
		if r, ok := s.(kit.Runner); ok {
			rd := &projector.Readiness{MaxLag: rt.ready.maxLag, FailingFor: rt.ready.failingFor}
			readiness[s] = rd
			runCtx := projector.ContextWithOptions(consumerCtx, rd.Options()...)
			if u := upgrades[s]; u != nil {
				runCtx = projector.ContextWithOptions(runCtx, u.Options()...)
				if u.Rebuilding() {
					held[s] = true
					rd.Hold(fmt.Sprintf("rebuilding its read models: generation %s beside %s (docs/upgrading.md)", u.Generation(), u.Active))
					runners.Add(1)
					go func() {
						defer runners.Done()
						if u.Run(ctx) == nil {
							rd.Release()
						}
					}()
				}
			}
			runners.Add(1)
			go func() {
				defer runners.Done()
				if err := r.Run(runCtx); err != nil && ctx.Err() == nil {
					rt.logger.Error("service background work failed; stopping", "service", s.Name(), "error", err)
					cancel(fmt.Errorf("%s: %w", s.Name(), err))
				}
			}()
		}
	}
	if rt.keepTenants > 0 {
		runners.Add(1)
		go func() {
			defer runners.Done()
			_ = rt.log.KeepTenants(ctx, rt.keepTenants, rt.logger)
		}()
	}
	if err := rt.startMetrics(ctx, &runners); err != nil {
		return err
	}
	names := make([]string, 0, len(rt.services))
	for _, s := range rt.services {
		if held[s] {
			rt.server.MarkNotServing(s.HealthName())
			continue
		}
		names = append(names, s.HealthName())
	}
	rt.server.MarkServing(names...)
	runners.Add(1)
	go func() { defer runners.Done(); rt.followReadiness(ctx, readiness, held) }()
	ready(lis.Addr().String())
	if err := rt.server.Serve(ctx, lis); err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// followReadiness turns each service's health name NOT_SERVING while its
// consumers are out of bounds, and SERVING again once they are back (those
// in notReady start NOT_SERVING), logging each change and why. The server
// as a whole ("", liveness) stays SERVING: the process is alive and
// recovering.
func (rt *runtime) followReadiness(ctx context.Context, readiness map[kit.Service]*projector.Readiness, notReady map[kit.Service]bool) {
	t := time.NewTicker(rt.ready.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for s, rd := range readiness {
				ok, why := rd.Ready(now)
				switch {
				case !ok && !notReady[s]:
					rt.logger.Warn("not ready: NOT_SERVING until its read models recover", "service", s.Name(), "health", s.HealthName(), "why", why)
					rt.server.MarkNotServing(s.HealthName())
				case ok && notReady[s]:
					rt.logger.Info("ready again: SERVING", "service", s.Name(), "health", s.HealthName())
					rt.server.MarkServing(s.HealthName())
				}
				notReady[s] = !ok
			}
		}
	}
}

// splitList reads a comma-separated flag value; blanks are dropped.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// startMetrics counts the facts this process appends and serves /metrics
// on --metrics-listen, both until ctx ends.
func (rt *runtime) startMetrics(ctx context.Context, runners *sync.WaitGroup) error {
	facts, err := metrics.NewFactMeter(rt.tel.MeterProvider, rt.log.RuntimeID())
	if err != nil {
		return err
	}
	runners.Add(1)
	go func() {
		defer runners.Done()
		_ = facts.Follow(ctx, rt.log, rt.logger)
	}()
	if rt.metricsListen == "" {
		return nil
	}
	lis, err := net.Listen("tcp", rt.metricsListen)
	if err != nil {
		return fmt.Errorf("metrics listen: %w", err)
	}
	rt.metricsAddr = lis.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", rt.tel.MetricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	runners.Add(2)
	go func() {
		defer runners.Done()
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			rt.logger.Error("metrics endpoint stopped", "error", err)
		}
	}()
	go func() {
		defer runners.Done()
		<-ctx.Done()
		_ = srv.Close()
	}()
	rt.logger.Info("serving metrics", "url", "http://"+rt.metricsAddr+"/metrics")
	return nil
}

// metricsLine says where metrics are served, for the start-up banner.
func (rt *runtime) metricsLine() string {
	if rt.metricsAddr == "" {
		return "off (--metrics-listen 127.0.0.1:9464 serves /metrics)"
	}
	return "http://" + rt.metricsAddr + "/metrics"
}

// telemetryName is the OpenTelemetry service.name of a process:
// "agentruntime-control" for `serve control`, "agentruntime" for `dev`,
// which runs them all. OTEL_SERVICE_NAME overrides it.
func telemetryName(services []string) string {
	if len(services) == 1 {
		return "agentruntime-" + services[0]
	}
	return "agentruntime"
}

// consoleHandler is the embedded web console when on (docs/console.md).
func consoleHandler(on bool) http.Handler {
	if !on {
		return nil
	}
	return web.Handler()
}
