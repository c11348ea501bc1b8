package readmodel_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/routingsummary"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

const (
	known   = commonv1.FactState_FACT_STATE_KNOWN
	unknown = commonv1.FactState_FACT_STATE_UNKNOWN
	blocked = commonv1.FactState_FACT_STATE_BLOCKED
)

type summary = rv1.RoutingLimitSummary

func decision(model string, count int32) *eventsv1.RoutingDecision {
	return &eventsv1.RoutingDecision{SelectedModelId: model, CandidateCount: count}
}

// states a thread summary can be in when a routing fact arrives.
func states() map[string]*summary {
	cost := func() *rv1.CostState {
		return &rv1.CostState{State: known, RecordedNanos: 100, RecordedCalls: 1, LastEstimatedNanos: 7, RecordedUsage: &eventsv1.TokenUsage{InputTokens: 10, OutputTokens: 2}}
	}
	base := func(s *summary) *summary {
		s.SessionId, s.ThreadId, s.TurnId, s.LastSequence = "s1", "th1", "turn1", 5
		if s.Cost == nil {
			s.Cost = &rv1.CostState{State: unknown, RecordedUsage: &eventsv1.TokenUsage{}}
		}
		for _, f := range []*commonv1.FactState{&s.RoutingState, &s.QuotaState, &s.RateLimitState} {
			if *f == 0 {
				*f = unknown
			}
		}
		return s
	}
	return map[string]*summary{
		"fresh":    {},
		"profiled": base(&summary{RoutingState: known, TaskProfile: &eventsv1.TaskProfile{Kind: "chat"}}),
		"decided": base(&summary{RoutingState: known, TaskProfile: &eventsv1.TaskProfile{Kind: "chat"}, CandidateCount: 3, Decision: decision("a", 3),
			Cost: cost(), QuotaState: known, LastQuotaLow: &eventsv1.QuotaLow{QuotaId: "q"}}),
		"single": base(&summary{RoutingState: known, CandidateCount: 1, SingleCandidate: true, Decision: decision("a", 1)}),
		"not possible at decide": base(&summary{RoutingState: blocked, NotPossible: &eventsv1.RoutingNotPossible{Stage: "decide"},
			FailedModelIds: []string{"x"}}),
		"fell back": base(&summary{RoutingState: known, CandidateCount: 3, Decision: decision("b", 2), FallbackCount: 1,
			LastFallback: &eventsv1.RoutingFallbackApplied{FailedModelId: "a", FallbackCount: 1}, FailedModelIds: []string{"a"}}),
		"not possible at fallback": base(&summary{RoutingState: blocked, CandidateCount: 3, Decision: decision("a", 3),
			NotPossible: &eventsv1.RoutingNotPossible{Stage: "fallback"}, FailedModelIds: []string{"a"}}),
		"quota blocked": base(&summary{QuotaState: blocked, LastQuotaBlocked: &eventsv1.QuotaBlocked{QuotaId: "q"}, RateLimitState: known,
			LastRateLimitHit: &eventsv1.RateLimitHit{LimitId: "r"}, Cost: cost()}),
	}
}

// A fact and what it must do to any summary: the fields it sets (applied
// to a copy of the state before), everything else unchanged.
type factCase struct {
	name  string
	event *eventsv1.RuntimeEvent
	want  func(before *summary) *summary
}

func facts() []factCase {
	profile := &eventsv1.TaskProfile{Kind: "coding"}
	cands := &eventsv1.RoutingCandidatesResolved{CandidateSet: &eventsv1.CandidateSet{CandidateCount: 2}, Profile: profile}
	decided := decision("c", 4)
	single := decision("d", 1)
	npDecide := &eventsv1.RoutingNotPossible{Stage: "decide", Reason: "none"}
	npFallback := &eventsv1.RoutingNotPossible{Stage: "fallback", Reason: "chain exhausted"}
	fa := &eventsv1.RoutingFallbackApplied{FailedModelId: "a", Decision: decision("e", 2), FallbackCount: 2}
	usage := &eventsv1.TokenUsage{InputTokens: 1, OutputTokens: 2, CachedInputTokens: 3, ReasoningTokens: 4}
	hit := &eventsv1.RateLimitHit{LimitId: "rpm"}
	low := &eventsv1.QuotaLow{QuotaId: "daily", Threshold: 0.8}
	qb := &eventsv1.QuotaBlocked{QuotaId: "daily"}
	addFailed := func(s *summary, m string) {
		if m != "" && !slices.Contains(s.FailedModelIds, m) {
			s.FailedModelIds = append(s.FailedModelIds, m)
		}
	}
	return []factCase{
		{"task.profile.resolved", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_TaskProfileResolved{TaskProfileResolved: &eventsv1.TaskProfileResolved{Profile: profile}}},
			func(s *summary) *summary { s.TaskProfile, s.RoutingState = profile, known; return s }},
		{"routing.candidates.resolved", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingCandidatesResolved{RoutingCandidatesResolved: cands}},
			func(s *summary) *summary {
				s.CandidateCount, s.SingleCandidate, s.TaskProfile, s.RoutingState = 2, false, profile, known
				return s
			}},
		{"routing.decided", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingDecided{RoutingDecided: &eventsv1.RoutingDecided{Decision: decided}}},
			func(s *summary) *summary {
				s.Decision, s.NotPossible, s.SingleCandidate, s.CandidateCount, s.RoutingState = decided, nil, false, 4, known
				return s
			}},
		{"routing.single_candidate", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: single}}},
			func(s *summary) *summary {
				s.Decision, s.NotPossible, s.SingleCandidate, s.CandidateCount, s.RoutingState = single, nil, true, 1, known
				return s
			}},
		{"routing.not_possible at decide", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingNotPossible{RoutingNotPossible: npDecide}},
			func(s *summary) *summary {
				s.NotPossible, s.RoutingState, s.Decision, s.CandidateCount, s.SingleCandidate = npDecide, blocked, nil, 0, false
				return s
			}},
		{"routing.not_possible at fallback", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingNotPossible{RoutingNotPossible: npFallback}},
			func(s *summary) *summary {
				s.NotPossible, s.RoutingState = npFallback, blocked
				addFailed(s, s.GetDecision().GetSelectedModelId()) // the decision stays: it is what failed
				return s
			}},
		{"routing.fallback.applied", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingFallbackApplied{RoutingFallbackApplied: fa}},
			func(s *summary) *summary {
				s.Decision, s.NotPossible, s.LastFallback, s.FallbackCount, s.RoutingState = fa.GetDecision(), nil, fa, 2, known
				s.FailedModelIds = append(s.FailedModelIds, "a")
				return s
			}},
		{"cost.estimated", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_CostEstimated{CostEstimated: &eventsv1.CostEstimated{Cost: &eventsv1.CostBreakdown{TotalNanos: 55}}}},
			func(s *summary) *summary { s.Cost.LastEstimatedNanos = 55; return s }},
		{"cost.recorded", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: &eventsv1.CostRecorded{Usage: usage, Cost: &eventsv1.CostBreakdown{TotalNanos: 40}}}},
			func(s *summary) *summary {
				c := s.Cost
				c.State, c.RecordedNanos, c.RecordedCalls = known, c.RecordedNanos+40, c.RecordedCalls+1
				u := c.RecordedUsage
				u.InputTokens, u.OutputTokens, u.CachedInputTokens, u.ReasoningTokens = u.InputTokens+1, u.OutputTokens+2, u.CachedInputTokens+3, u.ReasoningTokens+4
				return s
			}},
		{"rate_limit.hit", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RateLimitHit{RateLimitHit: hit}},
			func(s *summary) *summary { s.LastRateLimitHit, s.RateLimitState = hit, known; return s }},
		{"quota.low", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_QuotaLow{QuotaLow: low}},
			func(s *summary) *summary { s.LastQuotaLow, s.QuotaState = low, known; return s }},
		{"quota.blocked", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: qb}},
			func(s *summary) *summary { s.LastQuotaBlocked, s.QuotaState = qb, blocked; return s }},
	}
}

// TestFoldEveryStateAndFact applies every routing fact to every summary
// state and compares the whole summary with what the fact must set.
func TestFoldEveryStateAndFact(t *testing.T) {
	for stateName := range states() {
		for _, f := range facts() {
			t.Run(stateName+"/"+f.name, func(t *testing.T) {
				got := states()[stateName]
				e := proto.CloneOf(f.event)
				e.SessionId, e.ThreadId, e.TurnId, e.Sequence = "s1", "th1", "turn2", 9
				routingsummary.Fold(got, e)

				want := states()[stateName]
				// What every fact does: the scope and sequence, and honest
				// defaults for what no fact has said yet.
				want.SessionId, want.ThreadId, want.TurnId, want.LastSequence = "s1", "th1", "turn2", 9
				if want.Cost == nil {
					want.Cost = &rv1.CostState{State: unknown, RecordedUsage: &eventsv1.TokenUsage{}}
				}
				for _, st := range []*commonv1.FactState{&want.RoutingState, &want.QuotaState, &want.RateLimitState} {
					if *st == commonv1.FactState_FACT_STATE_UNSPECIFIED {
						*st = unknown
					}
				}
				want = f.want(want)
				if !proto.Equal(got, want) {
					t.Fatalf("after %s on %s:\n got %v\nwant %v", f.name, stateName, got, want)
				}
			})
		}
	}
}

func TestFoldStaysHonestAboutWhatItWasNotTold(t *testing.T) {
	s := &summary{}
	routingsummary.Fold(s, &eventsv1.RuntimeEvent{SessionId: "s1", ThreadId: "th1", TurnId: "t1", Sequence: 1,
		Payload: &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: &eventsv1.CostRecorded{Cost: &eventsv1.CostBreakdown{TotalNanos: 1}}}})
	if s.GetRoutingState() != unknown || s.GetQuotaState() != unknown || s.GetRateLimitState() != unknown || s.GetCost().GetState() != known {
		t.Fatalf("a cost alone says nothing of routing or limits: %v", s)
	}
}

// TestProjectThreadsAndSpend runs the projection over a session's facts:
// the thread summary follows its latest turn but keeps the thread's cost
// and limit facts, and spend adds up per tenant, session and task.
func TestProjectThreadsAndSpend(t *testing.T) {
	ctx := context.Background()
	store := projection.NewMemory()
	p := readmodel.Projection{Subjects: eventlog.Subjects{Prefix: "ar.ev"}}
	seq := uint64(0)
	apply := func(e *eventsv1.RuntimeEvent) {
		t.Helper()
		seq++
		e.TenantId, e.Sequence = "t1", seq
		b, err := p.Project(ctx, store, &eventlog.Record{Event: e})
		if err != nil {
			t.Fatal(err)
		}
		b.Projection, b.Sequence = readmodel.Name, seq
		if _, err := store.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	at := func(turn, task string, e *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
		e.SessionId, e.ThreadId, e.TurnId, e.TaskId = "s1", "th1", turn, task
		return e
	}
	cost := func(nanos int64) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_CostRecorded{CostRecorded: &eventsv1.CostRecorded{Cost: &eventsv1.CostBreakdown{TotalNanos: nanos}, Usage: &eventsv1.TokenUsage{}}}}
	}
	// A registry change and a task profile resolved before any turn.
	apply(&eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_LimitChanged{LimitChanged: &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_ProviderUpserted{
		ProviderUpserted: &eventsv1.Provider{Id: "p", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT}}}}})
	apply(&eventsv1.RuntimeEvent{TaskId: "k1", Payload: &eventsv1.RuntimeEvent_TaskProfileResolved{TaskProfileResolved: &eventsv1.TaskProfileResolved{Profile: &eventsv1.TaskProfile{Kind: "coding"}}}})

	apply(at("turn1", "k1", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingDecided{RoutingDecided: &eventsv1.RoutingDecided{Decision: decision("a", 2)}}}))
	apply(at("turn1", "k1", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingFallbackApplied{RoutingFallbackApplied: &eventsv1.RoutingFallbackApplied{
		FailedModelId: "a", Decision: decision("b", 1), FallbackCount: 1}}}))
	apply(at("turn1", "k1", cost(30)))
	apply(at("turn1", "k1", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_QuotaBlocked{QuotaBlocked: &eventsv1.QuotaBlocked{QuotaId: "q"}}}))
	apply(at("turn2", "", &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: decision("c", 1)}}}))
	apply(at("turn2", "", cost(12)))

	load := func(key string) *summary {
		t.Helper()
		s := &summary{}
		if found, err := readmodel.Load(ctx, store, key, s); err != nil || !found {
			t.Fatalf("%s: found %v, %v", key, found, err)
		}
		return s
	}
	th := load(readmodel.ThreadKey("t1", "s1", "th1"))
	if th.GetTurnId() != "turn2" || th.GetDecision().GetSelectedModelId() != "c" || !th.GetSingleCandidate() || th.GetFallbackCount() != 0 ||
		len(th.GetFailedModelIds()) != 0 || th.GetLastFallback() != nil {
		t.Fatalf("the thread shows turn2's routing only: %v", th)
	}
	if th.GetCost().GetRecordedNanos() != 42 || th.GetCost().GetRecordedCalls() != 2 || th.GetQuotaState() != blocked || th.GetLastSequence() != seq {
		t.Fatalf("the thread keeps its cost and quota facts: %v", th)
	}
	turn1 := load(readmodel.TurnKey("t1", "s1", "turn1"))
	if turn1.GetDecision().GetSelectedModelId() != "b" || turn1.GetFallbackCount() != 1 || !slices.Equal(turn1.GetFailedModelIds(), []string{"a"}) ||
		turn1.GetCost().GetRecordedNanos() != 30 {
		t.Fatalf("turn1 %v", turn1)
	}
	threads, err := store.Range(ctx, readmodel.ThreadIndex("t1", "s1"), projection.RangeQuery{})
	if err != nil || len(threads) != 1 || threads[0].Member != "th1" {
		t.Fatalf("thread index %v, %v", threads, err)
	}
	spent, err := readmodel.LoadSpent(ctx, store, 1, "t1", "s1", "k1")
	if err != nil || spent.Tenant != 42 || spent.Session != 42 || spent.Task != 30 {
		t.Fatalf("spent %v, %v", spent, err)
	}
	// One partition keeps the keys a read model had before partitions.
	for key, want := range map[string]string{"spent/t1": "42", "spent/t1/k/k1": "30", "spent/t1/s/s1": "42"} {
		if got, err := store.Get(ctx, key); err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v; want %s", key, got, err, want)
		}
	}
	if other, err := readmodel.LoadSpent(ctx, store, 1, "t2", "s1", "k1"); err != nil || other.Tenant != 0 || other.Session != 0 || other.Task != 0 {
		t.Fatalf("another tenant's spend %v, %v", other, err)
	}
	reg, err := readmodel.LoadRegistry(ctx, store, "t1")
	if err != nil || len(reg.GetProviders()) != 1 {
		t.Fatalf("registry %v, %v", reg, err)
	}
	if other, _ := readmodel.LoadRegistry(ctx, store, "t2"); len(other.GetProviders()) != 0 {
		t.Fatalf("another tenant's registry %v", other)
	}
	tp := &eventsv1.TaskProfile{}
	if found, err := readmodel.Load(ctx, store, readmodel.TaskProfileKey("t1", "", "k1"), tp); err != nil || !found || tp.GetKind() != "coding" {
		t.Fatalf("task profile %v, %v, %v", tp, found, err)
	}
}
