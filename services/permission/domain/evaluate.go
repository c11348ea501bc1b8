package domain

import (
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Request is what one evaluation is about.
type Request struct {
	Target  eventsv1.TargetKind
	Name    string
	Access  eventsv1.Access
	Paths   []string
	Command string
	Hosts   []string
	Cwd     string
	// Resolved maps a path as given to its target with symlinks followed,
	// as the executing host reported it.
	Resolved map[string]string
	Now      time.Time
}

// Violation is one target outside the sandbox.
type Violation struct {
	Kind   eventsv1.ViolationKind
	Target string
	Reason string
}

// Evaluation is a decision with everything that explains it.
type Evaluation struct {
	Final
	Category       Category
	RuleRefs       []string
	Destructive    bool
	ImpactScope    string
	RollbackAdvice string
	// "call" or "session" (allowed by a session rule).
	Scope       string
	ExpiresAt   time.Time
	Subcommands []*eventsv1.Subcommand
	Paths       []string
	Hosts       []string
	Violations  []Violation
	// Profile is the sandbox the call runs in (cwd filled in).
	Profile *eventsv1.SandboxProfile
	// ProposedSessionRule is what "allow_session" would add.
	ProposedSessionRule *eventsv1.PermissionRule
}

// facet is one judged unit: a subcommand, or the whole call.
type facet struct {
	argv        []string
	dynamic     bool
	writes      []string
	reads       []string
	uncheckable []string // paths given that cannot be normalized
	hosts       []string
	network     bool
	readOnly    bool
	destructive bool
	cmd         *Command
}

// Evaluate decides a request under a policy and the hooks' combined
// verdict. It is pure: the same inputs give the same evaluation.
func Evaluate(p Policy, hook Verdict, req Request) Evaluation {
	profile := proto.Clone(p.Sandbox).(*eventsv1.SandboxProfile)
	cwd := profile.GetCwd()
	if req.Cwd != "" {
		if c, err := NormalizePath(cwd, req.Cwd); err == nil {
			cwd = c
		} else {
			cwd = ""
		}
	}
	profile.Cwd = cwd

	// A profile that names no read roots reads its workspace: its write
	// roots and its own cwd, or, when it has none, the cwd of the call
	// (the worker sends its workspace, or a cwd inside its read roots).
	readRoots := profile.GetReadRoots()
	if len(readRoots) == 0 {
		if ws := p.Sandbox.GetCwd(); ws != "" {
			readRoots = []string{ws}
		} else if cwd != "" {
			readRoots = []string{cwd}
		}
	}
	readRoots = append(append([]string{}, readRoots...), profile.GetWriteRoots()...)

	var facets []facet
	unparsable := false
	var unbounded []string
	if req.Command != "" {
		cmds, err := ParseCommand(req.Command)
		if err != nil {
			unparsable = true
			facets = append(facets, facet{argv: []string{req.Command}, dynamic: true})
		}
		cur := cwd
		chain, chainMoved := -1, false
		for i := range cmds {
			c := &cmds[i]
			// A cd moves the cwd of the rest of its && chain only; after
			// the chain, where the shell is depends on what failed.
			if c.chain != chain {
				if chainMoved {
					cur = ""
				}
				chain, chainMoved = c.chain, false
			}
			f := facet{argv: effectiveArgv(c.Argv), dynamic: c.Dynamic, network: c.Network, hosts: c.Hosts,
				readOnly: c.ReadOnly, destructive: c.Destructive, cmd: c}
			addPaths(&f.writes, &f.uncheckable, cur, c.WritePaths)
			addPaths(&f.reads, &f.uncheckable, cur, c.ReadPaths)
			if c.Unbounded {
				unbounded = append(unbounded, strings.Join(c.Argv, " "))
			}
			switch c.Cwd {
			case CwdMoved:
				chainMoved = true
				if n, err := NormalizePath(cur, f.argv[len(f.argv)-1]); err == nil {
					cur = n
				} else {
					cur = ""
				}
			case CwdUnknown:
				chainMoved = true
				cur = ""
			}
			facets = append(facets, f)
		}
	}
	if len(req.Paths) > 0 || len(req.Hosts) > 0 || req.Command == "" {
		f := facet{hosts: lower(req.Hosts), network: req.Access == eventsv1.Access_ACCESS_NETWORK || len(req.Hosts) > 0}
		if req.Access == eventsv1.Access_ACCESS_WRITE {
			addPaths(&f.writes, &f.uncheckable, cwd, req.Paths)
		} else {
			addPaths(&f.reads, &f.uncheckable, cwd, req.Paths)
		}
		f.readOnly = req.Access == eventsv1.Access_ACCESS_READ && len(f.hosts) == 0
		facets = append(facets, f)
	}

	ev := Evaluation{Scope: "call", Profile: profile}
	// The sandbox boundary.
	resolved := map[string]string{}
	for k, v := range req.Resolved {
		nk, err1 := NormalizePath(cwd, k)
		nv, err2 := NormalizePath(cwd, v)
		if err1 == nil {
			if err2 != nil {
				nv = ""
			}
			resolved[nk] = nv
		}
	}
	readOutside, mutateOutside := false, unparsable
	if unparsable {
		ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_PROCESS, req.Command, "the command cannot be parsed, so its effects cannot be bounded"})
	}
	for _, u := range unbounded {
		mutateOutside = true
		ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_PROCESS, u, "the command runs code only the shell can know, so its effects cannot be bounded"})
	}
	mutating := false
	for _, f := range facets {
		for _, w := range f.writes {
			ev.Paths = append(ev.Paths, w)
			if why := outsideWrite(profile, w, resolved); why != "" {
				mutateOutside = true
				ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE, w, why})
			}
		}
		for _, r := range f.reads {
			ev.Paths = append(ev.Paths, r)
			if why := outsideRead(profile, readRoots, r, resolved); why != "" {
				readOutside = true
				ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ, r, why})
			}
		}
		for _, u := range f.uncheckable {
			kind := eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ
			if len(f.writes) > 0 || f.cmd != nil && len(f.cmd.WritePaths) > 0 {
				kind, mutateOutside = eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE, true
			} else {
				readOutside = true
			}
			ev.Violations = append(ev.Violations, Violation{kind, u, "the path cannot be checked against the sandbox"})
		}
		if f.network {
			mutating = true
			if len(f.hosts) == 0 && profile.GetNetwork() != eventsv1.NetworkMode_NETWORK_MODE_FULL {
				mutateOutside = true
				ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_NETWORK, "(unknown host)", "network access to an unknown host"})
			}
		}
		for _, h := range f.hosts {
			ev.Hosts = append(ev.Hosts, h)
			if why := outsideHost(profile, h); why != "" {
				mutateOutside = true
				ev.Violations = append(ev.Violations, Violation{eventsv1.ViolationKind_VIOLATION_KIND_NETWORK, h, why})
			}
		}
		if len(f.writes) > 0 || f.cmd != nil && !f.readOnly {
			mutating = true
		}
		if f.destructive {
			ev.Destructive = true
			ev.ImpactScope = joinNonEmpty(ev.ImpactScope, f.cmd.ImpactScope)
			ev.RollbackAdvice = joinNonEmpty(ev.RollbackAdvice, f.cmd.RollbackAdvice)
		}
	}
	// A command line is judged by what its subcommands do, not by the
	// shell tool's nominal access (always execute).
	if req.Command == "" && req.Access != eventsv1.Access_ACCESS_READ {
		mutating = true
	}
	switch {
	case mutateOutside || readOutside && mutating:
		ev.Category = MutateOutside
	case readOutside:
		ev.Category = ReadOutside
	case !mutating && req.Command != "":
		ev.Category = SafeCommand
	case !mutating:
		ev.Category = ReadInside
	default:
		ev.Category = MutateInside
	}

	// Rules, per facet; subcommands record their own decision.
	rule := Verdict{}
	allAllowed := len(facets) > 0
	var allowRefs, askRefs, denyRefs []string
	var allowRules []*eventsv1.PermissionRule
	denySource, askSource := eventsv1.DecisionSource_DECISION_SOURCE_RULE, eventsv1.DecisionSource_DECISION_SOURCE_RULE
	for _, f := range facets {
		eff, matched := matchRules(p.Rules, req.Name, f, req.Now)
		switch eff {
		case EffectDeny:
			for _, r := range matched {
				denyRefs = append(denyRefs, r.GetRuleId())
				if r.GetSource() == eventsv1.RuleSource_RULE_SOURCE_HOST {
					denySource = eventsv1.DecisionSource_DECISION_SOURCE_HOST_POLICY
				}
			}
		case EffectAsk:
			for _, r := range matched {
				askRefs = append(askRefs, r.GetRuleId())
				if r.GetSource() == eventsv1.RuleSource_RULE_SOURCE_HOST {
					askSource = eventsv1.DecisionSource_DECISION_SOURCE_HOST_POLICY
				}
			}
		case EffectAllow:
			for _, r := range matched {
				allowRefs = append(allowRefs, r.GetRuleId())
			}
			allowRules = append(allowRules, matched...)
		}
		if eff != EffectAllow {
			allAllowed = false
		}
		if f.cmd != nil {
			sub := &eventsv1.Subcommand{Argv: f.cmd.Argv, WritePaths: f.writes, ReadPaths: f.reads,
				Destructive: f.destructive, DestructiveReason: f.cmd.DestructiveReason}
			for _, r := range matched {
				sub.RuleRefs = append(sub.RuleRefs, r.GetRuleId())
			}
			subCat := facetCategory(profile, readRoots, f, resolved)
			sub.Decision = Combine(Verdict{Effect: eff}, Verdict{}, ModeVerdict(p.Mode, subCat, f.destructive), p.MayAsk()).Decision
			ev.Subcommands = append(ev.Subcommands, sub)
		}
	}
	switch {
	case len(denyRefs) > 0:
		rule = Verdict{EffectDeny, denySource, "denied by rule " + strings.Join(denyRefs, ", ")}
		ev.RuleRefs = denyRefs
	case len(askRefs) > 0:
		rule = Verdict{EffectAsk, askSource, "rule " + strings.Join(askRefs, ", ") + " asks"}
		ev.RuleRefs = askRefs
	case allAllowed:
		rule = Verdict{EffectAllow, eventsv1.DecisionSource_DECISION_SOURCE_RULE, "allowed by rule " + strings.Join(dedupe(allowRefs), ", ")}
		for _, r := range allowRules {
			if r.GetSource() == eventsv1.RuleSource_RULE_SOURCE_HOST {
				rule.Source = eventsv1.DecisionSource_DECISION_SOURCE_HOST_POLICY
			}
		}
		ev.RuleRefs = dedupe(allowRefs)
	}

	mode := ModeVerdict(p.Mode, ev.Category, ev.Destructive)
	if len(ev.Violations) > 0 && mode.Effect != EffectAllow {
		mode.Reason += " (" + ev.Violations[0].Target + ": " + ev.Violations[0].Reason + ")"
	}
	ev.Final = Combine(rule, hook, mode, p.MayAsk())

	// A decision made by allow rules holds as long as the rules do.
	if ev.Decision == eventsv1.Decision_DECISION_ALLOW || ev.Decision == eventsv1.Decision_DECISION_SANDBOXED {
		if rule.Effect == EffectAllow && hook.Effect != EffectAllow {
			for _, r := range allowRules {
				if strings.HasPrefix(r.GetRuleId(), sessionRulePrefix) {
					ev.Scope = "session"
				}
				if t := r.GetExpiresAt(); t != nil && (ev.ExpiresAt.IsZero() || t.AsTime().Before(ev.ExpiresAt)) {
					ev.ExpiresAt = t.AsTime()
				}
			}
		}
	}
	if ev.Decision == eventsv1.Decision_DECISION_ASK {
		ev.ProposedSessionRule = proposeSessionRule(req, facets)
	}
	return ev
}

func addPaths(dst, uncheckable *[]string, cwd string, raw []string) {
	for _, p := range raw {
		if strings.ContainsAny(p, "*?[$`") || braceExpands(p) || strings.Contains(p, "@(") || strings.Contains(p, "!(") || strings.Contains(p, "+(") {
			*uncheckable = append(*uncheckable, p)
			continue
		}
		n, err := NormalizePath(cwd, p)
		if err != nil {
			*uncheckable = append(*uncheckable, p)
			continue
		}
		*dst = append(*dst, n)
	}
}

// braceExpands: the shell turns the word into several ({a,b}, {1..3});
// extended globs (@(a|b)) are caught beside it in addPaths.
func braceExpands(s string) bool {
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			return false
		}
		s = s[open+1:]
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return false
		}
		if in := s[:end]; strings.Contains(in, ",") || strings.Contains(in, "..") {
			return true
		}
	}
}

func outsideWrite(p *eventsv1.SandboxProfile, path string, resolved map[string]string) string {
	switch p.GetMode() {
	case eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS:
		return ""
	case eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE:
		if !WithinAny(p.GetWriteRoots(), path) {
			return "outside the write roots"
		}
		if r, ok := resolved[path]; ok && (r == "" || !WithinAny(p.GetWriteRoots(), r)) {
			return "resolves (through a symlink) to " + r + ", outside the write roots"
		}
		return ""
	default:
		return "the sandbox is read-only"
	}
}

// outsideRead: roots are the read roots with the write roots (see
// Evaluate: a profile without read roots reads its workspace). With no
// root at all nothing is inside.
func outsideRead(p *eventsv1.SandboxProfile, roots []string, path string, resolved map[string]string) string {
	if p.GetMode() == eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS {
		return ""
	}
	if !WithinAny(roots, path) {
		return "outside the read roots"
	}
	if r, ok := resolved[path]; ok && (r == "" || !WithinAny(roots, r)) {
		return "resolves (through a symlink) to " + r + ", outside the read roots"
	}
	return ""
}

func outsideHost(p *eventsv1.SandboxProfile, host string) string {
	switch p.GetNetwork() {
	case eventsv1.NetworkMode_NETWORK_MODE_FULL:
		return ""
	case eventsv1.NetworkMode_NETWORK_MODE_ALLOWLIST:
		for _, g := range p.GetAllowedHosts() {
			if MatchGlob(strings.ToLower(g), host, '.') {
				return ""
			}
		}
		return "host not in the sandbox's allowed hosts"
	default:
		return "the sandbox has no network"
	}
}

func facetCategory(p *eventsv1.SandboxProfile, readRoots []string, f facet, resolved map[string]string) Category {
	out, readOut := len(f.uncheckable) > 0, false
	for _, w := range f.writes {
		if outsideWrite(p, w, resolved) != "" {
			out = true
		}
	}
	for _, r := range f.reads {
		if outsideRead(p, readRoots, r, resolved) != "" {
			readOut = true
		}
	}
	for _, h := range f.hosts {
		if outsideHost(p, h) != "" {
			out = true
		}
	}
	mutating := len(f.writes) > 0 || f.network || !f.readOnly
	switch {
	case out || readOut && mutating:
		return MutateOutside
	case readOut:
		return ReadOutside
	case mutating:
		return MutateInside
	}
	return SafeCommand
}

func lower(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ToLower(s)
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || strings.Contains(a, b):
		return a
	}
	return a + "; " + b
}

// ExpiresAtProto is the evaluation's expiry as a timestamp (nil: none).
func (e Evaluation) ExpiresAtProto() *timestamppb.Timestamp {
	if e.ExpiresAt.IsZero() {
		return nil
	}
	return timestamppb.New(e.ExpiresAt)
}
