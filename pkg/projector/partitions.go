package projector

import (
	"context"
	"strconv"
	"sync"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
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
