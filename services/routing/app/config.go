package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// configFile is the YAML shape of the registry config (see
// deploy/config/models.example.yaml). Prices and money are in USD for
// people; the registry keeps integer nano-USD.
type configFile struct {
	Providers []struct {
		ID               string   `yaml:"id"`
		DisplayName      string   `yaml:"display_name"`
		CredentialStatus string   `yaml:"credential_status"`
		Regions          []string `yaml:"regions"`
		Kind             string   `yaml:"kind"`
		BaseURL          string   `yaml:"base_url"`
		APIKeyEnv        string   `yaml:"api_key_env"`
	} `yaml:"providers"`
	Models []struct {
		ID              string   `yaml:"id"`
		Provider        string   `yaml:"provider"`
		Capabilities    []string `yaml:"capabilities"`
		ContextWindow   int64    `yaml:"context_window"`
		MaxOutputTokens int64    `yaml:"max_output_tokens"`
		PricesUSD       struct {
			Input       *float64 `yaml:"input"`
			Output      *float64 `yaml:"output"`
			CachedInput *float64 `yaml:"cached_input"`
			Reasoning   *float64 `yaml:"reasoning"`
		} `yaml:"prices_usd_per_million"`
		Latency  string `yaml:"latency"`
		Region   string `yaml:"region"`
		Disabled bool   `yaml:"disabled"`
	} `yaml:"models"`
	RateLimits []struct {
		ID                string `yaml:"id"`
		Provider          string `yaml:"provider"`
		Model             string `yaml:"model"`
		RequestsPerMinute int64  `yaml:"requests_per_minute"`
		TokensPerMinute   int64  `yaml:"tokens_per_minute"`
	} `yaml:"rate_limits"`
	Quotas []struct {
		ID            string    `yaml:"id"`
		TokensPerDay  int64     `yaml:"tokens_per_day"`
		CostUSDPerDay float64   `yaml:"cost_usd_per_day"`
		LowThresholds []float64 `yaml:"low_thresholds"`
	} `yaml:"quotas"`
	Budgets []struct {
		ID       string  `yaml:"id"`
		Scope    string  `yaml:"scope"`
		Target   string  `yaml:"target"`
		LimitUSD float64 `yaml:"limit_usd"`
	} `yaml:"budgets"`
}

// LoadConfig reads a registry config file: strict (an unknown key is an
// error, so a typo is not silently ignored) and validated with the rules
// every RPC change obeys. The registry carries the file's digest.
func LoadConfig(path string) (*eventsv1.Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models config: %w", err)
	}
	reg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("models config %s: %w", path, err)
	}
	return reg, nil
}

// ParseConfig decodes and validates a registry config.
func ParseConfig(data []byte) (*eventsv1.Registry, error) {
	var f configFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && err.Error() != "EOF" {
		return nil, err
	}
	reg := &eventsv1.Registry{}
	for _, p := range f.Providers {
		cs, ok := eventsv1.CredentialStatus_value["CREDENTIAL_STATUS_"+strings.ToUpper(p.CredentialStatus)]
		if !ok || cs == 0 {
			return nil, fmt.Errorf("provider %q: credential_status %q is not present, missing or invalid", p.ID, p.CredentialStatus)
		}
		reg.Providers = append(reg.Providers, &eventsv1.Provider{Id: p.ID, DisplayName: p.DisplayName, CredentialStatus: eventsv1.CredentialStatus(cs), Regions: p.Regions,
			Kind: p.Kind, BaseUrl: p.BaseURL, ApiKeyEnv: p.APIKeyEnv})
	}
	for _, m := range f.Models {
		model := &eventsv1.Model{Id: m.ID, ProviderId: m.Provider, ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens,
			Region: m.Region, Disabled: m.Disabled, Prices: &eventsv1.ModelPrices{
				InputNanosPerMillion: usdNanos(m.PricesUSD.Input), OutputNanosPerMillion: usdNanos(m.PricesUSD.Output),
				CachedInputNanosPerMillion: usdNanos(m.PricesUSD.CachedInput), ReasoningNanosPerMillion: usdNanos(m.PricesUSD.Reasoning)}}
		for _, c := range m.Capabilities {
			v, ok := eventsv1.Capability_value["CAPABILITY_"+strings.ToUpper(c)]
			if !ok || v == 0 {
				return nil, fmt.Errorf("model %q: unknown capability %q (tools, vision, reasoning, structured_output)", m.ID, c)
			}
			model.Capabilities = append(model.Capabilities, eventsv1.Capability(v))
		}
		if m.Latency != "" {
			v, ok := eventsv1.LatencyClass_value["LATENCY_CLASS_"+strings.ToUpper(m.Latency)]
			if !ok || v == 0 {
				return nil, fmt.Errorf("model %q: latency %q is not fast, standard or slow", m.ID, m.Latency)
			}
			model.LatencyClass = eventsv1.LatencyClass(v)
		}
		reg.Models = append(reg.Models, model)
	}
	for _, l := range f.RateLimits {
		reg.RateLimits = append(reg.RateLimits, &eventsv1.RateLimit{Id: l.ID, ProviderId: l.Provider, ModelId: l.Model, RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute})
	}
	for _, q := range f.Quotas {
		reg.Quotas = append(reg.Quotas, &eventsv1.Quota{Id: q.ID, TokensPerDay: q.TokensPerDay, CostNanosPerDay: *usdNanos(&q.CostUSDPerDay), LowThresholds: q.LowThresholds})
	}
	for _, b := range f.Budgets {
		scope, ok := eventsv1.BudgetScope_value["BUDGET_SCOPE_"+strings.ToUpper(b.Scope)]
		if !ok || scope == 0 {
			return nil, fmt.Errorf("budget %q: scope %q is not tenant, session or task", b.ID, b.Scope)
		}
		reg.Budgets = append(reg.Budgets, &eventsv1.Budget{Id: b.ID, Scope: eventsv1.BudgetScope(scope), TargetId: b.Target, LimitNanos: *usdNanos(&b.LimitUSD)})
	}
	if err := domain.ValidateRegistry(reg); err != nil {
		return nil, err
	}
	// Apply sorts every list; the digest is of that canonical form.
	canonical := &eventsv1.Registry{}
	for _, c := range registryChanges(reg) {
		canonical, _ = domain.Apply(canonical, c)
	}
	data, _ = proto.MarshalOptions{Deterministic: true}.Marshal(canonical)
	sum := sha256.Sum256(data)
	canonical.ConfigDigest = hex.EncodeToString(sum[:])
	return canonical, nil
}

func registryChanges(r *eventsv1.Registry) []*eventsv1.LimitChanged {
	var out []*eventsv1.LimitChanged
	for _, p := range r.GetProviders() {
		out = append(out, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_ProviderUpserted{ProviderUpserted: p}})
	}
	for _, m := range r.GetModels() {
		out = append(out, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_ModelUpserted{ModelUpserted: m}})
	}
	for _, l := range r.GetRateLimits() {
		out = append(out, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_RateLimitSet{RateLimitSet: l}})
	}
	for _, q := range r.GetQuotas() {
		out = append(out, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_QuotaSet{QuotaSet: q}})
	}
	for _, b := range r.GetBudgets() {
		out = append(out, &eventsv1.LimitChanged{Change: &eventsv1.LimitChanged_BudgetSet{BudgetSet: b}})
	}
	return out
}

func usdNanos(usd *float64) *int64 {
	if usd == nil {
		return nil
	}
	n := int64(math.Round(*usd * 1e9))
	return &n
}
