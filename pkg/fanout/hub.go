// Package fanout owns the per-process fan-out hub (DESIGN §6, ADR 0006):
// one ordered consumer over the whole event log feeds every live
// subscription of the process in memory, so the number of JetStream
// consumers does not grow with the number of subscribers. A subscription
// that starts in the past, or that fell behind the live feed, reads the
// missing range from the log and joins the live feed with no gap and no
// duplicate. The hub never waits for a subscriber: one whose queue is full
// is detached and catches up from the log at its own pace.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ErrClosed ends the subscriptions of a closed hub.
var ErrClosed = errors.New("fanout: hub closed")

// Config of a hub. Zero values take the defaults.
type Config struct {
	// Buffer is the default bound of a subscription's queue, in records
	// (shared, not copied). Default 1024.
	Buffer int
	// Recent is how many of the last dispatched records the hub keeps to
	// serve the tail of a hand-off from memory. Default 8192.
	Recent int
	// RecentBytes bounds their encoded size. Default 64 MiB.
	RecentBytes int
	// MaxReplays bounds the history reads (batched direct gets) in flight
	// at once. Default 32.
	MaxReplays int
	// ReplayBatch is how many records one history read returns at most.
	// Default 256.
	ReplayBatch int
	Logger      *slog.Logger
}

// Hub dispatches the log to subscriptions. Create one per process and
// share it; it is safe for concurrent use.
type Hub struct {
	log     *eventlog.Log
	cfg     Config
	replays chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	// pos is the last sequence dispatched: every record after it reaches
	// the subscriptions attached now.
	pos     uint64
	tenants map[string]*tenantIndex
	count   int
	// recent are the last dispatched records, oldest first, and their
	// encoded size.
	recent      []scoped
	recentBytes int
	cancel      context.CancelFunc
	done        chan struct{}
}

type tenantIndex struct {
	all      *bucket
	sessions map[string]*bucket
}

// bucket is the subscriptions of one tenant (and session), grouped by
// filter.
type bucket struct {
	groups []*group
	byKey  map[string]*group
}

// group is the subscriptions of a bucket with the same filter: the hub
// asks its Match once per event, however many subscribers share it (the
// browser tabs of one session watching the same thing).
type group struct {
	key   string
	match func(*eventsv1.RuntimeEvent) bool
	subs  []*Subscription
	slot  int // in bucket.groups
}

// scoped is a dispatched record with its subject's tenant and session.
type scoped struct {
	rec             *eventlog.Record
	tenant, session string
	size            int
}

// New returns a hub on log. It starts following the log at the first
// subscription.
func New(log *eventlog.Log, cfg Config) *Hub {
	if cfg.Buffer <= 0 {
		cfg.Buffer = 1024
	}
	if cfg.Recent <= 0 {
		cfg.Recent = 8192
	}
	if cfg.RecentBytes <= 0 {
		cfg.RecentBytes = 64 << 20
	}
	if cfg.MaxReplays <= 0 {
		cfg.MaxReplays = 32
	}
	if cfg.ReplayBatch <= 0 {
		cfg.ReplayBatch = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{log: log, cfg: cfg, replays: make(chan struct{}, cfg.MaxReplays), tenants: map[string]*tenantIndex{}}
}

// Stats is a view of the hub for tests and metrics.
type Stats struct {
	// Attached subscriptions (a subscription replaying history is attached).
	Subscriptions int
	// Position is the last sequence dispatched.
	Position uint64
	// Replays is the number of history reads in flight.
	Replays int
}

// Stats reports the hub's state.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Subscriptions: h.count, Position: h.pos, Replays: len(h.replays)}
}

// Close stops the hub; its subscriptions end with ErrClosed.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	cancel, done := h.cancel, h.done
	var subs []*Subscription
	for _, ti := range h.tenants {
		for _, b := range append([]*bucket{ti.all}, slices.Collect(maps.Values(ti.sessions))...) {
			for _, g := range b.groups {
				subs = append(subs, g.subs...)
			}
		}
	}
	for _, s := range subs {
		s.slot, s.group = -1, nil
	}
	h.tenants = map[string]*tenantIndex{}
	h.count = 0
	h.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		s.hubClosed = true
		s.mu.Unlock()
		s.signal()
	}
	if cancel != nil {
		cancel()
		<-done
	}
}

// start begins following the log after its current last sequence. Called
// with h.mu held.
func (h *Hub) start(ctx context.Context) error {
	// The hub outlives the subscriber that starts it.
	ctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStart()
	_, last, err := h.log.Bounds(ctx)
	if err != nil {
		return err
	}
	sub, err := h.log.Subscribe(ctx, []string{h.log.Subjects.All()}, eventlog.FromSequence(last+1))
	if err != nil {
		return err
	}
	hctx, cancel := context.WithCancel(context.Background())
	h.pos, h.started, h.cancel, h.done = last, true, cancel, make(chan struct{})
	go h.run(hctx, sub)
	return nil
}

// run dispatches until the hub is closed. When the consumer fails past its
// own recovery it is made again from the position: nothing is skipped.
func (h *Hub) run(ctx context.Context, sub *eventlog.Subscription) {
	defer close(h.done)
	backoff := 50 * time.Millisecond
	for {
		rec, err := sub.Next(ctx)
		if err == nil {
			backoff = 50 * time.Millisecond
			h.dispatch(rec)
			continue
		}
		sub.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			h.cfg.Logger.ErrorContext(ctx, "fanout: the hub's consumer stopped; following again from its position", "error", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			h.mu.Lock()
			from := h.pos + 1
			h.mu.Unlock()
			if sub, err = h.log.Subscribe(ctx, []string{h.log.Subjects.All()}, eventlog.FromSequence(from)); err == nil {
				break
			}
		}
	}
}

func (h *Hub) dispatch(rec *eventlog.Record) {
	seq := rec.Event.GetSequence()
	tenant, session, ok := h.log.Subjects.Scope(rec.Subject)
	size := proto.Size(rec.Event)
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq <= h.pos {
		return
	}
	h.pos = seq
	if !ok {
		return
	}
	h.remember(scoped{rec: rec, tenant: tenant, session: session, size: size})
	ti := h.tenants[tenant]
	if ti == nil {
		return
	}
	h.deliver(ti.all, rec)
	if b := ti.sessions[session]; b != nil {
		h.deliver(b, rec)
	}
}

// remember keeps rec among the recent ones, dropping the oldest beyond
// the count and the bytes allowed; h.mu held.
func (h *Hub) remember(r scoped) {
	h.recent = append(h.recent, r)
	h.recentBytes += r.size
	drop := 0
	for len(h.recent)-drop > h.cfg.Recent || (h.recentBytes > h.cfg.RecentBytes && len(h.recent)-drop > 1) {
		h.recentBytes -= h.recent[drop].size
		drop++
	}
	if drop > 0 {
		// The front of the array is released when append next grows it.
		clear(h.recent[:drop])
		h.recent = h.recent[drop:]
	}
}

// deliver offers rec to a bucket's subscriptions, detaching those that are
// full. Downward, so that a swap-remove moves a visited one.
func (h *Hub) deliver(b *bucket, rec *eventlog.Record) {
	for gi := len(b.groups) - 1; gi >= 0; gi-- {
		g := b.groups[gi]
		if g.match != nil && !g.match(rec.Event) {
			continue
		}
		for i := len(g.subs) - 1; i >= 0; i-- {
			if s := g.subs[i]; !s.offer(rec) {
				h.unindex(s)
			}
		}
	}
}

func newBucket() *bucket { return &bucket{byKey: map[string]*group{}} }

func (h *Hub) bucketFor(f Filter, create bool) *bucket {
	ti := h.tenants[f.Tenant]
	if ti == nil {
		if !create {
			return nil
		}
		ti = &tenantIndex{all: newBucket(), sessions: map[string]*bucket{}}
		h.tenants[f.Tenant] = ti
	}
	if f.Session == "" {
		return ti.all
	}
	b := ti.sessions[f.Session]
	if b == nil && create {
		b = newBucket()
		ti.sessions[f.Session] = b
	}
	return b
}

// index adds s; h.mu held.
func (h *Hub) index(s *Subscription) {
	b := h.bucketFor(s.filter, true)
	key := s.filter.Key
	if key == "" && s.filter.Match != nil {
		key = fmt.Sprintf("\x00%p", s) // a filter of its own
	}
	g := b.byKey[key]
	if g == nil {
		g = &group{key: key, match: s.filter.Match, slot: len(b.groups)}
		b.groups = append(b.groups, g)
		b.byKey[key] = g
	}
	s.group, s.slot = g, len(g.subs)
	g.subs = append(g.subs, s)
	h.count++
}

// unindex removes s if it is indexed; h.mu held.
func (h *Hub) unindex(s *Subscription) {
	if s.slot < 0 {
		return
	}
	g := s.group
	last := len(g.subs) - 1
	moved := g.subs[last]
	g.subs[s.slot], moved.slot = moved, s.slot
	g.subs[last] = nil
	g.subs = g.subs[:last]
	s.slot, s.group = -1, nil
	h.count--
	if len(g.subs) > 0 {
		return
	}
	b := h.bucketFor(s.filter, false)
	lastG := len(b.groups) - 1
	movedG := b.groups[lastG]
	b.groups[g.slot], movedG.slot = movedG, g.slot
	b.groups[lastG] = nil
	b.groups = b.groups[:lastG]
	delete(b.byKey, g.key)
	if len(b.groups) > 0 {
		return
	}
	ti := h.tenants[s.filter.Tenant]
	if s.filter.Session != "" {
		delete(ti.sessions, s.filter.Session)
	}
	if len(ti.all.groups) == 0 && len(ti.sessions) == 0 {
		delete(h.tenants, s.filter.Tenant)
	}
}

// Filter selects the events of a subscription.
type Filter struct {
	// Tenant is required: a subscription never sees another tenant.
	Tenant string
	// Session narrows to one session ("" is every session of the tenant,
	// eventlog.NoSession the facts of no session).
	Session string
	// Match, when set, is asked about every event of the tenant (and
	// session); the hub calls it, so it must be cheap and must not block.
	Match func(*eventsv1.RuntimeEvent) bool
	// Key names what Match selects: subscriptions of one tenant and
	// session with the same Key share one Match call per event. Empty with
	// a Match: the subscription's filter is its own.
	Key string
}

func (f Filter) subjects(s eventlog.Subjects) []string {
	if f.Session == "" {
		return []string{s.Tenant(f.Tenant)}
	}
	return []string{s.Session(f.Tenant, f.Session)}
}

// Now starts a subscription with the events appended after it.
const Now uint64 = 0

// Options of one subscription.
type Options struct {
	// Buffer overrides the hub's Config.Buffer for this subscription.
	Buffer int
}

// Subscribe starts a subscription at stream sequence from (inclusive), or
// at Now. When it returns, the subscription is attached: every event
// appended from then on reaches it. Close it when done.
func (h *Hub) Subscribe(ctx context.Context, f Filter, from uint64, opts Options) (*Subscription, error) {
	if f.Tenant == "" {
		return nil, errors.New("fanout: a subscription needs a tenant")
	}
	limit := opts.Buffer
	if limit <= 0 {
		limit = h.cfg.Buffer
	}
	s := &Subscription{hub: h, filter: f, limit: limit, next: from, slot: -1, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	if !h.started && !h.closed {
		if err := h.start(ctx); err != nil {
			h.mu.Unlock()
			return nil, fmt.Errorf("fanout: start: %w", err)
		}
	}
	h.mu.Unlock()
	if err := s.attach(); err != nil {
		return nil, err
	}
	return s, nil
}

// Subscription is one subscriber's view. Next, Cursor and Close are called
// by one goroutine, the subscriber's.
type Subscription struct {
	hub    *Hub
	filter Filter
	limit  int
	wake   chan struct{}

	// Guarded by hub.mu.
	group *group
	slot  int    // in group.subs; -1 when not attached
	from  uint64 // the hub offers only sequences >= from

	// Guarded by mu: what the hub hands over.
	mu        sync.Mutex
	queue     []*eventlog.Record
	detached  bool
	lagFrom   uint64 // first sequence the hub could not queue
	hubClosed bool

	// The subscriber's own.
	next      uint64 // every matching sequence before it was returned
	replaying bool   // history [next, upTo] comes before the queue
	upTo      uint64
	spare     []*eventlog.Record
	timer     *time.Timer
}

// offer queues rec (which its group's filter matched); false when the queue is full, and s is
// then detached from the hub at rec's sequence. Called with hub.mu held.
func (s *Subscription) offer(rec *eventlog.Record) bool {
	if rec.Event.GetSequence() < s.from {
		return true
	}
	s.mu.Lock()
	if len(s.queue) >= s.limit {
		s.detached, s.lagFrom = true, rec.Event.GetSequence()
		s.mu.Unlock()
		s.signal()
		return false
	}
	s.queue = append(s.queue, rec)
	s.mu.Unlock()
	s.signal()
	return true
}

func (f Filter) matches(ev *eventsv1.RuntimeEvent) bool { return f.Match == nil || f.Match(ev) }

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// attach joins the live feed at s.next: the hub queues every record after
// its position from now on, and history up to that position is read first.
func (s *Subscription) attach() error {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	pos := h.pos
	if s.next == Now {
		s.next = pos + 1
	}
	s.from = s.next
	s.mu.Lock()
	s.detached, s.lagFrom = false, 0
	s.mu.Unlock()
	h.index(s)
	s.replaying, s.upTo = s.next <= pos, pos
	return nil
}

// history returns the next matching records of [next, upTo]: from the
// hub's recent records when they reach back to next, else from the log up
// to where the recent ones begin.
func (s *Subscription) history(ctx context.Context) ([]*eventlog.Record, error) {
	h := s.hub
	h.mu.Lock()
	var oldest uint64
	if len(h.recent) > 0 {
		oldest = h.recent[0].rec.Event.GetSequence()
	}
	if oldest != 0 && s.next >= oldest {
		i := sort.Search(len(h.recent), func(i int) bool { return h.recent[i].rec.Event.GetSequence() >= s.next })
		var out []*eventlog.Record
		for ; i < len(h.recent) && len(out) < h.cfg.ReplayBatch; i++ {
			r := h.recent[i]
			seq := r.rec.Event.GetSequence()
			if seq > s.upTo {
				break
			}
			s.next = seq + 1
			if r.tenant == s.filter.Tenant && (s.filter.Session == "" || r.session == s.filter.Session) && s.filter.matches(r.rec.Event) {
				out = append(out, r.rec)
			}
		}
		if i == len(h.recent) || h.recent[i].rec.Event.GetSequence() > s.upTo {
			s.next = s.upTo + 1
		}
		h.mu.Unlock()
		return out, nil
	}
	h.mu.Unlock()
	// Older than what the hub remembers: the log holds it, settled on
	// every replica.
	limit := s.upTo
	if oldest != 0 {
		limit = min(limit, oldest-1)
	}
	select {
	case h.replays <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	recs, err := h.log.History(ctx, s.filter.subjects(h.log.Subjects)[0], s.next, h.cfg.ReplayBatch)
	<-h.replays
	if err != nil {
		return nil, err
	}
	out := recs[:0]
	done := len(recs) == 0
	for _, r := range recs {
		seq := r.Event.GetSequence()
		if seq > limit {
			done = true
			break
		}
		s.next = seq + 1
		if s.filter.matches(r.Event) {
			out = append(out, r)
		}
	}
	if done {
		s.next = max(s.next, limit+1)
	}
	return out, nil
}

// Next returns the next records in stream order, waiting at most idle for
// one: none and no error means the subscription was idle that long. The
// records are shared with other subscriptions (do not modify them) and the
// slice is valid until the next call. An error ends the subscription
// (ctx's, the log's, or ErrClosed).
func (s *Subscription) Next(ctx context.Context, idle time.Duration) ([]*eventlog.Record, error) {
	for {
		if s.replaying {
			recs, err := s.history(ctx)
			if err != nil {
				return nil, err
			}
			if s.next > s.upTo {
				s.replaying = false
			}
			if len(recs) > 0 {
				return recs, nil
			}
			continue
		}
		s.mu.Lock()
		queued, detached, lagFrom, closed := s.queue, s.detached, s.lagFrom, s.hubClosed
		if len(queued) > 0 {
			s.queue = s.spare[:0]
			s.spare = nil
		}
		s.mu.Unlock()
		if len(queued) > 0 {
			s.next = queued[len(queued)-1].Event.GetSequence() + 1
			// The slice comes back to the queue on the next call, when the
			// caller is done with it.
			s.spare = queued
			return queued, nil
		}
		if closed {
			return nil, ErrClosed
		}
		if detached {
			// Everything the hub queued before lagFrom was returned.
			s.next = max(s.next, lagFrom)
			if err := s.attach(); err != nil {
				return nil, err
			}
			continue
		}
		if s.timer == nil {
			s.timer = time.NewTimer(idle)
		} else {
			s.timer.Reset(idle)
		}
		select {
		case <-s.wake:
			s.timer.Stop()
		case <-s.timer.C:
			return nil, nil
		case <-ctx.Done():
			s.timer.Stop()
			return nil, ctx.Err()
		}
	}
}

// Cursor is the sequence to resume from: every event before it that the
// filter matches has been returned by Next.
func (s *Subscription) Cursor() uint64 { return s.next }

// Close detaches the subscription.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	h.unindex(s)
	h.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
}
