package domain_test

import (
	"slices"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/services/routing/domain"
)

func TestRoutedRecordsTheCandidatesThenTheOutcome(t *testing.T) {
	s := &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "t1"}
	d := &eventsv1.RoutingDecision{SelectedModelId: "m1"}
	for _, c := range []struct {
		name    string
		set     *eventsv1.CandidateSet
		outcome domain.Outcome
		want    string
	}{
		{"not possible", &eventsv1.CandidateSet{}, domain.Outcome{NotPossible: &eventsv1.RoutingNotPossible{Stage: domain.StageDecide}}, events.TypeRoutingNotPossible},
		{"one candidate", &eventsv1.CandidateSet{SingleCandidate: true}, domain.Outcome{Decision: d}, events.TypeRoutingSingleCandidate},
		{"a choice", &eventsv1.CandidateSet{CandidateCount: 2}, domain.Outcome{Decision: d}, events.TypeRoutingDecided},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := domain.Routed(s, c.set, nil, c.outcome)
			if got := testkit.Types(evs); !slices.Equal(got, []string{events.TypeRoutingCandidatesResolved, c.want}) {
				t.Fatalf("types %v", got)
			}
			for _, e := range evs {
				if e.GetSessionId() != "s1" || e.GetThreadId() != "th1" || e.GetTurnId() != "t1" {
					t.Fatalf("%s not on the turn's scope: %v", e.GetType(), e)
				}
			}
		})
	}
}

// A retried cost report derives the same ids, so the log drops it; another
// tenant's report of the same usage key derives others.
func TestCostRecordedIDsAreStablePerTenantAndUsage(t *testing.T) {
	s := &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "t1"}
	low := []*eventsv1.QuotaLow{{QuotaId: "q", Dimension: "tokens", Threshold: 0.8}}
	blocked := []*eventsv1.QuotaBlocked{{QuotaId: "q", Dimension: "tokens"}}
	ids := func(tenant string) []string {
		var out []string
		for _, e := range domain.CostRecorded(tenant, "s1/t1/u1", s, "u1", &eventsv1.CostRecorded{}, low, blocked) {
			out = append(out, e.GetEventId())
		}
		return out
	}
	a, again, b := ids("acme"), ids("acme"), ids("other")
	if len(a) != 3 || !slices.Equal(a, again) {
		t.Fatalf("ids %v then %v", a, again)
	}
	for i := range a {
		if a[i] == b[i] || a[i] == "" {
			t.Fatalf("event %d: id %q for both tenants", i, a[i])
		}
	}
}
