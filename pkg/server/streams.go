package server

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"

	"github.com/agentruntime/agentruntime/pkg/metrics"
)

// countStreams returns the stream interceptor that keeps the gauge.
func countStreams(mp metric.MeterProvider) (grpc.StreamServerInterceptor, error) {
	active, err := mp.Meter("github.com/agentruntime/agentruntime/pkg/server").Int64UpDownCounter(metrics.ActiveStreams,
		metric.WithDescription("Server-streaming calls open now, by method: live subscribers."))
	if err != nil {
		return nil, err
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		attrs := metric.WithAttributes(attribute.String("rpc_method", info.FullMethod[1:]))
		active.Add(context.Background(), 1, attrs)
		defer active.Add(context.Background(), -1, attrs)
		return handler(srv, ss)
	}, nil
}
