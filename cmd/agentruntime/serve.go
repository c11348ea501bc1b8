package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/all"
)

// maxReplicas is the most replicas JetStream keeps of a stream; it refuses
// a stream asking for more.
const maxReplicas = 5

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime serve <service>", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c        common
		natsURL  string
		redisURL string
		replicas int
		// insecurePlaintext lets serve take credentials in clear beyond
		// loopback (TLS terminated in front of it).
		insecurePlaintext bool
	)
	c.register(fs, net.JoinHostPort("", DefaultPort))
	c.registerHookHosts(fs, nil)
	fs.StringVar(&natsURL, "nats", "", "NATS URL(s) of the JetStream cluster, comma-separated (required)")
	fs.StringVar(&redisURL, "redis", "", "Redis URL for projections, e.g. redis://host:6379/0 (required)")
	fs.IntVar(&replicas, "replicas", 1, "JetStream replicas of the event stream (3 in production)")
	fs.BoolVar(&insecurePlaintext, "insecure-plaintext", false, "without --tls-cert, listen on a non-loopback address anyway: API keys and tokens cross the network in clear unless something in front terminates TLS")
	fs.BoolVar(&c.console, "console", false, "also serve the web console at / on the listen address (in Kubernetes: control, behind the front door)")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "agentruntime serve: name the service: one of %s\n", strings.Join(all.Names, ", "))
		return errUsage
	}
	name := args[0]
	if !slices.Contains(all.Names, name) {
		return fmt.Errorf("serve: unknown service %q (want one of %s)", name, strings.Join(all.Names, ", "))
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if replicas < 1 || replicas > maxReplicas {
		return fmt.Errorf("--replicas %d: JetStream keeps 1 to %d replicas of a stream", replicas, maxReplicas)
	}
	var missing []string
	for flagName, v := range map[string]string{"--nats": natsURL, "--redis": redisURL, "--auth": c.authFile} {
		if v == "" {
			missing = append(missing, flagName)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("serve: %s required (serve always authenticates; see docs/configuration.md)", strings.Join(missing, ", "))
	}
	if c.serverTLS == nil {
		if err := requirePrivateCredentials(ctx, c.listen); err != nil {
			if !insecurePlaintext {
				return fmt.Errorf("serve: %w", err)
			}
			fmt.Fprintf(stderr, "agentruntime serve: INSECURE (--insecure-plaintext): API keys and tokens reach %s in clear; only safe behind something that terminates TLS\n", c.listen)
		}
	}
	authn, err := c.loadAuth()
	if err != nil {
		return err
	}

	nc, err := nats.Connect(natsURL, nats.Name("agentruntime-"+name), nats.MaxReconnects(-1), nats.Timeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connect NATS %s: %w", natsURL, err)
	}
	defer func() { _ = nc.Drain() }()
	log, err := eventlog.Open(ctx, nc, c.logConfig(eventlog.Config{Replicas: replicas, Storage: jetstream.FileStorage, RuntimeID: c.runtimeID}))
	if err != nil {
		return err
	}

	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return fmt.Errorf("--redis: %w", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		return fmt.Errorf("connect Redis %s: %w", opts.Addr, err)
	}
	if err := projection.CheckRedis(pingCtx, rdb); err != nil {
		return fmt.Errorf("check Redis %s: %w", opts.Addr, err)
	}
	be := backend{
		log: log,
		// Each service's read models live under the generation of its
		// projections' fold versions (docs/upgrading.md).
		storeFor: func(service string) projection.Store {
			return projection.NewRedisGeneration(rdb, "agentruntime:"+service, all.Generation(service))
		},
		redis: rdb,
	}
	rt, err := newRuntime(ctx, c, []string{name}, authn, be, stderr)
	if err != nil {
		return err
	}
	err = rt.serve(ctx, func(addr string) {
		rt.logger.Info("serving", "service", name, "listen", addr, "nats", natsURL, "redis", opts.Addr, "replicas", replicas)
	})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
