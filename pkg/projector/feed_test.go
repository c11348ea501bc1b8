package projector_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// flaky counts every event of the whole log like tally, under its own
// name, and fails once when it first meets sequence failAt.
type flaky struct {
	failAt uint64
	failed *atomic.Bool
}

func (flaky) Name() string      { return "test.flaky" }
func (flaky) Filters() []string { return nil }
func (f flaky) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	if rec.Event.GetSequence() == f.failAt && f.failed.CompareAndSwap(false, true) {
		return projection.Batch{}, errors.New("flaky: failing once")
	}
	return increment(ctx, store, "flaky")
}

// One feed serves projectors and a reactor at different checkpoints: one
// joining behind makes it start over from its checkpoint, those ahead skip
// what they have applied (and report no lag meanwhile), one that fails
// leaves and joins again from its checkpoint. Each ends equal to folding
// event by event, every event counted once; at the head one subscription
// serves them all.
func TestFeedServesConsumersAtDifferentCheckpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendOtherSession(t, ctx, log, 10)
	appendLedger(t, ctx, log, 40)
	recs := readAll(t, ctx, log, filter)
	head, err := log.Head(ctx)
	require.NoError(t, err)

	feed := projector.NewFeed(log)
	fctx, fcancel := context.WithCancel(projector.ContextWithOptions(ctx, projector.WithFeed(feed)))
	var wg sync.WaitGroup
	defer func() { fcancel(); wg.Wait() }()
	s := projection.NewMemory()
	// The ledger is a third applied already, and alone on the feed.
	_, err = projector.ApplyBatch(ctx, s, ledger{filter}, recs[:40], 0)
	require.NoError(t, err)
	var mu sync.Mutex
	watching := false
	var ledgerLags []uint64
	wg.Go(func() {
		_ = projector.Run(fctx, log, s, ledger{filter}, nil, projector.WithMaxBatch(16), projector.WithProgress(func(p projector.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if watching {
				ledgerLags = append(ledgerLags, p.Pending)
			}
		}))
	})
	_, err = s.WaitFor(ctx, ledger{}.Name(), head)
	require.NoError(t, err)
	require.Equal(t, 1, feed.Opened())
	mu.Lock()
	watching = true
	mu.Unlock()

	// The tally and the flaky one start from nothing, behind the feed;
	// the flaky one fails once on its way. The reactor starts past the
	// first ten events, as if it had reacted to them.
	all := readAll(t, ctx, log, log.Subjects.All())
	_, err = s.Apply(ctx, projection.Batch{Projection: counterReactor{}.Name(), Sequence: all[9].Event.GetSequence()})
	require.NoError(t, err)
	reacted := make(chan string, 1000)
	wg.Go(func() { _ = projector.Run(fctx, log, s, tally{}, nil, projector.WithMaxBatch(7)) })
	failed := &atomic.Bool{}
	wg.Go(func() {
		_ = projector.Run(fctx, log, s, flaky{failAt: all[76].Event.GetSequence(), failed: failed}, nil)
	})
	wg.Go(func() {
		_ = projector.React(fctx, log, s, counterReactor{filters: []string{log.Subjects.All()}, seen: reacted}, nil)
	})
	for _, name := range []string{tally{}.Name(), flaky{}.Name(), counterReactor{}.Name()} {
		_, err = s.WaitFor(ctx, name, head)
		require.NoError(t, err, name)
	}
	count := func(key string) string {
		got, err := s.Get(ctx, key)
		require.NoError(t, err)
		return string(got)
	}
	require.Equal(t, strconv.Itoa(len(all)), count("tally"), "every event counted once")
	require.True(t, failed.Load())
	require.Equal(t, strconv.Itoa(len(all)), count("flaky"), "every event counted once, across its failure")
	require.Equal(t, dump(t, ctx, oneByOne(t, ctx, recs)), dump(t, ctx, s))
	require.Len(t, reacted, len(all)-10, "the reactor reacted to each event after its checkpoint once")
	// The ledger, ahead, is not handed the feed's second reading at all;
	// whatever it reports meanwhile says it is at the head.
	mu.Lock()
	for _, l := range ledgerLags {
		require.Zero(t, l, "the ledger is at the head while the feed reads again for the others")
	}
	mu.Unlock()

	// At the head one subscription serves everyone: new events reach all
	// of them without another.
	opened := feed.Opened()
	appendLedger(t, ctx, log, 5)
	recs = readAll(t, ctx, log, filter)
	head, err = log.Head(ctx)
	require.NoError(t, err)
	for _, name := range []string{ledger{}.Name(), tally{}.Name(), flaky{}.Name(), counterReactor{}.Name()} {
		_, err = s.WaitFor(ctx, name, head)
		require.NoError(t, err, name)
	}
	require.Equal(t, opened, feed.Opened())
	all = readAll(t, ctx, log, log.Subjects.All())
	require.Equal(t, strconv.Itoa(len(all)), count("tally"))
	require.Equal(t, strconv.Itoa(len(all)), count("flaky"))
	require.Equal(t, dump(t, ctx, oneByOne(t, ctx, recs)), dump(t, ctx, s))
	require.Len(t, reacted, len(all)-10)
}

// waiter reacts to each event once the tally has applied it, as a reactor
// that reads another read model of its service does.
type waiter struct {
	store   projection.Store
	reacted chan uint64
	// waiting is closed when it first waits.
	waiting chan struct{}
	once    *sync.Once
}

func (waiter) Name() string                      { return "test.waiter" }
func (waiter) Filters() []string                 { return nil }
func (waiter) Wants(*eventsv1.RuntimeEvent) bool { return true }
func (w waiter) React(ctx context.Context, rec *eventlog.Record) error {
	w.once.Do(func() { close(w.waiting) })
	if _, err := w.store.WaitFor(ctx, tally{}.Name(), rec.Event.GetSequence()); err != nil {
		return err
	}
	select {
	case w.reacted <- rec.Event.GetSequence():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A reactor that waits for a read model fed by the same feed holds its
// batches while the read model joins behind: the feed starts over without
// waiting for the reactor to take more, and does not hand it again what
// it holds, so the read model gets what it needs and the reactor goes on.
// Each event is reacted to once: a start over cuts its batches where the
// last subscription did not, and a consumer is handed only what follows
// what it had (without that, 4 runs of 40 reacted to some events twice).
// (Whether the feed is already blocked on the reactor when the read model
// joins depends on timing, so for the deadlock itself this shows
// liveness, not its absence in every interleaving.)
func TestFeedDoesNotWaitForAConsumerWaitingOnAnother(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	appendLedger(t, ctx, log, 40)
	head, err := log.Head(ctx)
	require.NoError(t, err)
	feed := projector.NewFeedWithBatch(log, 8)
	fctx, fcancel := context.WithCancel(projector.ContextWithOptions(ctx, projector.WithFeed(feed)))
	var wg sync.WaitGroup
	defer func() { fcancel(); wg.Wait() }()
	s := projection.NewMemory()
	// Room for reactions twice over: one more than head fails the test
	// below instead of blocking the reactor.
	all := readAll(t, ctx, log, log.Subjects.All())
	reacted := make(chan uint64, 2*len(all))
	w := waiter{store: s, reacted: reacted, waiting: make(chan struct{}), once: &sync.Once{}}
	wg.Go(func() { _ = projector.React(fctx, log, s, w, nil) })
	// The reactor has taken its first batch and waits for the tally; the
	// feed fills its queue behind it and waits too.
	select {
	case <-w.waiting:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	wg.Go(func() { _ = projector.Run(fctx, log, s, tally{}, nil) })
	_, err = s.WaitFor(ctx, waiter{}.Name(), head)
	require.NoError(t, err)
	require.Len(t, reacted, len(all), "each event reacted to once")
	for _, want := range all {
		require.Equal(t, want.Event.GetSequence(), <-reacted)
	}
}
