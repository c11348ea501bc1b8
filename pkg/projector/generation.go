package projector

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Generational is a store that keeps its read models per generation of
// its projections' fold versions, beside each other, and names the active
// one (projection.Redis of NewRedisGeneration; docs/upgrading.md).
type Generational interface {
	projection.Store
	Generation() projection.Generation
	// Register records the store's generation and answers the active one.
	Register(ctx context.Context) (active string, err error)
	// Activate makes the store's generation the active one in one step and
	// answers the previous one.
	Activate(ctx context.Context) (previous string, err error)
	// Retire deletes the generations that are neither active nor previous.
	Retire(ctx context.Context) ([]string, error)
}

// Upgrade is what a process does with its store's generation at start
// (docs/upgrading.md). When the generation is the active one, or the log
// is empty, it is active at once (Rebuilding is false). Otherwise the
// process's projectors build it beside the active one, from the start of
// the log, while the old generation's keys stay as they are (an old
// process keeps serving from them); Run waits until every projection of
// the generation has applied every event the log held when Run began,
// then activates it and retires the generations two behind. Until then
// the service is not ready.
type Upgrade struct {
	log    *eventlog.Log
	store  Generational
	ps     []Projection
	logger *slog.Logger
	// Active is the generation that was active at start.
	Active string

	mu       sync.Mutex
	building bool // the generation is not the active one yet
	head     uint64
	folded   map[string]uint64 // events folded per consumer of the generation
}

// StartUpgrade registers store's generation, whose projections are ps
// (those the service runs on store), and settles what can be settled at
// once: an active generation (its old generations are retired again, in
// case a process stopped between activating and retiring), an empty log.
func StartUpgrade(ctx context.Context, log *eventlog.Log, store Generational, ps []Projection, logger *slog.Logger) (*Upgrade, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	u := &Upgrade{log: log, store: store, ps: ps, logger: logger, folded: map[string]uint64{}}
	gen := store.Generation()
	for _, p := range ps {
		if !gen.Covers(p.Name()) {
			return nil, fmt.Errorf("projector: projection %s has no fold version in generation %s", p.Name(), gen)
		}
	}
	active, err := store.Register(ctx)
	if err != nil {
		return nil, err
	}
	u.Active = active
	for _, v := range log.Views() {
		_, last, err := v.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		// A position of partition k is its partition-local position *
		// P + k (eventlog.Log.Position).
		u.head += last / uint64(log.Partitions())
	}
	if active != gen.ID && u.head > 0 {
		u.building = true
		logger.InfoContext(ctx, "building read models beside the active generation", "generation", gen.ID, "folds", gen.Label(), "active", active, "head", u.head)
		return u, nil
	}
	if err := u.activate(ctx); err != nil {
		return nil, err
	}
	return u, nil
}

// Run waits until the generation has caught up with the log as it is
// now, then activates it and retires the generations two behind. It
// returns at once when the generation is active; it retries a failure
// (the store or the log unavailable) with backoff until ctx ends.
func (u *Upgrade) Run(ctx context.Context) error {
	if !u.Rebuilding() {
		return nil
	}
	gen := u.store.Generation()
	started := time.Now()
	backoff := 50 * time.Millisecond
	for {
		err := u.build(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		u.logger.ErrorContext(ctx, "building read models: retrying", "generation", gen.ID, "error", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	u.mu.Lock()
	u.building = false
	u.mu.Unlock()
	u.logger.InfoContext(ctx, "read models rebuilt: generation active", "generation", gen.ID, "folds", gen.Label(),
		"previous", u.Active, "events", u.Folded(), "seconds", time.Since(started).Seconds())
	return nil
}

// build waits for every projection to catch up with the events that match
// its filters, as of now (a rebuild of a large log takes long: no timeout
// but ctx), then activates the generation.
func (u *Upgrade) build(ctx context.Context) error {
	const forever = 100 * 365 * 24 * time.Hour
	for _, p := range u.ps {
		if err := CaughtUp(ctx, u.log, u.store, p.Name(), p.Filters(), forever); err != nil {
			return fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	return u.activate(ctx)
}

func (u *Upgrade) activate(ctx context.Context) error {
	gen := u.store.Generation()
	previous, err := u.store.Activate(ctx)
	if err != nil {
		return err
	}
	retired, err := u.store.Retire(ctx)
	if err != nil {
		// The read models are complete and active; what is left is
		// garbage the next start retires.
		u.logger.WarnContext(ctx, "retiring old read models failed", "generation", gen.ID, "error", err)
		return nil
	}
	if len(retired) > 0 || previous != "" && previous != gen.ID {
		u.logger.InfoContext(ctx, "read model generations", "active", gen.ID, "previous", previous, "retired", strings.Join(retired, ","))
	}
	return nil
}

// Options report the generation's consumers' progress to u (give them to
// the service's Run).
func (u *Upgrade) Options() []Option {
	gen := u.store.Generation()
	return []Option{WithProgress(func(p Progress) {
		// One consumer may fold several projections ("control+control.claims").
		if !gen.Covers(strings.Split(p.Name, "+")[0]) {
			return
		}
		u.mu.Lock()
		u.folded[p.Name] = p.Events
		u.mu.Unlock()
	})}
}

// Folded is how many events the generation's consumers folded since the
// process started.
func (u *Upgrade) Folded() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	var n uint64
	for _, e := range u.folded {
		n += e
	}
	return n
}

// Head is the log's head when the process started: its last position (on
// a partitioned log, the sum of the partitions' partition-local ones).
func (u *Upgrade) Head() uint64 { return u.head }

// Rebuilding reports whether the generation is still being built.
func (u *Upgrade) Rebuilding() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.building
}

// Generation is the store's generation.
func (u *Upgrade) Generation() projection.Generation { return u.store.Generation() }
