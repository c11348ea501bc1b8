package worker

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// compactionPrompt opens the summary request. The scripted test provider
// matches on its words.
const compactionPrompt = "Compact the conversation: summarize the work so far (what was asked, what was done, what was found, what is left) so the task can continue from the summary alone."

// contextBudget is the share of the model's context window a transcript
// may use before it is compacted; the rest is left for the answer.
const contextBudget = 0.8

// estimateTokens is the worker's estimate (4 bytes per token), the same
// one context.resolved reports.
func estimateTokens(msgs []provider.Message) int64 {
	n := int64(0)
	for _, m := range msgs {
		size := len(m.Content) + 3
		for _, c := range m.ToolCalls {
			size += len(c.Name) + len(c.Arguments)
		}
		n += int64(size) / 4
	}
	return n
}

// windowOf is the context window of a model among routing's candidates;
// 0 when unknown.
func windowOf(cands *eventsv1.CandidateSet, model string) int64 {
	for _, c := range cands.GetCandidates() {
		if c.GetModelId() == model {
			return c.GetContextWindow()
		}
	}
	return 0
}

// window is the selected model's context window: routing's candidate
// facts for a routed model, else the worker's configured ContextWindow.
func (tu *turn) window() int64 {
	if w := windowOf(tu.candidates, tu.model); w > 0 {
		return w
	}
	return tu.w.cfg.ContextWindow
}

// compactable splits msgs into what compaction replaces and what it keeps:
// the system prompt and the user's input stay, and so does the last
// exchange (the latest assistant message and its tool results: a tool
// result must follow the call it answers).
func compactable(msgs []provider.Message) (older []provider.Message, last []provider.Message, ok bool) {
	lastAssistant := -1
	for i := len(msgs) - 1; i >= 2; i-- {
		if msgs[i].Role == "assistant" && msgs[i].Summarizes == 0 {
			lastAssistant = i
			break
		}
	}
	if lastAssistant <= 2 {
		return nil, nil, false // nothing before the last exchange
	}
	return msgs[2:lastAssistant], msgs[lastAssistant:], true
}

// maybeCompact compacts the transcript when it exceeds the selected
// model's context budget: the older messages become one summary written
// by the model (context.compaction.started, the summary's model call as
// its own step, context.compaction.completed with the stored summary's
// ref and the token counts). A failed compaction is reported
// (context.compaction.failed) and the turn continues on the full
// transcript: the model may still take it, and if not its failure says
// why.
func (tu *turn) maybeCompact(ctx context.Context, msgs []provider.Message) ([]provider.Message, error) {
	window := tu.window()
	before := estimateTokens(msgs)
	if window <= 0 || float64(before) <= contextBudget*float64(window) {
		return msgs, nil
	}
	older, last, ok := compactable(msgs)
	if !ok {
		return msgs, nil
	}
	w := tu.w
	step := ids.New(ids.Step)
	facts := func(typ string, p *eventsv1.ContextCompaction) *eventsv1.RuntimeEvent {
		p.Trigger, p.AffectedTurnIds, p.TokensBefore = "auto_token_limit", []string{tu.t.GetTurnId()}, before
		ev := tu.event(typ, step, "", nil)
		switch typ {
		case "context.compaction.started":
			ev.Payload = &eventsv1.RuntimeEvent_ContextCompactionStarted{ContextCompactionStarted: p}
		case "context.compaction.completed":
			ev.Payload = &eventsv1.RuntimeEvent_ContextCompactionCompleted{ContextCompactionCompleted: p}
		default:
			ev.Payload = &eventsv1.RuntimeEvent_ContextCompactionFailed{ContextCompactionFailed: p}
		}
		return ev
	}
	if err := tu.report(ctx, facts("context.compaction.started", &eventsv1.ContextCompaction{})); err != nil {
		return nil, err
	}
	summary, err := tu.summarize(ctx, step, older)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rerr := tu.report(ctx, facts("context.compaction.failed", &eventsv1.ContextCompaction{Error: clip(err.Error(), 2000)})); rerr != nil {
			return nil, rerr
		}
		return msgs, nil
	}
	steps := 0
	for _, m := range older {
		if m.Role == "assistant" {
			steps += max(1, m.Summarizes)
		}
	}
	compacted := append([]provider.Message{msgs[0], msgs[1], {Role: "assistant", Content: "[Summary of the earlier steps of this turn]\n" + summary, Summarizes: steps}}, last...)
	ref := ""
	stored, err := w.control.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: tu.t.GetTurnId(), ToolCallId: "compaction:" + step,
		MediaType: "text/plain; charset=utf-8", Content: []byte(summary)})
	if err == nil {
		ref = stored.GetOutput().GetUri()
	} else {
		w.cfg.Logger.WarnContext(ctx, "storing a compaction summary", "turn_id", tu.t.GetTurnId(), "error", status.Convert(err).Message())
	}
	if err := tu.report(ctx, facts("context.compaction.completed", &eventsv1.ContextCompaction{SummaryRef: ref, TokensAfter: estimateTokens(compacted)})); err != nil {
		return nil, err
	}
	return compacted, nil
}

// summarize asks the turn's model for the summary, reported as a model
// call of the compaction's step (no tools offered; the text is the
// summary, not an answer, so it is not streamed as model.delta).
func (tu *turn) summarize(ctx context.Context, step string, older []provider.Message) (string, error) {
	w := tu.w
	var b strings.Builder
	b.WriteString(compactionPrompt + "\n\nThe task: " + inputText(tu.t.GetInput()) + "\n\nThe steps to summarize:\n")
	for _, m := range older {
		switch {
		case m.Role == "tool":
			fmt.Fprintf(&b, "[tool result %s]\n%s\n", m.ToolCallID, m.Content)
		default:
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Content)
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "[tool call %s %s] %s\n", c.ID, c.Name, c.Arguments)
			}
		}
	}
	if err := tu.report(ctx, tu.event("model.requested", step, "", &eventsv1.RuntimeEvent_ModelRequested{ModelRequested: &eventsv1.ModelRequested{
		Provider: w.cfg.Provider.Name(), Model: tu.model}})); err != nil {
		return "", err
	}
	resp, err := w.cfg.Provider.Stream(ctx, provider.Request{Model: tu.model, Messages: []provider.Message{
		{Role: "system", Content: "You summarize an agent's work for it to continue. Be factual and brief."},
		{Role: "user", Content: b.String()},
	}}, discardSink{})
	if err != nil {
		pe := provider.AsError(err)
		category := pe.Category
		if ctx.Err() != nil {
			category = "cancelled"
		}
		_ = tu.report(context.WithoutCancel(ctx), tu.event("model.failed", step, "", &eventsv1.RuntimeEvent_ModelFailed{ModelFailed: &eventsv1.ModelFailed{
			Provider: w.cfg.Provider.Name(), Model: tu.model, Category: category, Message: pe.Message, Retryable: pe.Retryable()}}))
		return "", err
	}
	usage := &eventsv1.ModelUsage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
		CachedInputTokens: resp.Usage.CachedInputTokens, ReasoningTokens: resp.Usage.ReasoningTokens}
	if !resp.UsageKnown {
		usage = nil
	}
	if err := tu.report(ctx, tu.event("model.completed", step, "", &eventsv1.RuntimeEvent_ModelCompleted{ModelCompleted: &eventsv1.ModelCompleted{
		Provider: w.cfg.Provider.Name(), Model: tu.model, StopReason: resp.StopReason, Usage: usage, ResponseRef: resp.RequestID}})); err != nil {
		return "", err
	}
	if resp.UsageKnown && tu.routed {
		if _, err := w.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: tu.scope(), UsageId: step, ModelId: tu.model, Usage: &routingv1.Usage{
			InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
			CachedInputTokens: resp.Usage.CachedInputTokens, ReasoningTokens: resp.Usage.ReasoningTokens}}); err != nil {
			w.cfg.Logger.WarnContext(ctx, "recording cost", "turn_id", tu.t.GetTurnId(), "error", err)
		}
	}
	if strings.TrimSpace(resp.Text) == "" {
		return "", fmt.Errorf("the model answered an empty summary")
	}
	return resp.Text, nil
}

// discardSink drops the summary's stream; the summary is stored whole.
type discardSink struct{}

func (discardSink) Text(string)                  {}
func (discardSink) Reasoning(string)             {}
func (discardSink) ToolCall(int, string, string) {}
func (discardSink) ToolArgs(int, string)         {}
