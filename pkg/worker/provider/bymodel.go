package provider

import (
	"context"
	"fmt"
	"sort"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ByModel sends each call to the adapter of the call's model: the model
// registry names each model's provider and each provider's kind (the API
// it speaks), so one worker serves models of several providers and a
// fallback may cross from one API to another.
type ByModel struct {
	// Models maps a model id to the adapter serving it.
	Models map[string]Provider
	// Default serves a model Models does not name; nil: such a call fails
	// bad_request.
	Default Provider
}

// Name implements Provider: the default's name (facts name the provider
// of each call's model: NameFor).
func (b *ByModel) Name() string {
	if b.Default != nil {
		return b.Default.Name()
	}
	return "by_model"
}

// NameFor is the provider id of model's adapter.
func (b *ByModel) NameFor(model string) string {
	if p := b.pick(model); p != nil {
		return p.Name()
	}
	return b.Name()
}

func (b *ByModel) pick(model string) Provider {
	if p, ok := b.Models[model]; ok {
		return p
	}
	return b.Default
}

// Stream implements Provider.
func (b *ByModel) Stream(ctx context.Context, req Request, sink Sink) (Response, error) {
	p := b.pick(req.Model)
	if p == nil {
		return Response{}, &Error{Category: BadRequest, Message: fmt.Sprintf("no provider serves the model %q (the model registry names none with a kind)", req.Model)}
	}
	return p.Stream(ctx, req, sink)
}

// NameOf is the provider id facts record for a call to model: NameFor
// when p dispatches per model, else p's name.
func NameOf(p Provider, model string) string {
	if pm, ok := p.(interface{ NameFor(string) string }); ok {
		return pm.NameFor(model)
	}
	return p.Name()
}

// Kinds of provider (eventsv1.Provider.kind).
const (
	KindOpenAIChat      = "openai_chat"
	KindAnthropic       = "anthropic"
	KindOpenAIResponses = "openai_responses"
	KindScripted        = "scripted"
)

// FromRegistry builds the adapters the registry's providers name by kind,
// each with its base URL and the key in the environment variable it
// names (getenv reads it), and maps every model of such a provider to its
// adapter. Providers without a kind, and the scripted kind, are served by
// def. A provider whose key variable is unset is an error naming it.
func FromRegistry(reg *eventsv1.Registry, getenv func(string) string, def Provider) (*ByModel, error) {
	b := &ByModel{Models: map[string]Provider{}, Default: def}
	byID := map[string]Provider{}
	for _, p := range reg.GetProviders() {
		var a Provider
		switch p.GetKind() {
		case "", KindScripted:
			continue
		case KindAnthropic, KindOpenAIChat, KindOpenAIResponses:
		default:
			return nil, fmt.Errorf("provider %q: kind %q is not one of %s, %s, %s, %s", p.GetId(), p.GetKind(), KindOpenAIChat, KindAnthropic, KindOpenAIResponses, KindScripted)
		}
		env := p.GetApiKeyEnv()
		if env == "" {
			env = "OPENAI_API_KEY"
			if p.GetKind() == KindAnthropic {
				env = "ANTHROPIC_API_KEY"
			}
		}
		key := getenv(env)
		if key == "" && p.GetApiKeyEnv() != "" {
			return nil, fmt.Errorf("provider %q: its key variable %s is not set", p.GetId(), env)
		}
		switch p.GetKind() {
		case KindAnthropic:
			a = &Anthropic{BaseURL: p.GetBaseUrl(), APIKey: key, ID: p.GetId()}
		case KindOpenAIResponses:
			a = &Responses{BaseURL: p.GetBaseUrl(), APIKey: key, ID: p.GetId()}
		default:
			base := p.GetBaseUrl()
			if base == "" {
				base = "https://api.openai.com/v1"
			}
			a = &OpenAI{BaseURL: base, APIKey: key, ID: p.GetId()}
		}
		byID[p.GetId()] = a
	}
	for _, m := range reg.GetModels() {
		if a, ok := byID[m.GetProviderId()]; ok {
			b.Models[m.GetId()] = a
		}
	}
	return b, nil
}

// Served lists "model (provider, kind)" of the models b routes, sorted.
func (b *ByModel) Served() []string {
	var out []string
	for m, p := range b.Models {
		kind := KindOpenAIChat
		switch p.(type) {
		case *Anthropic:
			kind = KindAnthropic
		case *Responses:
			kind = KindOpenAIResponses
		}
		out = append(out, fmt.Sprintf("%s (%s, %s)", m, p.Name(), kind))
	}
	sort.Strings(out)
	return out
}
