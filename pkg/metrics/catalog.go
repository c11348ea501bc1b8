package metrics

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/metric"
)

// Instrument names. Prometheus sees dots as underscores and counters with a
// `_total` suffix (PrometheusName).
const (
	EventsAppended  = "agentruntime.events.appended"
	TurnsEnded      = "agentruntime.turns.ended"
	TaskRunsEnded   = "agentruntime.task_runs.ended"
	RunsLost        = "agentruntime.runs.lost"
	RunsRetried     = "agentruntime.runs.retried"
	RateLimitHits   = "agentruntime.rate_limit.hits"
	QuotaCrossings  = "agentruntime.quota.crossings"
	CostNanos       = "agentruntime.cost.nanos"
	TokensUsed      = "agentruntime.tokens.used"
	ActionsRequired = "agentruntime.actions.required"
	ActionsResolved = "agentruntime.actions.resolved"

	Threads              = "agentruntime.threads"
	QueueDepth           = "agentruntime.queue.depth"
	ActionsPending       = "agentruntime.actions.pending"
	ActionsPendingMaxAge = "agentruntime.actions.pending.max_age"

	// ActiveStreams is recorded by pkg/server (its stream interceptor).
	ActiveStreams = "agentruntime.rpc.server.active_streams"
	// CommandConflicts is recorded by pkg/command's Writer.
	CommandConflicts = "agentruntime.command.conflicts"
	// AppendQuotaRefusals is recorded by pkg/quota's Limiter.
	AppendQuotaRefusals = "agentruntime.append_quota.refusals"

	ConsumerPending    = "agentruntime.consumer.pending"
	ConsumerCheckpoint = "agentruntime.consumer.checkpoint"

	RebuildRunning = "agentruntime.readmodel.rebuilding"
	RebuildFolded  = "agentruntime.readmodel.rebuild.folded"
	RebuildHead    = "agentruntime.readmodel.rebuild.head"

	Subscriptions = "agentruntime.subscriptions"
	HubPosition   = "agentruntime.hub.position"
)

// Kind is how an instrument aggregates.
type Kind int

const (
	Counter Kind = iota
	Gauge
	Histogram
	UpDownCounter
)

// Instrument describes one metric the runtime records.
type Instrument struct {
	Name        string
	Kind        Kind
	Labels      []string
	Description string
	// Unit in UCUM ("s", "By"); empty for counts.
	Unit string
}

// PrometheusName is the instrument's name on a Prometheus scrape.
func (i Instrument) PrometheusName() string {
	name := strings.ReplaceAll(i.Name, ".", "_")
	switch i.Unit {
	case "s":
		name += "_seconds"
	case "By":
		name += "_bytes"
	}
	if i.Kind == Counter {
		name += "_total"
	}
	return name
}

// Catalog lists every instrument this package records, in the order
// docs/observability.md lists them. The per-RPC metrics come from the gRPC
// stats handler (OpenTelemetry's rpc.server.* semantic conventions) and are
// not listed here.
var Catalog = []Instrument{
	{EventsAppended, Counter, []string{"event_type", "event_family"}, "Events appended to the log by this process.", ""},
	{TurnsEnded, Counter, []string{"status", "category"}, "Turns that ended: completed, failed, cancelled or timed_out, with the failure category.", ""},
	{TaskRunsEnded, Counter, []string{"status"}, "Task runs that ended, by status.", ""},
	{RunsLost, Counter, []string{"kind"}, "Runs whose lease lapsed (kind: turn or task).", ""},
	{RunsRetried, Counter, []string{"kind"}, "New attempts started after a lost or failed run (kind: turn or task).", ""},
	{RateLimitHits, Counter, []string{"tenant", "model", "dimension"}, "Requests refused or delayed by a rate limit.", ""},
	{QuotaCrossings, Counter, []string{"tenant", "state", "dimension"}, "Quota thresholds crossed (state: low or blocked).", ""},
	{CostNanos, Counter, []string{"tenant", "model"}, "Recorded cost, in billionths of the registry's currency unit.", ""},
	{TokensUsed, Counter, []string{"tenant", "model", "kind"}, "Recorded tokens (kind: input, output, cached_input, reasoning).", ""},
	{ActionsRequired, Counter, []string{"action_type"}, "Actions (approvals, questions) opened.", ""},
	{ActionsResolved, Counter, []string{"decision"}, "Actions resolved, by decision.", ""},
	{Threads, Gauge, []string{"status"}, "Threads by status (idle, running, interrupting, waiting_permission, waiting_input, closed), from control's read model.", ""},
	{QueueDepth, Gauge, nil, "Turns waiting in thread queues, from control's read model.", ""},
	{ActionsPending, Gauge, nil, "Actions (approvals, questions) waiting for an answer.", ""},
	{ActionsPendingMaxAge, Gauge, nil, "How long the oldest pending action has waited.", "s"},
	{ActiveStreams, UpDownCounter, []string{"rpc_method"}, "Server-streaming calls open now, by method: live subscribers of SubscribeEvents. How streams end, subscribers cut off included (ResourceExhausted), is rpc.server.call.duration's status code.", ""},
	{CommandConflicts, Counter, []string{"aggregate_kind"}, "Commands that found their aggregate changed by another writer (a replica) and decided again.", ""},
	{AppendQuotaRefusals, Counter, []string{"tenant", "limit"}, "Calls refused ResourceExhausted because their tenant appends beyond its quota or holds its bound of open streams (limit: append_events_per_second, append_bytes_per_second or max_streams).", ""},
	{ConsumerPending, Gauge, []string{"consumer"}, "Events in the log a projector or reactor has not read yet (its lag), as of its last batch.", ""},
	{ConsumerCheckpoint, Gauge, []string{"consumer"}, "The last log sequence a projector or reactor applied.", ""},
	{RebuildRunning, Gauge, []string{"service", "generation"}, "1 while the service's read models are a new generation being rebuilt beside the active one (the service is NOT_SERVING meanwhile), 0 once it is active (docs/upgrading.md).", ""},
	{RebuildFolded, Gauge, []string{"service", "generation"}, "Events the projectors of the service's generation folded since the process started.", ""},
	{RebuildHead, Gauge, []string{"service", "generation"}, "The log's last position when the process started: what a rebuild folds up to (on a partitioned log, the sum of the partitions' partition-local positions). Compare with agentruntime.consumer.checkpoint.", ""},
	{Subscriptions, Gauge, nil, "Event subscriptions (SubscribeEvents streams) the process's fan-out hub feeds.", ""},
	{HubPosition, Gauge, nil, "The last log sequence the process's fan-out hub dispatched to its subscriptions (on a partitioned log, the sum of each partition's last stream sequence).", ""},
}

// Lookup returns the catalog entry of name.
func Lookup(name string) (Instrument, bool) {
	for _, i := range Catalog {
		if i.Name == name {
			return i, true
		}
	}
	return Instrument{}, false
}

// meterName is the instrumentation scope of every instrument here.
const meterName = "github.com/agentruntime/agentruntime/pkg/metrics"

// counters creates the named catalog counters on mp.
func counters(mp metric.MeterProvider, dst map[string]*metric.Int64Counter) error {
	m := mp.Meter(meterName)
	for name, c := range dst {
		inst, ok := Lookup(name)
		if !ok || inst.Kind != Counter {
			return fmt.Errorf("metrics: %s is not a counter of the catalog", name)
		}
		counter, err := m.Int64Counter(name, metric.WithDescription(inst.Description))
		if err != nil {
			return err
		}
		*c = counter
	}
	return nil
}
