package domain

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

// FindModel returns the registry's model with id, or nil.
func FindModel(r *eventsv1.Registry, id string) *eventsv1.Model {
	for _, m := range r.GetModels() {
		if m.GetId() == id {
			return m
		}
	}
	return nil
}

// FindProvider returns the registry's provider with id, or nil.
func FindProvider(r *eventsv1.Registry, id string) *eventsv1.Provider {
	for _, p := range r.GetProviders() {
		if p.GetId() == id {
			return p
		}
	}
	return nil
}

// ModelForRequest is the model a request names: NotFound (naming field)
// when the registry has no such model.
func ModelForRequest(r *eventsv1.Registry, id string) (*eventsv1.Model, error) {
	if m := FindModel(r, id); m != nil {
		return m, nil
	}
	return nil, notFound("model", id)
}

// ValidateRegistry checks a whole registry (a configuration file) with the
// rules every RPC change obeys, applying its entries one by one.
func ValidateRegistry(r *eventsv1.Registry) error {
	acc := &eventsv1.Registry{}
	var err error
	for i, p := range r.GetProviders() {
		if acc, err = Apply(acc, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: p}}); err != nil {
			return prefixField(err, fmt.Sprintf("providers[%d]", i))
		}
	}
	for i, m := range r.GetModels() {
		if acc, err = Apply(acc, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: m}}); err != nil {
			return prefixField(err, fmt.Sprintf("models[%d]", i))
		}
	}
	for i, l := range r.GetRateLimits() {
		if acc, err = Apply(acc, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: l}}); err != nil {
			return prefixField(err, fmt.Sprintf("rate_limits[%d]", i))
		}
	}
	for i, q := range r.GetQuotas() {
		if acc, err = Apply(acc, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: q}}); err != nil {
			return prefixField(err, fmt.Sprintf("quotas[%d]", i))
		}
	}
	for i, b := range r.GetBudgets() {
		if acc, err = Apply(acc, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: b}}); err != nil {
			return prefixField(err, fmt.Sprintf("budgets[%d]", i))
		}
	}
	return nil
}

func prefixField(err error, prefix string) error {
	if e, ok := err.(*fault.Error); ok {
		return e.Under(prefix)
	}
	return err
}

// Apply returns the registry after one change, or why the change is refused.
// The input is not modified. Every entry is kept sorted by id so that equal
// registries are equal messages.
func Apply(r *eventsv1.Registry, c *eventsv1.LimitChanged) (*eventsv1.Registry, error) {
	out := proto.CloneOf(r)
	if out == nil {
		out = &eventsv1.Registry{}
	}
	switch ch := c.GetChange().(type) {
	case *eventsv1.LimitChanged_ConfigImported:
		next := proto.CloneOf(ch.ConfigImported)
		if err := ValidateRegistry(next); err != nil {
			return nil, err
		}
		return next, nil
	case *eventsv1.LimitChanged_ProviderUpserted:
		p := ch.ProviderUpserted
		if err := validID("provider.id", p.GetId()); err != nil {
			return nil, err
		}
		if p.GetCredentialStatus() == eventsv1.CredentialStatus_CREDENTIAL_STATUS_UNSPECIFIED {
			return nil, invalid("provider.credential_status", "must be present, missing or invalid")
		}
		if err := validProviderAPI(p); err != nil {
			return nil, err
		}
		out.Providers = upsert(out.Providers, p, (*eventsv1.Provider).GetId)
	case *eventsv1.LimitChanged_ProviderRemoved:
		if FindProvider(out, ch.ProviderRemoved) == nil {
			return nil, notFound("provider", ch.ProviderRemoved)
		}
		for _, m := range out.Models {
			if m.GetProviderId() == ch.ProviderRemoved {
				return nil, precondition(ReasonProviderHasModels, "provider/"+ch.ProviderRemoved,
					"provider %q still has model %q; remove its models first", ch.ProviderRemoved, m.GetId())
			}
		}
		out.Providers = remove(out.Providers, ch.ProviderRemoved, (*eventsv1.Provider).GetId)
	case *eventsv1.LimitChanged_ModelUpserted:
		m := ch.ModelUpserted
		if err := validateModel(out, m); err != nil {
			return nil, err
		}
		out.Models = upsert(out.Models, m, (*eventsv1.Model).GetId)
	case *eventsv1.LimitChanged_ModelRemoved:
		if FindModel(out, ch.ModelRemoved) == nil {
			return nil, notFound("model", ch.ModelRemoved)
		}
		out.Models = remove(out.Models, ch.ModelRemoved, (*eventsv1.Model).GetId)
	case *eventsv1.LimitChanged_RateLimitSet:
		l := ch.RateLimitSet
		if err := validID("rate_limit.id", l.GetId()); err != nil {
			return nil, err
		}
		if l.GetRequestsPerMinute() < 0 || l.GetTokensPerMinute() < 0 || l.GetRequestsPerMinute()+l.GetTokensPerMinute() == 0 {
			return nil, invalid("rate_limit.requests_per_minute", "requests_per_minute and tokens_per_minute must not be negative, and one must be set")
		}
		if l.GetProviderId() != "" && FindProvider(out, l.GetProviderId()) == nil {
			return nil, invalid("rate_limit.provider_id", "no provider %q in the registry", l.GetProviderId())
		}
		if l.GetModelId() != "" && FindModel(out, l.GetModelId()) == nil {
			return nil, invalid("rate_limit.model_id", "no model %q in the registry", l.GetModelId())
		}
		out.RateLimits = upsert(out.RateLimits, l, (*eventsv1.RateLimit).GetId)
	case *eventsv1.LimitChanged_RateLimitRemoved:
		if !slices.ContainsFunc(out.RateLimits, func(l *eventsv1.RateLimit) bool { return l.GetId() == ch.RateLimitRemoved }) {
			return nil, notFound("rate_limit", ch.RateLimitRemoved)
		}
		out.RateLimits = remove(out.RateLimits, ch.RateLimitRemoved, (*eventsv1.RateLimit).GetId)
	case *eventsv1.LimitChanged_QuotaSet:
		q := ch.QuotaSet
		if err := validID("quota.id", q.GetId()); err != nil {
			return nil, err
		}
		if q.GetTokensPerDay() < 0 || q.GetCostNanosPerDay() < 0 || q.GetTokensPerDay()+q.GetCostNanosPerDay() == 0 {
			return nil, invalid("quota.tokens_per_day", "tokens_per_day and cost_nanos_per_day must not be negative, and one must be set")
		}
		for i, f := range q.GetLowThresholds() {
			if !(f > 0 && f < 1) {
				return nil, invalid(fmt.Sprintf("quota.low_thresholds[%d]", i), "%v is not a fraction strictly between 0 and 1", f)
			}
		}
		out.Quotas = upsert(out.Quotas, q, (*eventsv1.Quota).GetId)
	case *eventsv1.LimitChanged_QuotaRemoved:
		if !slices.ContainsFunc(out.Quotas, func(q *eventsv1.Quota) bool { return q.GetId() == ch.QuotaRemoved }) {
			return nil, notFound("quota", ch.QuotaRemoved)
		}
		out.Quotas = remove(out.Quotas, ch.QuotaRemoved, (*eventsv1.Quota).GetId)
	case *eventsv1.LimitChanged_BudgetSet:
		b := ch.BudgetSet
		if err := validID("budget.id", b.GetId()); err != nil {
			return nil, err
		}
		if b.GetScope() == eventsv1.BudgetScope_BUDGET_SCOPE_UNSPECIFIED {
			return nil, invalid("budget.scope", "must be tenant, session or task")
		}
		if b.GetScope() == eventsv1.BudgetScope_BUDGET_SCOPE_TENANT && b.GetTargetId() != "" {
			return nil, invalid("budget.target_id", "a tenant budget names no target")
		}
		if b.GetTargetId() != "" {
			if err := validID("budget.target_id", b.GetTargetId()); err != nil {
				return nil, err
			}
		}
		if b.GetLimitNanos() <= 0 {
			return nil, invalid("budget.limit_nanos", "must be positive")
		}
		out.Budgets = upsert(out.Budgets, b, (*eventsv1.Budget).GetId)
	case *eventsv1.LimitChanged_BudgetRemoved:
		if !slices.ContainsFunc(out.Budgets, func(b *eventsv1.Budget) bool { return b.GetId() == ch.BudgetRemoved }) {
			return nil, notFound("budget", ch.BudgetRemoved)
		}
		out.Budgets = remove(out.Budgets, ch.BudgetRemoved, (*eventsv1.Budget).GetId)
	default:
		return nil, invalid("change", "no change given")
	}
	return out, nil
}

func validateModel(r *eventsv1.Registry, m *eventsv1.Model) error {
	if err := validID("model.id", m.GetId()); err != nil {
		return err
	}
	if FindProvider(r, m.GetProviderId()) == nil {
		return invalid("model.provider_id", "no provider %q in the registry", m.GetProviderId())
	}
	for i, c := range m.GetCapabilities() {
		if c == eventsv1.Capability_CAPABILITY_UNSPECIFIED || eventsv1.Capability_name[int32(c)] == "" {
			return invalid(fmt.Sprintf("model.capabilities[%d]", i), "unknown capability %d", c)
		}
	}
	if m.GetContextWindow() < 0 {
		return invalid("model.context_window", "must not be negative")
	}
	if m.GetMaxOutputTokens() < 0 {
		return invalid("model.max_output_tokens", "must not be negative")
	}
	p := m.GetPrices()
	for name, v := range map[string]int64{
		"input_nanos_per_million": p.GetInputNanosPerMillion(), "output_nanos_per_million": p.GetOutputNanosPerMillion(),
		"cached_input_nanos_per_million": p.GetCachedInputNanosPerMillion(), "reasoning_nanos_per_million": p.GetReasoningNanosPerMillion(),
	} {
		if v < 0 {
			return invalid("model.prices."+name, "must not be negative")
		}
	}
	return nil
}

func validID(field, id string) error {
	if err := ids.Validate(id); err != nil {
		return invalid(field, "%v", err)
	}
	return nil
}

func upsert[T any](list []T, item T, id func(T) string) []T {
	key := id(item)
	out := slices.DeleteFunc(slices.Clone(list), func(x T) bool { return id(x) == key })
	out = append(out, item)
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	return out
}

func remove[T any](list []T, key string, id func(T) string) []T {
	return slices.DeleteFunc(slices.Clone(list), func(x T) bool { return id(x) == key })
}

// ProviderKinds are the APIs a provider's kind may name (Provider.kind).
var ProviderKinds = []string{"openai_chat", "anthropic", "openai_responses", "scripted"}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// validProviderAPI checks how a worker reaches a provider: a known kind,
// an http(s) base URL without credentials in it, a variable's name (never
// a key) for the key.
func validProviderAPI(p *eventsv1.Provider) error {
	if k := p.GetKind(); k != "" && !slices.Contains(ProviderKinds, k) {
		return invalid("provider.kind", "%q is not a provider kind (%s)", k, strings.Join(ProviderKinds, ", "))
	}
	if b := p.GetBaseUrl(); b != "" {
		u, err := url.Parse(b)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(b) > 2048 {
			return invalid("provider.base_url", "%q is not an http(s) URL", b)
		}
		if u.User != nil {
			return invalid("provider.base_url", "a base URL carries no credentials (the key is read from the worker's environment: api_key_env)")
		}
	}
	if e := p.GetApiKeyEnv(); e != "" && !envName.MatchString(e) {
		return invalid("provider.api_key_env", "%q is not an environment variable's name", e)
	}
	return nil
}
