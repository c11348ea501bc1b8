package domain

import (
	"slices"

	ev "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ProfileInput is what a caller says about a turn or task; zero values
// take the kind's defaults.
type ProfileInput struct {
	Kind                 string
	Source               string
	RequiredCapabilities []ev.Capability
	LatencyTarget        ev.LatencyClass
	BudgetClass          string
	FallbackPolicy       ev.FallbackPolicy
	Region               string
}

type kindDefaults struct {
	caps    []ev.Capability
	latency ev.LatencyClass
}

// kinds are the defaults of known task kinds: what the work needs from any
// model before the caller adds anything.
var kinds = map[string]kindDefaults{
	"chat":      {nil, ev.LatencyClass_LATENCY_CLASS_FAST},
	"summarize": {nil, ev.LatencyClass_LATENCY_CLASS_FAST},
	"coding":    {[]ev.Capability{ev.Capability_CAPABILITY_TOOLS}, ev.LatencyClass_LATENCY_CLASS_STANDARD},
	"agent":     {[]ev.Capability{ev.Capability_CAPABILITY_TOOLS}, ev.LatencyClass_LATENCY_CLASS_STANDARD},
	"vision":    {[]ev.Capability{ev.Capability_CAPABILITY_VISION}, ev.LatencyClass_LATENCY_CLASS_STANDARD},
	"reasoning": {[]ev.Capability{ev.Capability_CAPABILITY_REASONING}, ev.LatencyClass_LATENCY_CLASS_SLOW},
	"extract":   {[]ev.Capability{ev.Capability_CAPABILITY_STRUCTURED_OUTPUT}, ev.LatencyClass_LATENCY_CLASS_FAST},
}

// ResolveProfile fills a profile from the input and the kind's defaults,
// recording where each setting came from.
func ResolveProfile(in ProfileInput) *ev.TaskProfile {
	def, known := kinds[in.Kind]
	kindSource := "kind_default"
	if !known {
		def, kindSource = kindDefaults{latency: ev.LatencyClass_LATENCY_CLASS_STANDARD}, "default"
	}
	p := &ev.TaskProfile{Kind: in.Kind, SettingsSource: map[string]string{}, Region: in.Region}
	pick := func(name string, fromRequest bool, fallback string) string {
		if fromRequest {
			p.SettingsSource[name] = "request"
		} else {
			p.SettingsSource[name] = fallback
		}
		return p.SettingsSource[name]
	}
	p.Source = in.Source
	if pick("source", in.Source != "", "default") == "default" {
		p.Source = "user"
	}
	caps := slices.Clone(def.caps)
	for _, c := range in.RequiredCapabilities {
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	slices.Sort(caps)
	p.RequiredCapabilities = caps
	pick("required_capabilities", len(in.RequiredCapabilities) > 0, kindSource)
	p.LatencyTarget = in.LatencyTarget
	if pick("latency_target", in.LatencyTarget != ev.LatencyClass_LATENCY_CLASS_UNSPECIFIED, kindSource) != "request" {
		p.LatencyTarget = def.latency
	}
	p.BudgetClass = in.BudgetClass
	if pick("budget_class", in.BudgetClass != "", "default") == "default" {
		p.BudgetClass = "standard"
	}
	p.FallbackPolicy = in.FallbackPolicy
	if pick("fallback_policy", in.FallbackPolicy != ev.FallbackPolicy_FALLBACK_POLICY_UNSPECIFIED, "default") == "default" {
		p.FallbackPolicy = ev.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE
	}
	if in.Region != "" {
		p.SettingsSource["region"] = "request"
	}
	return p
}
