package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentruntime/agentruntime/pkg/telemetry"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
	routingapp "github.com/agentruntime/agentruntime/services/routing/app"
)

//go:embed demo.yaml
var demoScript []byte

//go:embed demo-models.yaml
var demoModels []byte

// workerFlags configure a worker (`agentruntime worker`, and the one
// `agentruntime dev` runs in process).
type workerFlags struct {
	workspace     string
	script        string
	openaiBaseURL string
	openaiAPIKey  string
	model         string
	workerID      string
	session       string
	leaseTTL      time.Duration
	tasks         bool
	taskKinds     string
	maxTurns      int
	contextWindow int64
	noNetIsolate  bool
	// drainTimeout bounds a graceful stop (`worker --shutdown-timeout`;
	// dev passes its own --shutdown-timeout).
	drainTimeout time.Duration
	mcpConfig    string
	// mcpElicitTimeout bounds a person's answer to an MCP server's
	// elicitation (the action's timeout).
	mcpElicitTimeout time.Duration
	// models is the model registry whose providers' kinds pick each
	// model's API (dev: its --models; worker: --models).
	models string
}

func (f *workerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.workspace, "workspace", ".", "the directory the worker's tools read and write")
	fs.StringVar(&f.script, "script", "", "scripted provider file (YAML/JSON); empty: the built-in demo script")
	fs.StringVar(&f.openaiBaseURL, "openai-base-url", "", "use an OpenAI-compatible server (e.g. https://api.openai.com/v1, http://localhost:11434/v1) instead of the scripted provider")
	fs.StringVar(&f.openaiAPIKey, "openai-api-key", "", "bearer key for --openai-base-url")
	fs.StringVar(&f.model, "model", "", "model used when routing makes no decision (default: the script's model)")
	fs.StringVar(&f.workerID, "worker-id", "", "worker id (default: a new one)")
	fs.StringVar(&f.session, "worker-session", "", "claim turns of this session only")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 15*time.Second, "lease of a claimed turn, renewed every third of it; a worker silent for this long is presumed dead and its turn retried")
	fs.BoolVar(&f.tasks, "tasks", false, "also pull task runs from the tasks service and run each as a turn")
	fs.StringVar(&f.taskKinds, "task-kinds", "", "with --tasks: only tasks of these kinds (comma-separated; empty: any)")
	fs.IntVar(&f.maxTurns, "max-turns", 4, "turns run at once (a delegating turn waits for its subagent's turn)")
	fs.BoolVar(&f.noNetIsolate, "no-network-isolation", false, "run shell commands with the host's network instead of their own network namespace (sandbox.applied records network enforcement as unavailable)")
	fs.StringVar(&f.mcpConfig, "mcp-config", "", "MCP servers whose tools the worker offers, as mcp__<server>__<tool>: a JSON file in the mcpServers shape of Claude Code's .mcp.json (docs/services/worker.md)")
	fs.DurationVar(&f.mcpElicitTimeout, "mcp-elicitation-timeout", 10*time.Minute, "how long a person has to answer an MCP server that asks for input during a tool call (its action's timeout; unanswered, the server is told decline); at most 168h")
	fs.Int64Var(&f.contextWindow, "context-window", 0, "context window in tokens of --model when routing does not say it; a transcript above 80% of it is compacted (0: never)")
}

// config builds the worker configuration on a connection: the provider of
// the flags, and, with a model registry, the adapters its providers'
// kinds name for their models.
func (f *workerFlags) config(conn grpc.ClientConnInterface, logger *slog.Logger) (worker.Config, string, error) {
	cfg, desc, err := f.baseConfig(conn, logger)
	if err != nil {
		return cfg, desc, err
	}
	cfg.Provider, desc, err = f.byRegistry(cfg.Provider, desc)
	return cfg, desc, err
}

func (f *workerFlags) baseConfig(conn grpc.ClientConnInterface, logger *slog.Logger) (worker.Config, string, error) {
	root, err := filepath.Abs(f.workspace)
	if err != nil {
		return worker.Config{}, "", err
	}
	cfg := worker.Config{
		WorkerID: f.workerID, Conn: conn, SessionID: f.session, Logger: logger, DefaultModel: f.model, LeaseTTL: f.leaseTTL,
		Sandbox: tools.Sandbox{Root: root, WriteRoots: []string{root}},
		Tasks:   f.tasks, MaxTurns: f.maxTurns, ContextWindow: f.contextWindow,
		DisableNetworkIsolation: f.noNetIsolate, DrainTimeout: f.drainTimeout,
	}
	for _, k := range strings.Split(f.taskKinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			cfg.TaskKinds = append(cfg.TaskKinds, k)
		}
	}
	if f.openaiBaseURL != "" {
		cfg.Provider = &provider.OpenAI{BaseURL: f.openaiBaseURL, APIKey: f.openaiAPIKey}
		return cfg, fmt.Sprintf("OpenAI-compatible at %s", f.openaiBaseURL), nil
	}
	raw, desc := demoScript, "scripted (built-in demo script)"
	if f.script != "" {
		if raw, err = os.ReadFile(f.script); err != nil {
			return worker.Config{}, "", fmt.Errorf("--script: %w", err)
		}
		desc = "scripted (" + f.script + ")"
	}
	s, err := provider.ParseScript(raw)
	if err != nil {
		return worker.Config{}, "", fmt.Errorf("--script: %w", err)
	}
	p := provider.NewScripted(s)
	cfg.Provider = p
	if cfg.DefaultModel == "" {
		cfg.DefaultModel = p.Model()
	}
	return cfg, desc, nil
}

// byRegistry serves the models of the registry's providers that name a
// kind with that kind's adapter, and the others with def.
func (f *workerFlags) byRegistry(def provider.Provider, desc string) (provider.Provider, string, error) {
	if f.models == "" {
		return def, desc, nil
	}
	reg, err := routingapp.LoadConfig(f.models)
	if err != nil {
		return nil, "", err
	}
	bm, err := provider.FromRegistry(reg, os.Getenv, def)
	if err != nil {
		return nil, "", fmt.Errorf("--models %s: %w", f.models, err)
	}
	if len(bm.Models) == 0 {
		return def, desc, nil
	}
	return bm, strings.Join(bm.Served(), ", ") + "; other models: " + desc, nil
}

// loadMCP reads --mcp-config (nil when not given).
func (f *workerFlags) loadMCP() (*mcp.Config, error) {
	if f.mcpElicitTimeout <= 0 || f.mcpElicitTimeout > 7*24*time.Hour {
		return nil, fmt.Errorf("--mcp-elicitation-timeout %s: must be above 0 and at most 168h", f.mcpElicitTimeout)
	}
	if f.mcpConfig == "" {
		return nil, nil
	}
	c, err := mcp.LoadConfig(f.mcpConfig)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	return &c, nil
}

// startMCP starts the MCP servers of --mcp-config for cfg's worker: its
// ToolSource. It returns a line for the banner and what stops them.
func (f *workerFlags) startMCP(ctx context.Context, cfg *worker.Config) (string, func(), error) {
	mc, err := f.loadMCP()
	if mc == nil || err != nil {
		return "none", func() {}, err
	}
	m := mcp.Start(ctx, *mc, mcp.Options{Dir: cfg.Sandbox.Root, Logger: cfg.Logger.With("component", "mcp"), Version: version,
		ElicitationTimeout: f.mcpElicitTimeout})
	cfg.ToolSource = m
	var parts []string
	for _, st := range m.Statuses() {
		p := st.Name + " " + st.State
		if st.State == mcp.StateRunning {
			p += fmt.Sprintf(" (%d tools)", len(st.Tools))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ") + " (" + f.mcpConfig + ")", m.Close, nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf clientFlags
		wf workerFlags
	)
	cf.register(fs)
	wf.register(fs)
	var otlpEndpoint string
	var otlpInsecure bool
	fs.StringVar(&otlpEndpoint, "otlp-endpoint", "", "OTLP/gRPC collector for the worker's traces and metrics (host:port); empty exports nothing")
	fs.BoolVar(&otlpInsecure, "otlp-insecure", false, "talk to the OTLP collector without TLS")
	var healthListen string
	fs.StringVar(&healthListen, "health-listen", "", "serve grpc.health.v1 in clear on this address (host:port; port 0 picks one, printed): SERVING while the worker claims turns, NOT_SERVING from the first moment of a drain (SIGTERM), for readiness probes")
	fs.DurationVar(&wf.drainTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM: stop claiming, let turns hand themselves back at their next step boundary for this long, then cancel the rest and hand them back from their last completed call")
	fs.StringVar(&wf.models, "models", "", "the model registry YAML (deploy/config/models.example.yaml): models of a provider with a kind (anthropic, openai_responses, openai_chat) are served by that API, its key read from the provider's api_key_env")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "agentruntime-worker", ServiceVersion: version, OTLPEndpoint: otlpEndpoint, Insecure: otlpInsecure})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	conn, err := cf.dial(tracing(tel.TracerProvider))
	if err != nil {
		return err
	}
	defer conn.Close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg, desc, err := wf.config(conn, logger)
	if err != nil {
		return err
	}
	cfg.TracerProvider = tel.TracerProvider
	mcpLine, stopMCP, err := wf.startMCP(ctx, &cfg)
	if err != nil {
		return err
	}
	defer stopMCP()
	healthLine, stopHealth, err := serveWorkerHealth(ctx, healthListen)
	if err != nil {
		return err
	}
	defer stopHealth()
	w := worker.New(cfg)
	fmt.Fprintf(stdout, "agentruntime worker %s\n  runtime    %s\n  provider   %s\n  workspace  %s\n  sandbox    %s\n  mcp        %s\n  health     %s\n", w.ID(), conn.Map(), desc, cfg.Sandbox.Root, sandboxLine(w), mcpLine, healthLine)
	return w.Run(ctx)
}

// serveWorkerHealth serves grpc.health.v1 on addr ("" serves nothing):
// SERVING (the empty service name and "agentruntime.worker") until ctx
// ends, which is when the worker's drain starts (Worker.Run), then
// NOT_SERVING until stop is called, after the drain.
func serveWorkerHealth(ctx context.Context, addr string) (line string, stop func(), err error) {
	if addr == "" {
		return "off (--health-listen ADDR serves grpc.health.v1)", func() {}, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", nil, fmt.Errorf("--health-listen %q: %v (want host:port)", addr, err)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--health-listen: %w", err)
	}
	hs := health.NewServer()
	for _, name := range []string{"", "agentruntime.worker"} {
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			hs.Shutdown() // every name NOT_SERVING, watchers told
		case <-done:
		}
	}()
	return lis.Addr().String() + " (grpc.health.v1, in clear; NOT_SERVING while draining)", func() { close(done); gs.Stop() }, nil
}

// sandboxLine says whether the worker confines shell commands on the
// filesystem, and how or why not (pkg/worker/confine).
func sandboxLine(w *worker.Worker) string {
	on, reason := w.Confinement()
	if on {
		return "shell commands run sandboxed are confined: " + reason
	}
	return "NO filesystem confinement (" + reason + "): shell commands the policy runs sandboxed ask first"
}

// startDevWorker runs a worker in this process against addr until ctx
// ends or stop is called; over TLS when the server serves it.
func startDevWorker(ctx context.Context, addr string, serverTLS *tls.Config, wf workerFlags, logger *slog.Logger, tp trace.TracerProvider) (line, sandbox string, stop func(), err error) {
	cf := clientFlags{addr: addr}
	if serverTLS != nil {
		cf.tlsConfig = pinnedTLS(serverTLS)
	}
	conn, err := cf.dial(tracing(tp))
	if err != nil {
		return "", "", nil, err
	}
	cfg, desc, err := wf.config(conn, logger.With("component", "worker"))
	if err != nil {
		conn.Close()
		return "", "", nil, err
	}
	cfg.TracerProvider = tp
	mcpLine, stopMCP, err := wf.startMCP(ctx, &cfg)
	if err != nil {
		conn.Close()
		return "", "", nil, err
	}
	w := worker.New(cfg)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(wctx)
	}()
	stop = func() { cancel(); <-done; stopMCP(); conn.Close() }
	line = fmt.Sprintf("%s, %s, workspace %s", w.ID(), desc, cfg.Sandbox.Root)
	if wf.mcpConfig != "" {
		line += ", MCP servers: " + mcpLine
	}
	return line, sandboxLine(w), stop, nil
}

// tracing carries the caller's trace context on every call of a
// connection (W3C traceparent in the metadata) and records client spans.
func tracing(tp trace.TracerProvider) grpc.DialOption {
	return grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(telemetry.Propagator())))
}
