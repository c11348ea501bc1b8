// Per-tenant retention: so that one tenant's flood cannot make the
// stream's size limit (Config.MaxBytes) discard another tenant's history,
// each tenant keeps its own newest bytes in each partition and loses its
// own oldest events beyond them (docs/security.md, "Fairness between
// tenants").

package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// retentionBucket is the key-value bucket of the tenants' retention
// floors: key "<partition>.<tenant>", value the stream sequence below
// which the tenant's events of that partition were discarded.
const retentionBucket = "AGENTRUNTIME_RETENTION"

// chunksPerBudget is how finely a tenant's bytes are tallied: a tenant
// keeps at least (chunksPerBudget-1)/chunksPerBudget of its budget.
const chunksPerBudget = 32

// KeepTenants holds every tenant to at most maxBytes of events in each
// partition of the log until ctx ends: it follows each stream from its
// first event (headers only, no payloads), tallies each tenant's bytes,
// and discards a tenant's oldest events of the partition once its tally
// passes maxBytes (a purge of the tenant's subjects below a sequence),
// recording the sequence as the tenant's retention floor (FirstOf).
//
// Any number of processes may run it: a purge is idempotent and a floor
// only rises. It starts over from the first retained event when it
// restarts.
func (l *Log) KeepTenants(ctx context.Context, maxBytes int64, logger *slog.Logger) error {
	if maxBytes <= 0 {
		return nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g, gctx := errgroup.WithContext(ctx)
	for k := range l.cfg.Partitions {
		g.Go(func() error {
			for {
				err := l.keepPartition(gctx, k, maxBytes)
				if gctx.Err() != nil {
					return nil
				}
				logger.WarnContext(gctx, "per-tenant retention: following the log failed; starting over", "partition", k, "error", err)
				select {
				case <-gctx.Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		})
	}
	return g.Wait()
}

// tally is one tenant's bytes in one partition, in chunks of consecutive
// events: the oldest chunk is the next to discard.
type tally struct {
	chunks []chunk
	total  int64
}

type chunk struct {
	last  uint64 // stream sequence of its last event
	bytes int64
}

func (l *Log) keepPartition(ctx context.Context, k int, maxBytes int64) error {
	cons, err := l.streams[k].OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverAllPolicy, HeadersOnly: true})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	tenants := map[string]*tally{}
	step := max(maxBytes/chunksPerBudget, 1)
	for {
		msg, err := it.Next()
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		tenant, _, ok := l.Subjects.Scope(msg.Subject())
		if !ok {
			continue
		}
		size, _ := strconv.ParseInt(msg.Headers().Get(nats.MsgSize), 10, 64)
		size += int64(len(msg.Subject()))
		t := tenants[tenant]
		if t == nil {
			t = &tally{}
			tenants[tenant] = t
		}
		seq := meta.Sequence.Stream
		if n := len(t.chunks); n > 0 && t.chunks[n-1].bytes < step {
			t.chunks[n-1].last, t.chunks[n-1].bytes = seq, t.chunks[n-1].bytes+size
		} else {
			t.chunks = append(t.chunks, chunk{last: seq, bytes: size})
		}
		t.total += size
		var below uint64
		for t.total > maxBytes && len(t.chunks) > 1 {
			below = t.chunks[0].last + 1
			t.total -= t.chunks[0].bytes
			t.chunks = t.chunks[1:]
		}
		if below > 0 {
			if err := l.discardBelow(ctx, k, tenant, below); err != nil {
				return err
			}
		}
	}
}

// discardBelow discards tenant's events of partition k below stream
// sequence seq and raises its floor there.
func (l *Log) discardBelow(ctx context.Context, k int, tenant string, seq uint64) error {
	// The floor first: a reader that finds events gone finds the floor
	// that says so.
	if err := l.raiseFloor(ctx, k, tenant, seq); err != nil {
		return err
	}
	return l.retry(ctx, "discard "+tenant+"'s oldest events", func(actx context.Context) error {
		return l.streams[k].Purge(actx, jetstream.WithPurgeSubject(l.Subjects.Partition(k).Tenant(tenant)), jetstream.WithPurgeSequence(seq))
	})
}

func floorKey(k int, tenant string) string { return strconv.Itoa(k) + "." + tenant }

func (l *Log) raiseFloor(ctx context.Context, k int, tenant string, seq uint64) error {
	key, val := floorKey(k, tenant), []byte(strconv.FormatUint(seq, 10))
	for range 8 {
		e, err := l.floors.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			if _, err := l.floors.Create(ctx, key, val); err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if cur, _ := strconv.ParseUint(string(e.Value()), 10, 64); cur >= seq {
			return nil
		}
		if _, err := l.floors.Update(ctx, key, val, e.Revision()); err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
	}
	return fmt.Errorf("eventlog: retention floor of %s kept changing", tenant)
}

// FirstOf is the first position of the log a tenant still has all its
// events from: the partition's first retained event (Bounds), or the
// tenant's own retention floor (KeepTenants) when that is later. A reader
// asking for history before it has lost some of the tenant's events. A
// partitioned log has one per partition: ask a view (Partition, Of).
func (l *Log) FirstOf(ctx context.Context, tenant string) (uint64, error) {
	first, _, err := l.Bounds(ctx)
	if err != nil {
		return 0, err
	}
	k, err := l.part(nil)
	if err != nil {
		return 0, err
	}
	e, err := l.floors.Get(ctx, floorKey(k, tenant))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return first, nil
	case err != nil:
		return 0, fmt.Errorf("eventlog: retention floor of %s: %w", tenant, err)
	}
	floor, _ := strconv.ParseUint(string(e.Value()), 10, 64)
	return max(first, l.firstAt(k, floor)), nil
}
