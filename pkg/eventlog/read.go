package eventlog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Record is one event read from the log.
type Record struct {
	// Event carries its stream sequence in Event.Sequence.
	Event   *eventsv1.RuntimeEvent
	Subject string
	Header  nats.Header
	// Pending is how many matching events follow this one in the log as the
	// consumer delivered it (0 at the head): a reader's lag, for free.
	Pending uint64
}

// TraceContext returns ctx joined to the trace the event was appended in.
func (l *Log) TraceContext(ctx context.Context, r *Record) context.Context {
	return l.cfg.Propagator.Extract(ctx, headerCarrier(r.Header))
}

// decode is the events of a consumer's message at position min or later.
func (l *Log) decode(k int, msg jetstream.Msg, min uint64) ([]*Record, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("eventlog: message metadata: %w", err)
	}
	recs, err := l.expand(k, meta.Sequence.Stream, msg.Subject(), msg.Headers(), msg.Data(), min)
	for _, r := range recs {
		r.Pending += meta.NumPending
	}
	return recs, err
}

// From is where a subscription or read starts.
type From struct {
	sequence uint64
	new      bool
}

// FromStart reads the whole matching history.
var FromStart = From{}

// FromNew skips history: only events appended after the subscription.
var FromNew = From{new: true}

// FromSequence starts at position seq (inclusive; the sequence of an event
// as the log handed it out). To resume after the last event seen, pass its
// sequence + 1.
func FromSequence(seq uint64) From { return From{sequence: seq} }

func (l *Log) deliver(k int, f From) (jetstream.DeliverPolicy, uint64) {
	seq := l.sequenceFrom(k, f.sequence)
	switch {
	case f.new:
		return jetstream.DeliverNewPolicy, 0
	case seq > 1:
		return jetstream.DeliverByStartSequencePolicy, seq
	default:
		return jetstream.DeliverAllPolicy, 0
	}
}

// Subscription is a live, ordered view of the log for streaming to clients:
// an ordered consumer, which recovers from gaps and reconnects by itself.
type Subscription struct {
	log *Log
	k   int
	it  jetstream.MessagesContext
	// next is the lowest position still to deliver; queue holds the rest
	// of a command message's events.
	next  uint64
	queue []*Record
}

// Subscribe follows the events matching filters (subjects from
// Log.Subjects; none means the whole log) from a starting point. On a
// partitioned log it follows one partition: the view's, or the one the
// filters name (ErrPartitioned otherwise).
func (l *Log) Subscribe(ctx context.Context, filters []string, from From) (*Subscription, error) {
	k, err := l.part(filters)
	if err != nil {
		return nil, err
	}
	policy, start := l.deliver(k, from)
	var cons jetstream.Consumer
	err = l.retry(ctx, "subscribe", func(actx context.Context) error {
		var err error
		cons, err = l.streams[k].OrderedConsumer(actx, jetstream.OrderedConsumerConfig{
			FilterSubjects: l.confined(filters, k),
			DeliverPolicy:  policy,
			OptStartSeq:    start,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: subscribe: %w", err)
	}
	// Idle heartbeats: missing two, the ordered consumer drops the one it
	// has (on a lost server, or a stream whose leader moved) and makes a
	// new one after the last event it delivered, within about a second.
	it, err := cons.Messages(jetstream.PullHeartbeat(l.cfg.IdleHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("eventlog: subscribe: %w", err)
	}
	return &Subscription{log: l, k: k, it: it, next: from.sequence}, nil
}

// Next blocks until the next event or until ctx ends.
func (s *Subscription) Next(ctx context.Context) (*Record, error) {
	for len(s.queue) == 0 {
		msg, err := s.it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("eventlog: next: %w", err)
		}
		if s.queue, err = s.log.decode(s.k, msg, s.next); err != nil {
			return nil, err
		}
	}
	r := s.queue[0]
	s.queue = s.queue[1:]
	s.next = r.Event.Sequence + 1
	return r, nil
}

// Stop ends the subscription.
func (s *Subscription) Stop() { s.it.Stop() }

// Read calls fn for every event matching filters that is in the log when
// Read starts, in stream order, and returns the sequence of the last one
// (0 if none). Projections rebuild and aggregates load with it. fn's error
// stops the read and is returned.
func (l *Log) Read(ctx context.Context, filters []string, from From, fn func(*Record) error) (uint64, error) {
	if from.new {
		return 0, errors.New("eventlog: Read needs history; FromNew has none")
	}
	k, err := l.part(filters)
	if err != nil {
		return 0, err
	}
	filters = l.confined(filters, k)
	// Through an outage the read goes on after the last event it gave fn.
	// A read of a long history takes as long as fn does: its attempts are
	// not capped as a whole; each request to the server is (readOnce).
	var last uint64
	err = l.retryAttempts(ctx, "read", time.Duration(math.MaxInt64), func(actx context.Context) (bool, error) {
		n, err := l.readOnce(actx, k, filters, from, fn)
		if n > 0 {
			last, from = n, FromSequence(n+1)
		}
		return n > 0, err
	})
	return last, err
}

func (l *Log) readOnce(ctx context.Context, k int, filters []string, from From, fn func(*Record) error) (uint64, error) {
	policy, start := l.deliver(k, from)
	// On a replicated stream the consumer may be placed on a replica that
	// trails the leader (JetStream places a consumer of one replica on any
	// of the stream's peers, caught up or not; one restarted a moment ago
	// holds what it held when it stopped, and a follower applies an append
	// a little after the leader acknowledged it). The consumer counts and
	// delivers what its replica has, so the read's end is the leader's: its
	// last sequence, asked beside the consumer's creation (an end past the
	// consumer's start only makes the read wait for messages the consumer
	// delivers anyway), and checked with the leader once the consumer's
	// count is delivered (leaderNext). During an election, with no leader
	// to ask, the read is retried as any outage is.
	type leaderEnd struct {
		seq    uint64
		leader string
		err    error
	}
	var ended chan leaderEnd
	if l.cfg.Replicas > 1 {
		ended = make(chan leaderEnd, 1)
		go func() {
			ictx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
			defer cancel()
			info, err := l.streams[k].Info(ictx) // answered by the stream's leader
			if err != nil {
				ended <- leaderEnd{err: err}
				return
			}
			e := leaderEnd{seq: info.State.LastSeq}
			if info.Cluster != nil {
				e.leader = info.Cluster.Leader
			}
			ended <- e
		}()
	}
	// An ephemeral pull consumer without acks: it reports how many messages
	// match at creation, which is exactly where "history" ends on its
	// replica, and delivers them in stream order.
	cctx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
	cons, err := l.streams[k].CreateConsumer(cctx, jetstream.ConsumerConfig{
		FilterSubjects:    filters,
		DeliverPolicy:     policy,
		OptStartSeq:       start,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
	})
	cancel()
	var end uint64
	if ended != nil {
		e := <-ended
		if err == nil && e.err != nil {
			err = e.err
		}
		end = e.seq
		// The server that answered holds everything up to end: a consumer
		// it hosts owes nothing beyond its own count.
		if err == nil && cons.CachedInfo().Cluster != nil && cons.CachedInfo().Cluster.Leader == e.leader {
			end = 0
		}
	}
	if err != nil {
		if cons != nil {
			_ = l.streams[k].DeleteConsumer(context.WithoutCancel(ctx), cons.CachedInfo().Name)
		}
		return 0, fmt.Errorf("eventlog: read: %w", err)
	}
	defer func() {
		// Best effort: the inactive threshold removes it anyway.
		_ = l.streams[k].DeleteConsumer(context.WithoutCancel(ctx), cons.CachedInfo().Name)
	}()
	// Every requested message exists already, so each fetch fills at once.
	pending := cons.CachedInfo().NumPending
	var last uint64
	// delivered is the stream sequence of the last message given to fn.
	delivered := max(start, 1) - 1
	for {
		// waiting: the consumer's replica trails the leader and had nothing
		// more when asked; the fetch waits for the message it owes.
		waiting := false
		if pending == 0 {
			// Everything the consumer counted has been delivered. A message
			// the leader holds beyond it, up to end, is still owed: the
			// replica is catching up.
			if end <= delivered {
				return last, nil
			}
			next, err := l.leaderNext(ctx, k, filters, delivered+1)
			if err != nil {
				return last, err
			}
			if next == 0 || next > end {
				return last, nil
			}
			cctx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
			info, err := cons.Info(cctx)
			cancel()
			if err != nil {
				return last, fmt.Errorf("eventlog: read: %w", err)
			}
			if pending = info.NumPending; pending == 0 {
				pending, waiting = 1, true
			}
		}
		batch := min(pending, 1024)
		// The messages are there already: a fetch that waits longer than
		// an attempt's bound is an outage (nats.ErrTimeout), retried from
		// the last event delivered.
		if err := ctx.Err(); err != nil {
			return last, err
		}
		msgs, err := cons.Fetch(int(batch), jetstream.FetchMaxWait(l.cfg.AttemptTimeout))
		if err != nil {
			return last, fmt.Errorf("eventlog: read: %w", err)
		}
		got := 0
		for msg := range msgs.Messages() {
			got++
			pending--
			recs, err := l.decode(k, msg, max(from.sequence, last+1))
			if err != nil {
				return last, err
			}
			if meta, err := msg.Metadata(); err == nil {
				delivered = meta.Sequence.Stream
			}
			for _, rec := range recs {
				if err := fn(rec); err != nil {
					return last, err
				}
				last = rec.Event.Sequence
			}
		}
		if err := msgs.Error(); err != nil {
			return last, fmt.Errorf("eventlog: read: %w", err)
		}
		if got == 0 && waiting {
			// The replica did not catch up within an attempt: an outage,
			// retried on a new consumer (on another replica, perhaps) after
			// the last event delivered.
			return last, fmt.Errorf("eventlog: read: the consumer's replica trails the stream's leader: %w", nats.ErrTimeout)
		}
		if got == 0 {
			// Nothing came although some were counted: retention (the
			// stream's limits, a tenant's share) discarded them since.
			// What the consumer still has to deliver is what is left.
			cctx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
			info, err := cons.Info(cctx)
			cancel()
			if err != nil {
				return last, fmt.Errorf("eventlog: read: %w", err)
			}
			pending = info.NumPending
		}
	}
}

// aggregateBatch bounds one batch direct get of an aggregate's events.
const aggregateBatch = 512

// ReadAggregate calls fn for every event of one aggregate after sequence
// `after`, in order, and returns the sequence of the last one (after when
// none). It uses batch direct gets (one request per aggregateBatch events,
// no consumer): the writer's cache loads and catches up aggregates with it
// on the hot path.
func (l *Log) ReadAggregate(ctx context.Context, agg Aggregate, after uint64, fn func(*Record) error) (uint64, error) {
	if err := agg.validate(); err != nil {
		return after, err
	}
	// Through an outage the read goes on after the last event it gave fn.
	err := l.retryProgress(ctx, "read "+agg.String(), func(actx context.Context) (bool, error) {
		n, err := l.readAggregateOnce(actx, agg, after, fn)
		progressed := n > after
		after = n
		return progressed, err
	})
	return after, err
}

func (l *Log) readAggregateOnce(ctx context.Context, agg Aggregate, after uint64, fn func(*Record) error) (uint64, error) {
	subject := l.Subjects.Aggregate(agg)
	k := l.aggregatePart(agg)
	last := after
	for {
		msgs, err := jetstreamext.GetBatch(ctx, l.js, l.streamName(k), aggregateBatch,
			jetstreamext.GetBatchSeq(l.sequenceFrom(k, last+1)), jetstreamext.GetBatchSubject(subject))
		if err != nil {
			return last, fmt.Errorf("eventlog: read %s: %w", agg, err)
		}
		n := 0
		for msg, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return last, nil
			}
			if err != nil {
				return last, fmt.Errorf("eventlog: read %s: %w", agg, err)
			}
			n++
			recs, err := l.expand(k, msg.Sequence, msg.Subject, msg.Header, msg.Data, last+1)
			if err != nil {
				return last, err
			}
			for _, rec := range recs {
				if err := fn(rec); err != nil {
					return last, err
				}
				last = rec.Event.Sequence
			}
		}
		if n < aggregateBatch {
			return last, nil
		}
	}
}
