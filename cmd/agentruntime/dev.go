package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/control/adapters/webhooks"
	permdomain "github.com/agentruntime/agentruntime/services/permission/domain"
)

// DevTenant is the tenant of calls without credentials in dev mode without
// an auth config.
const DevTenant = "dev"

func defaultDataDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".agentruntime", "dev")
	}
	return ".agentruntime"
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c       common
		dataDir string
		tenant  string
		noWork  bool
		wf      workerFlags
		// insecureNoAuth lets dev without --auth listen beyond loopback.
		insecureNoAuth bool
		// syncAlways fsyncs every write before JetStream acknowledges it.
		syncAlways bool
	)
	c.register(fs, net.JoinHostPort("127.0.0.1", DefaultPort))
	c.registerHookHosts(fs, permdomain.LoopbackHookHosts)
	fs.StringVar(&dataDir, "data-dir", defaultDataDir(), "where the embedded JetStream keeps the event log")
	fs.StringVar(&tenant, "tenant", DevTenant, "tenant of calls without credentials when --auth is not set")
	fs.BoolVar(&noWork, "no-worker", false, "do not run the in-process worker")
	fs.BoolVar(&insecureNoAuth, "insecure-no-auth", false, "without --auth, listen on a non-loopback address anyway: every caller that reaches it acts as admin")
	fs.BoolVar(&c.console, "console", true, "serve the web console at http://LISTEN/ (the same port as the API)")
	fs.BoolVar(&syncAlways, "sync-always", false, "fsync every event before it is acknowledged, so an acknowledged event survives a power loss (default: JetStream's file store syncs every 2 minutes; an acknowledged event survives the death of any process; docs/configuration.md, \"Durability\")")
	wf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if _, err := wf.loadMCP(); err != nil {
		return err
	}
	if c.authFile == "" {
		if err := requireLoopback(ctx, c.listen); err != nil {
			if !insecureNoAuth {
				return err
			}
			fmt.Fprintf(stderr, "agentruntime dev: INSECURE (--insecure-no-auth): %s without --auth; every caller that reaches it acts as admin\n", c.listen)
		} else {
			// Without credentials on loopback, only the machine's own
			// clients: a web page that rebinds its name to 127.0.0.1 is
			// refused by its Host and Origin (docs/security.md).
			c.loopbackHosts = true
		}
	}

	authn, authDesc, err := devAuthenticator(&c, tenant)
	if err != nil {
		return err
	}
	dev, err := openDev(ctx, dataDir, syncAlways, c.logConfig(eventlog.Config{RuntimeID: c.runtimeID}))
	if err != nil {
		return err
	}
	defer dev.close()
	if c.webhookKeyFile == "" {
		// Kept beside the log it seals secrets into: a restart opens them.
		if c.webhookKey, err = webhooks.LoadOrCreateKey(filepath.Join(dev.dataDir, "webhook.key")); err != nil {
			return fmt.Errorf("the webhook key: %w", err)
		}
	}

	modelsLine := c.modelsFile
	// The in-process worker serves the registry's models by their
	// providers' kinds.
	wf.models = c.modelsFile
	if c.modelsFile == "" && wf.openaiBaseURL == "" && !noWork {
		// The scripted demo provider's model, so routing decides for the
		// tour rather than refuse on an empty registry. A real provider
		// brings its own registry (--models).
		c.modelsFile = filepath.Join(dev.dataDir, "demo-models.yaml")
		if err := os.WriteFile(c.modelsFile, demoModels, 0o644); err != nil {
			return fmt.Errorf("write the demo model registry: %w", err)
		}
		modelsLine = c.modelsFile + " (the demo registry: the scripted model; --models FILE for yours)"
	}
	if modelsLine == "" {
		modelsLine = "none (routing has no model to choose; --models FILE)"
	}
	// Each service gets its own in-process store, rebuilt from the log at
	// start by its projectors.
	be := backend{log: dev.log, storeFor: func(string) projection.Store { return projection.NewMemory() }}
	rt, err := newRuntime(ctx, c, all.Names, authn, be, stderr)
	if err != nil {
		return err
	}
	// The in-process worker talks to the services over the same gRPC
	// port as any other worker; with --auth it would need a key, so it
	// runs only without one.
	workerLine, sandboxLine := "off (--no-worker)", "no worker in this process"
	if !noWork && authDesc != "off" {
		workerLine = "off (run `agentruntime worker --api-key ...` with --auth)"
	}
	// The services outlive the worker: on Ctrl-C the worker drains first
	// (its turns hand themselves back through the services), then the
	// services stop.
	workerStopped := make(chan func(), 1)
	serveCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	go func() {
		select {
		case <-ctx.Done():
		case <-serveCtx.Done():
		}
		select {
		case stop := <-workerStopped:
			stop()
		default:
		}
		stopServing()
	}()
	wf.drainTimeout = c.shutdownTimeout
	return rt.serve(serveCtx, func(addr string) {
		if !noWork && authDesc == "off" {
			line, sandbox, stop, err := startDevWorker(ctx, addr, c.serverTLS, wf, rt.logger, rt.tel.TracerProvider)
			if err != nil {
				rt.logger.Error("in-process worker not started", "error", err)
				workerLine = "failed: " + err.Error()
			} else {
				workerLine, sandboxLine = line, sandbox
				workerStopped <- stop
			}
		}
		fmt.Fprintf(stdout, `agentruntime dev (version %s)
  listening  %s  (%sgRPC: %s; grpc.health.v1; reflection; Connect and gRPC-Web over HTTP/1.1)
  data dir   %s
  tenant     %s
  auth       %s
  nats       embedded JetStream, in-process connection (no port); %s
  worker     %s
  sandbox    %s
  models     %s
  metrics    %s
  console    %s
Ctrl-C stops it; the event log stays in the data dir.
`, version, addr, tlsWord(c.serverTLS), strings.Join(all.Names, ", "), dev.dataDir, tenantLine(authDesc, tenant), authDesc, durabilityLine(syncAlways), workerLine, sandboxLine, modelsLine, rt.metricsLine(), consoleLine(c.console, c.serverTLS != nil, addr))
	})
}

// requireLoopback refuses a listen address that other machines can reach:
// without --auth every caller acts as the tenant's admin.
func requireLoopback(ctx context.Context, listen string) error {
	loopback, err := loopbackListen(ctx, listen)
	if err != nil {
		return err
	}
	if !loopback {
		return fmt.Errorf("dev without --auth refuses to listen on %s, which is not a loopback address (every caller would act as admin); use --listen 127.0.0.1:PORT, --auth FILE, or --insecure-no-auth", listen)
	}
	return nil
}

func devAuthenticator(c *common, tenant string) (auth.Authenticator, string, error) {
	authFile := c.authFile
	if authFile == "" {
		if err := auth.ValidateTenant(tenant); err != nil {
			return nil, "", fmt.Errorf("--tenant: %w", err)
		}
		return auth.Anonymous(tenant), "off", nil
	}
	authn, err := c.loadAuth()
	if err != nil {
		return nil, "", err
	}
	return authn, "on (" + authFile + ")", nil
}

// loadAuth reads --auth: its authenticator, and its tenants' own limits
// into c.
func (c *common) loadAuth() (auth.Authenticator, error) {
	cfg, err := auth.LoadConfig(c.authFile)
	if err != nil {
		return nil, fmt.Errorf("--auth: %w", err)
	}
	c.tenantLimits = cfg.Tenants
	authn, err := auth.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--auth: %w", err)
	}
	return authn, nil
}

func tenantLine(authDesc, tenant string) string {
	if authDesc == "off" {
		return tenant + " (calls without credentials act for it)"
	}
	return "from each call's credentials"
}

// devStore is the embedded JetStream of dev mode with the event log open on
// it, holding the data dir's lock.
type devStore struct {
	dataDir string
	lock    *os.File
	nats    *natsembed.Server
	conn    *nats.Conn
	log     *eventlog.Log
}

// openDev locks the data dir (two processes on one JetStream store would
// corrupt it), starts the embedded server without a TCP port and opens the
// log. JetStream writes each message to its file before acknowledging it,
// so an append that returned survives kill -9 of the process.
// durabilityLine says what an acknowledged event survives.
func durabilityLine(syncAlways bool) string {
	if syncAlways {
		return "every event synced to disk before it is acknowledged (--sync-always)"
	}
	return "acknowledged events survive any process's death; synced to disk every 2 minutes (--sync-always for every event)"
}

func openDev(ctx context.Context, dataDir string, syncAlways bool, logCfg eventlog.Config) (_ *devStore, err error) {
	dataDir, err = filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	d := &devStore{dataDir: dataDir}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.lock, err = lockDir(dataDir); err != nil {
		return nil, err
	}
	if d.nats, err = natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dataDir, "jetstream"), SyncAlways: syncAlways}); err != nil {
		return nil, err
	}
	if d.conn, err = d.nats.Connect(); err != nil {
		return nil, fmt.Errorf("connect embedded NATS: %w", err)
	}
	if d.log, err = eventlog.Open(ctx, d.conn, logCfg); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *devStore) close() {
	if d.conn != nil {
		_ = d.conn.Drain()
	}
	if d.nats != nil {
		d.nats.Shutdown()
	}
	if d.lock != nil {
		_ = d.lock.Close()
	}
}

// lockDir takes an exclusive advisory lock on dir/LOCK; the kernel drops it
// when the process dies, even by kill -9.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another agentruntime dev (choose another --data-dir)", dir)
		}
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	return f, nil
}

func consoleLine(on, tls bool, addr string) string {
	if !on {
		return "off (--console=false)"
	}
	if tls {
		return "https://" + addr + "/"
	}
	return "http://" + addr + "/"
}

// tlsWord starts the banner's protocol list: "TLS; " when the port serves
// TLS, nothing in clear.
func tlsWord(serverTLS *tls.Config) string {
	if serverTLS == nil {
		return ""
	}
	return "TLS; "
}
