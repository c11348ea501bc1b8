package worker

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// RedactionRule replaces what its pattern matches with
// "[REDACTED:<name>]" before output is stored, reported or shown to the
// model.
type RedactionRule struct {
	Name    string
	Pattern *regexp.Regexp
}

// DefaultRedactionRules catch the common credential shapes. They are
// deliberately narrow: a rule that matches ordinary output hides what the
// user needs to see.
var DefaultRedactionRules = []RedactionRule{
	{"private_key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)},
	{"aws_access_key_id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"github_token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`)},
	{"api_key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
	{"bearer_token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}`)},
	{"secret_assignment", regexp.MustCompile(`(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token)\s*[:=]\s*["']?[^\s"']{6,}`)},
}

// Output policy defaults.
const (
	// DefaultOutputBudget is how much of a result the event and the
	// transcript carry inline; above it the output is spilled.
	DefaultOutputBudget = 16 << 10
	// previewBytes is the head of the output a tool.result event carries.
	previewBytes = 2000
	// maxStoredOutput is what one StoreOutput call takes (the RPC's
	// limit); a larger capture is stored truncated.
	maxStoredOutput = 3 << 20
)

// redact applies the rules and counts matches per rule.
func redact(rules []RedactionRule, s string) (string, map[string]int) {
	var hits map[string]int
	for _, r := range rules {
		n := 0
		s = r.Pattern.ReplaceAllStringFunc(s, func(string) string {
			n++
			return "[REDACTED:" + r.Name + "]"
		})
		if n > 0 {
			if hits == nil {
				hits = map[string]int{}
			}
			hits[r.Name] = n
		}
	}
	return s, hits
}

func hitSummary(hits map[string]int) string {
	names := make([]string, 0, len(hits))
	for n := range hits {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s×%d", n, hits[n])
	}
	return strings.Join(parts, ", ")
}

// head and tail return at most n bytes of s from its start or its end,
// on a rune boundary.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// shaped is a tool's output made fit for the log and the transcript.
type shaped struct {
	content string // what the model gets
	preview string // what tool.result carries
	ref     *commonv1.OutputRef
	facts   []*eventsv1.RuntimeEvent // output.* facts, before tool.result
}

// shapeOutput applies the output policy to a tool's result: secrets are
// redacted first (nothing stored, reported or sent to the model keeps
// them), output above the inline budget is stored through StoreOutput and
// referenced (output.spilled), and a capture the tool had to cut is said
// (output.truncated). The model gets the head and the tail of a spilled
// output with the ref in between (the spec's head-tail policy).
func (tu *turn) shapeOutput(ctx context.Context, step, call string, out string, truncated bool, produced int) (shaped, error) {
	w := tu.w
	kept := len(out)
	out, hits := redact(w.cfg.RedactionRules, out)
	var sh shaped
	budget := w.cfg.OutputBudget
	spill := len(out) > budget
	if spill {
		stored, cut := out, truncated
		if len(stored) > maxStoredOutput {
			stored, cut = head(stored, maxStoredOutput), true
			kept = len(stored)
		}
		resp, err := w.control.StoreOutput(ctx, &controlv1.StoreOutputRequest{
			TurnId: tu.t.GetTurnId(), ToolCallId: call, MediaType: "text/plain; charset=utf-8",
			Content: []byte(stored), Truncated: cut, Redacted: len(hits) > 0,
		})
		if err != nil {
			return sh, err
		}
		sh.ref = resp.GetOutput()
		sh.facts = append(sh.facts, tu.event("output.spilled", step, call, &eventsv1.RuntimeEvent_OutputSpilled{OutputSpilled: &eventsv1.OutputFact{
			Output: sh.ref, Reason: fmt.Sprintf("%d bytes are above the inline budget of %d bytes", len(out), budget)}}))
		truncated = cut
		half := budget / 2
		sh.content = head(out, half) +
			fmt.Sprintf("\n[… %d bytes in the middle omitted; the whole output (%d bytes) is stored as %s …]\n", len(out)-2*half, len(stored), sh.ref.GetUri()) +
			tail(out, half)
	} else {
		sh.content = out
	}
	if len(hits) > 0 {
		sh.facts = append(sh.facts, tu.event("output.redacted", step, call, &eventsv1.RuntimeEvent_OutputRedacted{OutputRedacted: &eventsv1.OutputFact{
			Output: sh.ref, Reason: "matched redaction rules: " + hitSummary(hits)}}))
	}
	if truncated {
		sh.facts = append(sh.facts, tu.event("output.truncated", step, call, &eventsv1.RuntimeEvent_OutputTruncated{OutputTruncated: &eventsv1.OutputFact{
			Output: sh.ref, Reason: fmt.Sprintf("the tool produced %d bytes; %d were kept", produced, kept)}}))
		sh.content += fmt.Sprintf("\n[output truncated: the tool produced %d bytes; %d were kept]", produced, kept)
	}
	sh.preview = head(out, previewBytes)
	if len(out) > previewBytes {
		sh.preview += "…"
	}
	return sh, nil
}
