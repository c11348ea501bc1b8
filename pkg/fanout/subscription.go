// Subscriptions to the hub: what a subscriber asks for (Filter, a start),
// its place in the hub (member) and how it reads (history, then live).

package fanout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

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
