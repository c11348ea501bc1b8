package a2a

import (
	"context"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// sendMessage serves SendMessage: it returns when the task has ended or
// waits for its client (input-required), or at once, submitted, with
// returnImmediately.
func (h *Handler) sendMessage(ctx context.Context, p *SendMessageRequest) (*Task, *rpcError) {
	st, err := h.startSend(ctx, p)
	if err != nil {
		return nil, err
	}
	c := p.Configuration
	if c != nil && (c.ReturnImmediately || (c.Blocking != nil && !*c.Blocking)) {
		return h.readTask(ctx, st.ref, st.from, st.now, st.user)
	}
	v, err := h.follow(ctx, follow{ref: st.ref, from: st.from, now: st.now, stop: stopInterrupted})
	if err != nil {
		return nil, err
	}
	t := v.snapshot()
	t.History = []Message{st.user}
	return &t, nil
}

// readTask is a task as it is now.
func (h *Handler) readTask(ctx context.Context, ref taskRef, from, now uint64, user Message) (*Task, *rpcError) {
	v, err := h.follow(ctx, follow{ref: ref, from: from, now: now, stop: stopCaught})
	if err != nil {
		return nil, err
	}
	t := v.snapshot()
	if user.MessageID != "" {
		t.History = []Message{user}
	}
	return &t, nil
}

// getTask serves GetTask.
func (h *Handler) getTask(ctx context.Context, p *TaskIDRequest) (*Task, *rpcError) {
	if err := checkTaskID("params.id", p.ID); err != nil {
		return nil, err
	}
	ref, err := h.locate(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	from, read, err := h.start(ctx, ref, 0)
	if err != nil {
		return nil, err
	}
	return h.readTask(ctx, ref, from, read.GetSequence(), Message{})
}

// cancelTask serves CancelTask: the turn is interrupted, and the task
// returned once it has ended. An ended task is not cancelable.
func (h *Handler) cancelTask(ctx context.Context, p *TaskIDRequest) (*Task, *rpcError) {
	if err := checkTaskID("params.id", p.ID); err != nil {
		return nil, err
	}
	ref, err := h.locate(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	from, read, err := h.start(ctx, ref, 0)
	if err != nil {
		return nil, err
	}
	now, err := h.readTask(ctx, ref, from, read.GetSequence(), Message{})
	if err != nil {
		return nil, err
	}
	if terminal(now.Status.State) {
		return nil, &rpcError{Code: codeTaskNotCancelable, Message: "task " + ref.turnID + " has ended (" + now.Status.State + ")", Data: map[string]any{"taskId": ref.turnID}}
	}
	resp, serr := h.control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{
		SessionId: ref.sessionID, ThreadId: ref.threadID, TurnId: ref.turnID, Reason: "A2A CancelTask",
	})
	if serr != nil {
		return nil, fromStatus(serr, ref.turnID)
	}
	if !resp.GetAccepted() {
		return nil, &rpcError{Code: codeTaskNotCancelable, Message: "task " + ref.turnID + " could not be interrupted", Data: map[string]any{"taskId": ref.turnID}}
	}
	v, err := h.follow(ctx, follow{ref: ref, from: from, now: resp.GetSequence()})
	if err != nil {
		return nil, err
	}
	t := v.snapshot()
	return &t, nil
}

// listTasks serves ListTasks: the tasks of one context, newest first.
func (h *Handler) listTasks(ctx context.Context, p *ListTasksRequest) (*ListTasksResponse, *rpcError) {
	if p.ContextID == "" {
		return nil, invalidParams("params.contextId", "required: this agent lists the tasks of one context")
	}
	_, _, err := parseContext("params.contextId", p.ContextID)
	if err != nil {
		return nil, err
	}
	return nil, &rpcError{Code: codeUnsupported, Message: "ListTasks is not done yet (docs/a2a.md)"}
}
