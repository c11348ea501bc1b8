package domain

import (
	"slices"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ProfileInput is what a caller says about a turn or task; zero values
// take the kind's defaults.
type ProfileInput struct {
	Kind                 string
	Source               string
	RequiredCapabilities []eventsv1.Capability
	LatencyTarget        eventsv1.LatencyClass
	BudgetClass          string
	FallbackPolicy       eventsv1.FallbackPolicy
	Region               string
}

type kindDefaults struct {
	caps    []eventsv1.Capability
	latency eventsv1.LatencyClass
}

// kinds are the defaults of known task kinds: what the work needs from any
// model before the caller adds anything.
var kinds = map[string]kindDefaults{
	"chat":      {nil, eventsv1.LatencyClass_LATENCY_CLASS_FAST},
	"summarize": {nil, eventsv1.LatencyClass_LATENCY_CLASS_FAST},
	"coding":    {[]eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS}, eventsv1.LatencyClass_LATENCY_CLASS_STANDARD},
	"agent":     {[]eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS}, eventsv1.LatencyClass_LATENCY_CLASS_STANDARD},
	"vision":    {[]eventsv1.Capability{eventsv1.Capability_CAPABILITY_VISION}, eventsv1.LatencyClass_LATENCY_CLASS_STANDARD},
	"reasoning": {[]eventsv1.Capability{eventsv1.Capability_CAPABILITY_REASONING}, eventsv1.LatencyClass_LATENCY_CLASS_SLOW},
	"extract":   {[]eventsv1.Capability{eventsv1.Capability_CAPABILITY_STRUCTURED_OUTPUT}, eventsv1.LatencyClass_LATENCY_CLASS_FAST},
}

// ResolveProfile fills a profile from the input and the kind's defaults,
// recording where each setting came from.
func ResolveProfile(in ProfileInput) *eventsv1.TaskProfile {
	def, known := kinds[in.Kind]
	kindSource := "kind_default"
	if !known {
		def, kindSource = kindDefaults{latency: eventsv1.LatencyClass_LATENCY_CLASS_STANDARD}, "default"
	}
	p := &eventsv1.TaskProfile{Kind: in.Kind, SettingsSource: map[string]string{}, Region: in.Region}
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
	if pick("latency_target", in.LatencyTarget != eventsv1.LatencyClass_LATENCY_CLASS_UNSPECIFIED, kindSource) != "request" {
		p.LatencyTarget = def.latency
	}
	p.BudgetClass = in.BudgetClass
	if pick("budget_class", in.BudgetClass != "", "default") == "default" {
		p.BudgetClass = "standard"
	}
	p.FallbackPolicy = in.FallbackPolicy
	if pick("fallback_policy", in.FallbackPolicy != eventsv1.FallbackPolicy_FALLBACK_POLICY_UNSPECIFIED, "default") == "default" {
		p.FallbackPolicy = eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE
	}
	if in.Region != "" {
		p.SettingsSource["region"] = "request"
	}
	return p
}
