// A turn's tool calls: running them (in parallel where the tools allow),
// the permission decision each waits for, and the approvals a person gives.

package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

var callID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// runTools runs a step's calls: consecutive read-only, concurrency-safe
// calls together, anything else alone and in order. It returns the tool
// messages for the transcript, in call order. resume, when set, is the
// step as a parked run left it: calls that ran keep their results, parked
// calls continue with the answer they waited for. When calls must wait for
// a person, the group they are in finishes and *stepParked says where the
// step stands; the calls after that group have not started.
func (tu *turn) runTools(ctx context.Context, ps *pendingStep, resume *pendingStep) ([]provider.Message, error) {
	calls := ps.Calls
	out := make([]provider.Message, len(calls))
	done := make([]bool, len(calls))
	if resume != nil {
		for k, m := range resume.Results {
			if k >= 0 && k < len(calls) {
				out[k], done[k] = m, true
				tu.prog.completed(k, m)
			}
		}
	}
	for i := 0; i < len(calls); {
		j := i + 1
		if tu.parallel(calls[i]) {
			for j < len(calls) && tu.parallel(calls[j]) {
				j++
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, j-i)
		for k := i; k < j; k++ {
			if done[k] {
				continue
			}
			var pc *parkedCall
			if p, ok := resume.parked(k); ok {
				pc = &p
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[k], errs[k-i] = tu.runTool(ctx, ps.ID, calls[k], pc)
				if errs[k-i] == nil && ctx.Err() == nil {
					done[k] = true
					tu.prog.completed(k, out[k])
				}
			}()
		}
		wg.Wait()
		parked := map[int]parkedCall{}
		var failed []error
		for n, err := range errs {
			var mw *mustWait
			switch {
			case errors.As(err, &mw):
				parked[i+n] = mw.call
			case err != nil:
				failed = append(failed, err)
			}
		}
		if err := errors.Join(failed...); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			tu.waitsCancelled(ps.ID, parked)
			return nil, ctx.Err()
		}
		if len(parked) > 0 {
			left := &pendingStep{ID: ps.ID, Calls: calls, Results: map[int]provider.Message{}, Parked: parked}
			for k := range calls {
				if done[k] {
					left.Results[k] = out[k]
				}
			}
			return nil, &stepParked{step: left}
		}
		i = j
	}
	return out, nil
}

// waitsCancelled ends the calls of step that waited for a person when the
// turn was interrupted before it could be handed back, as any call the
// interrupt stopped.
func (tu *turn) waitsCancelled(step string, parked map[int]parkedCall) {
	for _, pc := range parked {
		waited := "permission"
		switch {
		case pc.Client:
			waited = "its result"
		case pc.Subagent != "":
			waited = "subagent " + pc.Subagent
		}
		if pc.Input {
			waited = "the person's answer"
		}
		_ = tu.say(tu.event("tool.failed", step, pc.CallID, &eventsv1.RuntimeEvent_ToolFailed{ToolFailed: &eventsv1.ToolFailed{
			Category: tools.Cancelled, Message: "the turn was interrupted while the call waited for " + waited}}))
	}
}

func (tu *turn) parallel(c provider.ToolCall) bool {
	t, ok := tu.tools[c.Name]
	return ok && t.Spec().ReadOnly && t.Spec().ConcurrencySafe
}

// runTool runs one call under permission and reports it. The error is a
// report failure, the turn's end, or *mustWait when the call waits for a
// person; a failed call is a tool message. resumed, when set, is the call
// as a parked run left it: announced, evaluated, and now answered.
func (tu *turn) runTool(ctx context.Context, step string, c provider.ToolCall, resumed *parkedCall) (provider.Message, error) {
	w := tu.w
	id := c.ID
	if !callID.MatchString(id) {
		id = ids.New(ids.ToolCall)
	}
	msg := provider.Message{Role: "tool", ToolCallID: c.ID}
	if resumed != nil {
		id = resumed.CallID
	} else if err := tu.say(
		tu.event("tool.started", step, id, &eventsv1.RuntimeEvent_ToolStarted{ToolStarted: &eventsv1.ToolStarted{ToolName: c.Name}}),
		tu.event("tool.args", step, id, &eventsv1.RuntimeEvent_ToolArgs{ToolArgs: &eventsv1.ToolArgs{SafeArgsJson: clip(c.Arguments, 4096)}}),
	); err != nil {
		return msg, err
	}
	failed := func(category, message string) (provider.Message, error) {
		msg.Content = fmt.Sprintf("error (%s): %s", category, message)
		// Said even when the turn is being cancelled (reportFacts).
		return msg, tu.say(tu.event("tool.failed", step, id, &eventsv1.RuntimeEvent_ToolFailed{ToolFailed: &eventsv1.ToolFailed{
			Category: category, Message: clip(message, 2000), Retryable: category == tools.TimedOut}}))
	}
	if tu.client[c.Name] || resumed != nil && resumed.Client {
		// The submitter runs it; no permission of the runtime's applies to
		// what the runtime does not run.
		res, err := tu.callClient(ctx, step, id, c, resumed)
		return tu.answeredCall(ctx, step, id, msg, res, err, "its result", "client_tool_unavailable", failed)
	}
	if resumed != nil && resumed.Subagent != "" {
		// Spawned under permission before the park; its subagent ended.
		res, err := tu.resumeSubagent(ctx, *resumed)
		if err != nil {
			return failed(categoryOf(err), err.Error())
		}
		return tu.toolResult(ctx, step, id, msg, res)
	}
	if resumed != nil && resumed.Input {
		// Allowed before it parked; the answer is its result.
		return tu.inputCall(ctx, step, id, msg, c, resumed, failed)
	}
	tool, ok := tu.tools[c.Name]
	if !ok {
		return failed("unknown_tool", "no tool named "+c.Name)
	}
	args := json.RawMessage(c.Arguments)
	acc, err := tool.Plan(&w.cfg.Sandbox, args)
	if err != nil {
		return failed(categoryOf(err), err.Error())
	}
	var perm permission
	if resumed != nil {
		perm, err = tu.parkedPermission(ctx, *resumed)
	} else {
		perm, err = tu.permit(ctx, step, id, c, acc)
	}
	allowed, why, evalID, rewritten := perm.allowed, perm.why, perm.evalID, perm.rewritten
	var mw *mustWait
	if errors.As(err, &mw) {
		return msg, mw
	}
	if err != nil {
		if ctx.Err() != nil {
			return failed(tools.Cancelled, "the turn was interrupted while the call waited for permission")
		}
		tu.permissionUnavailable.Add(1)
		return failed("permission_unavailable", status.Convert(err).Message())
	}
	if !allowed {
		return failed("permission_denied", why)
	}
	if rewritten != "" {
		// A pre_tool_use hook rewrote the input and the decision judged
		// the rewrite: that is what runs, never the original.
		args = json.RawMessage(rewritten)
		if acc, err = tool.Plan(&w.cfg.Sandbox, args); err != nil {
			return failed(categoryOf(err), "the rewritten input: "+err.Error())
		}
	}
	// What the call runs under is recorded before it runs: a call whose
	// sandbox cannot be recorded does not run. The evaluation recorded it
	// when the call runs as asked and its sandbox did not hang on the
	// decision (permit).
	enf := w.enforcementFor(perm)
	if !perm.applied {
		if err := tu.reportApplied(ctx, w.appliedSandbox(c.Name, args, acc, enf), step, id, "", evalID); err != nil {
			tu.permissionUnavailable.Add(1)
			return failed("permission_unavailable", "the sandbox could not be recorded: "+status.Convert(err).Message())
		}
	}
	var res tools.Result
	switch sh, isShell := tool.(tools.Shell); {
	case c.Name == processWaitName:
		res, err = tu.procs.wait(ctx, args)
	case c.Name == spawnAgentName:
		if res, err = tu.spawnAgent(ctx, id, args); errors.As(err, &mw) {
			return msg, mw
		}
	case c.Name == requestUserInputName:
		c.Arguments = string(args) // a hook's rewrite, if any
		return tu.inputCall(ctx, step, id, msg, c, nil, failed)
	case isShell && sh.IsBackground(args):
		res, err = tu.procs.start(step, id, evalID, args, acc, enf)
	case isShell:
		res, err = tool.Run(ctx, w.shellSandbox(enf), args)
	default:
		// An MCP server may ask a person during the call (elicitation.go).
		res, err = tool.Run(tu.withElicitor(ctx, step, id), &w.cfg.Sandbox, args)
	}
	if err != nil {
		tu.reportViolation(ctx, step, id, evalID, err)
		var f *tools.Failure
		if errors.As(err, &f) && f.Output != "" {
			m, rerr := failed(f.Category, f.Message)
			out, _ := redact(w.cfg.RedactionRules, f.Output)
			m.Content += "\n" + head(out, w.cfg.OutputBudget)
			return m, rerr
		}
		return failed(categoryOf(err), err.Error())
	}
	return tu.toolResult(ctx, step, id, msg, res)
}

// toolResult reports a call's result (tool.result, shaped: spilled,
// truncated, redacted) and is the tool message the model gets.
func (tu *turn) toolResult(ctx context.Context, step, id string, msg provider.Message, res tools.Result) (provider.Message, error) {
	w := tu.w
	sh, err := tu.shapeOutput(ctx, step, id, res.Output, res.Truncated, res.Bytes)
	if err != nil {
		// Without the store the output cannot be kept whole: say so and
		// give the model the head rather than fail a call that ran.
		sh = shaped{content: head(res.Output, w.cfg.OutputBudget) + "\n[output not stored: " + status.Convert(err).Message() + "]"}
		sh.preview = head(sh.content, previewBytes)
		if redacted, hits := redact(w.cfg.RedactionRules, sh.content); len(hits) > 0 {
			sh.content, sh.preview = redacted, head(redacted, previewBytes)
		}
	}
	msg.Content = sh.content
	evs := append(sh.facts, tu.event("tool.result", step, id, &eventsv1.RuntimeEvent_ToolResult{ToolResult: &eventsv1.ToolResult{Preview: sh.preview, Output: sh.ref}}))
	return msg, tu.say(evs...)
}

func categoryOf(err error) string {
	var f *tools.Failure
	if errors.As(err, &f) {
		return f.Category
	}
	return "tool_error"
}

// permission is the answer to a call's evaluation.
type permission struct {
	allowed bool
	// why it was not allowed.
	why    string
	evalID string
	// rewritten is the input a pre_tool_use hook put in place of the
	// call's: the decision judged it, so the call runs it.
	rewritten string
	// sandboxed: the call runs confined to profile (decision SANDBOXED);
	// otherwise it was allowed or approved as it is.
	sandboxed bool
	profile   *eventsv1.SandboxProfile
	// applied: the evaluation recorded the call's sandbox.applied.
	applied bool
}

// permit asks the permission service; on ask it waits for the human's
// answer, which comes back through the log (permission.resolved for the
// action the control service opened). A shell command decided sandboxed
// on a host that cannot confine it is asked of a person too
// (askUnconfined): it never runs unconfined without one saying so.
func (tu *turn) permit(ctx context.Context, step, callID string, c provider.ToolCall, acc tools.Access) (permission, error) {
	w := tu.w
	req := &permissionv1.EvaluatePermissionRequest{
		SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(), StepId: step, ToolCallId: callID,
		Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: c.Name, Access: acc.Access, Paths: acc.Paths,
		Command: acc.Command, Cwd: cmp.Or(acc.Cwd, w.cfg.Sandbox.Root), ArgumentsJson: c.Arguments,
	}
	if _, shell := w.tools[c.Name].(tools.Shell); !shell {
		// Only a shell command's sandbox hangs on the decision: any other
		// call's is known now, and the evaluation records it when the
		// call runs as asked (one round trip for both).
		a := w.appliedSandbox(c.Name, json.RawMessage(c.Arguments), acc, enforcement{})
		req.AppliedIfAllowed = &permissionv1.SandboxEnforcement{Profile: a.GetProfile(), NetworkEnforcement: a.GetNetworkEnforcement(),
			NetworkEnforcementReason: a.GetNetworkEnforcementReason(), EnvAllowlist: a.GetEnvAllowlist()}
	}
	for _, r := range acc.Resolved {
		req.ResolvedPaths = append(req.ResolvedPaths, &permissionv1.PathResolution{Path: r.Path, Resolved: r.Resolved})
	}
	// The call's start is in the log before its evaluation.
	if err := tu.flush(ctx); err != nil {
		return permission{}, err
	}
	var resp *permissionv1.EvaluatePermissionResponse
	err := w.retryInfra(ctx, "permission.EvaluatePermission", func(ctx context.Context) (err error) {
		resp, err = w.permission.EvaluatePermission(ctx, req)
		return err
	})
	if err != nil {
		return permission{}, err
	}
	ev := resp.GetEvaluation()
	p := permission{evalID: ev.GetEvaluationId(), rewritten: resp.GetUpdatedArgumentsJson(), profile: resp.GetSandboxProfile(),
		applied: resp.GetSandboxApplied() != nil}
	switch ev.GetDecision() {
	case eventsv1.Decision_DECISION_SANDBOXED:
		p.allowed, p.sandboxed = true, true
		if _, shell := w.tools[c.Name].(tools.Shell); shell && !w.confine.Available &&
			p.profile.GetMode() != eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS {
			p.sandboxed = false
			actionID, from, err := tu.askUnconfined(ctx, step, callID, acc)
			if err != nil {
				return p, err
			}
			if tu.mayPark() {
				return p, waitFor(callID, actionID, from, true, p)
			}
			p.allowed, p.why, err = tu.awaitApproval(ctx, actionID, from, true)
			return p, err
		}
		return p, nil
	case eventsv1.Decision_DECISION_ALLOW:
		p.allowed = true
		return p, nil
	case eventsv1.Decision_DECISION_ASK:
		if ev.GetApprovalActionId() == "" {
			return p, errors.New("an ask without an approval action")
		}
		if tu.mayPark() {
			// The turn is handed back while a person decides (park.go).
			return p, waitFor(callID, ev.GetApprovalActionId(), resp.GetWrite().GetSequence(), false, p)
		}
		p.allowed, p.why, err = tu.awaitApproval(ctx, ev.GetApprovalActionId(), resp.GetWrite().GetSequence(), false)
		return p, err
	case eventsv1.Decision_DECISION_UNAVAILABLE:
		p.why, p.rewritten = "the permission decision was unavailable: "+ev.GetDecisionReason(), ""
		return p, nil
	}
	p.why, p.rewritten = ev.GetDecisionReason(), ""
	return p, nil
}

// askUnconfined opens an approval (control's RequestAction, decisions
// allow_once and deny) for a shell command the permission service would
// run sandboxed but this host cannot confine: the action and where to
// look for its answer.
func (tu *turn) askUnconfined(ctx context.Context, step, callID string, acc tools.Access) (string, uint64, error) {
	w := tu.w
	req := &controlv1.RequestActionRequest{
		SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(),
		ActionId: ids.New(ids.Action), ActionType: "approval", StepId: step, ToolCallId: callID,
		Prompt: clip("Run this shell command without filesystem confinement? The permission policy runs it sandboxed, "+
			"but this worker cannot confine it ("+w.confine.Reason+"): `"+acc.Command+"`", 16000),
		Decisions: []string{"allow_once", "deny"},
		Context:   map[string]string{"command": clip(acc.Command, 4096), "cwd": acc.Cwd, "reason": "filesystem_confinement_unavailable"},
	}
	var resp *controlv1.RequestActionResponse
	err := w.retryInfra(ctx, "control.RequestAction", func(ctx context.Context) (err error) {
		resp, err = w.control.RequestAction(ctx, req)
		return err
	})
	if err != nil {
		return "", 0, err
	}
	return resp.GetAction().GetActionId(), resp.GetSequence(), nil
}

// awaitApproval waits for the answer to an approval action: a permission
// request's permission.resolved, or, for an action the worker opened
// itself (own), its action.resolved, allowed when allow_once.
func (tu *turn) awaitApproval(ctx context.Context, actionID string, from uint64, own bool) (allowed bool, why string, err error) {
	err = tu.awaitAnswer(ctx, actionID, from, func(ev *eventsv1.RuntimeEvent) bool {
		if p := ev.GetPermissionResolved(); p != nil {
			if allowed = p.GetAllowed(); !allowed {
				why = fmt.Sprintf("denied by %s (%s)", orUnknown(p.GetResponder()), p.GetDecision())
			}
			return true
		}
		a := ev.GetActionResolved()
		switch {
		case a == nil:
			return false
		case own && a.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED:
			if allowed = a.GetDecision() == "allow_once"; !allowed {
				why = fmt.Sprintf("denied by %s (%s)", orUnknown(a.GetResponder()), a.GetDecision())
			}
			return true
		case a.GetOutcome() != eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED:
			if a.GetOutcome() == eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED {
				// Actions are cancelled when their turn is interrupted or
				// ends: ask now rather than run another step first.
				tu.checkNow(ctx)
			}
			why = "the approval was " + enums.Word(a.GetOutcome())
			return true
		}
		return false
	})
	return allowed, why, err
}

// awaitAnswer follows the session's answers (permission.resolved,
// action.resolved) from sequence from until answered takes one about
// actionID as the end of the wait.
func (tu *turn) awaitAnswer(ctx context.Context, actionID string, from uint64, answered func(*eventsv1.RuntimeEvent) bool) error {
	if actionID == "" {
		return errors.New("an ask without an approval action")
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stream grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]
	subscribe := func() error {
		return tu.w.retryInfra(sctx, "control.SubscribeEvents", func(ctx context.Context) (err error) {
			stream, err = tu.w.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
				SessionId: tu.t.GetSessionId(), TypePrefixes: []string{"permission.resolved", "action.resolved"},
				Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from, Heartbeat: durationpb.New(5 * time.Second),
			})
			if err == nil {
				// A restarting control accepts the stream before it can
				// serve it; the first message (or its error) tells.
				var first *controlv1.SubscribeEventsResponse
				if first, err = stream.Recv(); err == nil {
					stream = &pushedBack{ServerStreamingClient: stream, first: first}
				}
			}
			return err
		})
	}
	if err := subscribe(); err != nil {
		return err
	}
	for {
		m, err := stream.Recv()
		if transient(ctx, err) {
			// Control restarted under the wait: resume where we were.
			if err = subscribe(); err == nil {
				continue
			}
		}
		if err != nil {
			return err
		}
		if seq := m.GetEvent().GetSequence(); seq >= from {
			from = seq + 1
		}
		if ev := m.GetEvent(); ev.GetActionId() == actionID && answered(ev) {
			return nil
		}
	}
}

// checkNow asks the control service about the turn at once (a heartbeat)
// and cancels the turn when it was interrupted or ended.
func (tu *turn) checkNow(ctx context.Context) {
	hb, err := tu.w.control.HeartbeatTurn(ctx, &controlv1.HeartbeatTurnRequest{TurnId: tu.t.GetTurnId(), RunId: tu.runID, LeaseToken: tu.leaseToken, LeaseTtl: durationpb.New(tu.w.cfg.LeaseTTL)})
	switch {
	case status.Code(err) == codes.FailedPrecondition:
		tu.cancel(errLeaseLost)
	case err != nil:
	case hb.GetInterruptRequested():
		tu.cancel(errInterrupted)
	case terminal(hb.GetStatus()):
		tu.cancel(errEnded)
	}
}

// pushedBack is a stream whose first message was already read.
type pushedBack struct {
	grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse]
	first *controlv1.SubscribeEventsResponse
}

func (p *pushedBack) Recv() (*controlv1.SubscribeEventsResponse, error) {
	if m := p.first; m != nil {
		p.first = nil
		return m, nil
	}
	return p.ServerStreamingClient.Recv()
}
