package domain

import (
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Effect is what one input to a decision says.
type Effect int

const (
	// EffectNone: the input says nothing (no rule matched, no hook, a hook
	// that said continue).
	EffectNone Effect = iota
	EffectAllow
	EffectAsk
	EffectDeny
	// EffectUnavailable: a fail-closed hook failed; only hooks say it.
	EffectUnavailable
	// EffectSandboxed: allowed inside the sandbox; only the mode says it.
	EffectSandboxed
)

func (e Effect) String() string {
	return [...]string{"none", "allow", "ask", "deny", "unavailable", "sandboxed"}[e]
}

// Verdict is one input's say, with its source and reason.
type Verdict struct {
	Effect Effect
	Source eventsv1.DecisionSource
	Reason string
}

// Final is a decision.
type Final struct {
	Decision eventsv1.Decision
	Source   eventsv1.DecisionSource
	Reason   string
}

// Combine is the precedence of a permission decision (the Agent Runtime
// standard: "Deny/ask rules must be able to override automatic allow"):
//
//  1. an explicit deny (a rule's, then a hook's) wins over everything;
//  2. a fail-closed hook that failed makes the decision unavailable;
//  3. then ask (a rule's, then a hook's);
//  4. then a hook's allow, then a rule's allow: neither overrides 1-3,
//     and neither lifts the sandbox: when the mode says sandboxed, the
//     allow removes the prompt, not the boundary;
//  5. then the mode.
//
// Whenever the result would be ask and no human may be asked
// (interactive false), it is deny from the same source: a non-interactive
// run never waits.
func Combine(rule, hook, mode Verdict, interactive bool) Final {
	ask := func(v Verdict) Final {
		if !interactive {
			return Final{eventsv1.Decision_DECISION_DENY, v.Source, v.Reason + "; approval needed but no human may be asked"}
		}
		return Final{eventsv1.Decision_DECISION_ASK, v.Source, v.Reason}
	}
	allow := func(v Verdict) Final {
		if mode.Effect == EffectSandboxed {
			return Final{eventsv1.Decision_DECISION_SANDBOXED, v.Source, v.Reason + "; inside the sandbox"}
		}
		return Final{eventsv1.Decision_DECISION_ALLOW, v.Source, v.Reason}
	}
	switch {
	case rule.Effect == EffectDeny:
		return Final{eventsv1.Decision_DECISION_DENY, rule.Source, rule.Reason}
	case hook.Effect == EffectDeny:
		return Final{eventsv1.Decision_DECISION_DENY, hook.Source, hook.Reason}
	case hook.Effect == EffectUnavailable:
		return Final{eventsv1.Decision_DECISION_UNAVAILABLE, hook.Source, hook.Reason}
	case rule.Effect == EffectAsk:
		return ask(rule)
	case hook.Effect == EffectAsk:
		return ask(hook)
	case hook.Effect == EffectAllow:
		return allow(hook)
	case rule.Effect == EffectAllow:
		return allow(rule)
	}
	switch mode.Effect {
	case EffectAllow:
		return Final{eventsv1.Decision_DECISION_ALLOW, mode.Source, mode.Reason}
	case EffectSandboxed:
		return Final{eventsv1.Decision_DECISION_SANDBOXED, mode.Source, mode.Reason}
	case EffectAsk:
		return ask(mode)
	default:
		return Final{eventsv1.Decision_DECISION_DENY, mode.Source, mode.Reason}
	}
}

// Category is what an action is, for the mode.
type Category int

const (
	// ReadInside: reads within the sandbox's read roots.
	ReadInside Category = iota
	// ReadOutside: reads outside them (or of paths that cannot be checked).
	ReadOutside
	// SafeCommand: a command line made only of known read-only commands.
	SafeCommand
	// MutateInside: writes, executes or reaches the network within the
	// sandbox's bounds.
	MutateInside
	// MutateOutside: leaves the sandbox's bounds.
	MutateOutside
)

var categoryNames = [...]string{"read inside the sandbox", "read outside the sandbox", "read-only command", "change inside the sandbox", "change outside the sandbox"}

func (c Category) String() string { return categoryNames[c] }

// modeTable is each mode's answer per category, and for destructive
// actions (which the destructive column overrides unless the category's
// answer is already deny). It is the spec's mode semantics made concrete;
// docs/services/permission.md has the same table.
var modeTable = map[eventsv1.PermissionMode][6]Effect{
	//                                      read in      read out         safe cmd         mutate in        mutate out       destructive
	eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT:    {EffectAllow, EffectAsk, EffectSandboxed, EffectAsk, EffectAsk, EffectAsk},
	eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED:  {EffectAllow, EffectAsk, EffectAsk, EffectAsk, EffectAsk, EffectAsk},
	eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST: {EffectAllow, EffectAsk, EffectSandboxed, EffectSandboxed, EffectAsk, EffectAsk},
	eventsv1.PermissionMode_PERMISSION_MODE_ON_FAILURE: {EffectAllow, EffectSandboxed, EffectSandboxed, EffectSandboxed, EffectSandboxed, EffectSandboxed},
	eventsv1.PermissionMode_PERMISSION_MODE_NEVER:      {EffectAllow, EffectDeny, EffectSandboxed, EffectSandboxed, EffectDeny, EffectSandboxed},
	eventsv1.PermissionMode_PERMISSION_MODE_PLAN:       {EffectAllow, EffectAsk, EffectSandboxed, EffectDeny, EffectDeny, EffectDeny},
	eventsv1.PermissionMode_PERMISSION_MODE_BYPASS:     {EffectAllow, EffectAllow, EffectAllow, EffectAllow, EffectAllow, EffectAllow},
	eventsv1.PermissionMode_PERMISSION_MODE_AUTO:       {EffectAllow, EffectDeny, EffectSandboxed, EffectSandboxed, EffectDeny, EffectDeny},
}

// NonInteractive reports modes that never wait for a human, whatever the
// policy's interactive flag says.
func NonInteractive(m eventsv1.PermissionMode) bool {
	return m == eventsv1.PermissionMode_PERMISSION_MODE_NEVER || m == eventsv1.PermissionMode_PERMISSION_MODE_AUTO
}

// ModeVerdict is the mode's say on an action. A deny because the action
// leaves the sandbox has the sandbox as its source; every other answer is
// the mode's.
func ModeVerdict(mode eventsv1.PermissionMode, c Category, destructive bool) Verdict {
	row, ok := modeTable[mode]
	if !ok {
		row = modeTable[eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT]
		mode = eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT
	}
	name := modeName(mode)
	e := row[c]
	reason := "mode " + name + ": " + c.String()
	if destructive && e != EffectDeny {
		e = row[5]
		reason += ", destructive"
	}
	source := eventsv1.DecisionSource_DECISION_SOURCE_MODE
	if e == EffectDeny && (c == ReadOutside || c == MutateOutside) {
		source = eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX
	}
	return Verdict{Effect: e, Source: source, Reason: reason}
}

func modeName(m eventsv1.PermissionMode) string {
	switch m {
	case eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT:
		return "default"
	case eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED:
		return "untrusted"
	case eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST:
		return "on_request"
	case eventsv1.PermissionMode_PERMISSION_MODE_ON_FAILURE:
		return "on_failure"
	case eventsv1.PermissionMode_PERMISSION_MODE_NEVER:
		return "never"
	case eventsv1.PermissionMode_PERMISSION_MODE_PLAN:
		return "plan"
	case eventsv1.PermissionMode_PERMISSION_MODE_BYPASS:
		return "bypass"
	case eventsv1.PermissionMode_PERMISSION_MODE_AUTO:
		return "auto"
	}
	return "default"
}
