// Package metrics owns the runtime's own OpenTelemetry instruments: what an
// operator watches beside the per-RPC metrics the gRPC stats handler
// records. Every instrument name is declared here once (docs/observability.md
// lists them; the Grafana dashboard's test checks its queries against a real
// scrape).
//
// Facts are counted where they are written: the FactMeter of a process
// counts only events that process appended (the envelope's runtime_id is
// the appender's), so summing a counter over replicas and processes counts
// every fact exactly once.
package metrics

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// FactMeter counts facts by what they say: turns and task runs by how they
// ended, lost and retried runs, rate-limit hits, quota crossings, cost and
// tokens by tenant and model. Labels are bounded: event types, statuses,
// tenants, models; never sessions, threads or ids.
type FactMeter struct {
	runtimeID string

	appended, turns, taskRuns, lost, retried metric.Int64Counter
	rateLimits, quota, cost, tokens          metric.Int64Counter
	actionsRequired, actionsResolved         metric.Int64Counter
}

// NewFactMeter builds the instruments on mp. runtimeID is the process's own
// (eventlog.Log.RuntimeID): only events stamped with it are counted.
func NewFactMeter(mp metric.MeterProvider, runtimeID string) (*FactMeter, error) {
	f := &FactMeter{runtimeID: runtimeID}
	err := counters(mp, map[string]*metric.Int64Counter{
		EventsAppended: &f.appended, TurnsEnded: &f.turns, TaskRunsEnded: &f.taskRuns,
		RunsLost: &f.lost, RunsRetried: &f.retried, RateLimitHits: &f.rateLimits,
		QuotaCrossings: &f.quota, CostNanos: &f.cost, TokensUsed: &f.tokens,
		ActionsRequired: &f.actionsRequired, ActionsResolved: &f.actionsResolved,
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Observe counts one event if this process appended it.
func (f *FactMeter) Observe(ctx context.Context, ev *eventsv1.RuntimeEvent) {
	if ev.GetRuntimeId() != f.runtimeID {
		return
	}
	typ := ev.GetType()
	f.appended.Add(ctx, 1, metric.WithAttributes(
		attribute.String("event_type", typ),
		attribute.String("event_family", family(typ)),
	))
	tenant := attribute.String("tenant", ev.GetTenantId())
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TurnCompleted:
		f.turns.Add(ctx, 1, metric.WithAttributes(attribute.String("status", "completed"), attribute.String("category", "")))
	case *eventsv1.RuntimeEvent_TurnFailed:
		status := enums.Word(p.TurnFailed.GetOutcome())
		f.turns.Add(ctx, 1, metric.WithAttributes(attribute.String("status", status), attribute.String("category", p.TurnFailed.GetCategory())))
	case *eventsv1.RuntimeEvent_RunStatus:
		switch p.RunStatus.GetPhase() {
		case "lost":
			f.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "turn")))
		case "retrying":
			f.retried.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "turn")))
		}
	case *eventsv1.RuntimeEvent_TaskAttemptStarted:
		if p.TaskAttemptStarted.GetAttempt().GetOrdinal() > 1 {
			f.retried.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "task")))
		}
	case *eventsv1.RuntimeEvent_TaskAttemptCompleted:
		f.taskRuns.Add(ctx, 1, metric.WithAttributes(attribute.String("status", "completed")))
	case *eventsv1.RuntimeEvent_TaskAttemptFailed:
		status := p.TaskAttemptFailed.GetStatus()
		f.taskRuns.Add(ctx, 1, metric.WithAttributes(attribute.String("status", runStatus(status))))
		if status == tasksv1.RunStatus_RUN_STATUS_LOST {
			f.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", "task")))
		}
	case *eventsv1.RuntimeEvent_RateLimitHit:
		f.rateLimits.Add(ctx, 1, metric.WithAttributes(tenant,
			attribute.String("model", p.RateLimitHit.GetModelId()),
			attribute.String("dimension", p.RateLimitHit.GetDimension())))
	case *eventsv1.RuntimeEvent_QuotaLow:
		f.quota.Add(ctx, 1, metric.WithAttributes(tenant, attribute.String("state", "low"), attribute.String("dimension", p.QuotaLow.GetDimension())))
	case *eventsv1.RuntimeEvent_QuotaBlocked:
		f.quota.Add(ctx, 1, metric.WithAttributes(tenant, attribute.String("state", "blocked"), attribute.String("dimension", p.QuotaBlocked.GetDimension())))
	case *eventsv1.RuntimeEvent_CostRecorded:
		c := p.CostRecorded
		model := attribute.String("model", c.GetModelId())
		f.cost.Add(ctx, c.GetCost().GetTotalNanos(), metric.WithAttributes(tenant, model))
		u := c.GetUsage()
		for kind, n := range map[string]int64{
			"input": u.GetInputTokens(), "output": u.GetOutputTokens(),
			"cached_input": u.GetCachedInputTokens(), "reasoning": u.GetReasoningTokens(),
		} {
			if n > 0 {
				f.tokens.Add(ctx, n, metric.WithAttributes(tenant, model, attribute.String("kind", kind)))
			}
		}
	case *eventsv1.RuntimeEvent_ActionRequired:
		f.actionsRequired.Add(ctx, 1, metric.WithAttributes(attribute.String("action_type", p.ActionRequired.GetActionType())))
	case *eventsv1.RuntimeEvent_ActionResolved:
		f.actionsResolved.Add(ctx, 1, metric.WithAttributes(attribute.String("decision", p.ActionResolved.GetDecision())))
	}
}

// family is the event type's first segment ("turn" for "turn.completed").
func family(typ string) string {
	head, _, _ := strings.Cut(typ, ".")
	return head
}

func runStatus(s tasksv1.RunStatus) string {
	return enums.Word(s)
}

// Follow counts the facts this process appends from now on until ctx ends:
// one ordered consumer per partition of the log, each resumed after the
// last event it saw when it fails. Counters start at zero with the
// process, as Prometheus counters do.
func (f *FactMeter) Follow(ctx context.Context, log *eventlog.Log, logger *slog.Logger) error {
	var wg sync.WaitGroup
	for _, view := range log.Views() {
		wg.Go(func() { f.followPartition(ctx, view, logger) })
	}
	wg.Wait()
	return ctx.Err()
}

// followPartition counts one partition's facts until ctx ends.
func (f *FactMeter) followPartition(ctx context.Context, log *eventlog.Log, logger *slog.Logger) {
	from := eventlog.FromNew
	backoff := 100 * time.Millisecond
	for {
		last, err := f.follow(ctx, log, from)
		if ctx.Err() != nil {
			return
		}
		if last > 0 {
			from = eventlog.FromSequence(last + 1)
		}
		logger.WarnContext(ctx, "fact meter stopped; resuming", "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (f *FactMeter) follow(ctx context.Context, log *eventlog.Log, from eventlog.From) (last uint64, err error) {
	sub, err := log.Subscribe(ctx, nil, from)
	if err != nil {
		return 0, err
	}
	defer sub.Stop()
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			return last, err
		}
		f.Observe(ctx, rec.Event)
		last = rec.Event.GetSequence()
	}
}
