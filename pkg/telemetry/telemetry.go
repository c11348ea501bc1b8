// Package telemetry owns the OpenTelemetry providers a process hands to its
// services: a tracer provider (exporting over OTLP/gRPC when configured), a
// meter provider, and the W3C propagator. It never installs globals; callers
// pass the providers into whatever needs them (STYLE.md).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
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
}

// Providers are the telemetry providers for one process.
type Providers struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

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
// The meter provider is a no-op: the OTLP metric exporter and the SDK meter
// provider are not (yet) dependencies of this module. Instruments created
// now start reporting once a real provider is passed in.
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
		exp, err := otlptracegrpc.New(ctx, exporterOptions(cfg)...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP trace exporter for %s: %w", cfg.OTLPEndpoint, err)
		}
		// Batching keeps export off the request path; Shutdown flushes it.
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Providers{
		TracerProvider: tp,
		MeterProvider:  metricnoop.NewMeterProvider(),
		shutdown:       tp.Shutdown,
	}, nil
}

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

func exporterOptions(cfg Config) []otlptracegrpc.Option {
	var opts []otlptracegrpc.Option
	if strings.Contains(cfg.OTLPEndpoint, "://") {
		opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.OTLPEndpoint))
	} else {
		opts = append(opts, otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint))
	}
	if cfg.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
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
