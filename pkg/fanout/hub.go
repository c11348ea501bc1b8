// Package fanout owns the per-process fan-out hub (DESIGN §6, ADR 0006):
// one ordered consumer per partition of the event log feeds every live
// subscription of the process in memory, so the number of JetStream
// consumers does not grow with the number of subscribers. A subscription
// that starts in the past, or that fell behind the live feed, reads the
// missing range from the log and joins the live feed with no gap and no
// duplicate. The hub never waits for a subscriber: one whose queue is full
// is detached and catches up from the log at its own pace.
//
// On a log of several partitions (ADR 0013 §3) the hub follows each
// partition on its own, with its own position and recent records: a
// session's subscription is served by its session's partition, and one
// across sessions (a tenant's) merges a sub-subscription per partition as
// their events arrive, with a Cursor per partition to resume from.
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
	"sync/atomic"
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
	// (shared, not copied), per partition it reads. Default 1024.
	Buffer int
	// Recent is how many of the last dispatched records the hub keeps, per
	// partition, to serve the tail of a hand-off from memory. Default 8192.
	Recent int
	// RecentBytes bounds their encoded size, per partition. Default 64 MiB.
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
	// parts follow the log's partitions, one each (the log itself at P = 1).
	parts []*part
	open  atomic.Int64
}

// part follows one partition: its position and recent records are of that
// partition's positions, which grow with its stream sequence, so "after
// pos" and the sorted recent records mean what they mean on one stream.
type part struct {
	hub *Hub
	k   int
	log *eventlog.Log // the partition's view (the log itself at P = 1)

	mu      sync.Mutex
	started bool
	closed  bool
	// pos is the last position dispatched: every record after it reaches
	// the members attached now.
	pos     uint64
	tenants map[string]*tenantIndex
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
	subs  []*member
	slot  int // in bucket.groups
}

// scoped is a dispatched record with its subject's tenant and session.
type scoped struct {
	rec             *eventlog.Record
	tenant, session string
	size            int
}

// New returns a hub on log (the whole log: the hub follows each of its
// partitions). It starts following a partition at the first subscription
// that reads it.
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
	h := &Hub{log: log, cfg: cfg, replays: make(chan struct{}, cfg.MaxReplays)}
	for k, view := range log.Views() {
		h.parts = append(h.parts, &part{hub: h, k: k, log: view, tenants: map[string]*tenantIndex{}})
	}
	return h
}

// Partitions is the number of partitions the hub follows: the length of
// its subscriptions' cursors.
func (h *Hub) Partitions() int { return len(h.parts) }

// Stats is a view of the hub for tests and metrics.
type Stats struct {
	// Subscriptions open (from Subscribe to Close).
	Subscriptions int
	// Position is the last sequence dispatched at P = 1; on a partitioned
	// log, the sum of the last stream sequence dispatched of each
	// partition (a count that grows as the hub follows the log).
	Position uint64
	// Positions is the last position dispatched of each partition.
	Positions []uint64
	// Replays is the number of history reads in flight.
	Replays int
}

// Stats reports the hub's state.
func (h *Hub) Stats() Stats {
	st := Stats{Subscriptions: int(h.open.Load()), Replays: len(h.replays)}
	p := uint64(len(h.parts))
	for _, pt := range h.parts {
		pt.mu.Lock()
		pos := pt.pos
		pt.mu.Unlock()
		st.Positions = append(st.Positions, pos)
		st.Position += pos / p
	}
	return st
}

// Close stops the hub; its subscriptions end with ErrClosed.
func (h *Hub) Close() {
	for _, p := range h.parts {
		p.close()
	}
}

func (p *part) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	cancel, done := p.cancel, p.done
	var subs []*member
	for _, ti := range p.tenants {
		for _, b := range append([]*bucket{ti.all}, slices.Collect(maps.Values(ti.sessions))...) {
			for _, g := range b.groups {
				subs = append(subs, g.subs...)
			}
		}
	}
	for _, s := range subs {
		s.slot, s.group = -1, nil
	}
	p.tenants = map[string]*tenantIndex{}
	p.mu.Unlock()
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

// start begins following the partition after its current last position.
// Called with p.mu held.
func (p *part) start(ctx context.Context) error {
	// The hub outlives the subscriber that starts it.
	ctx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelStart()
	_, last, err := p.log.Bounds(ctx)
	if err != nil {
		return err
	}
	sub, err := p.log.Subscribe(ctx, []string{p.log.Subjects.All()}, eventlog.FromSequence(last+1))
	if err != nil {
		return err
	}
	hctx, cancel := context.WithCancel(context.Background())
	p.pos, p.started, p.cancel, p.done = last, true, cancel, make(chan struct{})
	go p.run(hctx, sub)
	return nil
}

// run dispatches until the hub is closed. When the consumer fails past its
// own recovery it is made again from the position: nothing is skipped.
func (p *part) run(ctx context.Context, sub *eventlog.Subscription) {
	defer close(p.done)
	backoff := 50 * time.Millisecond
	for {
		rec, err := sub.Next(ctx)
		if err == nil {
			backoff = 50 * time.Millisecond
			p.dispatch(rec)
			continue
		}
		sub.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			p.hub.cfg.Logger.ErrorContext(ctx, "fanout: the hub's consumer stopped; following again from its position", "error", err, "partition", p.k, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			p.mu.Lock()
			from := p.pos + 1
			p.mu.Unlock()
			if sub, err = p.log.Subscribe(ctx, []string{p.log.Subjects.All()}, eventlog.FromSequence(from)); err == nil {
				break
			}
		}
	}
}

func (p *part) dispatch(rec *eventlog.Record) {
	seq := rec.Event.GetSequence()
	tenant, session, ok := p.log.Subjects.Scope(rec.Subject)
	size := proto.Size(rec.Event)
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq <= p.pos {
		return
	}
	p.pos = seq
	if !ok {
		return
	}
	p.remember(scoped{rec: rec, tenant: tenant, session: session, size: size})
	ti := p.tenants[tenant]
	if ti == nil {
		return
	}
	p.deliver(ti.all, rec)
	if b := ti.sessions[session]; b != nil {
		p.deliver(b, rec)
	}
}

// remember keeps rec among the recent ones, dropping the oldest beyond
// the count and the bytes allowed; p.mu held.
func (p *part) remember(r scoped) {
	cfg := p.hub.cfg
	p.recent = append(p.recent, r)
	p.recentBytes += r.size
	drop := 0
	for len(p.recent)-drop > cfg.Recent || (p.recentBytes > cfg.RecentBytes && len(p.recent)-drop > 1) {
		p.recentBytes -= p.recent[drop].size
		drop++
	}
	if drop > 0 {
		// The front of the array is released when append next grows it.
		clear(p.recent[:drop])
		p.recent = p.recent[drop:]
	}
}

// deliver offers rec to a bucket's subscriptions, detaching those that are
// full. Downward, so that a swap-remove moves a visited one.
func (p *part) deliver(b *bucket, rec *eventlog.Record) {
	for gi := len(b.groups) - 1; gi >= 0; gi-- {
		g := b.groups[gi]
		if g.match != nil && !g.match(rec.Event) {
			continue
		}
		for i := len(g.subs) - 1; i >= 0; i-- {
			if s := g.subs[i]; !s.offer(rec) {
				p.unindex(s)
			}
		}
	}
}

func newBucket() *bucket { return &bucket{byKey: map[string]*group{}} }

func (p *part) bucketFor(f Filter, create bool) *bucket {
	ti := p.tenants[f.Tenant]
	if ti == nil {
		if !create {
			return nil
		}
		ti = &tenantIndex{all: newBucket(), sessions: map[string]*bucket{}}
		p.tenants[f.Tenant] = ti
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

// index adds s; p.mu held.
func (p *part) index(s *member) {
	b := p.bucketFor(s.filter, true)
	key := s.filter.Key
	if key == "" && s.filter.Match != nil {
		key = fmt.Sprintf("\x00%p", s.sub) // a filter of its own
	}
	g := b.byKey[key]
	if g == nil {
		g = &group{key: key, match: s.filter.Match, slot: len(b.groups)}
		b.groups = append(b.groups, g)
		b.byKey[key] = g
	}
	s.group, s.slot = g, len(g.subs)
	g.subs = append(g.subs, s)
}

// unindex removes s if it is indexed; p.mu held.
func (p *part) unindex(s *member) {
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
	if len(g.subs) > 0 {
		return
	}
	b := p.bucketFor(s.filter, false)
	lastG := len(b.groups) - 1
	movedG := b.groups[lastG]
	b.groups[g.slot], movedG.slot = movedG, g.slot
	b.groups[lastG] = nil
	b.groups = b.groups[:lastG]
	delete(b.byKey, g.key)
	if len(b.groups) > 0 {
		return
	}
	ti := p.tenants[s.filter.Tenant]
	if s.filter.Session != "" {
		delete(ti.sessions, s.filter.Session)
	}
	if len(ti.all.groups) == 0 && len(ti.sessions) == 0 {
		delete(p.tenants, s.filter.Tenant)
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

// Subscribe starts a subscription at position from (inclusive; a
// sequence as the log hands it out), or at Now. A subscription across the
// sessions of a partitioned log has no single position to start from: it
// takes Now here, or a Cursor (SubscribeAt). When it returns, the
// subscription is attached: every event appended from then on reaches it.
// Close it when done.
func (h *Hub) Subscribe(ctx context.Context, f Filter, from uint64, opts Options) (*Subscription, error) {
	if f.Session == "" && len(h.parts) > 1 && from != Now {
		return nil, errors.New("fanout: a subscription across partitions starts at Now or from a cursor (SubscribeAt)")
	}
	starts := make([]uint64, len(h.parts))
	for k := range starts {
		starts[k] = from
	}
	return h.subscribe(ctx, f, starts, opts)
}

// SubscribeAt starts a subscription right after a cursor: in each
// partition it reads, after the stream sequence the cursor holds for it.
// The cursor has one entry per partition of the log (Partitions).
func (h *Hub) SubscribeAt(ctx context.Context, f Filter, at Cursor, opts Options) (*Subscription, error) {
	if len(at) != len(h.parts) {
		return nil, fmt.Errorf("fanout: a cursor of %d partitions on a log of %d", len(at), len(h.parts))
	}
	starts := make([]uint64, len(h.parts))
	for k, seq := range at {
		starts[k] = h.log.Position(k, seq+1)
	}
	return h.subscribe(ctx, f, starts, opts)
}

// subscribe attaches a member to every partition f reads, each at its
// start position.
func (h *Hub) subscribe(ctx context.Context, f Filter, starts []uint64, opts Options) (*Subscription, error) {
	if f.Tenant == "" {
		return nil, errors.New("fanout: a subscription needs a tenant")
	}
	limit := opts.Buffer
	if limit <= 0 {
		limit = h.cfg.Buffer
	}
	s := &Subscription{hub: h, wake: make(chan struct{}, 1)}
	parts := h.parts
	if f.Session != "" {
		k := h.log.Subjects.PartitionOf(f.Tenant, f.Session)
		parts = h.parts[k : k+1]
	}
	for _, p := range parts {
		s.members = append(s.members, &member{sub: s, part: p, filter: f, limit: limit, next: starts[p.k], slot: -1})
		p.mu.Lock()
		if !p.started && !p.closed {
			if err := p.start(ctx); err != nil {
				p.mu.Unlock()
				return nil, fmt.Errorf("fanout: start: %w", err)
			}
		}
		p.mu.Unlock()
	}
	for i, m := range s.members {
		if err := m.attach(); err != nil {
			for _, a := range s.members[:i] {
				a.detach()
			}
			return nil, err
		}
	}
	h.open.Add(1)
	return s, nil
}

// Subscription is one subscriber's view: one member per partition it
// reads (a session's subscription, and any at P = 1, has one). Next,
// Cursor and Close are called by one goroutine, the subscriber's.
type Subscription struct {
	hub     *Hub
	members []*member
	wake    chan struct{}
	timer   *time.Timer
	turn    int // the member Next looks at first, in turn
	closed  bool
}

// member follows one partition for a subscription.
type member struct {
	sub    *Subscription
	part   *part
	filter Filter
	limit  int

	// Guarded by part.mu.
	group *group
	slot  int    // in group.subs; -1 when not attached
	from  uint64 // the hub offers only positions >= from

	// Guarded by mu: what the hub hands over.
	mu        sync.Mutex
	queue     []*eventlog.Record
	detached  bool
	lagFrom   uint64 // first position the hub could not queue
	hubClosed bool

	// The subscriber's own.
	next      uint64 // every matching position before it was returned
	replaying bool   // history [next, upTo] comes before the queue
	upTo      uint64
	spare     []*eventlog.Record
}

// offer queues rec (which its group's filter matched); false when the
// queue is full, and s is then detached from the hub at rec's position.
// Called with part.mu held.
func (s *member) offer(rec *eventlog.Record) bool {
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

// signal wakes the subscriber, whichever of its members has news.
func (s *member) signal() {
	select {
	case s.sub.wake <- struct{}{}:
	default:
	}
}

// attach joins the live feed at s.next: the hub queues every record after
// its position from now on, and history up to that position is read first.
func (s *member) attach() error {
	p := s.part
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	pos := p.pos
	if s.next == Now {
		s.next = pos + 1
	}
	s.from = s.next
	s.mu.Lock()
	s.detached, s.lagFrom = false, 0
	s.mu.Unlock()
	p.index(s)
	s.replaying, s.upTo = s.next <= pos, pos
	return nil
}

func (s *member) detach() {
	s.part.mu.Lock()
	s.part.unindex(s)
	s.part.mu.Unlock()
}

// history returns the next matching records of [next, upTo]: from the
// part's recent records when they reach back to next, else from the log
// up to where the recent ones begin.
func (s *member) history(ctx context.Context) ([]*eventlog.Record, error) {
	p, cfg := s.part, s.part.hub.cfg
	p.mu.Lock()
	var oldest uint64
	if len(p.recent) > 0 {
		oldest = p.recent[0].rec.Event.GetSequence()
	}
	if oldest != 0 && s.next >= oldest {
		i := sort.Search(len(p.recent), func(i int) bool { return p.recent[i].rec.Event.GetSequence() >= s.next })
		var out []*eventlog.Record
		for ; i < len(p.recent) && len(out) < cfg.ReplayBatch; i++ {
			r := p.recent[i]
			seq := r.rec.Event.GetSequence()
			if seq > s.upTo {
				break
			}
			s.next = seq + 1
			if r.tenant == s.filter.Tenant && (s.filter.Session == "" || r.session == s.filter.Session) && s.filter.matches(r.rec.Event) {
				out = append(out, r.rec)
			}
		}
		if i == len(p.recent) || p.recent[i].rec.Event.GetSequence() > s.upTo {
			s.next = s.upTo + 1
		}
		p.mu.Unlock()
		return out, nil
	}
	p.mu.Unlock()
	// Older than what the hub remembers: the log holds it, settled on
	// every replica.
	limit := s.upTo
	if oldest != 0 {
		limit = min(limit, oldest-1)
	}
	replays := p.hub.replays
	select {
	case replays <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	recs, err := p.log.History(ctx, s.filter.subjects(p.log.Subjects)[0], s.next, cfg.ReplayBatch)
	<-replays
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

// poll returns what the member has now, without waiting: history it is
// replaying, else what the hub queued; closed when the hub is closed and
// everything it queued was returned.
func (s *member) poll(ctx context.Context) (recs []*eventlog.Record, closed bool, err error) {
	for {
		if s.replaying {
			recs, err := s.history(ctx)
			if err != nil {
				return nil, false, err
			}
			if s.next > s.upTo {
				s.replaying = false
			}
			if len(recs) > 0 {
				return recs, false, nil
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
			// The slice comes back to the queue when the member next
			// returns records: the caller is done with it by then.
			s.spare = queued
			return queued, false, nil
		}
		if closed {
			return nil, true, nil
		}
		if detached {
			// Everything the hub queued before lagFrom was returned.
			s.next = max(s.next, lagFrom)
			if err := s.attach(); err != nil {
				return nil, false, err
			}
			continue
		}
		return nil, false, nil
	}
}

// Next returns the next records, waiting at most idle for one: none and
// no error means the subscription was idle that long. The records of one
// call are of one partition, in its stream order; those of different
// partitions come as they arrive, each partition in order. The records are
// shared with other subscriptions (do not modify them) and the slice is
// valid until the next call. An error ends the subscription (ctx's, the
// log's, or ErrClosed).
func (s *Subscription) Next(ctx context.Context, idle time.Duration) ([]*eventlog.Record, error) {
	for {
		closed := false
		for i := range s.members {
			j := (s.turn + i) % len(s.members)
			recs, done, err := s.members[j].poll(ctx)
			if err != nil {
				return nil, err
			}
			if len(recs) > 0 {
				// The next call looks at the others first: a busy
				// partition does not starve a quiet one.
				s.turn = (j + 1) % len(s.members)
				return recs, nil
			}
			closed = closed || done
		}
		if closed {
			return nil, ErrClosed
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

// From is the position to resume a subscription of one partition from (a
// session's, or any at P = 1): every event before it that the filter
// matches has been returned by Next. 0 for a subscription across
// partitions: it resumes from its Cursor.
func (s *Subscription) From() uint64 {
	if len(s.members) != 1 {
		return 0
	}
	return s.members[0].next
}

// Cursor is where the subscription is in each partition: every event the
// filter matches up to the cursor's entry was returned by Next, and
// SubscribeAt with it resumes right after. The entries of partitions the
// subscription does not read (another session's) are 0.
func (s *Subscription) Cursor() Cursor {
	c := make(Cursor, len(s.hub.parts))
	for _, m := range s.members {
		c[m.part.k] = lastBefore(len(s.hub.parts), m.part.k, m.next)
	}
	return c
}

// Close detaches the subscription.
func (s *Subscription) Close() {
	for _, m := range s.members {
		m.detach()
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	if !s.closed {
		s.closed = true
		s.hub.open.Add(-1)
	}
}
