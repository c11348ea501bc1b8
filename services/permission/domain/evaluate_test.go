package domain

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func workspacePolicy(mode eventsv1.PermissionMode, rules ...*eventsv1.PermissionRule) Policy {
	return Policy{Mode: mode, Interactive: true, Rules: rules, Sandbox: &eventsv1.SandboxProfile{
		Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/work", WriteRoots: []string{"/work"},
		Network: eventsv1.NetworkMode_NETWORK_MODE_ALLOWLIST, AllowedHosts: []string{"*.github.com", "github.com"},
	}}
}

func rule(id string, effect eventsv1.RuleEffect, source eventsv1.RuleSource, tool string, paths, commands []string) *eventsv1.PermissionRule {
	return &eventsv1.PermissionRule{RuleId: id, Effect: effect, Source: source, Tool: tool, Paths: paths, Commands: commands}
}

const (
	allowE = eventsv1.RuleEffect_RULE_EFFECT_ALLOW
	denyE  = eventsv1.RuleEffect_RULE_EFFECT_DENY
	askE   = eventsv1.RuleEffect_RULE_EFFECT_ASK
	hostS  = eventsv1.RuleSource_RULE_SOURCE_HOST
	wsS    = eventsv1.RuleSource_RULE_SOURCE_WORKSPACE
)

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	shell := func(cmd string) Request {
		return Request{Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: cmd, Now: now}
	}
	write := func(paths ...string) Request {
		return Request{Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "fs.write", Access: eventsv1.Access_ACCESS_WRITE, Paths: paths, Now: now}
	}
	onRequest, never := eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST, eventsv1.PermissionMode_PERMISSION_MODE_NEVER
	for _, tc := range []struct {
		name        string
		policy      Policy
		hook        Verdict
		req         Request
		decision    eventsv1.Decision
		source      eventsv1.DecisionSource
		refs        string
		destructive bool
		violations  int
	}{
		{"write inside the sandbox runs sandboxed", workspacePolicy(onRequest), Verdict{}, write("src/a.go"),
			eventsv1.Decision_DECISION_SANDBOXED, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 0},
		{"write outside asks", workspacePolicy(onRequest), Verdict{}, write("/etc/hosts"),
			eventsv1.Decision_DECISION_ASK, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 1},
		{"dot-dot does not escape", workspacePolicy(never), Verdict{}, write("../../etc/passwd"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, "", false, 1},
		{"a symlink out of the root is outside", workspacePolicy(never), Verdict{},
			func() Request { r := write("link/x"); r.Resolved = map[string]string{"link/x": "/etc/x"}; return r }(),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, "", false, 1},
		{"home-relative paths cannot be checked", workspacePolicy(never), Verdict{}, shell("rm ~/x"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, "", true, 1},
		{"host deny rule on a subcommand", workspacePolicy(onRequest, rule("no-force", denyE, hostS, "shell", nil, []string{"git push"})), Verdict{},
			shell("git status && git push -f origin main"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_HOST_POLICY, "no-force", true, 1},
		{"allow rule must cover every subcommand", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, rule("git-ok", allowE, wsS, "shell", nil, []string{"git status"})), Verdict{},
			shell("git status; rm -rf /"),
			eventsv1.Decision_DECISION_ASK, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", true, 1},
		{"allow rule covering everything", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, rule("make-ok", allowE, wsS, "shell", nil, []string{"make"})), Verdict{},
			shell("make test"),
			eventsv1.Decision_DECISION_ALLOW, eventsv1.DecisionSource_DECISION_SOURCE_RULE, "make-ok", false, 0},
		{"ask rule beats a hook's allow", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_BYPASS, rule("ask-env", askE, wsS, "*", []string{"**/.env"}, nil)),
			Verdict{Effect: EffectAllow, Source: eventsv1.DecisionSource_DECISION_SOURCE_HOOK}, write("/work/.env"),
			eventsv1.Decision_DECISION_ASK, eventsv1.DecisionSource_DECISION_SOURCE_RULE, "ask-env", false, 0},
		{"deny rule matches a path only the shell can expand", workspacePolicy(onRequest, rule("no-etc", denyE, wsS, "shell", []string{"/etc/**"}, nil)), Verdict{},
			shell("cp x $TARGET"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_RULE, "no-etc", false, 1},
		{"network outside the allowlist", workspacePolicy(never), Verdict{}, shell("curl https://evil.example/x"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, "", false, 1},
		{"network inside the allowlist", workspacePolicy(never), Verdict{}, shell("git fetch https://github.com/o/r"),
			eventsv1.Decision_DECISION_SANDBOXED, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 0},
		{"safe read-only command", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT), Verdict{}, shell("ls -la | grep x"),
			eventsv1.Decision_DECISION_SANDBOXED, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 0},
		{"unparsable command is unbounded", workspacePolicy(never), Verdict{}, shell("echo 'x"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_SANDBOX, "", false, 1},
		{"expired rules do not apply", workspacePolicy(onRequest, func() *eventsv1.PermissionRule {
			r := rule("old", denyE, wsS, "*", nil, nil)
			r.ExpiresAt = timestamppb.New(now.Add(-time.Minute))
			return r
		}()), Verdict{}, write("a"),
			eventsv1.Decision_DECISION_SANDBOXED, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 0},
		{"plan mode denies mutations", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_PLAN), Verdict{}, write("a"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 0},
		{"non-interactive policy never asks", func() Policy { p := workspacePolicy(onRequest); p.Interactive = false; return p }(), Verdict{}, write("/etc/x"),
			eventsv1.Decision_DECISION_DENY, eventsv1.DecisionSource_DECISION_SOURCE_MODE, "", false, 1},
		{"fail-closed hook", workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_BYPASS), Verdict{Effect: EffectUnavailable, Source: eventsv1.DecisionSource_DECISION_SOURCE_HOOK, Reason: "hook h failed"}, write("a"),
			eventsv1.Decision_DECISION_UNAVAILABLE, eventsv1.DecisionSource_DECISION_SOURCE_HOOK, "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := Evaluate(tc.policy, tc.hook, tc.req)
			if ev.Decision != tc.decision || ev.Source != tc.source {
				t.Fatalf("got %v from %v (%s); want %v from %v", ev.Decision, ev.Source, ev.Reason, tc.decision, tc.source)
			}
			if refs := strings.Join(ev.RuleRefs, ","); refs != tc.refs {
				t.Errorf("rule refs %q, want %q", refs, tc.refs)
			}
			if ev.Destructive != tc.destructive {
				t.Errorf("destructive %v, want %v", ev.Destructive, tc.destructive)
			}
			if ev.Destructive && (ev.ImpactScope == "" || ev.RollbackAdvice == "") {
				t.Error("destructive without impact scope or rollback advice")
			}
			if len(ev.Violations) != tc.violations {
				t.Errorf("violations %+v, want %d", ev.Violations, tc.violations)
			}
			if ev.Decision == eventsv1.Decision_DECISION_ASK && ev.ProposedSessionRule == nil {
				t.Error("an ask proposes the session rule allow_session would add")
			}
			if ev.Reason == "" {
				t.Error("every decision has a reason")
			}
		})
	}
}

func TestEvaluateCdMovesLaterSubcommands(t *testing.T) {
	ev := Evaluate(workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_NEVER), Verdict{}, Request{Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "cd /etc && echo x > passwd"})
	if ev.Decision != eventsv1.Decision_DECISION_DENY || len(ev.Paths) != 1 || ev.Paths[0] != "/etc/passwd" {
		t.Fatalf("got %v paths %v", ev.Decision, ev.Paths)
	}
	if len(ev.Subcommands) != 2 || ev.Subcommands[1].GetDecision() != eventsv1.Decision_DECISION_DENY || ev.Subcommands[0].GetDecision() == eventsv1.Decision_DECISION_DENY {
		t.Fatalf("each subcommand is judged on its own: %v", ev.Subcommands)
	}
}

func TestSessionRuleAllowsTheSameCallAgain(t *testing.T) {
	p := workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED)
	req := Request{Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "npm install left-pad"}
	first := Evaluate(p, Verdict{}, req)
	if first.Decision != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("first: %v", first.Decision)
	}
	r := first.ProposedSessionRule
	r.RuleId = SessionRuleID("act_1")
	if got := strings.Join(r.GetCommands(), ","); got != "npm install" {
		t.Fatalf("proposed commands %q", got)
	}
	l := &Level{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION}
	l.Apply(DecideAddSessionRule(l, r, "act_1"))
	if DecideAddSessionRule(l, r, "act_1") != nil {
		t.Fatal("adding the same session rule twice must be a no-op")
	}
	p.Rules = l.Rules
	second := Evaluate(p, Verdict{}, req)
	if second.Decision != eventsv1.Decision_DECISION_ALLOW || second.Scope != "session" || second.RuleRefs[0] != r.RuleId {
		t.Fatalf("second: %v scope %s refs %v (%s)", second.Decision, second.Scope, second.RuleRefs, second.Reason)
	}
}

func TestSafeJSON(t *testing.T) {
	got := SafeJSON(`{"command":"ls","env":{"PATH":"/bin"},"api_key":"x","nested":[{"password":"p"},"Bearer abc.def"],"note":"sk-abcdefghijklmnopqrstuv"}`, 0)
	for _, leak := range []string{"/bin", `"x"`, `"p"`, "abc.def", "sk-abc"} {
		if strings.Contains(got, leak) {
			t.Errorf("%s leaks %s", got, leak)
		}
	}
	if !strings.Contains(got, `"command":"ls"`) {
		t.Errorf("%s lost the safe part", got)
	}
	if SafeJSON("not json", 0) == "not json" {
		t.Error("non-JSON input is not shown")
	}
	if got := SafeJSON(`{"a":"ééééé"}`, 9); !strings.HasSuffix(got, "…") || len(got) > 9+len("…") {
		t.Errorf("cut: %q", got)
	}
}

func TestPolicyLevels(t *testing.T) {
	tenant := &Level{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT}
	tenant.Apply(DecideSetMode(tenant, eventsv1.PermissionMode_PERMISSION_MODE_NEVER, false))
	session := &Level{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION}
	pc, rules, err := DecidePutRules(session, []*eventsv1.PermissionRule{{Effect: allowE, Tool: "fs.read"}})
	if err != nil || rules[0].GetRuleId() == "" || rules[0].GetSource() != eventsv1.RuleSource_RULE_SOURCE_SESSION {
		t.Fatalf("put rules: %v %v", rules, err)
	}
	session.Apply(pc)
	thread := &Level{Level: eventsv1.PolicyLevel_POLICY_LEVEL_THREAD}
	thread.Apply(DecideSetMode(thread, eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, true))
	p := Effective(tenant, nil, session, thread)
	if p.Mode != eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT || p.ModeLevel != eventsv1.PolicyLevel_POLICY_LEVEL_THREAD || !p.MayAsk() || len(p.Rules) != 1 {
		t.Fatalf("effective: %+v", p)
	}
	if DecideSetMode(thread, eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, true) != nil {
		t.Error("setting the same mode again is a no-op")
	}
	if p := Effective(tenant); p.MayAsk() {
		t.Error("never is non-interactive")
	}
	for _, bad := range [][]*eventsv1.PermissionRule{
		{{Tool: "x"}},
		{{Effect: allowE, Paths: []string{"relative/**"}}},
		{{RuleId: "a", Effect: allowE}, {RuleId: "a", Effect: denyE}},
		{{RuleId: "session-x", Effect: allowE}},
		{{Effect: allowE, Commands: []string{"  "}}},
	} {
		if _, _, err := DecidePutRules(session, bad); !fault.Is(err, fault.KindInvalid) {
			t.Errorf("%v: want an invalid field, got %v", bad, err)
		}
	}
}
