package domain

import (
	"fmt"
	"strings"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// precedenceTable is the whole precedence, written out by hand: for every
// rule outcome and hook outcome, the decision and its source under each
// mode outcome (allow, sandboxed, ask, deny), with a human who may be asked
// and without one. "A/r" reads "allow, decided by the rule"; A allow,
// S sandboxed, Q ask, D deny, U unavailable; r rule, h hook, m mode.
var precedenceTable = `
rule   hook         | interactive: allow sandboxed ask deny | non-interactive: allow sandboxed ask deny
none   none         | A/m S/m Q/m D/m | A/m S/m D/m D/m
none   allow        | A/h S/h A/h A/h | A/h S/h A/h A/h
none   ask          | Q/h Q/h Q/h Q/h | D/h D/h D/h D/h
none   deny         | D/h D/h D/h D/h | D/h D/h D/h D/h
none   unavailable  | U/h U/h U/h U/h | U/h U/h U/h U/h
allow  none         | A/r S/r A/r A/r | A/r S/r A/r A/r
allow  allow        | A/h S/h A/h A/h | A/h S/h A/h A/h
allow  ask          | Q/h Q/h Q/h Q/h | D/h D/h D/h D/h
allow  deny         | D/h D/h D/h D/h | D/h D/h D/h D/h
allow  unavailable  | U/h U/h U/h U/h | U/h U/h U/h U/h
ask    none         | Q/r Q/r Q/r Q/r | D/r D/r D/r D/r
ask    allow        | Q/r Q/r Q/r Q/r | D/r D/r D/r D/r
ask    ask          | Q/r Q/r Q/r Q/r | D/r D/r D/r D/r
ask    deny         | D/h D/h D/h D/h | D/h D/h D/h D/h
ask    unavailable  | U/h U/h U/h U/h | U/h U/h U/h U/h
deny   none         | D/r D/r D/r D/r | D/r D/r D/r D/r
deny   allow        | D/r D/r D/r D/r | D/r D/r D/r D/r
deny   ask          | D/r D/r D/r D/r | D/r D/r D/r D/r
deny   deny         | D/r D/r D/r D/r | D/r D/r D/r D/r
deny   unavailable  | D/r D/r D/r D/r | D/r D/r D/r D/r
`

var effects = map[string]Effect{"none": EffectNone, "allow": EffectAllow, "ask": EffectAsk, "deny": EffectDeny, "unavailable": EffectUnavailable}

var decisionLetters = map[eventsv1.Decision]string{
	eventsv1.Decision_DECISION_ALLOW: "A", eventsv1.Decision_DECISION_SANDBOXED: "S", eventsv1.Decision_DECISION_ASK: "Q",
	eventsv1.Decision_DECISION_DENY: "D", eventsv1.Decision_DECISION_UNAVAILABLE: "U",
}

var sourceLetters = map[eventsv1.DecisionSource]string{
	eventsv1.DecisionSource_DECISION_SOURCE_RULE: "r", eventsv1.DecisionSource_DECISION_SOURCE_HOOK: "h", eventsv1.DecisionSource_DECISION_SOURCE_MODE: "m",
}

// TestPrecedenceTable covers every combination of rule outcome (4), hook
// outcome (5), mode outcome (4) and interactivity (2): 160 cases.
func TestPrecedenceTable(t *testing.T) {
	modes := []Effect{EffectAllow, EffectSandboxed, EffectAsk, EffectDeny}
	cases := 0
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(precedenceTable), "\n")[1:] {
		parts := strings.Split(line, "|")
		head := strings.Fields(parts[0])
		rule, hook := effects[head[0]], effects[head[1]]
		seen[head[0]+"/"+head[1]] = true
		for col, interactive := range []bool{true, false} {
			want := strings.Fields(parts[col+1])
			for i, m := range modes {
				got := Combine(
					Verdict{Effect: rule, Source: eventsv1.DecisionSource_DECISION_SOURCE_RULE, Reason: "rule"},
					Verdict{Effect: hook, Source: eventsv1.DecisionSource_DECISION_SOURCE_HOOK, Reason: "hook"},
					Verdict{Effect: m, Source: eventsv1.DecisionSource_DECISION_SOURCE_MODE, Reason: "mode"},
					interactive)
				g := decisionLetters[got.Decision] + "/" + sourceLetters[got.Source]
				if g != want[i] {
					t.Errorf("rule %s, hook %s, mode %s, interactive %v: got %s, want %s (%s)", head[0], head[1], m, interactive, g, want[i], got.Reason)
				}
				cases++
			}
		}
	}
	if len(seen) != 20 || cases != 160 {
		t.Fatalf("the table covers %d rule/hook pairs and %d cases; want 20 and 160", len(seen), cases)
	}
}

// A hook's allow never overrides a deny or ask rule, whatever the mode.
func TestHookAllowNeverOverridesDenyOrAskRule(t *testing.T) {
	for _, rule := range []Effect{EffectDeny, EffectAsk} {
		for _, m := range []Effect{EffectAllow, EffectSandboxed, EffectAsk, EffectDeny} {
			got := Combine(Verdict{Effect: rule, Source: eventsv1.DecisionSource_DECISION_SOURCE_RULE}, Verdict{Effect: EffectAllow, Source: eventsv1.DecisionSource_DECISION_SOURCE_HOOK}, Verdict{Effect: m}, true)
			if got.Decision == eventsv1.Decision_DECISION_ALLOW || got.Decision == eventsv1.Decision_DECISION_SANDBOXED || got.Source != eventsv1.DecisionSource_DECISION_SOURCE_RULE {
				t.Errorf("rule %s, hook allow, mode %s: %v from %v", rule, m, got.Decision, got.Source)
			}
		}
	}
}

func TestModeTable(t *testing.T) {
	A, S, Q, D := eventsv1.Decision_DECISION_ALLOW, eventsv1.Decision_DECISION_SANDBOXED, eventsv1.Decision_DECISION_ASK, eventsv1.Decision_DECISION_DENY
	type row [6]eventsv1.Decision // read in, read out, safe, mutate in, mutate out, destructive (inside)
	want := map[eventsv1.PermissionMode]row{
		eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT:    {A, Q, S, Q, Q, Q},
		eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED:  {A, Q, Q, Q, Q, Q},
		eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST: {A, Q, S, S, Q, Q},
		eventsv1.PermissionMode_PERMISSION_MODE_ON_FAILURE: {A, S, S, S, S, S},
		eventsv1.PermissionMode_PERMISSION_MODE_NEVER:      {A, D, S, S, D, S},
		eventsv1.PermissionMode_PERMISSION_MODE_PLAN:       {A, Q, S, D, D, D},
		eventsv1.PermissionMode_PERMISSION_MODE_BYPASS:     {A, A, A, A, A, A},
		eventsv1.PermissionMode_PERMISSION_MODE_AUTO:       {A, D, S, S, D, D},
	}
	if len(want) != len(eventsv1.PermissionMode_name)-1 {
		t.Fatalf("the test covers %d modes; the enum has %d", len(want), len(eventsv1.PermissionMode_name)-1)
	}
	for mode, r := range want {
		for c := ReadInside; c <= MutateOutside; c++ {
			got := Combine(Verdict{}, Verdict{}, ModeVerdict(mode, c, false), true).Decision
			if got != r[c] {
				t.Errorf("%v %v: got %v, want %v", mode, c, got, r[c])
			}
		}
		got := Combine(Verdict{}, Verdict{}, ModeVerdict(mode, MutateInside, true), true).Decision
		if got != r[5] {
			t.Errorf("%v destructive inside: got %v, want %v", mode, got, r[5])
		}
	}
	// Leaving the sandbox in a never-asking mode is the sandbox's denial.
	v := ModeVerdict(eventsv1.PermissionMode_PERMISSION_MODE_NEVER, MutateOutside, false)
	if v.Source != eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX {
		t.Errorf("never, outside: source %v, want sandbox", v.Source)
	}
	if v := ModeVerdict(eventsv1.PermissionMode_PERMISSION_MODE_PLAN, MutateInside, false); v.Source != eventsv1.DecisionSource_DECISION_SOURCE_MODE {
		t.Errorf("plan, mutate inside: source %v, want mode", v.Source)
	}
}

func TestCombineHooks(t *testing.T) {
	closed, open := eventsv1.FailMode_FAIL_MODE_CLOSED, eventsv1.FailMode_FAIL_MODE_OPEN
	O := func(o eventsv1.HookOutcome) HookResult { return HookResult{HookID: "h", Outcome: o} }
	for _, tc := range []struct {
		in   []HookResult
		want Effect
	}{
		{nil, EffectNone},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE)}, EffectNone},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW)}, EffectAllow},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW), O(eventsv1.HookOutcome_HOOK_OUTCOME_ASK)}, EffectAsk},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_ASK), O(eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK)}, EffectDeny},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_DENY), {HookID: "x", Failed: true, FailMode: closed}}, EffectDeny},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW), {HookID: "x", Failed: true, FailMode: closed}}, EffectUnavailable},
		{[]HookResult{O(eventsv1.HookOutcome_HOOK_OUTCOME_ALLOW), {HookID: "x", Failed: true, FailMode: open}}, EffectAllow},
	} {
		if got := CombineHooks(tc.in); got.Effect != tc.want {
			t.Errorf("%v: got %v, want %v", fmt.Sprint(tc.in), got.Effect, tc.want)
		}
	}
	if FailModeFor(eventsv1.HookRisk_HOOK_RISK_READ_ONLY) != open || FailModeFor(eventsv1.HookRisk_HOOK_RISK_HIGH) != closed || FailModeFor(eventsv1.HookRisk_HOOK_RISK_UNSPECIFIED) != closed {
		t.Error("fail modes: read-only hooks fail open, every other fails closed")
	}
}
