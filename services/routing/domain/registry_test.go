package domain

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// startRegistry has one of everything, so every removal and every
// reference has something to find.
func startRegistry() *eventsv1.Registry {
	return &eventsv1.Registry{
		Providers:  []*eventsv1.Provider{{Id: "p", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT}, {Id: "empty", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_MISSING}},
		Models:     []*eventsv1.Model{{Id: "m", ProviderId: "p"}},
		RateLimits: []*eventsv1.RateLimit{{Id: "rl", RequestsPerMinute: 1}},
		Quotas:     []*eventsv1.Quota{{Id: "q", TokensPerDay: 1}},
		Budgets:    []*eventsv1.Budget{{Id: "b", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TENANT, LimitNanos: 1}},
	}
}

func TestApplyEveryChange(t *testing.T) {
	present := eventsv1.CredentialStatus_CREDENTIAL_STATUS_PRESENT
	type lc = eventsv1.LimitChanged
	for _, c := range []struct {
		name   string
		change *lc
		code   fault.Kind // 0: applies
		field  string     // fault.KindInvalid
		reason string     // fault.KindPrecondition
		check  func(t *testing.T, r *eventsv1.Registry)
	}{
		// Providers.
		{name: "add a provider", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetProviders(), (*eventsv1.Provider).GetId, "a", "empty", "p")
			}},
		{name: "replace a provider", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "p", CredentialStatus: eventsv1.CredentialStatus_CREDENTIAL_STATUS_INVALID}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetProviders(), (*eventsv1.Provider).GetId, "empty", "p")
				if FindProvider(r, "p").GetCredentialStatus() != eventsv1.CredentialStatus_CREDENTIAL_STATUS_INVALID {
					t.Fatal("not replaced")
				}
			}},
		{name: "provider with a bad id", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a b", CredentialStatus: present}}},
			code: fault.KindInvalid, field: "provider.id"},
		{name: "provider without credential status", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a"}}},
			code: fault.KindInvalid, field: "provider.credential_status"},
		{name: "a provider naming its API", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present,
			Kind: "anthropic", BaseUrl: "https://api.anthropic.com", ApiKeyEnv: "ANTHROPIC_API_KEY"}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				if p := FindProvider(r, "a"); p.GetKind() != "anthropic" || p.GetBaseUrl() != "https://api.anthropic.com" || p.GetApiKeyEnv() != "ANTHROPIC_API_KEY" {
					t.Fatalf("provider %v", p)
				}
			}},
		{name: "provider of an unknown kind", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present, Kind: "gemini"}}},
			code: fault.KindInvalid, field: "provider.kind"},
		{name: "provider whose base URL carries a key", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present, BaseUrl: "https://user:sk-secret@api.example.com"}}},
			code: fault.KindInvalid, field: "provider.base_url"},
		{name: "provider whose base URL is not http", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present, BaseUrl: "file:///etc/passwd"}}},
			code: fault.KindInvalid, field: "provider.base_url"},
		{name: "provider whose key variable is a key", change: &lc{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: &eventsv1.Provider{Id: "a", CredentialStatus: present, ApiKeyEnv: "sk-ant-api03-xyz"}}},
			code: fault.KindInvalid, field: "provider.api_key_env"},
		{name: "remove a provider", change: &lc{Change: &eventsv1.LimitChanged_ProviderRemoved{ProviderRemoved: "empty"}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetProviders(), (*eventsv1.Provider).GetId, "p")
			}},
		{name: "remove a provider that has models", change: &lc{Change: &eventsv1.LimitChanged_ProviderRemoved{ProviderRemoved: "p"}},
			code: fault.KindPrecondition, reason: ReasonProviderHasModels},
		{name: "remove an unknown provider", change: &lc{Change: &eventsv1.LimitChanged_ProviderRemoved{ProviderRemoved: "x"}}, code: fault.KindNotFound},
		// Models.
		{name: "add a model", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p",
			Capabilities: []eventsv1.Capability{tools}, ContextWindow: 10, MaxOutputTokens: 5, Prices: priced(0, 1)}}},
			check: func(t *testing.T, r *eventsv1.Registry) { wantIDs(t, r.GetModels(), (*eventsv1.Model).GetId, "a", "m") }},
		{name: "model with a bad id", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "", ProviderId: "p"}}},
			code: fault.KindInvalid, field: "model.id"},
		{name: "model of an unknown provider", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "x"}}},
			code: fault.KindInvalid, field: "model.provider_id"},
		{name: "model with an unspecified capability", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p",
			Capabilities: []eventsv1.Capability{tools, eventsv1.Capability_CAPABILITY_UNSPECIFIED}}}}, code: fault.KindInvalid, field: "model.capabilities[1]"},
		{name: "model with an unknown capability", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p",
			Capabilities: []eventsv1.Capability{99}}}}, code: fault.KindInvalid, field: "model.capabilities[0]"},
		{name: "model with a negative context window", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p", ContextWindow: -1}}},
			code: fault.KindInvalid, field: "model.context_window"},
		{name: "model with a negative max output", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p", MaxOutputTokens: -1}}},
			code: fault.KindInvalid, field: "model.max_output_tokens"},
		{name: "model with a negative price", change: &lc{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: &eventsv1.Model{Id: "a", ProviderId: "p",
			Prices: &eventsv1.ModelPrices{ReasoningNanosPerMillion: i64(-1)}}}}, code: fault.KindInvalid, field: "model.prices.reasoning_nanos_per_million"},
		{name: "remove a model", change: &lc{Change: &eventsv1.LimitChanged_ModelRemoved{ModelRemoved: "m"}},
			check: func(t *testing.T, r *eventsv1.Registry) { wantIDs(t, r.GetModels(), (*eventsv1.Model).GetId) }},
		{name: "remove an unknown model", change: &lc{Change: &eventsv1.LimitChanged_ModelRemoved{ModelRemoved: "x"}}, code: fault.KindNotFound},
		// Rate limits.
		{name: "set a model's rate limit", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "a", ProviderId: "p", ModelId: "m", TokensPerMinute: 5}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetRateLimits(), (*eventsv1.RateLimit).GetId, "a", "rl")
			}},
		{name: "rate limit with a bad id", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "-a", RequestsPerMinute: 1}}},
			code: fault.KindInvalid, field: "rate_limit.id"},
		{name: "rate limit with no rate", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "a"}}},
			code: fault.KindInvalid, field: "rate_limit.requests_per_minute"},
		{name: "rate limit with a negative rate", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "a", RequestsPerMinute: 5, TokensPerMinute: -1}}},
			code: fault.KindInvalid, field: "rate_limit.requests_per_minute"},
		{name: "rate limit of an unknown provider", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "a", ProviderId: "x", RequestsPerMinute: 1}}},
			code: fault.KindInvalid, field: "rate_limit.provider_id"},
		{name: "rate limit of an unknown model", change: &lc{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: &eventsv1.RateLimit{Id: "a", ModelId: "x", RequestsPerMinute: 1}}},
			code: fault.KindInvalid, field: "rate_limit.model_id"},
		{name: "remove a rate limit", change: &lc{Change: &eventsv1.LimitChanged_RateLimitRemoved{RateLimitRemoved: "rl"}},
			check: func(t *testing.T, r *eventsv1.Registry) { wantIDs(t, r.GetRateLimits(), (*eventsv1.RateLimit).GetId) }},
		{name: "remove an unknown rate limit", change: &lc{Change: &eventsv1.LimitChanged_RateLimitRemoved{RateLimitRemoved: "x"}}, code: fault.KindNotFound},
		// Quotas.
		{name: "set a quota", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "q", CostNanosPerDay: 9, LowThresholds: []float64{0.5, 0.99}}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetQuotas(), (*eventsv1.Quota).GetId, "q")
				if r.GetQuotas()[0].GetCostNanosPerDay() != 9 {
					t.Fatal("not replaced")
				}
			}},
		{name: "quota with a bad id", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "a/b", TokensPerDay: 1}}},
			code: fault.KindInvalid, field: "quota.id"},
		{name: "quota with no limit", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "a"}}},
			code: fault.KindInvalid, field: "quota.tokens_per_day"},
		{name: "quota with a negative limit", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "a", TokensPerDay: 1, CostNanosPerDay: -1}}},
			code: fault.KindInvalid, field: "quota.tokens_per_day"},
		{name: "quota threshold of 1", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "a", TokensPerDay: 1, LowThresholds: []float64{0.5, 1}}}},
			code: fault.KindInvalid, field: "quota.low_thresholds[1]"},
		{name: "quota threshold of 0", change: &lc{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: &eventsv1.Quota{Id: "a", TokensPerDay: 1, LowThresholds: []float64{0}}}},
			code: fault.KindInvalid, field: "quota.low_thresholds[0]"},
		{name: "remove a quota", change: &lc{Change: &eventsv1.LimitChanged_QuotaRemoved{QuotaRemoved: "q"}},
			check: func(t *testing.T, r *eventsv1.Registry) { wantIDs(t, r.GetQuotas(), (*eventsv1.Quota).GetId) }},
		{name: "remove an unknown quota", change: &lc{Change: &eventsv1.LimitChanged_QuotaRemoved{QuotaRemoved: "x"}}, code: fault.KindNotFound},
		// Budgets.
		{name: "set a targeted task budget", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "a", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TASK, TargetId: "k1", LimitNanos: 5}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetBudgets(), (*eventsv1.Budget).GetId, "a", "b")
			}},
		{name: "budget with a bad id", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TENANT, LimitNanos: 1}}},
			code: fault.KindInvalid, field: "budget.id"},
		{name: "budget without scope", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "a", LimitNanos: 1}}},
			code: fault.KindInvalid, field: "budget.scope"},
		{name: "tenant budget with a target", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "a", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TENANT, TargetId: "t", LimitNanos: 1}}},
			code: fault.KindInvalid, field: "budget.target_id"},
		{name: "budget with a bad target", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "a", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION, TargetId: "a b", LimitNanos: 1}}},
			code: fault.KindInvalid, field: "budget.target_id"},
		{name: "budget of zero", change: &lc{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: &eventsv1.Budget{Id: "a", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION}}},
			code: fault.KindInvalid, field: "budget.limit_nanos"},
		{name: "remove a budget", change: &lc{Change: &eventsv1.LimitChanged_BudgetRemoved{BudgetRemoved: "b"}},
			check: func(t *testing.T, r *eventsv1.Registry) { wantIDs(t, r.GetBudgets(), (*eventsv1.Budget).GetId) }},
		{name: "remove an unknown budget", change: &lc{Change: &eventsv1.LimitChanged_BudgetRemoved{BudgetRemoved: "x"}}, code: fault.KindNotFound},
		// Whole registries.
		{name: "import a config", change: &lc{Change: &eventsv1.LimitChanged_ConfigImported{ConfigImported: &eventsv1.Registry{ConfigDigest: "d",
			Providers: []*eventsv1.Provider{{Id: "n", CredentialStatus: present}}, Models: []*eventsv1.Model{{Id: "nm", ProviderId: "n"}}}}},
			check: func(t *testing.T, r *eventsv1.Registry) {
				wantIDs(t, r.GetModels(), (*eventsv1.Model).GetId, "nm")
				if r.GetConfigDigest() != "d" || len(r.GetQuotas()) != 0 {
					t.Fatalf("an import replaces the registry: %v", r)
				}
			}},
		{name: "import a bad config", change: &lc{Change: &eventsv1.LimitChanged_ConfigImported{ConfigImported: &eventsv1.Registry{
			Models: []*eventsv1.Model{{Id: "nm", ProviderId: "n"}}}}}, code: fault.KindInvalid, field: "models[0].model.provider_id"},
		{name: "no change", change: &lc{}, code: fault.KindInvalid, field: "change"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := startRegistry()
			got, err := Apply(before, c.change)
			if !proto.Equal(before, startRegistry()) {
				t.Fatal("Apply modified its input")
			}
			if c.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				c.check(t, got)
				// What Apply produces validates as a whole.
				if err := ValidateRegistry(got); err != nil {
					t.Fatalf("result does not validate: %v", err)
				}
				return
			}
			var de *fault.Error
			if got != nil || !errors.As(err, &de) || de.Kind != c.code || de.Field() != c.field || de.Reason != c.reason {
				t.Fatalf("got %v, %+v; want code %d field %q reason %q", got, err, c.code, c.field, c.reason)
			}
		})
	}
}

func wantIDs[T any](t *testing.T, list []T, id func(T) string, want ...string) {
	t.Helper()
	var got []string
	for _, x := range list {
		got = append(got, id(x))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ids %v, want %v (sorted)", got, want)
	}
}

func TestValidateRegistryNamesTheEntry(t *testing.T) {
	ok := startRegistry()
	if err := ValidateRegistry(ok); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change func(r *eventsv1.Registry)
		field  string
	}{
		{"provider", func(r *eventsv1.Registry) { r.Providers[1].CredentialStatus = 0 }, "providers[1].provider.credential_status"},
		{"model", func(r *eventsv1.Registry) { r.Models[0].ContextWindow = -5 }, "models[0].model.context_window"},
		{"rate limit naming a model the file lacks", func(r *eventsv1.Registry) { r.RateLimits[0].ModelId = "x" }, "rate_limits[0].rate_limit.model_id"},
		{"quota", func(r *eventsv1.Registry) { r.Quotas[0].TokensPerDay = 0 }, "quotas[0].quota.tokens_per_day"},
		{"budget", func(r *eventsv1.Registry) { r.Budgets[0].LimitNanos = 0 }, "budgets[0].budget.limit_nanos"},
		// A duplicate id is an upsert of the same entry: the later one wins,
		// so what is checked is the reference it breaks.
		{"provider removed under its model", func(r *eventsv1.Registry) { r.Providers = r.Providers[1:] }, "models[0].model.provider_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startRegistry()
			c.change(r)
			var de *fault.Error
			if err := ValidateRegistry(r); !errors.As(err, &de) || de.Kind != fault.KindInvalid || de.Field() != c.field {
				t.Fatalf("got %v, want invalid %s", err, c.field)
			}
		})
	}
}

func TestModelForRequest(t *testing.T) {
	r := startRegistry()
	if m, err := ModelForRequest(r, "m"); err != nil || m.GetId() != "m" {
		t.Fatalf("%v, %v", m, err)
	}
	var de *fault.Error
	if _, err := ModelForRequest(r, "x"); !errors.As(err, &de) || de.Kind != fault.KindNotFound || de.Resource != "model" || de.ID != "x" {
		t.Fatalf("%v", err)
	}
}
