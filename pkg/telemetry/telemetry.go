// Package telemetry owns the OpenTelemetry providers a process hands to its
// services: a tracer provider (exporting over OTLP/gRPC when configured), a
// meter provider, and the W3C propagator. It never installs globals; callers
// pass the providers into whatever needs them (STYLE.md).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	runtimemetrics "go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Config selects where telemetry goes.
type Config struct {
	ServiceName    string
	ServiceVersion string
	// OTLPEndpoint is a collector's OTLP/gRPC address, "host:port" or a URL
	// ("http://host:4317"). Empty means nothing is exported.
	OTLPEndpoint string
	// Insecure disables TLS to the collector (a sidecar or in-cluster
	// collector without certificates).
	Insecure bool
	// MetricInterval is how often metrics are pushed over OTLP when an
	// endpoint is set; default 30s. The Prometheus endpoint is always
	// read on demand.
	MetricInterval time.Duration
	// MetricReaders are extra readers for the meter provider: tests pass
	// an sdkmetric.ManualReader to read what was recorded.
	MetricReaders []sdkmetric.Reader
}

// Providers are the telemetry providers for one process.
type Providers struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	metrics  http.Handler
	shutdown func(context.Context) error
}

// Setup builds the providers described by cfg.
//
// Without an OTLP endpoint the tracer provider is still a real SDK provider,
// only without an exporter: spans get valid, unique trace and span ids that
// are stamped into events and carried across services in NATS headers, so
// the event log stays correlatable and turning export on later changes
// nothing but where spans go. A no-op provider would hand out all-zero ids.
// The cost is recording spans that are then dropped, which is small next to
// the gRPC and JetStream work each span wraps.
//
// The meter provider is an SDK provider read two ways: on demand by the
// Prometheus scrape handler (MetricsHandler, served on --metrics-listen),
// and pushed over OTLP every MetricInterval when an endpoint is set. Each
// process has its own Prometheus registry (never the global one), which
// also carries the Go runtime and process collectors.
func Setup(ctx context.Context, cfg Config) (*Providers, error) {
	if cfg.ServiceName == "" {
		return nil, errors.New("telemetry: ServiceName is required")
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if cfg.OTLPEndpoint != "" {
		exp, err := otlptracegrpc.New(ctx, endpointOptions(cfg, otlptracegrpc.WithEndpointURL, otlptracegrpc.WithEndpoint, otlptracegrpc.WithInsecure)...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP trace exporter for %s: %w", cfg.OTLPEndpoint, err)
		}
		// Batching keeps export off the request path; Shutdown flushes it.
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)

	// The process collector (RSS, CPU, file descriptors) is Prometheus-only;
	// the Go runtime's metrics come through OpenTelemetry below, so they
	// reach OTLP backends too.
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promExporter, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo())
	if err != nil {
		_ = tp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(promExporter)}
	for _, r := range cfg.MetricReaders {
		mopts = append(mopts, sdkmetric.WithReader(r))
	}
	if cfg.OTLPEndpoint != "" {
		exp, err := otlpmetricgrpc.New(ctx, endpointOptions(cfg, otlpmetricgrpc.WithEndpointURL, otlpmetricgrpc.WithEndpoint, otlpmetricgrpc.WithInsecure)...)
		if err != nil {
			_ = tp.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: OTLP metric exporter for %s: %w", cfg.OTLPEndpoint, err)
		}
		interval := cfg.MetricInterval
		if interval <= 0 {
			interval = 30 * time.Second
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval))))
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	if err := runtimemetrics.Start(runtimemetrics.WithMeterProvider(mp)); err != nil {
		_ = tp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: Go runtime metrics: %w", err)
	}
	return &Providers{
		TracerProvider: tp,
		MeterProvider:  mp,
		metrics:        promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}),
		shutdown: func(ctx context.Context) error {
			return errors.Join(mp.Shutdown(ctx), tp.Shutdown(ctx))
		},
	}, nil
}

// MetricsHandler serves the process's metrics in the Prometheus text
// format: what `--metrics-listen` exposes at /metrics.
func (p *Providers) MetricsHandler() http.Handler { return p.metrics }

// Shutdown flushes buffered spans and releases the exporter. Call it once,
// after the servers have stopped, with a context that bounds how long a
// flush to an unreachable collector may take.
func (p *Providers) Shutdown(ctx context.Context) error {
	if p == nil || p.shutdown == nil {
		return nil
	}
	if err := p.shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// endpointOptions builds an OTLP exporter's options from cfg: the endpoint
// as a URL or host:port, and TLS off when asked. Traces and metrics use the
// same collector with their own option types.
func endpointOptions[O any](cfg Config, withURL, withHost func(string) O, insecure func() O) []O {
	opts := []O{withHost(cfg.OTLPEndpoint)}
	if strings.Contains(cfg.OTLPEndpoint, "://") {
		opts = []O{withURL(cfg.OTLPEndpoint)}
	}
	if cfg.Insecure {
		opts = append(opts, insecure())
	}
	return opts
}

func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	}
	if cfg.ServiceVersion != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	// Last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES set by an
	// operator (a Kubernetes downward API, say) win over our defaults.
	opts = append(opts, resource.WithFromEnv())
	res, err := resource.New(ctx, opts...)
	// A detector that cannot read, say, the host name leaves a partial
	// resource; that is no reason to run without traces.
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// Propagator returns the W3C Trace Context and Baggage propagator that every
// process uses on gRPC metadata and NATS headers, so producers in other
// languages join the same traces.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
