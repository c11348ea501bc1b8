package routing_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

func replicas(t *testing.T, n int) []rv1.RoutingServiceClient {
	t.Helper()
	ns := natstest.Server(t)
	cs := make([]rv1.RoutingServiceClient, n)
	for i := range cs {
		cs[i] = startOn(t, ns, registryYAML, true)
	}
	return cs
}

var coding = &eventsv1.TaskProfile{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
	FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE}

// Every replica reports the failure of a turn's current model at once:
// exactly one moves the turn each round, every other decides again on the
// state that one wrote and replays its outcome (same fallback, same event
// ids, deduplicated). Four turns walk the whole chain (gpt-5-4,
// claude-fast, unpriced, then not possible); each round's winner is stale
// in the others' caches.
func TestReplicasExactlyOneFallbackWinsEachRound(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			cs := replicas(t, n)
			ctx := context.Background()
			for turn := 0; turn < 4; turn++ {
				sc := &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: fmt.Sprintf("turn%d", turn)}
				if _, err := cs[turn%n].DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: sc, Route: &rv1.RouteRequest{Profile: coding, RequestedModelId: "gpt-5-4"}}); err != nil {
					t.Fatal(err)
				}
				for _, failed := range []string{"gpt-5-4", "claude-fast", "unpriced"} {
					answers := make([]*rv1.ApplyFallbackResponse, n)
					errs := make([]error, n)
					var wg sync.WaitGroup
					gate := make(chan struct{})
					for i, c := range cs {
						wg.Go(func() {
							<-gate
							answers[i], errs[i] = c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: failed, FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
						})
					}
					close(gate)
					wg.Wait()
					appended := 0
					for i := range cs {
						if errs[i] != nil {
							t.Fatalf("turn %d, %s failed, replica %d: %v", turn, failed, i, errs[i])
						}
						if !answers[i].GetWrite().GetDeduplicated() {
							appended++
						}
						if !proto.Equal(answers[i].GetFallback(), answers[0].GetFallback()) || !proto.Equal(answers[i].GetNotPossible(), answers[0].GetNotPossible()) ||
							answers[i].GetWrite().GetSequence() != answers[0].GetWrite().GetSequence() {
							t.Fatalf("turn %d, %s failed: answers differ: %v vs %v", turn, failed, answers[i], answers[0])
						}
					}
					if appended != 1 {
						t.Fatalf("turn %d, %s failed: %d replicas appended, want exactly 1", turn, failed, appended)
					}
				}
			}
		})
	}
}

// Every replica removes one model at once: exactly one removes it, the
// others decide again on the registry it wrote and answer NotFound (a
// removal decided on a stale registry would append a change the fold
// cannot apply).
func TestReplicasExactlyOneRegistryChangeWinsEachRound(t *testing.T) {
	cs := replicas(t, 3)
	ctx := context.Background()
	for round := 0; round < 6; round++ {
		model := fmt.Sprintf("m%d", round)
		if _, err := cs[round%3].UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
			{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: model, ProviderId: "openai"}}}}}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		removed := 0
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i, c := range cs {
			wg.Go(func() {
				<-gate
				_, err := c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
					{Change: &rv1.ModelRegistryChange_RemoveModel{RemoveModel: model}}}})
				if status.Code(err) == codes.NotFound {
					return
				}
				if err != nil {
					t.Errorf("round %d replica %d: %v", round, i, err)
					return
				}
				mu.Lock()
				removed++
				mu.Unlock()
			})
		}
		close(gate)
		wg.Wait()
		if removed != 1 {
			t.Fatalf("round %d: %d replicas removed %s, want exactly 1", round, removed, model)
		}
	}
	// Every replica's read model folded every change (a change decided on
	// a stale registry would have stopped its projector).
	last, err := cs[0].UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "final", ProviderId: "openai"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		reg, err := c.GetModelRegistry(ctx, &rv1.GetModelRegistryRequest{MinSequence: last.GetWrite().GetSequence()})
		if err != nil || len(reg.GetRegistry().GetModels()) != 5 {
			t.Fatalf("replica %d: %v, %v", i, reg, err)
		}
	}
}

// A replica whose cached turn predates another replica's fallback still
// decides on the log: a report of the model the other selected is not
// refused as "not the current model", a retry of the other's report
// replays its outcome, and a replica that never saw the turn routes it
// around every model that failed in it.
func TestStaleReplicaDecidesRoutingOnTheLog(t *testing.T) {
	cs := replicas(t, 3)
	a, b := cs[0], cs[1]
	ctx := context.Background()
	sc := scope("turn1")
	if _, err := b.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: sc, Route: &rv1.RouteRequest{Profile: coding, RequestedModelId: "gpt-5-4"}}); err != nil {
		t.Fatal(err)
	}
	first, err := a.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: "gpt-5-4", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	if err != nil || first.GetFallback().GetDecision().GetSelectedModelId() != "claude-fast" {
		t.Fatalf("%v, %v", first, err)
	}
	second, err := b.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: "claude-fast", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	if err != nil || second.GetFallback().GetFallbackCount() != 2 || second.GetWrite().GetDeduplicated() {
		t.Fatalf("b on its stale turn: %v, %v", second, err)
	}
	again, err := a.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: "gpt-5-4", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	if err != nil || !again.GetWrite().GetDeduplicated() || !proto.Equal(again.GetFallback(), first.GetFallback()) {
		t.Fatalf("a's retry: %v, %v", again, err)
	}
	// A replica that never held the turn takes it for new (a first
	// decision costs its append only); its append conflicts and it decides
	// again on the turn as the log holds it: both failed models stay out.
	c := cs[2]
	d, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: sc, Route: &rv1.RouteRequest{Profile: coding}})
	if err != nil || d.GetDecision().GetSelectedModelId() != "unpriced" {
		t.Fatalf("a fresh replica's decision on a routed turn: %v, %v", d, err)
	}
}

// The command path waits for no projection: a replica whose read model
// never moves (no projector) imports the config, changes the registry and
// routes on the change at once, moves a turn and records its cost, a
// retried cost record appending nothing twice. Under the previous executor
// each of these waited for the read model and failed Unavailable.
func TestRoutingCommandsAnswerWithoutAProjector(t *testing.T) {
	c := startOn(t, natstest.Server(t), registryYAML, false)
	ctx := context.Background()
	if _, err := c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "o-new", ProviderId: "openai", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS}}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckLimits(ctx, &rv1.CheckLimitsRequest{ModelId: "o-new", Requests: 1}); err != nil {
		t.Fatalf("the registry this process changed is not the one it checks limits on: %v", err)
	}
	sc := scope("turn1")
	d, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: sc, Route: &rv1.RouteRequest{Profile: coding, RequestedModelId: "o-new"}})
	if err != nil || d.GetDecision().GetSelectedModelId() != "o-new" {
		t.Fatalf("%v, %v", d, err)
	}
	fb, err := c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: "o-new", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	if err != nil || fb.GetFallback().GetFallbackCount() != 1 {
		t.Fatalf("%v, %v", fb, err)
	}
	// 610 of the daily 1,000 tokens cross the 0.5 threshold: cost.recorded
	// and quota.low, one atomic batch. The retry charges nothing and
	// crosses nothing: it finds its cost fact in the turn and answers with
	// it, deduplicated.
	req := &rv1.RecordCostRequest{Scope: sc, ModelId: "gpt-5-4", UsageId: "u1", Usage: &rv1.Usage{InputTokens: 600, OutputTokens: 10}}
	rec, err := c.RecordCost(ctx, req)
	if err != nil || rec.GetWrite().GetDeduplicated() || len(rec.GetWrite().GetEventIds()) != 2 {
		t.Fatalf("%v, %v", rec, err)
	}
	retry, err := c.RecordCost(ctx, req)
	if err != nil || !retry.GetWrite().GetDeduplicated() || retry.GetWrite().GetSequence() != rec.GetWrite().GetSequence()-uint64(natstest.Partitions(t)) ||
		!slices.Equal(retry.GetWrite().GetEventIds(), rec.GetWrite().GetEventIds()[:1]) {
		t.Fatalf("retried record: %v, %v; first %v", retry, err, rec)
	}
}
