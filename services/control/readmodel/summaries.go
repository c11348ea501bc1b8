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

// refusal records why a call was refused when the fact says it was: a
// deny decision (rule, mode, hook, host policy, sandbox), a blocked
// sandbox violation, or a person's denial of an approval.
func (t *tx) refusal() {
	ev := t.ev
	facts := map[string]string{}
	switch {
	case ev.GetPermissionEvaluated() != nil:
		pe := ev.GetPermissionEvaluated()
		if pe.GetDecision() != eventsv1.Decision_DECISION_DENY {
			return
		}
		facts[RefusalCause] = enums.Word(pe.GetDecisionSource())
		facts[RefusalReason] = pe.GetDecisionReason()
		facts[RefusalRuleRefs] = strings.Join(pe.GetRuleRefs(), ",")
		facts[RefusalHookRunIDs] = strings.Join(pe.GetHookRunIds(), ",")
		facts[RefusalTool] = pe.GetName()
		facts[RefusalPaths] = strings.Join(pe.GetPaths(), ",")
		var cmds []string
		for _, c := range pe.GetSubcommands() {
			cmds = append(cmds, strings.Join(c.GetArgv(), " "))
		}
		facts[RefusalCommand] = strings.Join(cmds, " && ")
		facts[RefusalEvaluationID] = pe.GetEvaluationId()
	case ev.GetSandboxViolation() != nil:
		v := ev.GetSandboxViolation()
		if !v.GetBlocked() {
			return
		}
		if th, ok := t.thread(ev.GetThreadId()); ok && th.Permission != nil && v.GetEvaluationId() != "" &&
			th.Permission.Facts[RefusalEvaluationID] == v.GetEvaluationId() {
			// A violation the refusing decision found: the decision's
			// cause stands, the violation is said beside it.
			th.Permission.Facts[RefusalViolation] = v.GetTarget()
			return
		}
		facts[RefusalCause] = "sandbox_violation"
		facts[RefusalReason] = v.GetReason()
		if v.GetKind() == eventsv1.ViolationKind_VIOLATION_KIND_NETWORK {
			facts[RefusalCommand] = v.GetTarget()
		} else {
			facts[RefusalPaths] = v.GetTarget()
		}
		facts[RefusalEvaluationID] = v.GetEvaluationId()
	case ev.GetPermissionResolved() != nil:
		r := ev.GetPermissionResolved()
		if r.GetAllowed() {
			return
		}
		facts[RefusalCause] = "human"
		facts[RefusalReason] = "denied by " + r.GetResponder()
		facts[RefusalActionID] = ev.GetActionId()
	default:
		return
	}
	facts[RefusalToolCallID] = ev.GetToolCallId()
	th, ok := t.thread(ev.GetThreadId())
	if !ok || th.Permission == nil {
		return
	}
	for k := range th.Permission.Facts {
		if strings.HasPrefix(k, "refusal_") {
			delete(th.Permission.Facts, k)
		}
	}
	for k, v := range facts {
		if v != "" {
			th.Permission.Facts[k] = v
		}
	}
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
