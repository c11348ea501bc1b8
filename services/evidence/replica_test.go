package evidence_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/evidence/app"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
)

// evidenceReplicas are evidence apps of separate processes on one log:
// each its own connection, read model and writer. No projector runs:
// trial commands decide on the writer's state, never on the read model.
func evidenceReplicas(t *testing.T, n int) ([]*app.App, *eventlog.Log) {
	t.Helper()
	ns := natstest.Server(t)
	out := make([]*app.App, n)
	var log *eventlog.Log
	for i := range out {
		l, err := eventlog.Open(context.Background(), natstest.Connect(t, ns), eventlog.Config{})
		if err != nil {
			t.Fatal(err)
		}
		log = l
		out[i] = app.New(l, projection.NewMemory())
	}
	return out, log
}

func trialStart(trial, config string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{ThreadId: "th1", TurnId: "turn1", TaskId: "task1", RunId: "run1", Payload: &eventsv1.RuntimeEvent_BenchmarkTrialStarted{BenchmarkTrialStarted: &eventsv1.BenchmarkTrialStarted{
		Benchmark: &eventsv1.BenchmarkSpine{TrialId: trial, DatasetId: "ds", BenchmarkTaskId: "bt", ConfigurationId: config, Role: "candidate"}}}}
}

func refusedAs(err error, reason string) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.Kind == fault.KindPrecondition && fe.Reason == reason
}

// Three replicas start one trial with different configurations at once,
// then reward it with different values at once: exactly one of each
// lands, the others are refused on the state it left. A replica whose
// state is stale (it started the trial; another ended it as failed) is
// refused when it ends it as completed, and nothing it decided on its
// stale state is written.
func TestTrialReplicas(t *testing.T) {
	ctx := context.Background()
	rs, log := evidenceReplicas(t, 3)
	race := func(what string, reason string, f func(i int, a *app.App) error) {
		gate := make(chan struct{})
		errs := make([]error, len(rs))
		var wg sync.WaitGroup
		for i, a := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				errs[i] = f(i, a)
			}()
		}
		close(gate)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !refusedAs(err, reason):
				t.Fatalf("%s on replica %d: %v, want %s", what, i, err, reason)
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d replicas won (%v), want exactly one", what, won, errs)
		}
	}
	race("start", domain.ReasonTrialExists, func(i int, a *app.App) error {
		_, err := a.StartTrial(ctx, "acme", "s1", trialStart("trial_1", fmt.Sprint("cfg_", i)))
		return err
	})
	race("reward", domain.ReasonRewardRecorded, func(i int, a *app.App) error {
		_, err := a.RecordReward(ctx, "acme", &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: "trial_1", Value: float64(i)})
		return err
	})
	// rs[0] holds the trial started; rs[1] fails it.
	if _, err := rs[1].EndTrial(ctx, "acme", &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial_1", FailureCategory: "timeout", Message: "too slow", TimedOut: true}); err != nil {
		t.Fatal(err)
	}
	_, err := rs[0].EndTrial(ctx, "acme", &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial_1", Message: "done"})
	if !refusedAs(err, domain.ReasonTrialEnded) {
		t.Fatalf("completing a trial another replica failed: %v, want %s", err, domain.ReasonTrialEnded)
	}
	var types []string
	if _, err := log.Read(ctx, []string{log.Subjects.Session("acme", "s1")}, eventlog.FromStart, func(r *eventlog.Record) error {
		types = append(types, r.Event.GetType())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(types) != "[benchmark.trial.started benchmark.reward.recorded benchmark.trial.failed]" {
		t.Fatalf("log %v, want one start, one reward, one end", types)
	}
}
