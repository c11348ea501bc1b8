package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// turn is one claimed turn being run.
type turn struct {
	w      *Worker
	cancel context.CancelCauseFunc
	t      *controlv1.Turn
	runID  string
	// leaseToken proves the claim: heartbeats and reports carry it.
	leaseToken string
	model      string
	routed     bool
	procs      *procTable
	// tools are what the turn offers and may call (Worker.toolSet at its
	// start).
	tools map[string]tools.Tool
	// client names the turn's client tools (clienttools.go): offered to
	// the model, run by the turn's submitter.
	client map[string]bool
	// candidates are routing's candidates for the turn (their context
	// windows size compaction).
	candidates *eventsv1.CandidateSet
	// permissionUnavailable counts tool calls that did not run because the
	// permission service could not be asked (after bounded retries): such
	// a turn ends failed, never completed. Tool calls may run in parallel.
	permissionUnavailable atomic.Int32
	// prog is where the turn is, for a hand back (park.go).
	prog progress
	// holdWaits: calls wait for their answer in place instead of handing
	// the turn back (after a hand back failed).
	holdWaits bool
	// rep holds the turn's facts for a step's worth of them (report.go).
	rep *reporter
}

// RunTurn runs a claimed turn to its end and reports it. It returns an
// error only when the facts could not be reported (the lease then expires
// and the control service records the turn lost).
func (w *Worker) RunTurn(ctx context.Context, claim *controlv1.ClaimTurnResponse) error {
	ctx, span := w.turnSpan(ctx, claim)
	defer span.End()
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tu := &turn{w: w, cancel: cancel, t: claim.GetTurn(), runID: claim.GetRunId(), leaseToken: claim.GetLeaseToken()}
	tu.rep = w.newReporter(tctx, tu.runID, tu.leaseToken)
	defer tu.rep.stop()
	tu.procs = newProcTable(ctx, tu)
	go w.heartbeat(tctx, cancel, tu.t.GetTurnId(), tu.runID, tu.leaseToken)
	go w.watch(tctx, cancel, tu.t, tu.runID, claim.GetSequence()+1, tu.procs)
	var final provider.Response
	cp, loopErr := w.loadCheckpoint(tctx, claim)
	if loopErr == nil {
		final, loopErr = tu.loop(tctx, cp)
	}
	if errors.Is(loopErr, errParked) {
		return nil // handed back: the park said everything
	}
	cause := context.Cause(tctx)
	// Background processes end with their turn, and say so before it does.
	switch {
	case loopErr == nil:
		tu.procs.closeAll("the turn ended", false)
	case errors.Is(cause, errEnded), errors.Is(cause, errLeaseLost), isEnded(loopErr):
		tu.procs.closeAll("the turn ended without this worker", true)
	case errors.Is(cause, errInterrupted):
		tu.procs.closeAll("the turn was interrupted", false)
	case ctx.Err() != nil:
		tu.procs.closeAll("the worker stopped", false)
	default:
		tu.procs.closeAll("the turn failed", false)
	}
	// The end is reported even when the turn's context ended: bounded, on
	// a context of its own.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	switch {
	case loopErr == nil && tu.permissionUnavailable.Load() > 0:
		// The model may say it is done, but calls it asked for never ran
		// because nobody could check them: that is not a completed turn.
		return tu.report(rctx, tu.failed(eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, "permission_unavailable",
			fmt.Sprintf("%d tool call(s) could not be checked by the permission service and did not run", tu.permissionUnavailable.Load()), true))
	case loopErr == nil:
		return tu.report(rctx, tu.event("turn.completed", "", "", &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{
			Summary: clip(final.Text, 2000), StopReason: final.StopReason}}))
	case errors.Is(cause, errEnded), errors.Is(cause, errLeaseLost), isEnded(loopErr):
		return nil // someone else ended it; nothing more to say
	case errors.Is(cause, errInterrupted):
		return tu.report(rctx, tu.failed(eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED, "interrupted", "interrupted at the user's request", false))
	case ctx.Err() != nil:
		// The worker stopped before the turn reached a step boundary: hand
		// back what completed; the step in flight runs again elsewhere.
		if err := tu.park(rctx, tu.prog.snapshot(tu), parkDrain); errors.Is(err, errParked) {
			return nil
		} else {
			w.cfg.Logger.WarnContext(rctx, "handing back a turn", "turn_id", tu.t.GetTurnId(), "error", err)
		}
		return tu.report(rctx, tu.failed(eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, "worker_shutdown", "the worker stopped during the turn", true))
	}
	var fe *turnFailure
	if errors.As(loopErr, &fe) {
		return tu.report(rctx, tu.failed(eventsv1.TurnOutcome_TURN_OUTCOME_FAILED, fe.category, fe.message, fe.retryable))
	}
	// A report that failed: the lease will lapse and the turn be lost.
	return loopErr
}

// turnFailure ends a turn failed with a category.
type turnFailure struct {
	category, message string
	retryable         bool
}

func (f *turnFailure) Error() string { return f.category + ": " + f.message }

func isEnded(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), "already ended")
}

func (tu *turn) event(typ, step, call string, payload any) *eventsv1.RuntimeEvent {
	// The session and thread ride along: control then appends to the
	// thread's partition at once, with no lookup of the turn by id.
	ev := &eventsv1.RuntimeEvent{Type: typ, SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(), RunId: tu.runID, StepId: step, ToolCallId: call}
	setPayload(ev, payload)
	return ev
}

func (tu *turn) failed(outcome eventsv1.TurnOutcome, category, message string, retryable bool) *eventsv1.RuntimeEvent {
	return tu.event("turn.failed", "", "", &eventsv1.RuntimeEvent_TurnFailed{TurnFailed: &eventsv1.TurnFailed{
		Outcome: outcome, Category: category, Message: message, Retryable: retryable}})
}

// report says facts of the turn and sends them, with every fact said
// before them, before it returns (report.go).
func (tu *turn) report(ctx context.Context, evs ...*eventsv1.RuntimeEvent) error {
	return tu.rep.report(ctx, evs...)
}

// say says facts of the turn; they travel with the facts said after them
// within Config.ReportLinger, or with the next report or flush.
func (tu *turn) say(evs ...*eventsv1.RuntimeEvent) error {
	return tu.rep.say(evs...)
}

// flush sends every fact said so far: before another service is asked
// about the turn, the log has what the worker said before it asked.
func (tu *turn) flush(ctx context.Context) error {
	return tu.rep.flush(ctx)
}

func (tu *turn) scope() *routingv1.TurnScope {
	return &routingv1.TurnScope{SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId()}
}

// loop is the agent loop; it returns the last model response. cp, when
// set, is the checkpoint a parked run handed back: the loop continues from
// it instead of starting from the turn's input.
func (tu *turn) loop(ctx context.Context, cp *checkpoint) (provider.Response, error) {
	w := tu.w
	tu.tools = w.toolSet()
	names := toolNames(tu.tools)
	var specs []provider.Tool
	for _, n := range names {
		s := tu.tools[n].Spec()
		specs = append(specs, provider.Tool{Name: s.Name, Description: s.Description, Schema: s.Schema})
	}
	client, notices, err := tu.clientTools()
	if err != nil {
		return provider.Response{}, err
	}
	specs = append(specs, client...)
	var msgs []provider.Message
	first := 0
	if cp != nil && len(cp.Messages) == 0 {
		cp = nil // handed back before its transcript began: start from the input
	}
	if cp != nil {
		msgs, tu.model, tu.routed, first = cp.Messages, cp.Model, cp.Routed, cp.Steps
		if cp.Step != nil {
			var err error
			if msgs, err = tu.toolStep(ctx, msgs, first, cp.Step.ID, cp.Step.Calls, cp.Step); err != nil {
				return provider.Response{}, err
			}
		}
	} else {
		var err error
		if msgs, err = tu.prepare(ctx, names, notices); err != nil {
			return provider.Response{}, err
		}
	}
	for step := first; step < w.cfg.MaxSteps; step++ {
		tu.prog.boundary(msgs, step)
		if w.draining.Load() {
			// Hand the turn back at a step boundary: nothing is lost.
			if err := tu.park(ctx, tu.prog.snapshot(tu), parkDrain); errors.Is(err, errParked) || ctx.Err() != nil {
				return provider.Response{}, err
			} else {
				w.cfg.Logger.WarnContext(ctx, "handing back a turn", "turn_id", tu.t.GetTurnId(), "error", err)
			}
		}
		compacted, err := tu.maybeCompact(ctx, msgs)
		if err != nil {
			return provider.Response{}, err
		}
		msgs = compacted
		resp, stepID, err := tu.modelStep(ctx, msgs, specs)
		if err != nil {
			return provider.Response{}, err
		}
		if len(resp.ToolCalls) == 0 {
			return resp, nil
		}
		msgs = append(msgs, provider.Message{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls})
		if msgs, err = tu.toolStep(ctx, msgs, step+1, stepID, resp.ToolCalls, nil); err != nil {
			return provider.Response{}, err
		}
	}
	return provider.Response{}, &turnFailure{category: "max_steps", message: fmt.Sprintf("the model made %d calls without finishing", w.cfg.MaxSteps)}
}

// prepare opens the transcript of a turn started from its input: the
// context and catalog facts, and the route.
func (tu *turn) prepare(ctx context.Context, names, clientNotices []string) ([]provider.Message, error) {
	w := tu.w
	notices := w.toolNotices()
	for n := range tu.client {
		names = append(names, n)
	}
	sort.Strings(names)
	msgs := []provider.Message{{Role: "system", Content: strings.Join(append([]string{w.cfg.SystemPrompt}, notices...), "\n")}, {Role: "user", Content: inputText(tu.t.GetInput())}}
	tokens := int64(0)
	for _, m := range msgs {
		tokens += int64(len(m.Content)+3) / 4
	}
	if err := tu.say(
		tu.event("context.resolved", "", "", &eventsv1.RuntimeEvent_ContextResolved{ContextResolved: &eventsv1.ContextResolved{
			Refs: []string{"system_prompt", "turn:" + tu.t.GetTurnId() + "/input"}, Tokens: tokens,
			Warnings: append(append([]string{"earlier turns of the thread are not included (history is not carried yet)", "tokens are estimated (4 bytes per token)"}, notices...), clientNotices...)}}),
		// tool.* facts require a step and a call id: the catalog is the
		// turn's preparation step, and its "call" is the catalog itself.
		tu.event("tool.catalog.resolved", ids.New(ids.Step), "catalog", &eventsv1.RuntimeEvent_ToolCatalogResolved{ToolCatalogResolved: &eventsv1.ToolCatalogResolved{
			ToolNames: names, InventoryRef: "worker:" + w.cfg.WorkerID}}),
	); err != nil {
		return nil, err
	}
	return msgs, tu.route(ctx, tokens)
}

// toolStep runs the calls of model step stepID (msgs ends with the
// assistant message that asked for them; steps model steps are taken) and
// returns the transcript with their results. When calls must wait for a
// person the turn is handed back (errParked); when that fails the calls
// wait in place.
func (tu *turn) toolStep(ctx context.Context, msgs []provider.Message, steps int, stepID string, calls []provider.ToolCall, resume *pendingStep) ([]provider.Message, error) {
	for {
		ps := &pendingStep{ID: stepID, Calls: calls, Results: map[int]provider.Message{}}
		tu.prog.startStep(msgs, steps, ps)
		results, err := tu.runTools(ctx, ps, resume)
		var sp *stepParked
		if !errors.As(err, &sp) {
			if err != nil {
				return nil, err
			}
			return append(msgs, results...), nil
		}
		cp := &checkpoint{Version: checkpointVersion, Model: tu.model, Routed: tu.routed, Steps: steps, Messages: msgs, Step: sp.step}
		perr := tu.park(ctx, cp, parkWait)
		if errors.Is(perr, errParked) {
			return nil, perr
		}
		if ctx.Err() != nil {
			// Interrupted while handing the step back (the hand back
			// failed for it): the waiting calls end here.
			tu.waitsCancelled(sp.step.ID, sp.step.Parked)
			return nil, ctx.Err()
		}
		tu.w.cfg.Logger.WarnContext(ctx, "handing back a waiting turn; its calls wait in place", "turn_id", tu.t.GetTurnId(), "error", perr)
		tu.holdWaits, resume = true, sp.step
	}
}

// route asks routing for the model. No decision (routing not possible,
// not served) falls back to the configured default model, said out loud.
func (tu *turn) route(ctx context.Context, tokens int64) error {
	w := tu.w
	req := &routingv1.DecideRouteRequest{Scope: tu.scope(), Route: &routingv1.RouteRequest{
		// The loop offers tools, so the model must take them; a failed call
		// may move down the chain.
		Profile: &eventsv1.TaskProfile{Kind: "chat", Source: "user", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS},
			FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE},
		RequestedModelId:     tu.t.GetOptions()["model"],
		EstimatedInputTokens: tokens,
	}}
	if err := tu.flush(ctx); err != nil {
		return err
	}
	var resp *routingv1.DecideRouteResponse
	err := w.retryInfra(ctx, "routing.DecideRoute", func(ctx context.Context) (err error) {
		resp, err = w.routing.DecideRoute(ctx, req)
		return err
	})
	why := ""
	tu.candidates = resp.GetCandidateSet()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		why = "routing unavailable: " + status.Convert(err).Message()
	case resp.GetDecision() != nil:
		tu.model, tu.routed = resp.GetDecision().GetSelectedModelId(), true
		return nil
	default:
		why = "routing not possible: " + resp.GetNotPossible().GetReason()
	}
	if w.cfg.DefaultModel == "" {
		return &turnFailure{category: "routing", message: why}
	}
	tu.model = w.cfg.DefaultModel
	return tu.say(tu.event("run.status", "", "", &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
		Phase: "routing", Title: "using the worker's default model " + tu.model, Detail: why}}))
}

// modelStep runs one provider call, with fallbacks through routing on
// rate limits and server failures.
func (tu *turn) modelStep(ctx context.Context, msgs []provider.Message, specs []provider.Tool) (provider.Response, string, error) {
	w := tu.w
	for {
		step := ids.New(ids.Step)
		if err := tu.say(tu.event("model.requested", step, "", &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{
			Provider: provider.NameOf(w.cfg.Provider, tu.model), Model: tu.model}})); err != nil {
			return provider.Response{}, "", err
		}
		sink := &sink{tu: tu, step: step}
		resp, err := w.cfg.Provider.Stream(ctx, provider.Request{Model: tu.model, Messages: msgs, Tools: specs}, sink)
		if ferr := sink.flush(); ferr != nil {
			return provider.Response{}, "", ferr
		}
		if err != nil {
			if ctx.Err() != nil {
				_ = tu.say(tu.event("model.failed", step, "", &eventsv1.RuntimeEvent_ModelFailed{ModelFailed: &eventsv1.ModelFailed{
					Provider: provider.NameOf(w.cfg.Provider, tu.model), Model: tu.model, Category: "cancelled", Message: "the turn was interrupted during the call"}}))
				return provider.Response{}, "", ctx.Err()
			}
			pe := provider.AsError(err)
			if rerr := tu.say(tu.event("model.failed", step, "", &eventsv1.RuntimeEvent_ModelFailed{ModelFailed: &eventsv1.ModelFailed{
				Provider: provider.NameOf(w.cfg.Provider, tu.model), Model: tu.model, Category: pe.Category, Message: pe.Message, Retryable: pe.Retryable()}})); rerr != nil {
				return provider.Response{}, "", rerr
			}
			if next, ok := tu.fallback(ctx, pe); ok {
				tu.model = next
				continue
			}
			return provider.Response{}, "", &turnFailure{category: "provider_error", message: pe.Error(), retryable: pe.Retryable()}
		}
		usage := &eventsv1.ModelUsage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
			CachedInputTokens: resp.Usage.CachedInputTokens, ReasoningTokens: resp.Usage.ReasoningTokens}
		if !resp.UsageKnown {
			usage = nil // unknown, never zero
		}
		if err := tu.say(tu.event("model.completed", step, "", &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{
			Provider: provider.NameOf(w.cfg.Provider, tu.model), Model: tu.model, StopReason: resp.StopReason, Usage: usage, ResponseRef: resp.RequestID}})); err != nil {
			return provider.Response{}, "", err
		}
		if resp.UsageKnown && tu.routed {
			if err := tu.flush(ctx); err != nil {
				return provider.Response{}, "", err
			}
			_, err := w.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: tu.scope(), UsageId: step, ModelId: tu.model, Usage: &routingv1.Usage{
				InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
				CachedInputTokens: resp.Usage.CachedInputTokens, ReasoningTokens: resp.Usage.ReasoningTokens}})
			if err != nil {
				w.cfg.Logger.WarnContext(ctx, "recording cost", "turn_id", tu.t.GetTurnId(), "error", err)
			}
		}
		return resp, step, nil
	}
}

// fallback asks routing for the next model after a provider failure that
// another model may not have (rate limits, overload, server errors).
func (tu *turn) fallback(ctx context.Context, pe *provider.Error) (string, bool) {
	if !tu.routed {
		return "", false
	}
	var cat eventsv1.FailureCategory
	switch pe.Category {
	case provider.RateLimited:
		cat = eventsv1.FailureCategory_FAILURE_CATEGORY_RATE_LIMITED
	case provider.Overloaded:
		cat = eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED
	case provider.ServerError, provider.StreamError:
		cat = eventsv1.FailureCategory_FAILURE_CATEGORY_SERVER_ERROR
	case provider.Timeout:
		cat = eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT
	case provider.Network:
		cat = eventsv1.FailureCategory_FAILURE_CATEGORY_NETWORK
	default:
		return "", false
	}
	if err := tu.flush(ctx); err != nil {
		tu.w.cfg.Logger.WarnContext(ctx, "fallback", "turn_id", tu.t.GetTurnId(), "error", err)
		return "", false
	}
	resp, err := tu.w.routing.ApplyFallback(ctx, &routingv1.ApplyFallbackRequest{Scope: tu.scope(), FailedModelId: tu.model,
		FailureCategory: cat, FailureDetail: clip(pe.Error(), 1000)})
	if err != nil || resp.GetFallback() == nil {
		if err != nil {
			tu.w.cfg.Logger.WarnContext(ctx, "fallback", "turn_id", tu.t.GetTurnId(), "error", err)
		}
		return "", false
	}
	next := resp.GetFallback().GetDecision().GetSelectedModelId()
	return next, next != ""
}

// sink turns a provider stream into facts: text and reasoning are
// coalesced into one delta per burst (said at DeltaBytes, DeltaInterval
// after the oldest unsaid token even when no token follows, at a tool
// call and at the end); the deltas then travel with the turn's other
// facts (reporter). Tool calls are announced by the tool runner.
type sink struct {
	tu   *turn
	step string
	// mu: the stream's goroutine and the interval's timer.
	mu              sync.Mutex
	text, reasoning strings.Builder
	index           int64
	calls           map[int]string
	args            map[int]*strings.Builder
	err             error
	// timer says the held text DeltaInterval after its oldest token.
	timer *time.Timer
}

func (s *sink) Text(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text.WriteString(d)
	s.held()
}

func (s *sink) Reasoning(d string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasoning.WriteString(d)
	s.held()
}

// held says the coalesced deltas once they reach DeltaBytes, or starts
// the clock of the oldest: a token stream is a few deltas a second, not
// one per token.
func (s *sink) held() {
	cfg := &s.tu.w.cfg
	if s.text.Len()+s.reasoning.Len() >= cfg.DeltaBytes {
		s.sayText()
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(cfg.DeltaInterval, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sayText()
		})
	}
}

func (s *sink) ToolCall(i int, id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sayText()
	if s.calls == nil {
		s.calls, s.args = map[int]string{}, map[int]*strings.Builder{}
	}
	s.calls[i] = name
	s.args[i] = &strings.Builder{}
}

func (s *sink) ToolArgs(i int, chunk string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.args[i]; ok {
		b.WriteString(chunk)
	}
}

// sayText says the held reasoning and text as deltas (with mu held).
func (s *sink) sayText() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	var evs []*eventsv1.RuntimeEvent
	if s.reasoning.Len() > 0 {
		evs = append(evs, s.tu.event("reasoning.delta", s.step, "", &eventsv1.RuntimeEvent_ReasoningDelta{ReasoningDelta: &eventsv1.ReasoningDelta{Text: s.reasoning.String()}}))
		s.reasoning.Reset()
	}
	if s.text.Len() > 0 {
		evs = append(evs, s.tu.event("model.delta", s.step, "", &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: s.text.String(), Index: s.index}}))
		s.index++
		s.text.Reset()
	}
	if len(evs) > 0 && s.err == nil {
		s.err = s.tu.say(evs...)
	}
}

// flush says what is held at the stream's end (it travels with the
// step's next facts, within the linger).
func (s *sink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sayText()
	return s.err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func inputText(parts []*eventsv1.InputPart) string {
	var b strings.Builder
	for _, p := range parts {
		switch {
		case p.GetText() != "":
			b.WriteString(p.GetText())
		case p.GetJson() != "":
			b.WriteString(p.GetJson())
		case p.GetRef() != "":
			b.WriteString("[attachment " + p.GetRef() + "]")
		}
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

func toolNames(m map[string]tools.Tool) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
