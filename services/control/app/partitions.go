package app

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/lease"
)

// perPartition is work that one replica does per partition of the log at
// a time (webhook delivery, A2A peer drivers): the replica that holds the
// partition's lease (key + ":p<k>", renewed every ttl/3) does it; another
// takes over when the holder stops or loses it.
type perPartition struct {
	Leases lease.Store
	// Key names the leases, one per partition.
	Key    string
	TTL    time.Duration
	Logger *slog.Logger
	// Work runs while the lease is held; its context ends when the lease
	// is lost or the run ends.
	Work func(ctx context.Context, k int, view *eventlog.Log)
}

// run does the work of every partition of log until ctx ends.
func (p perPartition) run(ctx context.Context, log *eventlog.Log, holder string) {
	var wg sync.WaitGroup
	for k, view := range log.Views() {
		wg.Go(func() { p.hold(ctx, holder, k, view) })
	}
	wg.Wait()
}

func (p perPartition) hold(ctx context.Context, holder string, k int, view *eventlog.Log) {
	key := p.Key + ":p" + strconv.Itoa(k)
	for ctx.Err() == nil {
		held, err := p.Leases.Acquire(ctx, key, holder, p.TTL)
		if err != nil && ctx.Err() == nil {
			p.Logger.WarnContext(ctx, "partition lease", "lease", key, "error", err)
		}
		if !held {
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.TTL / 3):
			}
			continue
		}
		p.whileHeld(ctx, holder, key, k, view)
	}
}

// whileHeld runs the work with the lease renewed, and releases it after.
func (p perPartition) whileHeld(ctx context.Context, holder, key string, k int, view *eventlog.Log) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() { _ = p.Leases.Release(context.WithoutCancel(ctx), key, holder) }()
	go func() {
		t := time.NewTicker(p.TTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if ok, err := p.Leases.Renew(ctx, key, holder, p.TTL); !ok || err != nil {
					cancel()
					return
				}
			}
		}
	}()
	p.Work(ctx, k, view)
}
