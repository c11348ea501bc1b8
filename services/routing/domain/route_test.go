package domain

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

const (
	tools     = eventsv1.Capability_CAPABILITY_TOOLS
	vision    = eventsv1.Capability_CAPABILITY_VISION
	reasoning = eventsv1.Capability_CAPABILITY_REASONING
	fast      = eventsv1.LatencyClass_LATENCY_CLASS_FAST
	standard  = eventsv1.LatencyClass_LATENCY_CLASS_STANDARD
	slow      = eventsv1.LatencyClass_LATENCY_CLASS_SLOW
)

func priced(in, out int64) *eventsv1.ModelPrices {
	return &eventsv1.ModelPrices{InputNanosPerMillion: i64(in), OutputNanosPerMillion: i64(out)}
}

// oneModel is a registry whose only model "m" (provider "p", us) passes
// every check of baseInput; each exclusion case breaks one thing.
func oneModel() *eventsv1.Registry {
	return &eventsv1.Registry{
		Providers: []*eventsv1.Provider{{Id: "p", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT, Regions: []string{"us"}}},
		Models: []*eventsv1.Model{{Id: "m", ProviderId: "p", Capabilities: []eventsv1.Capability{tools}, ContextWindow: 1000,
			Prices: priced(1_000_000_000, 2_000_000_000), LatencyClass: standard}},
	}
}

func baseInput() RouteInput {
	return RouteInput{Registry: oneModel(), Profile: &eventsv1.TaskProfile{Kind: "chat", LatencyTarget: standard},
		EstInput: 100, EstOutput: 10, Limits: map[string]*eventsv1.LimitStateSnapshot{}}
}

func TestEveryExclusionReason(t *testing.T) {
	type R = eventsv1.ExclusionReason
	for _, c := range []struct {
		name   string
		change func(in *RouteInput)
		want   []R
		detail string
		retry  time.Duration
	}{
		{name: "available", change: func(*RouteInput) {}},
		{name: "disabled", change: func(in *RouteInput) { in.Registry.Models[0].Disabled = true },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED}, detail: "disabled"},
		{name: "credentials missing", change: func(in *RouteInput) {
			in.Registry.Providers[0].CredentialStatus = eventsv1.CredentialStatus_CREDENTIAL_STATUS_MISSING
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_MISSING_CREDENTIALS}, detail: `provider "p" credentials are missing`},
		{name: "credentials invalid", change: func(in *RouteInput) {
			in.Registry.Providers[0].CredentialStatus = eventsv1.CredentialStatus_CREDENTIAL_STATUS_INVALID
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_MISSING_CREDENTIALS}, detail: "credentials are invalid"},
		{name: "provider unknown", change: func(in *RouteInput) { in.Registry.Models[0].ProviderId = "gone" },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_MISSING_CREDENTIALS}, detail: `provider "gone" credentials are unspecified`},
		{name: "capability gap", change: func(in *RouteInput) {
			in.Profile.RequiredCapabilities = []eventsv1.Capability{tools, vision, reasoning}
		},
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_CAPABILITY_GAP}, detail: "lacks vision, reasoning"},
		{name: "region not served by the provider", change: func(in *RouteInput) { in.Profile.Region = "eu" },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_REGION}, detail: `region "eu"`},
		{name: "the model's own region wins over the provider's", change: func(in *RouteInput) {
			in.Profile.Region = "eu"
			in.Registry.Models[0].Region = "eu"
		}},
		{name: "the model's own region excludes", change: func(in *RouteInput) {
			in.Profile.Region = "us"
			in.Registry.Models[0].Region = "eu"
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_REGION}},
		{name: "user lock on another model", change: func(in *RouteInput) { in.UserLock, in.RequestedModel = true, "other" },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_USER_LOCK}, detail: `locked the turn to "other"`},
		{name: "user lock on this model", change: func(in *RouteInput) { in.UserLock, in.RequestedModel = true, "m" }},
		{name: "failed earlier in the turn", change: func(in *RouteInput) { in.Failed = []string{"x", "m"} },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_PROVIDER_FAILED}},
		{name: "fallback keeps to another provider", change: func(in *RouteInput) { in.SameProvider = "q" },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED}, detail: "same_provider"},
		{name: "fallback keeps to its provider", change: func(in *RouteInput) { in.SameProvider = "p" }},
		{name: "context window", change: func(in *RouteInput) { in.EstInput = 1001 },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_CONTEXT_WINDOW}, detail: "1000 < 1001"},
		{name: "input fills the window exactly", change: func(in *RouteInput) { in.EstInput = 1000 }},
		{name: "no context window means unbounded", change: func(in *RouteInput) {
			in.Registry.Models[0].ContextWindow = 0
			in.EstInput = MaxTokens
		}},
		{name: "price missing for the estimate", change: func(in *RouteInput) { in.Registry.Models[0].Prices.OutputNanosPerMillion = nil },
			want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_PRICE_MISSING}, detail: "no output price"},
		{name: "no estimate needs no price", change: func(in *RouteInput) {
			in.Registry.Models[0].Prices = nil
			in.EstInput, in.EstOutput = 0, 0
		}},
		{name: "quota exhausted", change: func(in *RouteInput) {
			in.Limits["m"] = &eventsv1.LimitStateSnapshot{Limits: []*eventsv1.LimitState{
				{Kind: "quota", LimitId: "daily", Dimension: DimTokens, Exhausted: true},
				{Kind: "quota", LimitId: "daily", Dimension: DimCost, Exhausted: true}}}
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_QUOTA_EXHAUSTED}, detail: `quota "daily" (cost) exhausted`},
		{name: "rate limited, the longest retry wins", change: func(in *RouteInput) {
			in.Limits["m"] = &eventsv1.LimitStateSnapshot{Limits: []*eventsv1.LimitState{
				{Kind: "rate_limit", LimitId: "rpm", Dimension: DimRequests, Exhausted: true, RetryAfter: durationpb.New(2 * time.Second)},
				{Kind: "rate_limit", LimitId: "tpm", Dimension: DimTokens, Exhausted: true, RetryAfter: durationpb.New(7 * time.Second)},
				{Kind: "rate_limit", LimitId: "ok", Dimension: DimTokens, RetryAfter: durationpb.New(time.Hour)}}}
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_RATE_LIMITED}, detail: `rate limit "tpm"`, retry: 7 * time.Second},
		{name: "limits not exhausted", change: func(in *RouteInput) {
			in.Limits["m"] = &eventsv1.LimitStateSnapshot{Limits: []*eventsv1.LimitState{{Kind: "quota", LimitId: "daily", Remaining: 1}, {Kind: "rate_limit", LimitId: "rpm", Remaining: 1}}}
		}},
		{name: "budget would be exceeded by the estimate", change: func(in *RouteInput) {
			// The estimate is 100*1000 + 10*2000 = 120000 nano-USD.
			in.Budgets = []*eventsv1.BudgetState{{BudgetId: "b", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION, LimitNanos: 1_000_000, SpentNanos: 880_001}}
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_BUDGET_EXCEEDED}, detail: `session budget "b": spent 880001 + estimated 120000`},
		{name: "budget reached exactly by the estimate", change: func(in *RouteInput) {
			in.Budgets = []*eventsv1.BudgetState{{BudgetId: "b", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TENANT, LimitNanos: 1_000_000, SpentNanos: 880_000}}
		}},
		{name: "budget spent even for a free call", change: func(in *RouteInput) {
			in.EstInput, in.EstOutput = 0, 0
			in.Budgets = []*eventsv1.BudgetState{{BudgetId: "b", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TASK, LimitNanos: 10, SpentNanos: 10}}
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_BUDGET_EXCEEDED}, detail: "task budget"},
		{name: "every reason at once, each listed once", change: func(in *RouteInput) {
			m := in.Registry.Models[0]
			m.Disabled, m.Prices.OutputNanosPerMillion = true, nil
			in.Registry.Providers[0].CredentialStatus = eventsv1.CredentialStatus_CREDENTIAL_STATUS_MISSING
			in.Profile.RequiredCapabilities, in.Profile.Region = []eventsv1.Capability{vision}, "eu"
			in.UserLock, in.RequestedModel, in.Failed, in.SameProvider, in.EstInput = true, "other", []string{"m"}, "q", 5000
			in.Limits["m"] = &eventsv1.LimitStateSnapshot{Limits: []*eventsv1.LimitState{{Kind: "quota", Exhausted: true}, {Kind: "rate_limit", Exhausted: true}}}
			in.Budgets = []*eventsv1.BudgetState{{BudgetId: "b1", LimitNanos: 1, SpentNanos: 1}, {BudgetId: "b2", LimitNanos: 1, SpentNanos: 1}}
		}, want: []R{eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED, eventsv1.ExclusionReason_EXCLUSION_REASON_MISSING_CREDENTIALS,
			eventsv1.ExclusionReason_EXCLUSION_REASON_CAPABILITY_GAP, eventsv1.ExclusionReason_EXCLUSION_REASON_REGION, eventsv1.ExclusionReason_EXCLUSION_REASON_USER_LOCK,
			eventsv1.ExclusionReason_EXCLUSION_REASON_PROVIDER_FAILED, eventsv1.ExclusionReason_EXCLUSION_REASON_POLICY_DENIED,
			eventsv1.ExclusionReason_EXCLUSION_REASON_CONTEXT_WINDOW, eventsv1.ExclusionReason_EXCLUSION_REASON_PRICE_MISSING,
			eventsv1.ExclusionReason_EXCLUSION_REASON_QUOTA_EXHAUSTED, eventsv1.ExclusionReason_EXCLUSION_REASON_RATE_LIMITED,
			eventsv1.ExclusionReason_EXCLUSION_REASON_BUDGET_EXCEEDED}, detail: `budget "b2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := baseInput()
			c.change(&in)
			set := Candidates(in)
			if len(c.want) == 0 {
				if len(set.GetExcluded()) != 0 || set.GetCandidateCount() != 1 || !set.GetSingleCandidate() || set.GetCandidates()[0].GetModelId() != "m" {
					t.Fatalf("want m as the single candidate, got %v", set)
				}
				return
			}
			if len(set.GetCandidates()) != 0 || set.GetCandidateCount() != 0 || len(set.GetExcluded()) != 1 {
				t.Fatalf("want m excluded, got %v", set)
			}
			x := set.GetExcluded()[0]
			if x.GetModelId() != "m" || x.GetProviderId() != in.Registry.Models[0].GetProviderId() || !slices.Equal(x.GetReasons(), c.want) {
				t.Fatalf("excluded %v, want reasons %v", x, c.want)
			}
			if !strings.Contains(x.GetDetail(), c.detail) {
				t.Fatalf("detail %q does not say %q", x.GetDetail(), c.detail)
			}
			if x.GetRetryAfter().AsDuration() != c.retry {
				t.Fatalf("retry after %v, want %v", x.GetRetryAfter().AsDuration(), c.retry)
			}
			// The static part agrees with the set on what needs no limits.
			static, _ := StaticExclusions(in, in.Registry.Models[0])
			for _, r := range static {
				if !slices.Contains(c.want, r) {
					t.Fatalf("static reason %v not in the set's %v", r, c.want)
				}
			}
		})
	}
}

func TestCandidateSetConstraintsAndPreferences(t *testing.T) {
	in := baseInput()
	in.Profile.RequiredCapabilities, in.Profile.Region = []eventsv1.Capability{tools}, "us"
	in.UserLock, in.RequestedModel, in.RequestedProvider = true, "m", "p"
	set := Candidates(in)
	if want := []string{"capability:tools", "region:us", "user_lock:m"}; !slices.Equal(set.GetHardConstraints(), want) {
		t.Fatalf("hard constraints %v, want %v", set.GetHardConstraints(), want)
	}
	if want := []string{"requested:m", "provider:p", "latency:standard", "cost"}; !slices.Equal(set.GetPreferences(), want) {
		t.Fatalf("preferences %v, want %v", set.GetPreferences(), want)
	}
	in.Profile.BudgetClass = "economy"
	if got := Candidates(in).GetPreferences(); !slices.Equal(got[2:], []string{"cost", "latency:standard"}) {
		t.Fatalf("economy preferences %v", got)
	}
	c := set.GetCandidates()[0]
	if c.GetEstimatedCostNanos() != 120_000 || c.GetContextWindow() != 1000 || c.GetLatencyClass() != standard || !slices.Equal(c.GetCapabilities(), []eventsv1.Capability{tools}) {
		t.Fatalf("candidate %v", c)
	}
}

// rankRegistry has models that differ in one ranking input at a time.
func rankRegistry() *eventsv1.Registry {
	present := eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT
	model := func(id, provider string, lat eventsv1.LatencyClass, in int64) *eventsv1.Model {
		return &eventsv1.Model{Id: id, ProviderId: provider, Capabilities: []eventsv1.Capability{tools}, LatencyClass: lat, Prices: priced(in, 0)}
	}
	return &eventsv1.Registry{
		Providers: []*eventsv1.Provider{{Id: "p1", CredentialStatus: present}, {Id: "p2", CredentialStatus: present}},
		Models: []*eventsv1.Model{
			model("fast-cheap", "p1", fast, 1_000_000),
			model("fast-dear", "p2", fast, 9_000_000),
			model("std-cheapest", "p2", standard, 500_000),
			model("slow-free", "p1", slow, 0),
			model("unknown-latency", "p1", eventsv1.LatencyClass_LATENCY_CLASS_UNSPECIFIED, 0),
			model("fast-cheap-b", "p1", fast, 1_000_000),
		},
	}
}

func TestRanking(t *testing.T) {
	for _, c := range []struct {
		name       string
		target     eventsv1.LatencyClass
		budget     string
		reqModel   string
		reqProv    string
		wantOrder  []string
		wantReason string
	}{
		{name: "latency distance first, then cost, then id", target: fast,
			wantOrder: []string{"fast-cheap", "fast-cheap-b", "fast-dear", "std-cheapest", "slow-free", "unknown-latency"}},
		{name: "a standard target ranks both neighbours at distance one", target: standard,
			wantOrder: []string{"std-cheapest", "slow-free", "fast-cheap", "fast-cheap-b", "fast-dear", "unknown-latency"}},
		{name: "economy ranks cost before latency", target: fast, budget: "economy",
			wantOrder: []string{"slow-free", "unknown-latency", "std-cheapest", "fast-cheap", "fast-cheap-b", "fast-dear"}},
		{name: "the requested model comes first", target: fast, reqModel: "slow-free",
			wantOrder: []string{"slow-free", "fast-cheap", "fast-cheap-b", "fast-dear", "std-cheapest", "unknown-latency"}},
		{name: "then the requested provider's models", target: fast, reqModel: "unknown-latency", reqProv: "p2",
			wantOrder: []string{"unknown-latency", "fast-dear", "std-cheapest", "fast-cheap", "fast-cheap-b", "slow-free"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := RouteInput{Registry: rankRegistry(), Profile: &eventsv1.TaskProfile{LatencyTarget: c.target, BudgetClass: c.budget},
				RequestedModel: c.reqModel, RequestedProvider: c.reqProv, EstInput: 1_000_000}
			var got []string
			for _, cand := range Candidates(in).GetCandidates() {
				got = append(got, cand.GetModelId())
			}
			if !slices.Equal(got, c.wantOrder) {
				t.Fatalf("order %v, want %v", got, c.wantOrder)
			}
		})
	}
}

func TestDecideModes(t *testing.T) {
	snapFor := func(id string) *eventsv1.LimitStateSnapshot {
		return &eventsv1.LimitStateSnapshot{Limits: []*eventsv1.LimitState{{Kind: "rate_limit", LimitId: "rl-" + id, Remaining: 5}}}
	}
	for _, c := range []struct {
		name         string
		registry     func() *eventsv1.Registry
		in           func(in *RouteInput)
		mode         eventsv1.RoutingMode
		source       string
		selected     string
		count        int32
		reason       string
		gap          []eventsv1.Capability
		override     bool
		notPossible  bool
		namesEveryID bool
	}{
		{name: "auto: best of several", registry: rankRegistry, in: func(in *RouteInput) {},
			mode: eventsv1.RoutingMode_ROUTING_MODE_AUTO, source: "profile", selected: "fast-cheap", count: 6, reason: "best of 6 candidates by latency:fast, cost"},
		{name: "requested and available", registry: rankRegistry, in: func(in *RouteInput) { in.RequestedModel = "fast-dear" },
			mode: eventsv1.RoutingMode_ROUTING_MODE_REQUESTED, source: "request", selected: "fast-dear", count: 6, reason: `the requested model "fast-dear" is available`},
		{name: "requested but lacking a capability: auto, with the gap", registry: rankRegistry, in: func(in *RouteInput) {
			in.RequestedModel = "fast-dear"
			in.Profile.RequiredCapabilities = []eventsv1.Capability{tools}
			in.Registry.Models[1].Capabilities = nil
		}, mode: eventsv1.RoutingMode_ROUTING_MODE_AUTO, source: "profile", selected: "fast-cheap", count: 5,
			reason: `the requested model "fast-dear" is not a candidate`, gap: []eventsv1.Capability{tools}},
		{name: "requested but unknown: auto", registry: rankRegistry, in: func(in *RouteInput) { in.RequestedModel = "nope" },
			mode: eventsv1.RoutingMode_ROUTING_MODE_AUTO, source: "profile", selected: "fast-cheap", count: 6, reason: `"nope" is not a candidate`},
		{name: "user locked and available", registry: rankRegistry, in: func(in *RouteInput) { in.UserLock, in.RequestedModel = true, "slow-free" },
			mode: eventsv1.RoutingMode_ROUTING_MODE_USER_LOCKED, source: "user_lock", selected: "slow-free", count: 1, reason: `locked the turn to "slow-free"`},
		{name: "single candidate", registry: oneModel, in: func(in *RouteInput) {},
			mode: eventsv1.RoutingMode_ROUTING_MODE_SINGLE_CANDIDATE, source: "registry", selected: "m", count: 1, reason: `"m" is the only candidate (0 excluded)`},
		{name: "single candidate after exclusions", registry: rankRegistry, in: func(in *RouteInput) {
			for _, m := range in.Registry.Models[1:] {
				m.Disabled = true
			}
		}, mode: eventsv1.RoutingMode_ROUTING_MODE_SINGLE_CANDIDATE, source: "registry", selected: "fast-cheap", count: 1, reason: "(5 excluded)"},
		{name: "user locked to a model lacking a capability: the user must lift it", registry: rankRegistry, in: func(in *RouteInput) {
			in.UserLock, in.RequestedModel = true, "slow-free"
			in.Profile.RequiredCapabilities = []eventsv1.Capability{tools, vision}
			in.Registry.Models[3].Capabilities = []eventsv1.Capability{tools}
		}, notPossible: true, reason: "slow-free", gap: []eventsv1.Capability{vision}, override: true, namesEveryID: true},
		{name: "no candidate names every model and why", registry: rankRegistry, in: func(in *RouteInput) {
			in.Profile.RequiredCapabilities = []eventsv1.Capability{reasoning}
		}, notPossible: true, reason: "capability_gap: lacks reasoning", namesEveryID: true},
		{name: "empty registry", registry: func() *eventsv1.Registry { return &eventsv1.Registry{} }, in: func(in *RouteInput) {},
			notPossible: true, reason: "no candidate: the model registry is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := RouteInput{Registry: c.registry(), Profile: &eventsv1.TaskProfile{Kind: "chat", LatencyTarget: fast}, EstInput: 1000,
				Limits: map[string]*eventsv1.LimitStateSnapshot{}, Budgets: []*eventsv1.BudgetState{{BudgetId: "b", LimitNanos: 1 << 40}}}
			c.in(&in)
			for _, m := range in.Registry.GetModels() {
				in.Limits[m.GetId()] = snapFor(m.GetId())
			}
			set := Candidates(in)
			out := Decide(in, set)
			if (out.Decision == nil) == (out.NotPossible == nil) {
				t.Fatalf("want exactly one outcome, got %v", out)
			}
			if c.notPossible {
				np := out.NotPossible
				if np.GetStage() != StageDecide || !strings.Contains(np.GetReason(), c.reason) || !slices.Equal(np.GetCapabilityGap(), c.gap) ||
					np.GetRequiresUserOverride() != c.override || len(np.GetExcluded()) != len(in.Registry.GetModels()) || len(np.GetBudgets()) != 1 {
					t.Fatalf("not possible %v", np)
				}
				if c.namesEveryID {
					for _, m := range in.Registry.GetModels() {
						if !strings.Contains(np.GetReason(), m.GetProviderId()+"/"+m.GetId()+" (") {
							t.Fatalf("reason %q does not name %s", np.GetReason(), m.GetId())
						}
					}
					// Limits of every checked model, each limit once.
					if n := len(np.GetLimitStateSnapshot().GetLimits()); n != len(in.Registry.GetModels()) {
						t.Fatalf("merged limits %d, want %d", n, len(in.Registry.GetModels()))
					}
				}
				return
			}
			d := out.Decision
			if d.GetRoutingMode() != c.mode || d.GetDecisionSource() != c.source || d.GetSelectedModelId() != c.selected || d.GetCandidateCount() != c.count ||
				!strings.Contains(d.GetDecisionReason(), c.reason) || !slices.Equal(d.GetCapabilityGap(), c.gap) || d.GetRequiresUserOverride() {
				t.Fatalf("decision %v", d)
			}
			sel := FindModel(in.Registry, c.selected)
			if d.GetSelectedProviderId() != sel.GetProviderId() || d.GetLimitStateSnapshot() != in.Limits[c.selected] ||
				d.GetEstimatedCostNanos() != EstimatedCost(in, sel) || d.GetTaskKind() != "chat" || len(d.GetBudgets()) != 1 ||
				!slices.Equal(d.GetSelectedCapabilities(), sel.GetCapabilities()) || d.GetRequestedModelId() != in.RequestedModel {
				t.Fatalf("decision facts %v", d)
			}
		})
	}
}

func TestMergedLimitsKeepEachLimitOnceAndUnknown(t *testing.T) {
	shared := &eventsv1.LimitState{Kind: "quota", LimitId: "daily", Dimension: DimTokens}
	in := RouteInput{Limits: map[string]*eventsv1.LimitStateSnapshot{
		"b": {Limits: []*eventsv1.LimitState{shared, {Kind: "rate_limit", LimitId: "rb", Dimension: DimRequests}}, Unknown: true},
		"a": {Limits: []*eventsv1.LimitState{shared, {Kind: "rate_limit", LimitId: "ra", Dimension: DimRequests}}},
	}}
	got := mergedLimits(in)
	var ids []string
	for _, l := range got.GetLimits() {
		ids = append(ids, l.GetLimitId())
	}
	if !slices.Equal(ids, []string{"daily", "ra", "rb"}) || !got.GetUnknown() {
		t.Fatalf("merged %v", got)
	}
}

func TestFallbackChainFollowsThePolicy(t *testing.T) {
	for _, c := range []struct {
		policy eventsv1.FallbackPolicy
		want   []string
	}{
		{eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE, []string{"p1/fast-cheap-b", "p2/fast-dear", "p2/std-cheapest", "p1/slow-free", "p1/unknown-latency"}},
		{eventsv1.FallbackPolicy_FALLBACK_POLICY_UNSPECIFIED, []string{"p1/fast-cheap-b", "p2/fast-dear", "p2/std-cheapest", "p1/slow-free", "p1/unknown-latency"}},
		{eventsv1.FallbackPolicy_FALLBACK_POLICY_SAME_PROVIDER, []string{"p1/fast-cheap-b", "p1/slow-free", "p1/unknown-latency"}},
		{eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE, nil},
	} {
		in := RouteInput{Registry: rankRegistry(), Profile: &eventsv1.TaskProfile{LatencyTarget: fast, FallbackPolicy: c.policy}}
		d := Decide(in, Candidates(in)).Decision
		if d.GetSelectedModelId() != "fast-cheap" || !slices.Equal(d.GetFallbackChain(), c.want) {
			t.Errorf("%v: selected %s, chain %v; want %v", c.policy, d.GetSelectedModelId(), d.GetFallbackChain(), c.want)
		}
	}
}

func TestFallbackWalksTheChain(t *testing.T) {
	prev := &eventsv1.RoutingDecision{SelectedProviderId: "p1", SelectedModelId: "fast-cheap", RequestedModelId: "fast-cheap", RequestedProviderId: "p1",
		FallbackChain: []string{"p1/fast-cheap-b", "p2/fast-dear", "p2/std-cheapest"}}
	timeout := eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT
	for _, c := range []struct {
		name     string
		policy   eventsv1.FallbackPolicy
		failed   []string // excluded from the new set
		selected string
		rest     []string
		reason   string // not possible
	}{
		{name: "next in the chain", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE, failed: []string{"fast-cheap"},
			selected: "fast-cheap-b", rest: []string{"p2/fast-dear", "p2/std-cheapest"}},
		{name: "skips models that are no longer candidates", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE,
			failed: []string{"fast-cheap", "fast-cheap-b"}, selected: "fast-dear", rest: []string{"p2/std-cheapest"}},
		{name: "the rest keeps only candidates", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE,
			failed: []string{"fast-cheap", "fast-dear"}, selected: "fast-cheap-b", rest: []string{"p2/std-cheapest"}},
		{name: "a candidate outside the chain is not taken", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE,
			failed: []string{"fast-cheap", "fast-cheap-b", "fast-dear", "std-cheapest"}, reason: "no model of its fallback chain"},
		{name: "policy none", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE, failed: []string{"fast-cheap"},
			reason: `"fast-cheap" failed and the fallback policy is none`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := RouteInput{Registry: rankRegistry(), Profile: &eventsv1.TaskProfile{Kind: "coding", LatencyTarget: fast, FallbackPolicy: c.policy},
				Failed: c.failed, Limits: map[string]*eventsv1.LimitStateSnapshot{"fast-cheap-b": {Unknown: true}}}
			out := Fallback(in, prev, "fast-cheap", timeout, Candidates(in))
			if c.reason != "" {
				np := out.NotPossible
				if out.Decision != nil || np.GetStage() != StageFallback || !strings.Contains(np.GetReason(), c.reason) ||
					np.GetFailureCategory() != timeout || np.GetRequestedModelId() != "fast-cheap" || len(np.GetExcluded()) != len(c.failed) {
					t.Fatalf("want not possible (%s), got %v", c.reason, out)
				}
				return
			}
			d := out.Decision
			if out.NotPossible != nil || d.GetRoutingMode() != eventsv1.RoutingMode_ROUTING_MODE_FALLBACK || d.GetDecisionSource() != "fallback_chain" ||
				d.GetSelectedModelId() != c.selected || !slices.Equal(d.GetFallbackChain(), c.rest) || !strings.Contains(d.GetDecisionReason(), "(timeout)") ||
				d.GetRequestedModelId() != "fast-cheap" || d.GetRequestedProviderId() != "p1" || d.GetCandidateCount() != int32(6-len(c.failed)) ||
				d.GetTaskKind() != "coding" || d.GetLimitStateSnapshot() != in.Limits[c.selected] {
				t.Fatalf("fallback %v, want %s then %v", d, c.selected, c.rest)
			}
		})
	}
}
