package projector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Partitions (docs/adr/0013-partitions-of-the-log.md). On a log of P > 1
// partitions, Run, RunAll and React run one loop per partition, each on
// the partition's view of the log, through the process feed's partition,
// with a checkpoint of its own: CheckpointName(name, k). Positions of one
// partition are ordered, so each loop is the one-stream loop unchanged; a
// read that waits for a position waits for its partition's checkpoint
// (WaitFor). What the loops cannot give is an order between partitions:
// a read model written from several sessions must not depend on it.

// CheckpointName is the checkpoint of partition k of a consumer named name
// on a log of partitions partitions: the name itself on one partition.
func CheckpointName(name string, partitions, k int) string {
	if partitions <= 1 {
		return name
	}
	return name + "@p" + strconv.Itoa(k)
}

// perPartition runs run once on log when it has one partition or is a
// view, else once per partition's view concurrently, with the consumer's
// checkpoint name for it; the first to return ends the others.
func perPartition(ctx context.Context, log *eventlog.Log, name string, run func(ctx context.Context, view *eventlog.Log, name string) error) error {
	p := log.Partitions()
	if k, ok := log.View(); ok {
		return run(ctx, log, CheckpointName(name, p, k))
	}
	if p == 1 {
		return run(ctx, log, name)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, p)
	var wg sync.WaitGroup
	for k := range p {
		wg.Go(func() { errs <- run(ctx, log.Partition(k), CheckpointName(name, p, k)) })
	}
	err := <-errs
	cancel()
	wg.Wait()
	return err
}

// named is a projection under its partition's checkpoint name.
type named struct {
	Projection
	name string
}

func (n named) Name() string { return n.name }

// namedReactor is a reactor under its partition's checkpoint name.
type namedReactor struct {
	Reactor
	name string
}

func (n namedReactor) Name() string { return n.name }

// CaughtUp waits until the consumer named name has applied, in every
// partition log reads (one for a view or Log.Of), every event matching
// filters that is in the log when it is called; nil filters mean every
// event (the partition's head). Partitions are waited for in parallel.
// It is the "read model holds everything appended before this call"
// of a lookup by id or a decision across sessions: with one stream it was
// a wait for the head, with P streams it is a wait for each head.
func CaughtUp(ctx context.Context, log *eventlog.Log, store projection.Store, name string, filters []string, timeout time.Duration) error {
	views := log.Views()
	errs := make([]error, len(views))
	var wg sync.WaitGroup
	for i, v := range views {
		wg.Go(func() { errs[i] = caughtUpOne(ctx, v, store, name, filters, timeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func caughtUpOne(ctx context.Context, v *eventlog.Log, store projection.Store, name string, filters []string, timeout time.Duration) error {
	var last uint64
	if filters == nil {
		_, head, err := v.Bounds(ctx)
		if err != nil {
			return err
		}
		last = head
	} else {
		cp, err := Checkpoint(ctx, v, store, name)
		if err != nil {
			return err
		}
		if last, err = v.Read(ctx, filters, eventlog.FromSequence(cp+1), func(*eventlog.Record) error { return nil }); err != nil {
			return err
		}
		if last <= cp {
			return nil
		}
	}
	if last == 0 {
		return nil
	}
	_, err := WaitFor(ctx, v, store, name, last, timeout)
	return err
}

// Checkpoint is how far the consumer named name has applied the partition
// log reads: log must be a view (or Log.Of) or have one partition.
func Checkpoint(ctx context.Context, log *eventlog.Log, store projection.Store, name string) (uint64, error) {
	if k, ok := log.View(); ok {
		name = CheckpointName(name, log.Partitions(), k)
	} else if log.Partitions() > 1 {
		return 0, fmt.Errorf("projector: checkpoint of %s on a log of %d partitions: ask a partition's view", name, log.Partitions())
	}
	return store.Checkpoint(ctx, name)
}

// WaitForSession waits until the consumer named name has applied min (in
// min's own partition, which may be another session's: a write elsewhere
// the caller wants reflected) and answers how far it has applied the
// partition of the tenant's session: the position a read of that session
// covers, the token to subscribe to it after. With one partition it is
// WaitFor.
func WaitForSession(ctx context.Context, log *eventlog.Log, store projection.Store, name, tenant, session string, min uint64, timeout time.Duration) (uint64, error) {
	got, err := WaitFor(ctx, log, store, name, min, timeout)
	if err != nil || log.Partitions() <= 1 {
		return got, err
	}
	return Checkpoint(ctx, log.Of(tenant, session), store, name)
}
