package command_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

var agg = eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "counter", ID: "c1"}

// counter projects the number of warnings on the aggregate; each warning's
// code claims the value the counter reaches with it.
type counter struct{ log *eventlog.Log }

func (counter) Name() string { return "test.counter" }

func (c counter) Filters() []string { return []string{c.log.Subjects.Aggregate(agg)} }

func (counter) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	n, err := value(ctx, store)
	if err != nil {
		return projection.Batch{}, err
	}
	claimed := rec.Event.GetRuntimeWarning().GetCode()
	if claimed != strconv.Itoa(n+1) {
		return projection.Batch{}, fmt.Errorf("event claims %s after %d: decided on a stale state", claimed, n)
	}
	return projection.Batch{Puts: []projection.KV{{Key: "count", Value: []byte(strconv.Itoa(n + 1))}}}, nil
}

func value(ctx context.Context, store projection.Store) (int, error) {
	raw, err := store.Get(ctx, "count")
	if err == projection.ErrNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(raw))
}

func TestConcurrentCommandsEachDecideOnTheLatestState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := projection.NewMemory()
	p := counter{log: log}
	errs := make(chan error, 1)
	go func() { errs <- projector.Run(ctx, log, store, p, nil) }()

	x := command.Executor{Log: log, Store: store, Projection: p.Name(), MaxAttempts: 1000}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := x.Execute(ctx, agg, func(ctx context.Context, last uint64) ([]*eventsv1.RuntimeEvent, error) {
					n, err := value(ctx, store)
					if err != nil {
						return nil, err
					}
					return []*eventsv1.RuntimeEvent{{
						Type:    "runtime.warning",
						Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: strconv.Itoa(n + 1)}},
					}}, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	head, err := log.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.WaitFor(ctx, p.Name(), head); err != nil {
		t.Fatalf("projection did not reach %d (a stale decision stops it): %v", head, err)
	}
	if n, _ := value(ctx, store); n != writers*each || head != writers*each {
		t.Fatalf("counter %d with %d events, want %d", n, head, writers*each)
	}
	select {
	case err := <-errs:
		t.Fatalf("projector stopped: %v", err)
	default:
	}
}

func TestNothingToAppendAnswersTheAggregatesSequence(t *testing.T) {
	ctx := context.Background()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := projection.NewMemory()
	x := command.Executor{Log: log, Store: store, Projection: "test.none"}
	res, err := x.Execute(ctx, agg, func(context.Context, uint64) ([]*eventsv1.RuntimeEvent, error) { return nil, nil })
	if err != nil || res.Sequence != 0 || len(res.Appended) != 0 {
		t.Fatalf("no-op: %+v %v", res, err)
	}
	want := fmt.Errorf("refused")
	if _, err := x.Execute(ctx, agg, func(context.Context, uint64) ([]*eventsv1.RuntimeEvent, error) { return nil, want }); err != want {
		t.Fatalf("decide error not returned: %v", err)
	}
}
