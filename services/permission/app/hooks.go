package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// HookCaller delivers a hook's input to its handler (gRPC HookHandler or
// HTTP) and returns its raw output. ctx carries the hook's timeout.
// Implementations wrap ErrHookUnavailable when the handler cannot be
// reached.
type HookCaller interface {
	Call(ctx context.Context, hook *eventsv1.Hook, in *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error)
}

// ErrHookUnavailable: the handler could not be reached.
var ErrHookUnavailable = errors.New("hook handler unavailable")

// hookPreviewBytes bounds previews in hook facts.
const hookPreviewBytes = 512

// hookScope is where a run of hooks records its facts.
type hookScope struct {
	tenant       string
	agg          eventlog.Aggregate
	last         uint64       // the aggregate's last sequence; advanced by each append
	scope        domain.Scope // what its facts are about
	evaluationID string
	objectPrefix string
}

// hookRun is one hook's normalized outcome.
type hookRun struct {
	runID   string
	result  domain.HookResult
	resp    *permissionv1.HandleHookResponse
	refs    hookRefs
	failure eventsv1.HookFailureCategory
}

type hookRefs struct {
	input   *commonv1.OutputRef
	output  *commonv1.OutputRef
	context []*commonv1.OutputRef
}

func (a *App) appendHookFact(ctx context.Context, hs *hookScope, ev *eventsv1.RuntimeEvent) error {
	res, err := a.appendOwn(ctx, hs.agg, hs.last, ev)
	if err != nil {
		return err
	}
	hs.last = res.Sequence
	return nil
}

// ErrRequestIDTaken: an aggregate a request created under a fresh id
// (an evaluation, a hook run, a permission request) holds events this
// request did not write.
var ErrRequestIDTaken = fault.Sentinel("permission: the request's id is already in use",
	fault.Conflict("the request's id is already in use; retry the request", 0))

// appendOwn appends a request's events to the aggregate it created under
// a fresh id and alone writes, as one command of the requests writer:
// after is the sequence of its previous append (0: none, the aggregate is
// new and the append expects it empty without reading the log first).
// The decision is that the aggregate is where this request left it.
func (a *App) appendOwn(ctx context.Context, agg eventlog.Aggregate, after uint64, evs ...*eventsv1.RuntimeEvent) (command.Result, error) {
	exec := a.requests.Execute
	if after == 0 {
		exec = a.requests.ExecuteNew
	}
	return exec(ctx, agg, "", func(_ context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if st.Last != after {
			return nil, fmt.Errorf("%w: %s is at %d, this request left it at %d", ErrRequestIDTaken, agg, st.Last, after)
		}
		return evs, nil
	})
}

// runHooks runs hooks in registration order, each seeing the input as the
// hooks before it left it; hook.started is in the log before the handler
// is called, so a crash mid-call still shows the run. It returns the runs
// and the input the last rewrite produced ("" when none rewrote it).
func (a *App) runHooks(ctx context.Context, hs *hookScope, hooks []*eventsv1.Hook, in *permissionv1.HandleHookRequest) ([]hookRun, string, error) {
	var runs []hookRun
	rewritten := ""
	for _, h := range hooks {
		runID := ids.New("hrun")
		req := cloneHookRequest(in)
		req.HookId, req.HookRunId = h.GetHookId(), runID
		if rewritten != "" {
			req.ToolInputJson = domain.RedactJSON(rewritten)
		}
		started := domain.HookStarted(hs.scope, &eventsv1.HookStarted{
			HookRunId: runID, HookId: h.GetHookId(), Point: h.GetPoint(), HandlerRef: handlerRef(h), Timeout: h.GetTimeout(),
			Preview: hookPreview(req), EvaluationId: hs.evaluationID,
		})
		if err := a.appendHookFact(ctx, hs, started); err != nil {
			return nil, "", err
		}
		begin := time.Now()
		callCtx, cancel := context.WithTimeout(ctx, durationOrDefault(h.GetTimeout(), domain.DefaultHookTimeout))
		// A hook whose host is no longer allowed (registered before the
		// list narrowed) is not called: it fails like a hook that errs.
		err := a.hookHosts.CheckHookTarget(h)
		var resp *permissionv1.HandleHookResponse
		if err == nil {
			resp, err = a.hooks.Call(callCtx, h, req)
		}
		cancel()
		if err == nil {
			err = validateHookResponse(resp)
		}
		elapsed := durationpb.New(time.Since(begin))
		run := hookRun{runID: runID, resp: resp, result: domain.HookResult{HookID: h.GetHookId(), FailMode: domain.FailModeFor(h.GetRisk())}}
		if err != nil {
			if ctx.Err() != nil {
				// The caller went away; that is not the hook's failure.
				return nil, "", ctx.Err()
			}
			category, retryable := classifyHookError(err)
			run.result.Failed, run.failure = true, category
			hf := &eventsv1.HookFailed{HookRunId: runID, HookId: h.GetHookId(), Point: h.GetPoint(), Duration: elapsed,
				Category: category, Retryable: retryable, FailMode: run.result.FailMode, Error: truncate(err.Error(), hookPreviewBytes), EvaluationId: hs.evaluationID}
			if run.result.FailMode == eventsv1.FailMode_FAIL_MODE_OPEN {
				hf.Warning = fmt.Sprintf("read-only hook %s failed (%s); continuing without it", h.GetHookId(), enums.Word(category))
			}
			failed := domain.HookFailed(hs.scope, hf)
			if err := a.appendHookFact(ctx, hs, failed); err != nil {
				return nil, "", err
			}
			runs = append(runs, run)
			continue
		}
		run.result.Outcome, run.result.Reason = normalizeOutcome(resp.GetDecision()), resp.GetReason()
		if run.refs, err = a.storeHookOutputs(ctx, hs, h, runID, resp); err != nil {
			return nil, "", err
		}
		if resp.GetUpdatedInputJson() != "" {
			rewritten = resp.GetUpdatedInputJson()
		}
		completed := domain.HookCompleted(hs.scope, &eventsv1.HookCompleted{
			HookRunId: runID, HookId: h.GetHookId(), Point: h.GetPoint(), Duration: elapsed, Decision: run.result.Outcome,
			Reason: truncate(resp.GetReason(), hookPreviewBytes), UpdatedInputRef: run.refs.input, AdditionalContextRefs: run.refs.context,
			UpdatedOutputRef: run.refs.output, SuppressOutput: resp.GetSuppressOutput(), AuditRefs: resp.GetAuditRefs(), EvaluationId: hs.evaluationID,
		})
		if err := a.appendHookFact(ctx, hs, completed); err != nil {
			return nil, "", err
		}
		runs = append(runs, run)
	}
	return runs, rewritten, nil
}

// storeHookOutputs moves what a hook produced into the object store: the
// facts carry refs, so a rewrite is visible in the log and never hidden
// behind the tool's result.
func (a *App) storeHookOutputs(ctx context.Context, hs *hookScope, h *eventsv1.Hook, runID string, resp *permissionv1.HandleHookResponse) (hookRefs, error) {
	var refs hookRefs
	owner := "hook:" + h.GetHookId()
	name := hs.objectPrefix + "/" + runID
	var err error
	if in := resp.GetUpdatedInputJson(); in != "" {
		if refs.input, err = a.log.PutObject(ctx, name+"/updated_input.json", owner, "application/json", []byte(in)); err != nil {
			return refs, err
		}
	}
	if out := resp.GetUpdatedOutputJson(); out != "" {
		if refs.output, err = a.log.PutObject(ctx, name+"/updated_output.json", owner, "application/json", []byte(out)); err != nil {
			return refs, err
		}
	}
	for i, c := range resp.GetAdditionalContext() {
		ref, err := a.log.PutObject(ctx, fmt.Sprintf("%s/context_%d.txt", name, i), owner, "text/plain", []byte(c))
		if err != nil {
			return refs, err
		}
		refs.context = append(refs.context, ref)
	}
	return refs, nil
}

// ErrInvalidHookOutput: the hook answered something that does not normalize.
var ErrInvalidHookOutput = errors.New("invalid hook output")

func validateHookResponse(r *permissionv1.HandleHookResponse) error {
	if r == nil {
		return fmt.Errorf("%w: empty response", ErrInvalidHookOutput)
	}
	if _, ok := eventsv1.HookOutcome_name[int32(r.GetDecision())]; !ok {
		return fmt.Errorf("%w: decision %d is not a hook outcome", ErrInvalidHookOutput, r.GetDecision())
	}
	for name, s := range map[string]string{"updated_input_json": r.GetUpdatedInputJson(), "updated_output_json": r.GetUpdatedOutputJson()} {
		if s != "" && !json.Valid([]byte(s)) {
			return fmt.Errorf("%w: %s is not JSON", ErrInvalidHookOutput, name)
		}
	}
	return nil
}

func normalizeOutcome(o eventsv1.HookOutcome) eventsv1.HookOutcome {
	if o == eventsv1.HookOutcome_HOOK_OUTCOME_UNSPECIFIED {
		return eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE
	}
	return o
}

func classifyHookError(err error) (eventsv1.HookFailureCategory, bool) {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded:
		return eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_TIMEOUT, true
	case errors.Is(err, ErrHookUnavailable) || status.Code(err) == codes.Unavailable:
		return eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_UNAVAILABLE, true
	case errors.Is(err, ErrInvalidHookOutput):
		return eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_INVALID_OUTPUT, false
	}
	return eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_HANDLER_ERROR, false
}

func handlerRef(h *eventsv1.Hook) string {
	if t := h.GetGrpcTarget(); t != "" {
		return "grpc:" + t
	}
	return h.GetHttpUrl()
}

func hookPreview(r *permissionv1.HandleHookRequest) string {
	s := r.GetToolName()
	if in := r.GetToolInputJson(); in != "" {
		s += " " + in
	}
	return truncate(strings.TrimSpace(s), hookPreviewBytes)
}

func cloneHookRequest(in *permissionv1.HandleHookRequest) *permissionv1.HandleHookRequest {
	return proto.Clone(in).(*permissionv1.HandleHookRequest)
}

func durationOrDefault(d *durationpb.Duration, def time.Duration) time.Duration {
	if v := readmodel.DurationOrZero(d); v > 0 {
		return v
	}
	return def
}

func truncate(s string, max int) string { return domain.Cut(s, max) }

// sandboxSummary is the one-line form of a profile given to hooks.
func sandboxSummary(p *eventsv1.SandboxProfile) string {
	mode := enums.Word(p.GetMode())
	net := enums.Word(p.GetNetwork())
	s := mode
	if len(p.GetWriteRoots()) > 0 {
		s += "; write roots " + strings.Join(p.GetWriteRoots(), ", ")
	}
	return s + "; network " + net
}

// RunHooksInput is a RunHooks request.
type RunHooksInput struct {
	Point                                                eventsv1.HookPoint
	SessionID, ThreadID, TurnID, StepID, ToolCallID      string
	WorkspaceID, ToolName, ToolInput, ToolOutput, Prompt string
	Cwd                                                  string
}

// RunHooksOutput is the runs and their joint outcome.
type RunHooksOutput struct {
	Results      []*permissionv1.HookRunResult
	Decision     eventsv1.HookOutcome
	Reason       string
	UpdatedInput string
	Write        *commonv1.WriteResult
}

// RunHooks runs the hooks registered for a point and records their facts.
func (a *App) RunHooks(ctx context.Context, tenant string, in RunHooksInput) (RunHooksOutput, error) {
	cps, err := a.waitCheckpoints(ctx, 0)
	if err != nil {
		return RunHooksOutput{}, err
	}
	levels, err := a.policyLevels(ctx, tenant, in.WorkspaceID, in.SessionID, in.ThreadID, cps)
	if err != nil {
		return RunHooksOutput{}, err
	}
	policy := domain.Effective(levels...)
	hooks := domain.HooksFor(levels[0].Hooks, in.Point, in.ToolName, in.WorkspaceID)
	if len(hooks) == 0 {
		return RunHooksOutput{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE}, nil
	}
	batchID := ids.New("hset")
	hs := &hookScope{
		tenant: tenant, agg: eventlog.Aggregate{Tenant: tenant, Session: in.SessionID, Kind: readmodel.KindHookRun, ID: batchID},
		scope:        domain.Scope{Session: in.SessionID, Thread: in.ThreadID, Turn: in.TurnID, Step: in.StepID, ToolCall: in.ToolCallID},
		objectPrefix: "permission/" + tenant + "/" + batchID,
	}
	cwd := in.Cwd
	if cwd == "" {
		cwd = policy.Sandbox.GetCwd()
	}
	req := &permissionv1.HandleHookRequest{
		Point: in.Point, TenantId: tenant, SessionId: in.SessionID, ThreadId: in.ThreadID, TurnId: in.TurnID, StepId: in.StepID,
		ToolCallId: in.ToolCallID, WorkspaceId: in.WorkspaceID, Cwd: cwd, Mode: policy.Mode, SandboxSummary: sandboxSummary(policy.Sandbox),
		Sandbox: policy.Sandbox, ToolName: in.ToolName, ToolInputJson: domain.RedactJSON(in.ToolInput),
		ToolOutputJson: domain.RedactJSON(in.ToolOutput), Prompt: in.Prompt,
	}
	runs, rewritten, err := a.runHooks(ctx, hs, hooks, req)
	if err != nil {
		return RunHooksOutput{}, err
	}
	out := RunHooksOutput{UpdatedInput: rewritten, Write: &commonv1.WriteResult{Sequence: hs.last}}
	var results []domain.HookResult
	for _, r := range runs {
		results = append(results, r.result)
		res := &permissionv1.HookRunResult{HookRunId: r.runID, HookId: r.result.HookID, Decision: r.result.Outcome, Reason: r.result.Reason,
			Failure: r.failure, FailMode: r.result.FailMode, UpdatedInputRef: r.refs.input, AdditionalContextRefs: r.refs.context,
			UpdatedOutputRef: r.refs.output, SuppressOutput: r.resp.GetSuppressOutput(), AuditRefs: r.resp.GetAuditRefs()}
		out.Results = append(out.Results, res)
	}
	v := domain.CombineHooks(results)
	out.Decision, out.Reason = domain.HookOutcomeOf(v), v.Reason
	return out, nil
}
