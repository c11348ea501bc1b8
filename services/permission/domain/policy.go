package domain

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

func fieldErr(field, format string, args ...any) error {
	return fault.Invalid(field, format, args...)
}

// Level is one policy level's own settings: the state of a policy
// aggregate.
type Level struct {
	Level       eventsv1.PolicyLevel
	ScopeID     string
	Mode        eventsv1.PermissionMode
	Interactive bool
	ModeSet     bool
	Rules       []*eventsv1.PermissionRule
	Sandbox     *eventsv1.SandboxProfile
	// Hooks registered at this level (the tenant level only, today).
	Hooks []*eventsv1.Hook
}

// Apply folds one policy.changed into the level. It is total: every
// change kind replaces or extends the state, so replaying the log
// rebuilds the level exactly.
func (l *Level) Apply(pc *eventsv1.PolicyChanged) {
	switch c := pc.GetChange().(type) {
	case *eventsv1.PolicyChanged_ModeSet_:
		l.Mode, l.Interactive, l.ModeSet = c.ModeSet.GetMode(), c.ModeSet.GetInteractive(), true
	case *eventsv1.PolicyChanged_RulesPut_:
		// Session rules a human granted survive a PutRules: they are the
		// human's, not the policy author's.
		var kept []*eventsv1.PermissionRule
		for _, r := range l.Rules {
			if strings.HasPrefix(r.GetRuleId(), sessionRulePrefix) {
				kept = append(kept, r)
			}
		}
		l.Rules = append(append([]*eventsv1.PermissionRule{}, c.RulesPut.GetRules()...), kept...)
	case *eventsv1.PolicyChanged_SessionRuleAdded_:
		l.Rules = append(l.Rules, c.SessionRuleAdded.GetRule())
	case *eventsv1.PolicyChanged_SandboxSet_:
		l.Sandbox = c.SandboxSet.GetProfile()
	case *eventsv1.PolicyChanged_HookRegistered_:
		l.Hooks = append(removeHook(l.Hooks, c.HookRegistered.GetHook().GetHookId()), c.HookRegistered.GetHook())
	case *eventsv1.PolicyChanged_HookRemoved_:
		l.Hooks = removeHook(l.Hooks, c.HookRemoved.GetHookId())
	}
}

func removeHook(hooks []*eventsv1.Hook, id string) []*eventsv1.Hook {
	out := make([]*eventsv1.Hook, 0, len(hooks))
	for _, h := range hooks {
		if h.GetHookId() != id {
			out = append(out, h)
		}
	}
	return out
}

// Policy is what applies to one scope: the most specific level's mode,
// interactivity and sandbox, and every level's rules.
type Policy struct {
	Mode         eventsv1.PermissionMode
	ModeLevel    eventsv1.PolicyLevel
	Interactive  bool
	Rules        []*eventsv1.PermissionRule
	Sandbox      *eventsv1.SandboxProfile
	SandboxLevel eventsv1.PolicyLevel
}

// DefaultSandbox applies when no level sets one: read-only, no network.
func DefaultSandbox() *eventsv1.SandboxProfile {
	return &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY, Network: eventsv1.NetworkMode_NETWORK_MODE_NONE}
}

// Effective merges levels given from the least specific (tenant) to the
// most specific (thread); nil levels are skipped. With no mode set
// anywhere the mode is default and interactive: a human may be asked.
func Effective(levels ...*Level) Policy {
	p := Policy{
		Mode: eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, ModeLevel: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT,
		Interactive: true, Sandbox: DefaultSandbox(),
	}
	for _, l := range levels {
		if l == nil {
			continue
		}
		if l.ModeSet {
			p.Mode, p.ModeLevel, p.Interactive = l.Mode, l.Level, l.Interactive
		}
		if l.Sandbox != nil {
			p.Sandbox, p.SandboxLevel = l.Sandbox, l.Level
		}
		p.Rules = append(p.Rules, l.Rules...)
	}
	return p
}

// MayAsk reports whether a human may be asked under the policy.
func (p Policy) MayAsk() bool { return p.Interactive && !NonInteractive(p.Mode) }

// DecideSetMode returns the change, or nil when the level already says it.
func DecideSetMode(l *Level, mode eventsv1.PermissionMode, interactive bool) *eventsv1.PolicyChanged {
	if l.ModeSet && l.Mode == mode && l.Interactive == interactive {
		return nil
	}
	return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_ModeSet_{ModeSet: &eventsv1.PolicyChanged_ModeSet{Mode: mode, Interactive: interactive}}}
}

// defaultSource is the source of a rule written at a level without one.
func defaultSource(level eventsv1.PolicyLevel) eventsv1.RuleSource {
	switch level {
	case eventsv1.PolicyLevel_POLICY_LEVEL_TENANT:
		return eventsv1.RuleSource_RULE_SOURCE_HOST
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		return eventsv1.RuleSource_RULE_SOURCE_WORKSPACE
	default:
		return eventsv1.RuleSource_RULE_SOURCE_SESSION
	}
}

const sessionRulePrefix = "session-"

// DecidePutRules validates a level's new rule set and returns the change
// (nil when identical). Rule ids are generated where missing; patterns
// must be usable as written.
func DecidePutRules(l *Level, rules []*eventsv1.PermissionRule) (*eventsv1.PolicyChanged, []*eventsv1.PermissionRule, error) {
	out := make([]*eventsv1.PermissionRule, 0, len(rules))
	seen := map[string]bool{}
	for i, in := range rules {
		r := proto.Clone(in).(*eventsv1.PermissionRule)
		f := func(name string) string { return fmt.Sprintf("rules[%d].%s", i, name) }
		if r.GetRuleId() == "" {
			r.RuleId = ids.New("rule")
		} else if err := ids.Validate(r.GetRuleId()); err != nil {
			return nil, nil, fieldErr(f("rule_id"), "%v", err)
		} else if strings.HasPrefix(r.GetRuleId(), sessionRulePrefix) {
			return nil, nil, fieldErr(f("rule_id"), "the prefix %q is reserved for rules a human granted", sessionRulePrefix)
		}
		if seen[r.GetRuleId()] {
			return nil, nil, fieldErr(f("rule_id"), "%q appears twice", r.GetRuleId())
		}
		seen[r.GetRuleId()] = true
		if r.GetEffect() == eventsv1.RuleEffect_RULE_EFFECT_UNSPECIFIED {
			return nil, nil, fieldErr(f("effect"), "must be allow, deny or ask")
		}
		if r.GetSource() == eventsv1.RuleSource_RULE_SOURCE_UNSPECIFIED {
			r.Source = defaultSource(l.Level)
		}
		if r.GetTool() == "" {
			r.Tool = "*"
		}
		for j, p := range r.GetPaths() {
			if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**") {
				return nil, nil, fieldErr(fmt.Sprintf("rules[%d].paths[%d]", i, j), "%q must be absolute (start with / or **)", p)
			}
			if err := checkText(p); err != nil {
				return nil, nil, fieldErr(fmt.Sprintf("rules[%d].paths[%d]", i, j), "%v", err)
			}
		}
		for j, c := range r.GetCommands() {
			if len(strings.Fields(c)) == 0 {
				return nil, nil, fieldErr(fmt.Sprintf("rules[%d].commands[%d]", i, j), "must name at least one word")
			}
		}
		out = append(out, r)
	}
	current := make([]*eventsv1.PermissionRule, 0, len(l.Rules))
	for _, r := range l.Rules {
		if !strings.HasPrefix(r.GetRuleId(), sessionRulePrefix) {
			current = append(current, r)
		}
	}
	if sameRules(current, out) {
		return nil, current, nil
	}
	return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_RulesPut_{RulesPut: &eventsv1.PolicyChanged_RulesPut{Rules: out}}}, out, nil
}

func sameRules(a, b []*eventsv1.PermissionRule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		// Rules given without ids get new ones, so such a put always
		// changes the level; with ids it is idempotent.
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// DecideSetSandbox validates and normalizes a profile.
func DecideSetSandbox(l *Level, in *eventsv1.SandboxProfile) (*eventsv1.PolicyChanged, *eventsv1.SandboxProfile, error) {
	p := proto.Clone(in).(*eventsv1.SandboxProfile)
	if p.GetMode() == eventsv1.SandboxMode_SANDBOX_MODE_UNSPECIFIED {
		return nil, nil, fieldErr("profile.mode", "must be read_only, workspace_write or full_access")
	}
	if p.GetNetwork() == eventsv1.NetworkMode_NETWORK_MODE_UNSPECIFIED {
		p.Network = eventsv1.NetworkMode_NETWORK_MODE_NONE
	}
	if p.GetCwd() != "" {
		if !strings.HasPrefix(p.GetCwd(), "/") {
			return nil, nil, fieldErr("profile.cwd", "%q must be absolute", p.GetCwd())
		}
		cwd, err := NormalizePath("/", p.GetCwd())
		if err != nil {
			return nil, nil, fieldErr("profile.cwd", "%v", err)
		}
		p.Cwd = cwd
	}
	var err error
	if p.ReadRoots, err = NormalizeRoots(p.GetReadRoots()); err != nil {
		return nil, nil, fieldErr("profile.read_roots", "%v", err)
	}
	if p.WriteRoots, err = NormalizeRoots(p.GetWriteRoots()); err != nil {
		return nil, nil, fieldErr("profile.write_roots", "%v", err)
	}
	p.ViolationRefs = nil
	if proto.Equal(l.Sandbox, p) {
		return nil, p, nil
	}
	return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_SandboxSet_{SandboxSet: &eventsv1.PolicyChanged_SandboxSet{Profile: p}}}, p, nil
}

// Hook timeouts: the default, and the bound no hook may exceed (a hook
// sits on the path of every tool call).
const (
	DefaultHookTimeout = 5 * time.Second
	MaxHookTimeout     = 60 * time.Second
)

// DecideRegisterHook validates a hook, whose target must name a host of
// hosts (nil: any); registering the same hook again is a no-op, and an id
// taken by a different hook is refused.
func DecideRegisterHook(l *Level, in *eventsv1.Hook, hosts *HookHosts) (*eventsv1.PolicyChanged, *eventsv1.Hook, error) {
	h := proto.Clone(in).(*eventsv1.Hook)
	if h.GetHookId() == "" {
		h.HookId = ids.New("hook")
	} else if err := ids.Validate(h.GetHookId()); err != nil {
		return nil, nil, fieldErr("hook.hook_id", "%v", err)
	}
	if h.GetPoint() == eventsv1.HookPoint_HOOK_POINT_UNSPECIFIED {
		return nil, nil, fieldErr("hook.point", "must name a hook point")
	}
	switch t := h.GetHandler().(type) {
	case *eventsv1.Hook_GrpcTarget:
		if t.GrpcTarget == "" || strings.ContainsAny(t.GrpcTarget, " \t\n") {
			return nil, nil, fieldErr("hook.grpc_target", "must be a gRPC target such as host:port")
		}
	case *eventsv1.Hook_HttpUrl:
		u, err := url.Parse(t.HttpUrl)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, fieldErr("hook.http_url", "must be an http or https URL")
		}
	default:
		return nil, nil, fieldErr("hook.handler", "set grpc_target or http_url")
	}
	if err := hosts.CheckHookTarget(h); err != nil {
		return nil, nil, err
	}
	if h.GetToolMatcher() != "" {
		if err := checkText(h.GetToolMatcher()); err != nil {
			return nil, nil, fieldErr("hook.tool_matcher", "%v", err)
		}
	}
	switch d := h.GetTimeout().AsDuration(); {
	case h.GetTimeout() == nil || d == 0:
		h.Timeout = durationpb.New(DefaultHookTimeout)
	case d < 0 || d > MaxHookTimeout:
		return nil, nil, fieldErr("hook.timeout", "must be between 0 and %s", MaxHookTimeout)
	}
	if h.GetRisk() == eventsv1.HookRisk_HOOK_RISK_UNSPECIFIED {
		// A hook that does not say is treated as guarding: failing closed
		// is the safe default.
		h.Risk = eventsv1.HookRisk_HOOK_RISK_HIGH
	}
	if h.GetWorkspaceId() != "" {
		if err := ids.Validate(h.GetWorkspaceId()); err != nil {
			return nil, nil, fieldErr("hook.workspace_id", "%v", err)
		}
	}
	for _, existing := range l.Hooks {
		if existing.GetHookId() == h.GetHookId() {
			if proto.Equal(existing, h) {
				return nil, existing, nil
			}
			return nil, nil, fault.AlreadyExists("hook", h.GetHookId(), "registered with other settings; remove it first or use another id")
		}
	}
	return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_HookRegistered_{HookRegistered: &eventsv1.PolicyChanged_HookRegistered{Hook: h}}}, h, nil
}

// DecideRemoveHook removes a registered hook.
func DecideRemoveHook(l *Level, id string) (*eventsv1.PolicyChanged, error) {
	for _, h := range l.Hooks {
		if h.GetHookId() == id {
			return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_HookRemoved_{HookRemoved: &eventsv1.PolicyChanged_HookRemoved{HookId: id}}}, nil
		}
	}
	return nil, fault.NotFound("hook", id)
}

// SessionRuleID is the id of the rule an "allow_session" answer to an
// action adds: derived from the action so the rule is added once however
// often the answer is delivered.
func SessionRuleID(actionID string) string { return sessionRulePrefix + actionID }

// DecideAddSessionRule adds a granted rule once.
func DecideAddSessionRule(l *Level, rule *eventsv1.PermissionRule, actionID string) *eventsv1.PolicyChanged {
	for _, r := range l.Rules {
		if r.GetRuleId() == rule.GetRuleId() {
			return nil
		}
	}
	return &eventsv1.PolicyChanged{Change: &eventsv1.PolicyChanged_SessionRuleAdded_{SessionRuleAdded: &eventsv1.PolicyChanged_SessionRuleAdded{Rule: rule, ActionId: actionID}}}
}

// HooksFor returns the hooks that run at a point for a tool in a
// workspace, in registration order.
func HooksFor(hooks []*eventsv1.Hook, point eventsv1.HookPoint, tool, workspace string) []*eventsv1.Hook {
	var out []*eventsv1.Hook
	for _, h := range hooks {
		if h.GetPoint() != point {
			continue
		}
		if h.GetWorkspaceId() != "" && h.GetWorkspaceId() != workspace {
			continue
		}
		if m := h.GetToolMatcher(); m != "" && tool != "" && !MatchGlob(m, tool, 0) {
			continue
		}
		out = append(out, h)
	}
	return out
}
