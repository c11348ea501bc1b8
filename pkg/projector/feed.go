package projector

import (
	"context"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
)

// Feed is one ordered consumer over the log that feeds every projector and
// reactor of a process: each event is read and decoded once, whatever the
// number of read models built from it (docs/adr/0007). The composition
// root makes one per process and gives it to every consumer with
// ContextWithOptions(ctx, WithFeed(feed)); a Run, RunAll or React without
// one reads through a feed of its own.
//
// Each consumer keeps its own checkpoint, filters, batches, readiness and
// failures. The feed reads from the lowest position any of them needs: a
// consumer that joins behind the feed (a new store, a restart after a
// failure) makes it start over from that consumer's checkpoint, and the
// consumers already ahead skip what they have applied (every handler skips
// sequences at or below its base). A consumer that fails leaves the feed
// and joins again from its checkpoint; the others go on. The feed runs
// while it has consumers and stops with the last.
//
// The feed moves at the pace of its slowest consumer: each holds at most
// feedDepth batches not yet taken.
type Feed struct {
	log      *eventlog.Log
	maxBatch int
	// parts are the partitions' feeds of a partitioned log's.
	parts []*Feed

	mu sync.Mutex
	// attached consumers receive every batch of the current subscription.
	attached map[*member]struct{}
	// waiting consumers joined behind the position: they attach when the
	// subscription starts over.
	waiting map[*member]struct{}
	running bool
	// filters of the current subscription (nil: the whole log).
	filters []string
	// next is the first sequence after the batch being handed out: who
	// attaches from there on needs nothing before it.
	next uint64
	// delivered is the first sequence not yet handed to every attached
	// consumer that needs it: where a start over begins at the latest.
	delivered uint64
	// restart ends the current subscription's read (a consumer waits).
	restart context.CancelFunc
	opened  int
}

// feedDepth is how many batches a consumer of a feed may hold untaken.
const feedDepth = 2

// member is one consumer of a feed.
type member struct {
	filters []string
	// from is the first sequence the consumer needs.
	from uint64
	// have is the last sequence handed to it (from-1 before any): a batch
	// it has already had is not handed again after a start over.
	have uint64
	ch   chan chunk
	gone chan struct{}
}

// chunk is what the feed hands a consumer: a batch of the log in order
// (shared: not to be changed) or the error that ended the subscription.
type chunk struct {
	recs []*eventlog.Record
	err  error
}

// NewFeed returns a feed over log folding up to DefaultMaxBatch events per
// batch. Over a partitioned log it is one feed per partition, each over the
// partition's view (consumers run per partition: partitions.go).
func NewFeed(log *eventlog.Log) *Feed {
	f := newFeed(log, DefaultMaxBatch)
	if _, view := log.View(); !view && log.Partitions() > 1 {
		f.parts = make([]*Feed, log.Partitions())
		for k := range f.parts {
			f.parts[k] = newFeed(log.Partition(k), DefaultMaxBatch)
		}
	}
	return f
}

func newFeed(log *eventlog.Log, maxBatch int) *Feed {
	return &Feed{log: log, maxBatch: maxBatch, attached: map[*member]struct{}{}, waiting: map[*member]struct{}{}}
}

// of is the feed that reads log: f, or f's feed of log's partition; nil
// when f reads another log.
func (f *Feed) of(log *eventlog.Log) *Feed {
	switch {
	case f == nil:
		return nil
	case f.log == log:
		return f
	}
	for _, p := range f.parts {
		if p.log == log {
			return p
		}
	}
	return nil
}

// WithFeed makes Run, RunAll and React read through feed when they read
// feed's log (another log gets a consumer of its own).
func WithFeed(feed *Feed) Option {
	return func(o *options) { o.feed = feed }
}

// Opened is how many subscriptions the feed has opened on the log (one per
// start over): a rebuild of every read model of the process is one.
func (f *Feed) Opened() int {
	n := 0
	for _, p := range f.parts {
		n += p.Opened()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return n + f.opened
}

// join adds a consumer that needs the events matching filters (nil: all)
// from sequence from on.
func (f *Feed) join(filters []string, from uint64) *member {
	m := &member{filters: filters, from: from, have: from - 1, ch: make(chan chunk, feedDepth), gone: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running && from >= f.next && f.covers(filters) {
		f.attached[m] = struct{}{}
		return m
	}
	f.waiting[m] = struct{}{}
	if !f.running {
		f.running = true
		go f.run()
	} else if f.restart != nil {
		f.restart()
	}
	return m
}

// leave removes m; the last consumer to leave stops the feed.
func (f *Feed) leave(m *member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.attached, m)
	delete(f.waiting, m)
	close(m.gone)
	if len(f.attached)+len(f.waiting) == 0 && f.restart != nil {
		f.restart()
	}
}

// covers reports whether the current subscription reads every subject of
// filters.
func (f *Feed) covers(filters []string) bool {
	if f.filters == nil {
		return true
	}
	if filters == nil {
		return false
	}
	for _, want := range filters {
		if !slices.ContainsFunc(f.filters, func(have string) bool { return subsumes(have, want) }) {
			return false
		}
	}
	return true
}

// union is one set of filters reading every subject of the given sets (nil
// if one is nil: the whole log): a filter within another is dropped, and
// the whole log is read when two still overlap, as a consumer's filters
// must not (each consumer filters what it is handed anyway).
func union(sets ...[]string) []string {
	var out []string
	for _, set := range sets {
		if set == nil {
			return nil
		}
		for _, f := range set {
			if slices.ContainsFunc(out, func(have string) bool { return subsumes(have, f) }) {
				continue
			}
			out = slices.DeleteFunc(out, func(have string) bool { return subsumes(f, have) })
			out = append(out, f)
		}
	}
	for i, a := range out {
		for _, b := range out[i+1:] {
			if intersects(a, b) {
				return nil
			}
		}
	}
	return out
}

// subsumes reports whether every subject filter b matches, a matches too.
func subsumes(a, b string) bool {
	for {
		at, arest, amore := strings.Cut(a, ".")
		bt, brest, bmore := strings.Cut(b, ".")
		switch {
		case at == ">":
			return true
		case bt == ">":
			return false
		case at != "*" && at != bt:
			return false
		}
		if !amore || !bmore {
			return amore == bmore
		}
		a, b = arest, brest
	}
}

// intersects reports whether some subject matches both filters.
func intersects(a, b string) bool {
	for {
		at, arest, amore := strings.Cut(a, ".")
		bt, brest, bmore := strings.Cut(b, ".")
		switch {
		case at == ">" || bt == ">":
			return true
		case at != "*" && bt != "*" && at != bt:
			return false
		}
		if !amore || !bmore {
			return amore == bmore
		}
		a, b = arest, brest
	}
}

// run reads the log for the consumers until none is left, starting over
// whenever one joins behind the position.
func (f *Feed) run() {
	for {
		f.mu.Lock()
		if len(f.attached)+len(f.waiting) == 0 {
			f.running, f.restart = false, nil
			f.mu.Unlock()
			return
		}
		// From the lowest position anyone needs: the attached consumers
		// have everything before next; the waiting ones need their own.
		from := uint64(math.MaxUint64)
		if len(f.attached) > 0 {
			from = f.delivered
		}
		for m := range f.waiting {
			from = min(from, m.from)
			f.attached[m] = struct{}{}
		}
		clear(f.waiting)
		sets := make([][]string, 0, len(f.attached))
		for m := range f.attached {
			sets = append(sets, m.filters)
		}
		filters := union(sets...)
		f.filters, f.next, f.delivered = filters, from, from
		ctx, cancel := context.WithCancel(context.Background())
		f.restart = cancel
		f.opened++
		f.mu.Unlock()
		err := f.read(ctx, filters, from)
		cancel()
		if err != nil {
			// The log failed: every attached consumer stops, and joins
			// again from its checkpoint after its backoff.
			f.mu.Lock()
			members := make([]*member, 0, len(f.attached))
			for m := range f.attached {
				members = append(members, m)
			}
			clear(f.attached)
			f.mu.Unlock()
			for _, m := range members {
				select {
				case m.ch <- chunk{err: err}:
				case <-m.gone:
				}
			}
		}
	}
}

// read follows the log from sequence from, handing each batch to every
// attached consumer, until ctx ends (nil: start over or stop) or the log
// fails.
func (f *Feed) read(ctx context.Context, filters []string, from uint64) error {
	sub, err := f.log.Subscribe(ctx, filters, eventlog.FromSequence(from))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	type fed struct {
		rec *eventlog.Record
		err error
	}
	// The reader reads ahead while a batch is handed out: the channel's
	// capacity bounds what is held.
	in := make(chan fed, f.maxBatch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			rec, err := sub.Next(ctx)
			select {
			case in <- fed{rec, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { sub.Stop(); <-done }()
	for {
		var batch []*eventlog.Record
		select {
		case <-ctx.Done():
			return nil
		case r := <-in:
			if r.err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return r.err
			}
			batch = make([]*eventlog.Record, 0, min(f.maxBatch, 1+len(in)))
			batch = append(batch, r.rec)
		}
		var stop error
	drain:
		for len(batch) < f.maxBatch {
			select {
			case r := <-in:
				if r.err != nil {
					stop = r.err
					break drain
				}
				batch = append(batch, r.rec)
			default:
				break drain
			}
		}
		// Whoever attaches from now on needs what follows this batch; the
		// batch goes to every consumer attached before that has not had it
		// (a consumer that left is skipped). A start over may interrupt the
		// handing out: it then begins at this batch at the latest, so none
		// sees a gap; and as a consumer is not handed again what it had, one
		// that waits for another consumer of the feed (a reactor for a read
		// model) does not hold up the batches that one needs.
		// A start over may cut its batches where the last subscription did
		// not: each consumer gets only what follows what it had, so none
		// sees a record twice.
		last := batch[len(batch)-1].Event.GetSequence()
		type hand struct {
			m    *member
			recs []*eventlog.Record
		}
		f.mu.Lock()
		f.next = last + 1
		hands := make([]hand, 0, len(f.attached))
		for m := range f.attached {
			if m.have < last {
				i := sort.Search(len(batch), func(i int) bool { return batch[i].Event.GetSequence() > m.have })
				hands = append(hands, hand{m, batch[i:]})
			}
		}
		f.mu.Unlock()
		for _, h := range hands {
			select {
			case h.m.ch <- chunk{recs: h.recs}:
				f.mu.Lock()
				h.m.have = last
				f.mu.Unlock()
			case <-h.m.gone:
			case <-ctx.Done():
				return nil
			}
		}
		f.mu.Lock()
		f.delivered = last + 1
		f.mu.Unlock()
		if stop != nil {
			if ctx.Err() != nil || errors.Is(stop, context.Canceled) {
				return nil
			}
			return stop
		}
	}
}
