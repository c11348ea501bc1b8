// Package fanout owns the per-process fan-out hub (docs/architecture.md,
// "Streaming to clients"; ADR 0006):
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
