// Package quota owns the per-tenant append quotas: so that one tenant
// cannot flood the log every tenant shares, each tenant has a token bucket
// of events per second and one of bytes per second, charged for what its
// callers' commands append (docs/security.md, "Fairness between tenants").
//
// Quotas apply at the API door, never to the runtime's own follow-up
// facts: the server kit (pkg/server) marks each authenticated unary call's
// context with a ticket (AtDoor), and the event log (pkg/eventlog) charges
// a marked context before it publishes (Charge). Reactors, sweeps and
// timers run on contexts of their own, unmarked, and are never charged.
//
// A command is turned away at the door while its tenant cannot append a
// single event or byte (Open, before it decides anything); past the door a
// call is refused only at its first append: once a command is admitted,
// the rest of what it appends (a retry after a conflict, a second
// aggregate, a follow-up it runs inline) is charged without refusal, the
// bucket going into debt that the tenant's next calls repay. A command is
// therefore never cut half-way, and over time a tenant appends at most its
// rate, plus one bucket (Burst seconds of it) and one command's overshoot.
//
// Each tenant also holds a bounded number of server streams open at once
// (OpenStream).
package quota

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

// Reasons of the ResourceExhausted refusals (google.rpc.ErrorInfo), one per
// limit; the metadata names the limit, its rate and the tenant.
const (
	ReasonEventsRate = "APPEND_EVENTS_RATE"
	ReasonBytesRate  = "APPEND_BYTES_RATE"
)

// Limits of one tenant's appends. Zero (or less) means no limit on that
// dimension.
type Limits struct {
	// EventsPerSecond is the sustained rate of events appended.
	EventsPerSecond float64
	// BytesPerSecond is the sustained rate of bytes appended (each event's
	// encoded size, as the log stores it).
	BytesPerSecond float64
	// Streams bounds the server streams (SubscribeEvents) the tenant's
	// callers hold open at once in the process (OpenStream).
	Streams int
	// ParkedTurns bounds the tenant's turns parked at once (each holds a
	// checkpoint in the object store); 0: no bound. Control checks it when
	// a worker parks a turn (services/control/app/claim.go).
	ParkedTurns int
}

// Config of a Limiter.
type Config struct {
	// Default applies to every tenant without an entry in Tenants.
	Default Limits
	// Tenants override Default, per tenant id.
	Tenants map[string]Limits
	// Burst is how many seconds of its rate a tenant's bucket holds: the
	// burst it may append at once after being idle. Default 1s.
	Burst time.Duration
}

// Limiter holds every tenant's buckets in one process. Safe for concurrent
// use. Buckets are per process: each process that serves the API enforces
// each tenant's limits on its own (docs/security.md says what that means
// with replicas).
type Limiter struct {
	cfg      Config
	now      func() time.Time
	mu       sync.Mutex
	tenants  map[string]*tenantBuckets
	refusals metric.Int64Counter
}

// New returns a limiter enforcing cfg.
func New(cfg Config) *Limiter {
	if cfg.Burst <= 0 {
		cfg.Burst = time.Second
	}
	return &Limiter{cfg: cfg, now: time.Now, tenants: map[string]*tenantBuckets{}, refusals: metricnoop.Int64Counter{}}
}

// Instrument counts refusals on mp (agentruntime.append_quota.refusals, by
// tenant and limit; pkg/metrics' catalog). Call it before the limiter is
// used.
func (l *Limiter) Instrument(mp metric.MeterProvider) error {
	c, err := mp.Meter("github.com/agentruntime/agentruntime/pkg/quota").Int64Counter(RefusalsMetric,
		metric.WithDescription("Calls refused ResourceExhausted because their tenant appends beyond its quota."))
	if err != nil {
		return err
	}
	l.refusals = c
	return nil
}

// RefusalsMetric is the counter Instrument records; pkg/metrics' catalog
// lists it (metrics.AppendQuotaRefusals, which pkg/metrics' tests check is
// the same name: pkg/metrics depends on the log, which depends on this).
const RefusalsMetric = "agentruntime.append_quota.refusals"

// LimitsOf are the limits tenant is held to.
func (l *Limiter) LimitsOf(tenant string) Limits {
	if lim, ok := l.cfg.Tenants[tenant]; ok {
		return lim
	}
	return l.cfg.Default
}

// tenantBuckets are one tenant's two buckets, under one lock so a refusal
// on one never charges the other.
type tenantBuckets struct {
	mu     sync.Mutex
	events bucket
	bytes  bucket
	// streams open now (OpenStream).
	streams int
}

// bucket is a token bucket that may go into debt: rate tokens a second up
// to capacity; tokens below zero are a debt the next admissions wait for.
type bucket struct {
	rate, capacity, tokens float64
	last                   time.Time
}

func newBucket(rate float64, burst time.Duration, now time.Time) bucket {
	if rate <= 0 {
		return bucket{}
	}
	c := math.Max(rate*burst.Seconds(), 1)
	return bucket{rate: rate, capacity: c, tokens: c, last: now}
}

func (b *bucket) refill(now time.Time) {
	if b.rate <= 0 {
		return
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = math.Min(b.capacity, b.tokens+dt*b.rate)
	}
	b.last = now
}

// wait is how long until n tokens may be admitted: a request larger than
// the whole bucket is admitted on a full one. 0: now.
func (b *bucket) wait(n float64) time.Duration {
	if b.rate <= 0 {
		return 0
	}
	need := math.Min(n, b.capacity)
	if b.tokens >= need-epsilon {
		return 0
	}
	// In whole microseconds, up; the float noise of the refill is not one.
	us := math.Ceil((need-b.tokens)/b.rate*1e6 - 1e-3)
	return time.Duration(us) * time.Microsecond
}

// epsilon absorbs the float noise of refills: a bucket that waited the
// time it was told holds what it was told it would.
const epsilon = 1e-6

func (b *bucket) take(n float64) {
	if b.rate > 0 {
		b.tokens -= n
	}
}

func (l *Limiter) buckets(tenant string, now time.Time) *tenantBuckets {
	l.mu.Lock()
	defer l.mu.Unlock()
	tb, ok := l.tenants[tenant]
	if !ok {
		lim := l.LimitsOf(tenant)
		tb = &tenantBuckets{events: newBucket(lim.EventsPerSecond, l.cfg.Burst, now), bytes: newBucket(lim.BytesPerSecond, l.cfg.Burst, now)}
		l.tenants[tenant] = tb
	}
	return tb
}

// Admit charges events and bytes to tenant when both buckets hold them,
// and refuses with a fault.Exhausted error (ResourceExhausted with
// RetryInfo and an ErrorInfo naming the limit) when either does not.
func (l *Limiter) Admit(ctx context.Context, tenant string, events, bytes int) error {
	return l.charge(ctx, tenant, events, bytes, true, false)
}

// Open refuses, as Admit would, a call of tenant's while its buckets
// cannot admit a single event or byte (empty, or in debt), before the
// call does any work: a tenant flooding beyond its quota is turned away
// at the cost of a lock, not of deciding its commands. A call it lets in
// is charged at its appends (Charge).
func (l *Limiter) Open(ctx context.Context, tenant string) error {
	return l.charge(ctx, tenant, 1, 1, true, true)
}

// Debit charges without refusing: the rest of an admitted command.
func (l *Limiter) Debit(tenant string, events, bytes int) {
	_ = l.charge(context.Background(), tenant, events, bytes, false, false)
}

// charge checks (check) and takes (unless peek) events and bytes.
func (l *Limiter) charge(ctx context.Context, tenant string, events, bytes int, check, peek bool) error {
	now := l.now()
	tb := l.buckets(tenant, now)
	tb.mu.Lock()
	tb.events.refill(now)
	tb.bytes.refill(now)
	if check {
		we, wb := tb.events.wait(float64(events)), tb.bytes.wait(float64(bytes))
		if we > 0 || wb > 0 {
			tb.mu.Unlock()
			if we >= wb {
				return l.refuse(ctx, tenant, ReasonEventsRate, "append_events_per_second", tb.events.rate, "events", we)
			}
			return l.refuse(ctx, tenant, ReasonBytesRate, "append_bytes_per_second", tb.bytes.rate, "bytes", wb)
		}
	}
	if !peek {
		tb.events.take(float64(events))
		tb.bytes.take(float64(bytes))
	}
	tb.mu.Unlock()
	return nil
}

func (l *Limiter) refuse(ctx context.Context, tenant, reason, limit string, rate float64, unit string, after time.Duration) error {
	l.refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("tenant", tenant), attribute.String("limit", limit)))
	r := strconv.FormatFloat(rate, 'f', -1, 64)
	return fault.Exhausted(reason,
		fmt.Sprintf("tenant %s appends beyond its quota of %s %s per second (%s); retry after %s", tenant, r, unit, limit, after),
		after, map[string]string{"limit": limit, "rate": r, "tenant": tenant})
}

// ReasonStreams is the ResourceExhausted reason of a stream beyond its
// tenant's Limits.Streams.
const ReasonStreams = "STREAMS_PER_TENANT"

// streamRetry is when a refused stream may try again: streams end when
// their callers go, not on a clock.
const streamRetry = time.Second

// OpenStream counts a server stream of tenant's for as long as it is open
// (until release) and refuses one beyond the tenant's Limits.Streams:
// ResourceExhausted STREAMS_PER_TENANT with a RetryInfo.
func (l *Limiter) OpenStream(ctx context.Context, tenant string) (release func(), err error) {
	limit := l.LimitsOf(tenant).Streams
	tb := l.buckets(tenant, l.now())
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if limit > 0 && tb.streams >= limit {
		l.refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("tenant", tenant), attribute.String("limit", "max_streams")))
		n := strconv.Itoa(limit)
		return nil, fault.Exhausted(ReasonStreams,
			fmt.Sprintf("tenant %s holds %s streams open, its limit (max_streams); close one or retry after %s", tenant, n, streamRetry),
			streamRetry, map[string]string{"limit": "max_streams", "max": n, "tenant": tenant})
	}
	tb.streams++
	var once sync.Once
	return func() {
		once.Do(func() {
			tb.mu.Lock()
			tb.streams--
			tb.mu.Unlock()
		})
	}, nil
}

// ReasonParkedTurns is the ResourceExhausted reason of a park beyond its
// tenant's Limits.ParkedTurns.
const ReasonParkedTurns = "PARKED_TURNS_PER_TENANT"

// LimitsAt is tenant's limits when ctx came in at the API door (AtDoor);
// false for the runtime's own work.
func LimitsAt(ctx context.Context, tenant string) (Limits, bool) {
	t, ok := ctx.Value(ticketKey{}).(*ticket)
	if !ok {
		return Limits{}, false
	}
	return t.lim.LimitsOf(tenant), true
}

// ticket marks a call that came in at the API door: its first charge may
// be refused, every later one is debited.
type ticket struct {
	lim      *Limiter
	admitted atomic.Bool
}

type ticketKey struct{}

// AtDoor marks ctx as a caller's call whose appends lim charges. A nil
// limiter leaves ctx as it is.
func AtDoor(ctx context.Context, lim *Limiter) context.Context {
	if lim == nil {
		return ctx
	}
	return context.WithValue(ctx, ticketKey{}, &ticket{lim: lim})
}

// Charge charges an append of events and bytes to tenant when ctx came in
// at the API door (AtDoor), refusing only the call's first append; an
// unmarked context (the runtime's own work) is never charged.
func Charge(ctx context.Context, tenant string, events, bytes int) error {
	t, ok := ctx.Value(ticketKey{}).(*ticket)
	if !ok {
		return nil
	}
	if t.admitted.Load() {
		t.lim.Debit(tenant, events, bytes)
		return nil
	}
	if err := t.lim.Admit(ctx, tenant, events, bytes); err != nil {
		return err
	}
	t.admitted.Store(true)
	return nil
}
