package domain

import (
	"maps"
	"slices"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestResolveProfile(t *testing.T) {
	structured := eventsv1.Capability_CAPABILITY_STRUCTURED_OUTPUT
	next := eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE
	for _, c := range []struct {
		name     string
		in       ProfileInput
		caps     []eventsv1.Capability
		latency  eventsv1.LatencyClass
		source   string
		budget   string
		policy   eventsv1.FallbackPolicy
		settings map[string]string
	}{
		{name: "a known kind's defaults", in: ProfileInput{Kind: "coding"},
			caps: []eventsv1.Capability{tools}, latency: standard, source: "user", budget: "standard", policy: next,
			settings: map[string]string{"source": "default", "required_capabilities": "kind_default", "latency_target": "kind_default", "budget_class": "default", "fallback_policy": "default"}},
		{name: "reasoning is slow by default", in: ProfileInput{Kind: "reasoning"}, caps: []eventsv1.Capability{reasoning}, latency: slow,
			source: "user", budget: "standard", policy: next},
		{name: "extract needs structured output", in: ProfileInput{Kind: "extract"}, caps: []eventsv1.Capability{structured}, latency: fast,
			source: "user", budget: "standard", policy: next},
		{name: "an unknown kind takes the general defaults", in: ProfileInput{Kind: "poetry"}, latency: standard, source: "user", budget: "standard", policy: next,
			settings: map[string]string{"source": "default", "required_capabilities": "default", "latency_target": "default", "budget_class": "default", "fallback_policy": "default"}},
		{name: "the request adds to the kind's capabilities, sorted and once", in: ProfileInput{Kind: "vision", RequiredCapabilities: []eventsv1.Capability{structured, tools, vision}},
			caps: []eventsv1.Capability{tools, vision, structured}, latency: standard, source: "user", budget: "standard", policy: next},
		{name: "every setting from the request", in: ProfileInput{Kind: "chat", Source: "task", RequiredCapabilities: []eventsv1.Capability{tools},
			LatencyTarget: slow, BudgetClass: "economy", FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE, Region: "eu"},
			caps: []eventsv1.Capability{tools}, latency: slow, source: "task", budget: "economy", policy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NONE,
			settings: map[string]string{"source": "request", "required_capabilities": "request", "latency_target": "request", "budget_class": "request", "fallback_policy": "request", "region": "request"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ResolveProfile(c.in)
			if p.GetKind() != c.in.Kind || !slices.Equal(p.GetRequiredCapabilities(), c.caps) || p.GetLatencyTarget() != c.latency ||
				p.GetSource() != c.source || p.GetBudgetClass() != c.budget || p.GetFallbackPolicy() != c.policy || p.GetRegion() != c.in.Region {
				t.Fatalf("profile %v", p)
			}
			if c.settings != nil && !maps.Equal(p.GetSettingsSource(), c.settings) {
				t.Fatalf("settings source %v, want %v", p.GetSettingsSource(), c.settings)
			}
		})
	}
	// The kind table is not shared with what a profile returns.
	p := ResolveProfile(ProfileInput{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{vision}})
	p.RequiredCapabilities[0] = reasoning
	if again := ResolveProfile(ProfileInput{Kind: "coding"}); !slices.Equal(again.GetRequiredCapabilities(), []eventsv1.Capability{tools}) {
		t.Fatalf("kind defaults changed: %v", again.GetRequiredCapabilities())
	}
}
