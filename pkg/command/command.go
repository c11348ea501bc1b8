// Package command owns the write path every command takes
// (docs/architecture.md, "The write path"; docs/adr/0005-hot-path.md):
// decide on the aggregate's state as this process holds it, append with the
// expected subject sequence, and answer from the decision. No projection is
// waited for.
//
// The state is a bounded per-process cache of folded aggregates. An entry is
// folded by the service's own read-model fold (the Project function its
// projector runs) into a private in-memory store that holds only what the
// aggregate's subject produced, together with the last subject sequence it
// covers. A miss loads the aggregate's subject from the log; a conflict
// means another replica wrote: the entry catches up from the log and the
// command decides again. No locks across processes: any number of replicas
// may run the same command at once and exactly one wins each round.
package command

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/metrics"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// ErrExhausted: the aggregate kept changing under the command until the
// attempts ran out. Callers see Aborted (retry later).
var ErrExhausted = fault.Sentinel("command: the aggregate kept changing; gave up",
	fault.Conflict("concurrent changes kept conflicting; retry the request", 100*time.Millisecond))

// Fold folds one event into an aggregate's state: the read model's own
// projection function (projector.Projection satisfies it). It reads the
// state from store and returns what the event changes.
type Fold interface {
	Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error)
}

// Writer runs commands on aggregates it holds in its cache. Build it with
// NewWriter; it is safe for concurrent use.
type Writer struct {
	log         *eventlog.Log
	fold        Fold
	maxAttempts int
	cache       *cache
	conflicts   metric.Int64Counter
}

// Options tune a Writer. Zero values take the defaults.
type Options struct {
	// MaxAttempts bounds conflict retries; default 32.
	MaxAttempts int
	// CacheSize bounds the aggregates held; default 4096.
	CacheSize int
}

// NewWriter returns a writer that folds aggregates with fold.
func NewWriter(log *eventlog.Log, fold Fold, opts Options) *Writer {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 32
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 4096
	}
	return &Writer{log: log, fold: fold, maxAttempts: opts.MaxAttempts, cache: newCache(opts.CacheSize),
		conflicts: metricnoop.Int64Counter{}}
}

// Instrument counts the writer's conflict retries on mp
// (agentruntime.command.conflicts, by aggregate kind): another writer (a
// replica) got to the aggregate first and this one decided again. Call it
// before the writer is used.
func (x *Writer) Instrument(mp metric.MeterProvider) error {
	c, err := mp.Meter("github.com/agentruntime/agentruntime/pkg/command").Int64Counter(metrics.CommandConflicts,
		metric.WithDescription("Commands that found their aggregate changed by another writer and decided again, by aggregate kind."))
	if err != nil {
		return err
	}
	x.conflicts = c
	return nil
}

// State is an aggregate as the writer holds it: the read model's documents
// that the aggregate's own events produce, read with the read model's own
// readers, and the subject sequence they cover (0: no events yet).
type State struct {
	projection.Store
	Last uint64
	seen func(eventID string) (uint64, bool)
}

// Seen says whether one of the aggregate's recent events (the last
// recentIDs this process folded) has this id, and at which sequence: a
// command retried with the ids it was given (a worker's report) finds its
// first attempt even when the decision would now refuse it.
func (s State) Seen(eventID string) (uint64, bool) {
	if s.seen == nil {
		return 0, false
	}
	return s.seen(eventID)
}

// Decide returns the events a command appends given the aggregate's state.
// No events and no error: nothing to append (an idempotent retry, a no-op).
// An error is the command's answer to the caller; nothing is appended. It
// may run more than once (after a conflict), each time on newer state.
type Decide func(ctx context.Context, st State) ([]*eventsv1.RuntimeEvent, error)

// Result of a command.
type Result struct {
	Appended []eventlog.Appended
	// Sequence is the consistency token: the log sequence of the last event
	// appended, or of the aggregate's last event when nothing was appended.
	Sequence uint64
	// State is the aggregate after the command's events: answer from it. It
	// may already include a later command's events of this process, never
	// fewer than this one's.
	State State
}

// Key derives the ids of a command's events from what identifies the
// command (an idempotency key, a turn id, a command id), so a retry, even
// from another process after a restart, appends the same message ids and
// the log's de-duplication recognises it. Events that carry an id keep it.
type Key string

// Execute runs decide on agg until its events land at the expected
// sequence. key may be empty: events without ids then get fresh ones.
func (x *Writer) Execute(ctx context.Context, agg eventlog.Aggregate, key Key, decide Decide) (Result, error) {
	return x.execute(ctx, agg, key, decide, false)
}

// ExecuteNew is Execute for a command that creates its aggregate (a fresh
// id): a miss does not read the log, the first decision runs on the empty
// state and its append expects an empty subject. When the aggregate did
// exist after all, that append conflicts (or the refusal or no-op is
// confirmed on the log, as in Execute): the entry catches up and the
// command decides again on what is there. A create costs its appends only.
func (x *Writer) ExecuteNew(ctx context.Context, agg eventlog.Aggregate, key Key, decide Decide) (Result, error) {
	return x.execute(ctx, agg, key, decide, true)
}

func (x *Writer) execute(ctx context.Context, agg eventlog.Aggregate, key Key, decide Decide, assumeNew bool) (Result, error) {
	e := x.cache.get(agg)
	e.mu.Lock()
	defer e.mu.Unlock()
	fresh := false
	if !e.loaded {
		if assumeNew {
			// Unconfirmed (an entry not loaded is empty): the expected
			// sequence (0) checks an append; a refusal or a no-op is
			// confirmed below.
			e.loaded = true
		} else {
			if err := x.catchUp(ctx, agg, e); err != nil {
				return Result{}, err
			}
			e.loaded, fresh = true, true
		}
	}
	for i := 0; i < x.maxAttempts; i++ {
		evs, err := decide(ctx, e.state())
		if err != nil || len(evs) == 0 {
			// An append is checked by the expected sequence; a refusal or a
			// no-op is not, so it must not rest on a stale entry (a turn
			// another replica admitted is not "not found"). Confirm it on
			// the log's state: one batch get when nothing changed.
			if !fresh {
				before := e.last
				if err := x.catchUp(ctx, agg, e); err != nil {
					return Result{}, err
				}
				fresh = true
				if e.last != before {
					i--
					continue
				}
			}
			if err != nil {
				return Result{}, err
			}
			return Result{Sequence: e.last, State: e.state()}, nil
		}
		if key != "" {
			for n, ev := range evs {
				if ev.GetEventId() == "" {
					ev.EventId = DeriveID(agg, string(key), n)
				}
			}
		}
		// All of the command or none of it: several events go as one
		// atomic batch (docs/adr/0005-hot-path.md, "Atomic commands"), so
		// no crash, lost connection or other replica can leave a head
		// without its tail; one event is a plain publish.
		appended, err := x.log.AppendAtomic(ctx, agg, eventlog.ExpectSequence(e.last), evs...)
		if errors.Is(err, eventlog.ErrConflict) {
			x.conflicts.Add(ctx, 1, metric.WithAttributes(attribute.String("aggregate_kind", agg.Kind)))
			// Another writer got there first. Losers back off a random,
			// growing moment so a hot aggregate does not livelock its
			// writers, then learn what was written and decide again at once.
			if err := backoff(ctx, i); err != nil {
				return Result{}, err
			}
			before := e.last
			if err := x.catchUp(ctx, agg, e); err != nil {
				return Result{}, err
			}
			if e.last == before {
				if err := x.realign(ctx, agg, e); err != nil {
					return Result{}, err
				}
			}
			fresh = true
			continue
		}
		if err != nil {
			// Part of the command may have landed: the entry no longer
			// knows where the aggregate stands.
			e.loaded = false
			e.reset()
			return Result{Appended: appended}, err
		}
		if err := x.foldAppended(ctx, agg, e, evs, appended); err != nil {
			return Result{}, err
		}
		return Result{Appended: appended, Sequence: appended[len(appended)-1].Sequence, State: e.state()}, nil
	}
	return Result{}, fmt.Errorf("%w after %d attempts on %s", ErrExhausted, x.maxAttempts, agg)
}

// Load returns the aggregate's state as this process holds it, loading it
// from the log on a miss. A read for a decision outside Execute (a check
// before a command that writes elsewhere) uses it; it does not see writes
// of other replicas since the entry was last refreshed.
func (x *Writer) Load(ctx context.Context, agg eventlog.Aggregate) (State, error) {
	e := x.cache.get(agg)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded {
		if err := x.catchUp(ctx, agg, e); err != nil {
			return State{}, err
		}
		e.loaded = true
	}
	return e.state(), nil
}

// Held returns the aggregate's state as this process holds it, without
// any I/O: ok is false when no loaded entry is held (never written or
// loaded here, or evicted). A reader that has another source for what the
// entry lacks (a read model that follows every replica) takes whichever is
// newer, and sees this process's own writes before its projector does.
// It waits for a command in flight on the aggregate.
func (x *Writer) Held(agg eventlog.Aggregate) (State, bool) {
	e, ok := x.cache.peek(agg)
	if !ok {
		return State{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.loaded {
		return State{}, false
	}
	return e.state(), true
}

// Refresh catches the held state up with the log: the aggregate as of now,
// including every replica's writes.
func (x *Writer) Refresh(ctx context.Context, agg eventlog.Aggregate) (State, error) {
	e := x.cache.get(agg)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := x.catchUp(ctx, agg, e); err != nil {
		return State{}, err
	}
	e.loaded = true
	return e.state(), nil
}

// foldAppended applies the command's own events to the entry. When the log
// said some were already there (a retried command), the entry may be
// behind them: it catches up from the log instead.
func (x *Writer) foldAppended(ctx context.Context, agg eventlog.Aggregate, e *entry, evs []*eventsv1.RuntimeEvent, appended []eventlog.Appended) error {
	for i, ap := range appended {
		if ap.Duplicate || ap.Sequence <= e.last {
			return x.catchUp(ctx, agg, e)
		}
		ev := evs[i]
		ev.Sequence = ap.Sequence
		if err := e.apply(ctx, x.fold, &eventlog.Record{Event: ev, Subject: x.log.Subjects.Aggregate(agg)}); err != nil {
			e.loaded = false
			e.reset()
			return err
		}
	}
	return nil
}

// catchUp folds the aggregate's events after the entry's sequence: one
// batch direct get when nothing is new.
func (x *Writer) catchUp(ctx context.Context, agg eventlog.Aggregate, e *entry) error {
	_, err := x.log.ReadAggregate(ctx, agg, e.last, func(r *eventlog.Record) error {
		return e.apply(ctx, x.fold, r)
	})
	if err != nil {
		e.loaded = false
		e.reset()
	}
	return err
}

// realign handles a conflict with nothing new to read: the aggregate's
// last events were removed by the stream's retention, so the log's last
// subject sequence is below the entry's. The folded state stays (it is
// the history retention dropped); the expectation follows the log.
func (x *Writer) realign(ctx context.Context, agg eventlog.Aggregate, e *entry) error {
	head, err := x.log.LastSequence(ctx, agg)
	if err != nil {
		return err
	}
	if head < e.last {
		e.last = head
	}
	return nil
}

// DeriveID is the id of the n-th event of the command identified by key on
// agg: the same inputs give the same id in every process.
func DeriveID(agg eventlog.Aggregate, key string, n int) string {
	return ids.Derive(ids.Event, agg.String(), key, strconv.Itoa(n))
}

func backoff(ctx context.Context, attempt int) error {
	ceiling := min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)
	t := time.NewTimer(rand.N(ceiling) + 1)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// entryProjection keys the checkpoint of an entry's private store.
const entryProjection = "aggregate"

type entry struct {
	key    eventlog.Aggregate
	mu     sync.Mutex
	loaded bool
	store  *projection.Memory
	last   uint64
	ids    *recent
	elem   *list.Element
}

func (e *entry) state() State {
	return State{Store: e.store, Last: e.last, seen: e.ids.get}
}

func (e *entry) reset() {
	e.store = projection.NewMemory()
	e.last = 0
	e.ids = newRecent()
}

// recentIDs bounds the event ids an entry remembers.
const recentIDs = 512

// recent is a bounded set of event ids with their sequences, safe to read
// while its entry's command appends. It grows with the aggregate up to
// recentIDs (most aggregates have a handful of events: a new entry
// allocates nothing up front).
type recent struct {
	mu   sync.Mutex
	seq  map[string]uint64
	ring []string
	next int
}

func newRecent() *recent {
	return &recent{seq: make(map[string]uint64)}
}

func (r *recent) add(id string, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < recentIDs {
		r.ring = append(r.ring, id)
		r.seq[id] = seq
		return
	}
	delete(r.seq, r.ring[r.next])
	r.ring[r.next], r.seq[id] = id, seq
	r.next = (r.next + 1) % len(r.ring)
}

func (r *recent) get(id string) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.seq[id]
	return seq, ok
}

func (e *entry) apply(ctx context.Context, fold Fold, r *eventlog.Record) error {
	seq := r.Event.GetSequence()
	if seq <= e.last {
		return nil
	}
	b, err := fold.Project(ctx, e.store, r)
	if err != nil {
		return fmt.Errorf("command: fold %s at %d: %w", r.Event.GetType(), seq, err)
	}
	b.Projection, b.Sequence = entryProjection, seq
	if _, err := e.store.Apply(ctx, b); err != nil {
		return err
	}
	e.last = seq
	e.ids.add(r.Event.GetEventId(), seq)
	return nil
}

// cache is a bounded LRU of entries. An entry evicted while a command holds
// it stays usable by that command; the next command loads a fresh one.
type cache struct {
	mu      sync.Mutex
	size    int
	order   *list.List
	entries map[eventlog.Aggregate]*entry
}

func newCache(size int) *cache {
	return &cache{size: size, order: list.New(), entries: make(map[eventlog.Aggregate]*entry)}
}

func (c *cache) get(agg eventlog.Aggregate) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[agg]; ok {
		c.order.MoveToFront(e.elem)
		return e
	}
	e := &entry{key: agg, store: projection.NewMemory(), ids: newRecent()}
	e.elem = c.order.PushFront(e)
	c.entries[agg] = e
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*entry).key)
	}
	return e
}

// peek returns the entry of agg when the cache has one, without creating
// it.
func (c *cache) peek(agg eventlog.Aggregate) (*entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[agg]
	if ok {
		c.order.MoveToFront(e.elem)
	}
	return e, ok
}

// Len is how many aggregates the executor holds (for tests and metrics).
func (x *Writer) Len() int {
	x.cache.mu.Lock()
	defer x.cache.mu.Unlock()
	return len(x.cache.entries)
}

// Folds folds with several projections over one state, as if they were
// one: each reads the state before the event, their changes are applied
// together. Their keys must not overlap (they are separate read models in
// the service's store too).
func Folds(folds ...Fold) Fold { return multiFold(folds) }

type multiFold []Fold

func (m multiFold) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	var out projection.Batch
	for _, f := range m {
		b, err := f.Project(ctx, store, rec)
		if err != nil {
			return projection.Batch{}, err
		}
		out.Deletes = append(out.Deletes, b.Deletes...)
		out.Puts = append(out.Puts, b.Puts...)
		out.IndexRemoves = append(out.IndexRemoves, b.IndexRemoves...)
		out.IndexAdds = append(out.IndexAdds, b.IndexAdds...)
	}
	return out, nil
}
