package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
)

// neededServices are what a turn cannot run without: control (claims,
// reports), routing (the model) and permission (every tool call). Their
// full names are what grpc.health.v1 answers for; through an endpoints map
// each check reaches the process that serves the service.
var neededServices = []string{
	controlv1.ControlService_ServiceDesc.ServiceName,
	routingv1.RoutingService_ServiceDesc.ServiceName,
	permissionv1.PermissionService_ServiceDesc.ServiceName,
}

// notServing checks the needed services at once and says which are not
// SERVING, each with what its health answered.
func (w *Worker) notServing(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(w.cfg.Conn)
	out := make([]string, len(neededServices))
	var wg sync.WaitGroup
	for i, name := range neededServices {
		wg.Go(func() {
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
			switch {
			case status.Code(err) == codes.NotFound:
				out[i] = name + " (not served at its address)"
			case err != nil:
				out[i] = fmt.Sprintf("%s (%s: %s)", name, status.Code(err), status.Convert(err).Message())
			case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
				out[i] = name + " (" + resp.GetStatus().String() + ")"
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// awaitReady returns once control, routing and permission all answer
// SERVING, checking again with a growing backoff and logging which are not
// (again whenever that changes); false when ctx ends first.
func (w *Worker) awaitReady(ctx context.Context) bool {
	backoff := 100 * time.Millisecond
	last := ""
	for {
		down := w.notServing(ctx)
		if ctx.Err() != nil {
			return false
		}
		if len(down) == 0 {
			if last != "" {
				w.cfg.Logger.InfoContext(ctx, "every service a turn needs is serving again; claiming")
			}
			return true
		}
		if now := strings.Join(down, "; "); now != last {
			w.cfg.Logger.WarnContext(ctx, "not claiming: a service a turn needs is not serving", "not_serving", now, "retry_in", backoff)
			last = now
		}
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// infraRetryFor bounds how long a call that fails for infrastructure
// reasons (the service restarting, a dependency down) is retried inside a
// turn before the failure becomes a fact.
const defaultInfraRetry = 30 * time.Second

// transient is an infrastructure failure worth retrying: the service (or
// what it depends on) is unavailable, or the call timed out on its own
// deadline while the turn still has time.
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	case codes.DeadlineExceeded:
		return !errors.Is(err, context.DeadlineExceeded)
	}
	return false
}

// retryInfra runs call until it succeeds, fails for a reason that is not
// transient, or Config.InfraRetry has passed; it returns the last error.
// Only idempotent calls go through it.
func (w *Worker) retryInfra(ctx context.Context, what string, call func(context.Context) error) error {
	deadline := time.Now().Add(w.cfg.InfraRetry)
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := call(ctx)
		if !transient(ctx, err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		w.cfg.Logger.WarnContext(ctx, "retrying after an infrastructure failure", "call", what, "attempt", attempt, "error", err, "retry_in", backoff)
		if !sleep(ctx, backoff) {
			return err
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}
