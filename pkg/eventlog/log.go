// Package eventlog owns the runtime's event log on NATS JetStream: the one
// source of truth every service appends its facts to and every read model is
// projected from (docs/architecture.md: "One truth: the event log", "The
// write path", "Subjects and streams", "Partitions").
//
// It provides idempotent stream setup, appends with per-aggregate optimistic
// concurrency and de-duplication by event id, batched async appends,
// subscriptions from a sequence with subject filters, history reads, a
// JetStream Object Store for large payloads, and W3C trace context carried
// in message headers.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

var (
	// ErrConflict: the aggregate changed since the caller read it (the
	// expected last subject sequence did not hold). Reload, decide again.
	// Callers see Aborted: retrying the request can succeed.
	ErrConflict = fault.Sentinel("eventlog: aggregate changed since it was read",
		fault.Conflict("concurrent changes kept conflicting; retry the request", 100*time.Millisecond))
	// ErrInvalid: the event or aggregate breaks an envelope rule. Requests
	// are validated before they become events, so callers see Internal: the
	// service's own bug, not theirs.
	ErrInvalid = fault.Sentinel("eventlog: invalid event", fault.Internal("internal error: the service produced an invalid event"))
)

// Header keys set on every appended message. Lowercase on purpose: NATS
// header keys are case-sensitive.
const (
	HeaderType   = "ar-type"
	HeaderTenant = "ar-tenant"
)

// Config of a log. Zero values take the defaults below.
type Config struct {
	Stream        string // default "AGENTRUNTIME"
	SubjectPrefix string // default "ar.ev"
	// Partitions splits the log into that many streams by a hash of the
	// session, so their leaders spread over a cluster (partition.go). 1 by
	// default: one stream named Stream. With P > 1 the streams are
	// Stream_0 ... Stream_<P-1>. Fixed for the life of a deployment: Open
	// refuses a log that was made with another count.
	Partitions      int
	Replicas        int // default 1; 3 in production clusters
	Storage         jetstream.StorageType
	DuplicateWindow time.Duration // de-duplication window by event id on its aggregate (DedupID), default DefaultDuplicateWindow
	MaxAsyncPending int           // in-flight bound of batch appends, default 512
	// AsyncStallWait is how long one asynchronous publish waits for a free
	// in-flight slot before the log waits for the outstanding acks and
	// tries it again (never skipping it: later events would land before
	// it). Default 200ms.
	AsyncStallWait time.Duration
	ObjectBucket   string // default "AGENTRUNTIME_OBJECTS"
	RuntimeID      string // stamped into events that carry none
	Propagator     propagation.TextMapPropagator
	// MaxConsumers bounds the stream's consumers: each projector and
	// reactor holds one, each process's fan-out hub one (client
	// subscriptions share it), each Read one while it runs. Default
	// 100,000 (the server's own default is 1,000 per stream).
	MaxConsumers int
	// MaxAge and MaxBytes are the stream's retention limits: the oldest
	// events are discarded beyond them. Zero keeps everything (the default
	// of the package; the binary's defaults are in docs/configuration.md).
	// A reader asking for history before the first retained sequence is
	// told so (Bounds) and repaired from a snapshot.
	MaxAge   time.Duration
	MaxBytes int64
	// AttemptTimeout bounds one attempt of a publish or read; an attempt
	// that runs out of it is tried again (outage.go). Default 1s.
	AttemptTimeout time.Duration
	// OutageWait is how long an operation whose context has no deadline
	// keeps retrying through an outage before it answers ErrUnavailable.
	// Default 10s. With a deadline, the deadline bounds it.
	OutageWait time.Duration
	// IdleHeartbeat of subscriptions (projectors, reactors, the fan-out
	// hub): a subscription that misses two notices a lost server and
	// resumes after its last event on another. Default 500ms.
	IdleHeartbeat time.Duration
	// Slots is how many positions each message of a new log has, the most
	// events a command message carries (slots.go). Default DefaultSlots; 1
	// makes a log without command messages, whose commands are atomic
	// batches. A log keeps what it was made with.
	Slots int
}

// DefaultDuplicateWindow is the stream's de-duplication window unless
// Config.DuplicateWindow says otherwise. JetStream refuses a stream whose
// max age is shorter than its window, so a retention below it cannot be
// configured.
const DefaultDuplicateWindow = 10 * time.Minute

func (c *Config) defaults() {
	if c.Stream == "" {
		c.Stream = "AGENTRUNTIME"
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = "ar.ev"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.MaxAsyncPending == 0 {
		c.MaxAsyncPending = 512
	}
	if c.AsyncStallWait == 0 {
		c.AsyncStallWait = 200 * time.Millisecond
	}
	if c.ObjectBucket == "" {
		c.ObjectBucket = "AGENTRUNTIME_OBJECTS"
	}
	if c.RuntimeID == "" {
		c.RuntimeID = ids.New(ids.Runtime)
	}
	if c.Propagator == nil {
		c.Propagator = propagation.TraceContext{}
	}
	if c.MaxConsumers == 0 {
		c.MaxConsumers = 100_000
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = time.Second
	}
	if c.OutageWait == 0 {
		c.OutageWait = 10 * time.Second
	}
	if c.IdleHeartbeat == 0 {
		c.IdleHeartbeat = 500 * time.Millisecond
	}
}

// maxBytes is the stream's MaxBytes: JetStream says "unlimited" with -1.
func (c *Config) maxBytes() int64 {
	if c.MaxBytes <= 0 {
		return -1
	}
	return c.MaxBytes
}

// Log is an open event log. It is safe for concurrent use.
type Log struct {
	cfg Config
	js  jetstream.JetStream
	// streams holds each partition's stream, by partition.
	streams []jetstream.Stream
	// view is the partition a view (Partition) reads, plus one; 0 is the
	// whole log.
	view int
	// views are the partitions' views, made once (Partition).
	views   []*Log
	objects jetstream.ObjectStore
	// floors are the tenants' retention floors (retention.go).
	floors   jetstream.KeyValue
	Subjects Subjects
	// slots is how many positions each message of the log has (slots.go).
	slots uint64
}

// Open checks the server (CheckServer), ensures the streams and object
// bucket exist with this configuration (creating or updating them, so every
// replica may call it at start) and returns the log.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Log, error) {
	cfg.defaults()
	if cfg.Partitions < 1 || cfg.Partitions > MaxPartitions {
		return nil, fmt.Errorf("eventlog: %d partitions: between 1 and %d", cfg.Partitions, MaxPartitions)
	}
	if cfg.Slots < 1 || cfg.Slots > DefaultSlots {
		return nil, fmt.Errorf("eventlog: %d slots per message: between 1 and %d", cfg.Slots, DefaultSlots)
	}
	if err := CheckServer(ctx, nc); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxAsyncPending))
	if err != nil {
		return nil, fmt.Errorf("eventlog: jetstream: %w", err)
	}
	l := &Log{cfg: cfg, js: js, Subjects: Subjects{Prefix: cfg.SubjectPrefix, Partitions: cfg.Partitions}}
	slots, err := l.checkPartitions(ctx)
	if err != nil {
		return nil, err
	}
	l.slots = uint64(slots)
	for k := range cfg.Partitions {
		name := l.streamName(k)
		var stream jetstream.Stream
		err = setupRetry(ctx, cfg, "stream "+name, func(actx context.Context) error {
			var err error
			stream, err = js.CreateOrUpdateStream(actx, jetstream.StreamConfig{
				Name:        name,
				Description: "agentruntime event log: the only truth",
				Subjects:    []string{l.Subjects.Partition(k).All()},
				Storage:     cfg.Storage,
				Replicas:    cfg.Replicas,
				Retention:   jetstream.LimitsPolicy,
				Discard:     jetstream.DiscardOld,
				MaxAge:      cfg.MaxAge,
				MaxBytes:    cfg.maxBytes(),
				Duplicates:  cfg.DuplicateWindow,
				AllowDirect: true,
				// Commands append all their events in one atomic batch (AppendAtomic).
				AllowAtomicPublish: true,
				MaxConsumers:       cfg.MaxConsumers,
				Metadata:           map[string]string{metaPartitions: strconv.Itoa(cfg.Partitions), metaSlots: strconv.Itoa(slots)},
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("eventlog: stream %s: %w", name, err)
		}
		l.streams = append(l.streams, stream)
	}
	l.balanceLeaders(ctx)
	err = setupRetry(ctx, cfg, "object bucket "+cfg.ObjectBucket, func(actx context.Context) error {
		var err error
		l.objects, err = js.CreateOrUpdateObjectStore(actx, jetstream.ObjectStoreConfig{
			Bucket:      cfg.ObjectBucket,
			Description: "agentruntime large payloads referenced by events",
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: object bucket %s: %w", cfg.ObjectBucket, err)
	}
	err = setupRetry(ctx, cfg, "key-value bucket "+retentionBucket, func(actx context.Context) error {
		var err error
		l.floors, err = js.CreateOrUpdateKeyValue(actx, jetstream.KeyValueConfig{
			Bucket:      retentionBucket,
			Description: "agentruntime per-tenant retention floors of the event log",
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: key-value bucket %s: %w", retentionBucket, err)
	}
	l.makeViews()
	return l, nil
}

// RuntimeID is the id stamped into events that carry none.
func (l *Log) RuntimeID() string { return l.cfg.RuntimeID }

// Expect is the optimistic concurrency precondition of an append.
type Expect struct {
	seq uint64
	set bool
}

// Any appends without a precondition (facts that cannot conflict, such as
// telemetry-like deltas).
var Any = Expect{}

// ExpectSequence requires the aggregate's last event to be at stream
// sequence seq; 0 requires the aggregate to have no events yet.
func ExpectSequence(seq uint64) Expect { return Expect{seq: seq, set: true} }

// Appended is where one event landed.
type Appended struct {
	EventID  string
	Sequence uint64
	// Duplicate: the event id was already in the log (a retried command);
	// Sequence is that earlier event's.
	Duplicate bool
}

// Append writes events to one aggregate in order. The first must find the
// aggregate at expect; each next one expects the one before it, so
// concurrent writers to the aggregate cannot interleave. Append fills in
// missing envelope fields (event id, timestamp, schema version, runtime,
// tenant and session from the aggregate, trace and span ids from ctx) on the
// events it is given.
//
// The events are not one atomic unit: if the connection fails between two
// of them, a retry of the same command with the same event ids completes
// the rest (the log drops the ones that landed as duplicates).
func (l *Log) Append(ctx context.Context, agg Aggregate, expect Expect, evs ...*eventsv1.RuntimeEvent) ([]Appended, error) {
	if err := agg.validate(); err != nil {
		return nil, err
	}
	subject := l.Subjects.Aggregate(agg)
	k := l.aggregatePart(agg)
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		msg, err := l.message(ctx, agg, subject, ev)
		if err != nil {
			return nil, err
		}
		msgs[i] = msg
	}
	if err := charge(ctx, agg, msgs); err != nil {
		return nil, err
	}
	out := make([]Appended, 0, len(evs))
	for i, ev := range evs {
		msg := msgs[i]
		var err error
		var opts []jetstream.PublishOpt
		var seq uint64
		if expect.set {
			if seq, err = l.sequenceAt(k, expect.seq); err != nil {
				return out, err
			}
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(seq))
		}
		ack, err := l.publish(ctx, agg, subject, expect.set, seq, msg, opts...)
		if err != nil {
			a, err := l.recoverDuplicate(ctx, agg, expect, ev.GetEventId(), err)
			if err != nil {
				return out, err
			}
			out = append(out, a)
			expect = ExpectSequence(a.Sequence)
			continue
		}
		pos := l.lastAt(k, ack.Sequence)
		out = append(out, Appended{EventID: ev.GetEventId(), Sequence: pos, Duplicate: ack.Duplicate})
		expect = ExpectSequence(pos)
	}
	return out, nil
}

// AppendFacts appends facts to one aggregate without a precondition: every
// event is published before any acknowledgement is awaited, in order on one
// connection, each with its event id (scoped to the aggregate: DedupID) as
// de-duplication id, and the acknowledgements are awaited together. It
// answers with each event's sequence, in order. For facts that decide
// nothing (a worker's step facts, docs/adr/0007): a batch of N costs one
// wait, not N.
//
// Every event is validated before the first is sent. If an acknowledgement
// fails, what landed is a prefix in the common case (one connection
// delivers in order); a retry with the same event ids completes the run and
// the landed events come back as duplicates.
func (l *Log) AppendFacts(ctx context.Context, agg Aggregate, evs ...*eventsv1.RuntimeEvent) ([]Appended, error) {
	if err := agg.validate(); err != nil {
		return nil, err
	}
	subject := l.Subjects.Aggregate(agg)
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		msg, err := l.message(ctx, agg, subject, ev)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		msgs[i] = msg
	}
	if err := charge(ctx, agg, msgs); err != nil {
		return nil, err
	}
	futures := make([]jetstream.PubAckFuture, len(msgs))
	for i, msg := range msgs {
		// Blocks while Config.MaxAsyncPending acks are outstanding.
		f, err := l.publishAsync(ctx, msg)
		if err != nil {
			return nil, publishError(agg, err)
		}
		futures[i] = f
	}
	out := make([]Appended, len(futures))
	var failed error
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			out[i] = Appended{EventID: evs[i].GetEventId(), Sequence: l.lastAt(l.aggregatePart(agg), ack.Sequence), Duplicate: ack.Duplicate}
		case err := <-f.Err():
			failed = errors.Join(failed, publishError(agg, err))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

// Entry is one event of a batch append.
type Entry struct {
	Aggregate Aggregate
	Expect    Expect
	Event     *eventsv1.RuntimeEvent
}

// Result of one entry of a batch.
type Result struct {
	Appended
	Err error
}

// asyncStallWait bounds how long a batch append waits for room among the
// outstanding acknowledgements.
const asyncStallWait = 10 * time.Second

// AppendBatch publishes entries asynchronously, with at most
// Config.MaxAsyncPending acknowledgements in flight, and waits for all of
// them. Results are in entry order; a failed entry does not stop the rest.
// Use it for throughput (imports, replays, bulk deltas); entries of one
// aggregate must not depend on each other's sequences.
func (l *Log) AppendBatch(ctx context.Context, entries []Entry) ([]Result, error) {
	results := make([]Result, len(entries))
	futures := make([]jetstream.PubAckFuture, len(entries))
	msgs := make([]*nats.Msg, len(entries))
	for i, e := range entries {
		if err := e.Aggregate.validate(); err != nil {
			results[i].Err = err
			continue
		}
		msg, err := l.message(ctx, e.Aggregate, l.Subjects.Aggregate(e.Aggregate), e.Event)
		if err != nil {
			results[i].Err = err
			continue
		}
		msgs[i] = msg
	}
	if err := chargeBatch(ctx, entries, msgs); err != nil {
		return nil, err
	}
	for i, e := range entries {
		msg := msgs[i]
		if msg == nil {
			continue
		}
		results[i].EventID = e.Event.GetEventId()
		// Wait for room as long as an ack may take, not the client's
		// default 200 ms: under load that fails entries of a healthy batch.
		opts := []jetstream.PublishOpt{jetstream.WithStallWait(asyncStallWait)}
		if e.Expect.set {
			seq, err := l.sequenceAt(l.aggregatePart(e.Aggregate), e.Expect.seq)
			if err != nil {
				results[i].Err = err
				continue
			}
			opts = append(opts, jetstream.WithExpectLastSequencePerSubject(seq))
		}
		// publishAsync waits while MaxAsyncPending acks are outstanding,
		// which bounds memory however large the batch.
		f, err := l.publishAsync(ctx, msg, opts...)
		if err != nil {
			results[i].Err = publishError(e.Aggregate, err)
			continue
		}
		futures[i] = f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			results[i].Sequence, results[i].Duplicate = l.lastAt(l.aggregatePart(entries[i].Aggregate), ack.Sequence), ack.Duplicate
		case err := <-f.Err():
			e := entries[i]
			a, err := l.recoverDuplicate(ctx, e.Aggregate, e.Expect, e.Event.GetEventId(), publishError(e.Aggregate, err))
			results[i] = Result{Appended: a, Err: err}
		case <-ctx.Done():
			return results, ctx.Err()
		}
	}
	return results, nil
}

// publishAsync publishes msg asynchronously. When every in-flight slot
// stays taken for the stall wait (the server acknowledges slower than we
// publish), it waits for the outstanding acks and tries again: a batch
// never skips an event and goes on with the next, which would land the
// rest out of order with a hole.
func (l *Log) publishAsync(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	opts = append(opts, jetstream.WithStallWait(l.cfg.AsyncStallWait))
	for {
		f, err := l.js.PublishMsgAsync(msg, opts...)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return f, err
		}
		select {
		case <-l.js.PublishAsyncComplete():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// LastSequence returns the stream sequence of an aggregate's last event, or
// 0 when it has none: the value to pass to ExpectSequence for a blind write.
func (l *Log) LastSequence(ctx context.Context, agg Aggregate) (uint64, error) {
	if err := agg.validate(); err != nil {
		return 0, err
	}
	var seq uint64
	k := l.aggregatePart(agg)
	err := l.retry(ctx, "last sequence of "+agg.String(), func(actx context.Context) error {
		msg, err := l.streams[k].GetLastMsgForSubject(actx, l.Subjects.Aggregate(agg))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			seq = 0
			return nil
		case err != nil:
			return err
		}
		seq = msg.Sequence
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("eventlog: last sequence of %s: %w", agg, err)
	}
	return l.lastAt(k, seq), nil
}

// Head is the last position of the stream: everything appended so far.
// A partitioned log has one per partition: ask a view (Partition).
func (l *Log) Head(ctx context.Context) (uint64, error) {
	_, last, err := l.Bounds(ctx)
	return last, err
}

// Bounds are the first position still in the stream and the last one. A
// reader asking for history before first has lost events to retention and
// must be told so. A partitioned log has bounds per partition: ask a view
// (Partition).
func (l *Log) Bounds(ctx context.Context) (first, last uint64, err error) {
	k, err := l.part(nil)
	if err != nil {
		return 0, 0, err
	}
	var info *jetstream.StreamInfo
	err = l.retry(ctx, "stream info", func(actx context.Context) error {
		var err error
		info, err = l.streams[k].Info(actx)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("eventlog: stream info: %w", err)
	}
	return l.firstAt(k, info.State.FirstSeq), l.lastAt(k, info.State.LastSeq), nil
}
