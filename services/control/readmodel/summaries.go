// What the control read model joins from other services' facts: the
// thread's summaries, incidents and refusals.

package readmodel

import (
	"strings"

	"github.com/agentruntime/agentruntime/pkg/enums"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// maxIncidents bounds the incidents a thread keeps in its read model; older
// ones remain in the log and the evidence export.
const maxIncidents = 50

// summary records another owner's fact on the thread's joined summary: the
// state becomes known at this sequence; the details stay in the owner's
// events and its own summary RPC.
func (t *tx) summary(field func(*controlv1.ThreadRead) **controlv1.Summary) {
	th, ok := t.thread(t.ev.GetThreadId())
	if !ok {
		return
	}
	s := field(th)
	if *s == nil {
		*s = &controlv1.Summary{}
	}
	(*s).State = commonv1.FactState_FACT_STATE_KNOWN
	if (*s).Facts == nil {
		(*s).Facts = map[string]string{}
	}
	(*s).Facts["last_event"] = t.ev.GetType()
	if t.ev.GetTurnId() != "" {
		(*s).Facts["last_turn_id"] = t.ev.GetTurnId()
	}
	(*s).Sequence = t.seq()
	t.touchThread(th)
}

func (t *tx) incident() {
	th, ok := t.thread(t.ev.GetThreadId())
	if !ok {
		return
	}
	t.addIncident(th, &controlv1.Incident{Type: t.ev.GetType(), TurnId: t.ev.GetTurnId(), Category: incidentCategory(t.ev),
		Message: incidentMessage(t.ev), Sequence: t.seq()})
	t.touchThread(th)
}

// Refusal facts on the thread's permission summary: why the last refused
// call was refused, joined from the permission service's facts.
const (
	RefusalCause        = "refusal_cause"         // rule, mode, hook, host_policy, sandbox, sandbox_violation, human
	RefusalReason       = "refusal_reason"        // the decision's reason
	RefusalRuleRefs     = "refusal_rule_refs"     // comma-separated rule refs
	RefusalHookRunIDs   = "refusal_hook_run_ids"  // comma-separated hook run ids
	RefusalTool         = "refusal_tool"          // the tool or target name
	RefusalPaths        = "refusal_paths"         // comma-separated paths
	RefusalCommand      = "refusal_command"       // the command's subcommands, or the violated host
	RefusalToolCallID   = "refusal_tool_call_id"  // the refused call
	RefusalEvaluationID = "refusal_evaluation_id" // the permission evaluation
	RefusalActionID     = "refusal_action_id"     // the approval a person denied
	RefusalViolation    = "refusal_violation"     // what the refusing decision's sandbox check found
)

// maxRefusals bounds the refusals a thread keeps (the oldest go first).
const maxRefusals = 50

// refusal records why a call was refused when the fact says it was: a
// deny decision (rule, mode, hook, host policy, sandbox), a blocked
// sandbox violation, or a person's denial of an approval. Each refusal is
// kept in the thread's refusals with its structured cause; the last one's
// is also in permission.facts (refusal_* keys).
func (t *tx) refusal() {
	ev := t.ev
	r := &controlv1.Refusal{ToolCallId: ev.GetToolCallId(), TurnId: ev.GetTurnId(), Sequence: ev.GetSequence()}
	switch {
	case ev.GetPermissionEvaluated() != nil:
		pe := ev.GetPermissionEvaluated()
		if pe.GetDecision() != eventsv1.Decision_DECISION_DENY {
			return
		}
		r.Cause, r.Reason = enums.Word(pe.GetDecisionSource()), pe.GetDecisionReason()
		r.RuleRefs, r.HookRunIds, r.Tool, r.Paths = pe.GetRuleRefs(), pe.GetHookRunIds(), pe.GetName(), pe.GetPaths()
		var cmds []string
		for _, c := range pe.GetSubcommands() {
			cmds = append(cmds, strings.Join(c.GetArgv(), " "))
		}
		r.Command = strings.Join(cmds, " && ")
		r.EvaluationId = pe.GetEvaluationId()
	case ev.GetSandboxViolation() != nil:
		v := ev.GetSandboxViolation()
		if !v.GetBlocked() {
			return
		}
		if th, ok := t.thread(ev.GetThreadId()); ok && v.GetEvaluationId() != "" {
			if last := lastRefusal(th); last != nil && last.GetEvaluationId() == v.GetEvaluationId() {
				// A violation the refusing decision found: the decision's
				// cause stands, the violation is said beside it.
				last.Violation = v.GetTarget()
				if th.Permission != nil {
					th.Permission.Facts[RefusalViolation] = v.GetTarget()
				}
				return
			}
		}
		r.Cause, r.Reason = "sandbox_violation", v.GetReason()
		if v.GetKind() == eventsv1.ViolationKind_VIOLATION_KIND_NETWORK {
			r.Command = v.GetTarget()
		} else {
			r.Paths = []string{v.GetTarget()}
		}
		r.EvaluationId = v.GetEvaluationId()
	case ev.GetPermissionResolved() != nil:
		res := ev.GetPermissionResolved()
		if res.GetAllowed() {
			return
		}
		r.Cause, r.Reason, r.ActionId = "human", "denied by "+res.GetResponder(), ev.GetActionId()
	default:
		return
	}
	th, ok := t.thread(ev.GetThreadId())
	if !ok {
		return
	}
	th.Refusals = append(th.Refusals, r)
	if len(th.Refusals) > maxRefusals {
		th.Refusals = th.Refusals[len(th.Refusals)-maxRefusals:]
	}
	if th.Permission == nil {
		return
	}
	for k := range th.Permission.Facts {
		if strings.HasPrefix(k, "refusal_") {
			delete(th.Permission.Facts, k)
		}
	}
	for k, v := range map[string]string{
		RefusalCause: r.Cause, RefusalReason: r.Reason, RefusalRuleRefs: strings.Join(r.RuleRefs, ","),
		RefusalHookRunIDs: strings.Join(r.HookRunIds, ","), RefusalTool: r.Tool, RefusalPaths: strings.Join(r.Paths, ","),
		RefusalCommand: r.Command, RefusalToolCallID: r.ToolCallId, RefusalEvaluationID: r.EvaluationId, RefusalActionID: r.ActionId,
	} {
		if v != "" {
			th.Permission.Facts[k] = v
		}
	}
}

// lastRefusal is the thread's latest refusal, nil when it has none.
func lastRefusal(th *controlv1.ThreadRead) *controlv1.Refusal {
	if n := len(th.Refusals); n > 0 {
		return th.Refusals[n-1]
	}
	return nil
}

func incidentCategory(ev *eventsv1.RuntimeEvent) string {
	switch {
	case ev.GetToolFailed() != nil:
		return ev.GetToolFailed().GetCategory()
	case ev.GetProcessFailed() != nil:
		return ev.GetProcessFailed().GetCategory()
	case ev.GetModelFailed() != nil:
		return ev.GetModelFailed().GetCategory()
	case ev.GetRuntimeError() != nil:
		return ev.GetRuntimeError().GetCode()
	case ev.GetSandboxViolation() != nil:
		return enums.Word(ev.GetSandboxViolation().GetKind())
	}
	return ""
}

func (t *tx) addIncident(th *controlv1.ThreadRead, in *controlv1.Incident) {
	th.Incidents = append(th.Incidents, in)
	if len(th.Incidents) > maxIncidents {
		th.Incidents = th.Incidents[len(th.Incidents)-maxIncidents:]
	}
}

func incidentMessage(ev *eventsv1.RuntimeEvent) string {
	switch {
	case ev.GetRuntimeError() != nil:
		return ev.GetRuntimeError().GetMessage()
	case ev.GetModelFailed() != nil:
		return ev.GetModelFailed().GetMessage()
	case ev.GetToolFailed() != nil:
		return ev.GetToolFailed().GetMessage()
	case ev.GetProcessFailed() != nil:
		return ev.GetProcessFailed().GetMessage()
	}
	return ev.GetType()
}
