// Package events owns the registry of runtime event classes: every type
// string of the spec, the service that is its only writer, and the scope ids
// an event of that class must carry. It also builds and checks envelopes.
package events

import (
	"regexp"
	"sort"
)

// Owner is the service that alone writes an event family
// (docs/architecture.md, "Owners").
type Owner string

const (
	Control    Owner = "control"
	Tasks      Owner = "tasks"
	Routing    Owner = "routing"
	Permission Owner = "permission"
	Evidence   Owner = "evidence"
)

// Owners lists every service in a stable order.
var Owners = []Owner{Control, Tasks, Routing, Permission, Evidence}

// Scope names an envelope id field.
type Scope string

const (
	SessionID  Scope = "session_id"
	ThreadID   Scope = "thread_id"
	TurnID     Scope = "turn_id"
	TaskID     Scope = "task_id"
	RunID      Scope = "run_id"
	StepID     Scope = "step_id"
	ToolCallID Scope = "tool_call_id"
	ActionID   Scope = "action_id"
	SubagentID Scope = "subagent_id"
	ProcessID  Scope = "process_id"
	JobID      Scope = "job_id"
	ChannelID  Scope = "channel_id"
	EvidenceID Scope = "evidence_id"
)

// Class describes one event type.
type Class struct {
	Type     string
	Owner    Owner
	Requires []Scope
	// PayloadField names the envelope's payload field for this class.
	PayloadField string
}

// classes is every event class of the spec: the standard classes, every
// expanded family, and the classes named only in contract pages
// (channel.peer_task.*, subagent.output).
var classes = buildClasses(map[Owner][]string{
	Control: {
		"session.created", "session.updated",
		"thread.started", "thread.updated",
		"turn.submitted", "turn.started", "turn.completed", "turn.failed",
		"run.status",
		"model.requested", "model.delta", "model.completed", "model.failed",
		"reasoning.delta", "reasoning.summary",
		"tool.catalog.resolved", "tool.started", "tool.args", "tool.progress", "tool.result", "tool.failed",
		"action.required", "action.resolved",
		"queue.changed",
		"context.resolved", "context.compaction.started", "context.compaction.completed", "context.compaction.failed",
		"artifact.changed",
		"subagent.spawned", "subagent.status", "subagent.input", "subagent.output", "subagent.completed", "subagent.failed", "subagent.closed",
		"snapshot.updated", "snapshot.repaired",
		"runtime.warning", "runtime.error",
		"process.started", "process.output", "process.input", "process.completed", "process.failed", "process.terminated",
		"channel.connected", "channel.disconnected", "channel.resumed", "channel.message",
		"channel.permission_forwarded", "channel.permission_returned",
		"channel.peer_task.linked", "channel.peer_task.updated",
		"output.spilled", "output.truncated", "output.redacted", "output.expired",
		"history.window.loaded", "history.reconstructed", "history.rollback.started", "history.rollback.completed",
	},
	Tasks: {
		"task.created", "task.accepted", "task.queued", "task.started", "task.updated", "task.progress",
		"task.waiting", "task.blocked", "task.paused", "task.resumed", "task.retrying",
		"task.cancel_requested", "task.cancelled", "task.timed_out", "task.failed", "task.lost",
		"task.completed", "task.archived",
		"task.delegated", "task.dependency.updated",
		"task.attempt.started", "task.attempt.completed", "task.attempt.failed",
		"job.created", "job.started", "job.progress", "job.item.started", "job.item.completed",
		"job.item.failed", "job.completed", "job.failed", "job.cancelled",
	},
	Routing: {
		"task.profile.resolved",
		"routing.candidates.resolved", "routing.decided", "routing.fallback.applied",
		"routing.not_possible", "routing.single_candidate",
		"cost.estimated", "cost.recorded", "rate_limit.hit", "quota.low", "quota.blocked",
		"limit.changed",
	},
	Permission: {
		"permission.evaluated", "permission.requested", "permission.resolved",
		"sandbox.applied", "sandbox.violation",
		"hook.started", "hook.completed", "hook.failed",
		"policy.changed",
	},
	Evidence: {
		"evidence.changed",
		"benchmark.dataset.resolved", "benchmark.configuration.resolved",
		"benchmark.trial.started", "benchmark.trial.completed", "benchmark.trial.failed",
		"benchmark.reward.recorded", "benchmark.comparison.completed",
	},
})

// scopeRules are the required scope ids by type pattern. The Lime profile
// schema's if/then rules are the minimum; process, job and channel facts
// also need their own id to be joinable.
var scopeRules = []struct {
	pattern  *regexp.Regexp
	requires []Scope
}{
	{regexp.MustCompile(`^session\.`), []Scope{SessionID}},
	{regexp.MustCompile(`^thread\.`), []Scope{SessionID, ThreadID}},
	{regexp.MustCompile(`^(turn|model|reasoning|tool|action|permission|sandbox|hook|context|routing|cost|rate_limit|quota)\.`), []Scope{SessionID, ThreadID, TurnID}},
	{regexp.MustCompile(`^tool\.`), []Scope{StepID, ToolCallID}},
	{regexp.MustCompile(`^action\.`), []Scope{ActionID}},
	{regexp.MustCompile(`^task\.`), []Scope{TaskID}},
	{regexp.MustCompile(`^task\.attempt\.`), []Scope{RunID}},
	{regexp.MustCompile(`^subagent\.`), []Scope{SubagentID}},
	{regexp.MustCompile(`^evidence\.changed$`), []Scope{EvidenceID}},
	{regexp.MustCompile(`^benchmark\.(trial|reward)\.`), []Scope{TaskID, RunID}},
	{regexp.MustCompile(`^benchmark\.trial\.started$`), []Scope{ThreadID, TurnID}},
	{regexp.MustCompile(`^process\.`), []Scope{ProcessID}},
	{regexp.MustCompile(`^job\.`), []Scope{JobID}},
	{regexp.MustCompile(`^channel\.`), []Scope{ChannelID}},
}

func buildClasses(byOwner map[Owner][]string) map[string]Class {
	out := make(map[string]Class)
	for owner, types := range byOwner {
		for _, typ := range types {
			if _, dup := out[typ]; dup {
				panic("events: class registered twice: " + typ)
			}
			out[typ] = Class{Type: typ, Owner: owner, Requires: requiredScopes(typ), PayloadField: PayloadField(typ)}
		}
	}
	return out
}

func requiredScopes(typ string) []Scope {
	var req []Scope
	seen := map[Scope]bool{}
	for _, r := range scopeRules {
		if !r.pattern.MatchString(typ) {
			continue
		}
		for _, s := range r.requires {
			if !seen[s] {
				seen[s] = true
				req = append(req, s)
			}
		}
	}
	return req
}

// Lookup returns the class of an event type.
func Lookup(typ string) (Class, bool) {
	c, ok := classes[typ]
	return c, ok
}

// Classes returns every registered class sorted by type.
func Classes() []Class {
	out := make([]Class, 0, len(classes))
	for _, c := range classes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}
