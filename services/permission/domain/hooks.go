package domain

import (
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// FailModeFor is how a hook's failure is treated: hooks that guard
// actions fail closed; read-only context hooks fail open with a warning
// (spec: "High-risk hooks SHOULD fail closed").
func FailModeFor(risk eventsv1.HookRisk) eventsv1.FailMode {
	if risk == eventsv1.HookRisk_HOOK_RISK_READ_ONLY {
		return eventsv1.FailMode_FAIL_MODE_OPEN
	}
	return eventsv1.FailMode_FAIL_MODE_CLOSED
}

// HookResult is one hook run's normalized result.
type HookResult struct {
	HookID   string
	Outcome  eventsv1.HookOutcome
	Reason   string
	Failed   bool
	FailMode eventsv1.FailMode
}

// CombineHooks is the hooks' joint verdict: block or deny from any hook
// wins, then a fail-closed failure (unavailable), then ask, then allow;
// continue and fail-open failures say nothing.
func CombineHooks(results []HookResult) Verdict {
	var deny, unavailable, ask, allow []string
	for _, r := range results {
		label := r.HookID
		if r.Reason != "" {
			label += " (" + r.Reason + ")"
		}
		switch {
		case r.Failed && r.FailMode == eventsv1.FailMode_FAIL_MODE_CLOSED:
			unavailable = append(unavailable, label)
		case r.Failed:
		case r.Outcome == eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK || r.Outcome == eventsv1.HookOutcome_HOOK_OUTCOME_DENY:
			deny = append(deny, label)
		case r.Outcome == eventsv1.HookOutcome_HOOK_OUTCOME_ASK:
			ask = append(ask, label)
		case r.Outcome == eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW:
			allow = append(allow, label)
		}
	}
	src := eventsv1.DecisionSource_DECISION_SOURCE_HOOK
	switch {
	case len(deny) > 0:
		return Verdict{EffectDeny, src, "blocked by hook " + strings.Join(deny, ", ")}
	case len(unavailable) > 0:
		return Verdict{EffectUnavailable, src, "fail-closed hook " + strings.Join(unavailable, ", ") + " failed"}
	case len(ask) > 0:
		return Verdict{EffectAsk, src, "hook " + strings.Join(ask, ", ") + " asks"}
	case len(allow) > 0:
		return Verdict{EffectAllow, src, "allowed by hook " + strings.Join(allow, ", ")}
	}
	return Verdict{}
}

// HookOutcomeOf maps a combined verdict back to a hook outcome (RunHooks'
// answer).
func HookOutcomeOf(v Verdict) eventsv1.HookOutcome {
	switch v.Effect {
	case EffectDeny, EffectUnavailable:
		return eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK
	case EffectAsk:
		return eventsv1.HookOutcome_HOOK_OUTCOME_ASK
	case EffectAllow:
		return eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW
	}
	return eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE
}
