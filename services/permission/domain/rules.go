// Permission rules: how a rule matches a call's facets, how matches rank,
// and the session rule an approval proposes.

package domain

import (
	"strings"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// matchRules returns the strongest effect among the rules matching a facet
// (deny over ask over allow) and the rules that have it.
func matchRules(rules []*eventsv1.PermissionRule, name string, f facet, now time.Time) (Effect, []*eventsv1.PermissionRule) {
	best := EffectNone
	var matched []*eventsv1.PermissionRule
	for _, r := range rules {
		if t := r.GetExpiresAt(); t != nil && !now.IsZero() && !now.Before(t.AsTime()) {
			continue
		}
		if !ruleMatches(r, name, f) {
			continue
		}
		e := effectOf(r.GetEffect())
		switch {
		case rank(e) > rank(best):
			best, matched = e, []*eventsv1.PermissionRule{r}
		case e == best:
			matched = append(matched, r)
		}
	}
	return best, matched
}

func rank(e Effect) int {
	switch e {
	case EffectAllow:
		return 1
	case EffectAsk:
		return 2
	case EffectDeny:
		return 3
	}
	return 0
}

func effectOf(e eventsv1.RuleEffect) Effect {
	switch e {
	case eventsv1.RuleEffect_RULE_EFFECT_ALLOW:
		return EffectAllow
	case eventsv1.RuleEffect_RULE_EFFECT_DENY:
		return EffectDeny
	case eventsv1.RuleEffect_RULE_EFFECT_ASK:
		return EffectAsk
	}
	return EffectNone
}

// ruleMatches: every matcher the rule sets must match. An allow rule must
// cover everything the facet touches (all paths, all hosts, a literal
// command prefix); a deny or ask rule needs one hit, and treats what
// cannot be known (a path or command word only the shell can expand) as a
// hit: a restriction must not be dodged by writing $HOME instead of /home.
func ruleMatches(r *eventsv1.PermissionRule, name string, f facet) bool {
	tool := r.GetTool()
	if tool == "" {
		tool = "*"
	}
	if !MatchGlob(tool, name, 0) {
		return false
	}
	allow := r.GetEffect() == eventsv1.RuleEffect_RULE_EFFECT_ALLOW
	if globs := r.GetPaths(); len(globs) > 0 {
		all := append(append([]string{}, f.writes...), f.reads...)
		if allow {
			if len(all) == 0 || len(f.uncheckable) > 0 {
				return false
			}
			for _, p := range all {
				if !anyPathGlob(globs, p) {
					return false
				}
			}
		} else {
			hit := len(f.uncheckable) > 0
			for _, p := range all {
				hit = hit || anyPathGlob(globs, p)
			}
			if !hit {
				return false
			}
		}
	}
	if prefixes := r.GetCommands(); len(prefixes) > 0 {
		if f.argv == nil {
			return false
		}
		hit := false
		for _, c := range prefixes {
			hit = hit || commandPrefix(strings.Fields(c), f.argv, !allow && f.dynamic)
		}
		if !hit {
			return false
		}
	}
	if globs := r.GetHosts(); len(globs) > 0 {
		if allow {
			if len(f.hosts) == 0 {
				return false
			}
			for _, h := range f.hosts {
				if !anyHostGlob(globs, h) {
					return false
				}
			}
		} else {
			hit := f.network && len(f.hosts) == 0
			for _, h := range f.hosts {
				hit = hit || anyHostGlob(globs, h)
			}
			if !hit {
				return false
			}
		}
	}
	return true
}

func anyPathGlob(globs []string, p string) bool {
	for _, g := range globs {
		if MatchPathGlob(g, p) {
			return true
		}
	}
	return false
}

func anyHostGlob(globs []string, h string) bool {
	for _, g := range globs {
		if MatchGlob(strings.ToLower(g), h, '.') {
			return true
		}
	}
	return false
}

// commandPrefix: argv starts with the prefix's words ("*" matches any one
// word). With unknownMatches, a word only the shell can resolve matches
// too (for deny and ask rules).
func commandPrefix(prefix, argv []string, unknownMatches bool) bool {
	if len(argv) < len(prefix) {
		return false
	}
	for i, w := range prefix {
		a := argv[i]
		if i == 0 {
			a = baseName(a)
		}
		if w == "*" || a == w || unknownMatches && strings.ContainsAny(argv[i], "$`") {
			continue
		}
		return false
	}
	return true
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// proposeSessionRule is the narrowest rule that would have allowed this
// call: the same tool with the same command prefixes (the command and its
// subcommand word, "git push") or the same paths and hosts.
func proposeSessionRule(req Request, facets []facet) *eventsv1.PermissionRule {
	r := &eventsv1.PermissionRule{Effect: eventsv1.RuleEffect_RULE_EFFECT_ALLOW, Source: eventsv1.RuleSource_RULE_SOURCE_SESSION, Tool: req.Name}
	for _, f := range facets {
		if f.cmd != nil && len(f.argv) > 0 {
			words := []string{baseName(f.argv[0])}
			if len(f.argv) > 1 && isPlainWord(f.argv[1]) {
				words = append(words, f.argv[1])
			}
			r.Commands = append(r.Commands, strings.Join(words, " "))
			continue
		}
		r.Paths = append(r.Paths, f.writes...)
		r.Paths = append(r.Paths, f.reads...)
		r.Hosts = append(r.Hosts, f.hosts...)
	}
	r.Commands = dedupe(r.Commands)
	if len(r.Commands) > 0 {
		// Paths of a command line are covered by its commands' prefixes.
		r.Paths, r.Hosts = nil, nil
	}
	return r
}

func isPlainWord(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
