package a2a

import (
	"context"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

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
		return h.readTask(ctx, st.ref, st.from, st.user)
	}
	v, err := h.follow(ctx, follow{ref: st.ref, from: st.from, until: untilWaits})
	if err != nil {
		return nil, err
	}
	t := v.snapshot()
	t.History = []Message{st.user}
	return &t, nil
}

// readTask is a task as it is now.
func (h *Handler) readTask(ctx context.Context, ref taskRef, from uint64, user Message) (*Task, *rpcError) {
	v, err := h.follow(ctx, follow{ref: ref, from: from, until: untilPresent})
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
	from, _, err := h.start(ctx, ref, 0)
	if err != nil {
		return nil, err
	}
	return h.readTask(ctx, ref, from, Message{})
}

// cancelTask serves CancelTask: the turn is interrupted, and the task
// returned as the interrupt left it. An ended task is not cancelable.
func (h *Handler) cancelTask(ctx context.Context, p *TaskIDRequest) (*Task, *rpcError) {
	if err := checkTaskID("params.id", p.ID); err != nil {
		return nil, err
	}
	ref, err := h.locate(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	from, _, err := h.start(ctx, ref, 0)
	if err != nil {
		return nil, err
	}
	now, err := h.readTask(ctx, ref, from, Message{})
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
	// The task as the interrupt left it: canceled when no worker held
	// the turn (not started, parked), else still working until its worker
	// stops it. Waiting for that worker would wait on a worker that may be
	// gone.
	v, err := h.follow(ctx, follow{ref: ref, from: from, until: untilPresent})
	if err != nil {
		return nil, err
	}
	t := v.snapshot()
	return &t, nil
}

// listTasks serves ListTasks: the tasks of one context (every turn of the
// thread, folded from its events), newest first; without a contextId the
// tenant's tasks across its contexts (listTenantTasks).
func (h *Handler) listTasks(ctx context.Context, p *ListTasksRequest) (*ListTasksResponse, *rpcError) {
	var session, thread string
	if p.ContextID != "" {
		var err *rpcError
		if session, thread, err = parseContext("params.contextId", p.ContextID); err != nil {
			return nil, err
		}
	}
	size := p.PageSize
	switch {
	case size == 0:
		size = 50
	case size < 0 || size > 100:
		return nil, invalidParams("params.pageSize", "between 1 and 100")
	}
	switch p.Status {
	case "TASK_STATE_UNSPECIFIED", "UNRECOGNIZED":
		// No filter: @a2a-js/sdk 1.3.0 sends "UNRECOGNIZED" for a status
		// left unset.
		p.Status = ""
	}
	if p.Status != "" && !slices.Contains(allStates, p.Status) {
		return nil, invalidParams("params.status", "%q is not a task state", p.Status)
	}
	if p.ContextID == "" {
		return h.listTenantTasks(ctx, p, size)
	}
	offset := 0
	if p.PageToken != "" {
		n, cerr := strconv.Atoi(p.PageToken)
		if cerr != nil || n < 0 {
			return nil, invalidParams("params.pageToken", "not a page token of this server")
		}
		offset = n
	}
	views, err := h.scanThread(ctx, session, thread)
	if err != nil {
		return nil, err
	}
	var all []Task
	for i := len(views) - 1; i >= 0; i-- {
		t := views[i].snapshot()
		if p.Status != "" && t.Status.State != p.Status {
			continue
		}
		if !p.IncludeArtifacts {
			t.Artifacts = nil
		}
		all = append(all, t)
	}
	res := &ListTasksResponse{Tasks: []Task{}, PageSize: size, TotalSize: len(all)}
	if offset < len(all) {
		end := min(offset+size, len(all))
		res.Tasks = all[offset:end]
		if end < len(all) {
			res.NextPageToken = strconv.Itoa(end)
		}
	}
	return res, nil
}

var allStates = []string{StateSubmitted, StateWorking, StateInputRequired, StateCompleted, StateFailed, StateCanceled}

// scanThread folds every turn of a thread from its events, to the end of
// the log, in the order the turns were submitted.
func (h *Handler) scanThread(ctx context.Context, session, thread string) ([]*taskView, *rpcError) {
	_, err := h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: session, ThreadId: thread})
	if status.Code(err) == codes.NotFound {
		// A context nobody has used (or another tenant's) has no tasks.
		return nil, nil
	}
	if err != nil {
		return nil, fromStatus(err, "")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := h.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: session, ThreadId: thread, TypePrefixes: []string{"turn.", "action.", "queue.", "model.delta"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1, Heartbeat: durationpb.New(heartbeat),
	})
	if err != nil {
		return nil, fromStatus(err, "")
	}
	contextID := contextOf(session, thread)
	byID := map[string]*taskView{}
	var order []*taskView
	for {
		resp, err := sub.Recv()
		if err != nil {
			return nil, fromStatus(err, "")
		}
		switch item := resp.GetItem().(type) {
		case *controlv1.SubscribeEventsResponse_Heartbeat:
			// Idle: every event of the log as it is was folded
			// (untilPresent).
			if item.Heartbeat.GetSequence() > 0 {
				return order, nil
			}
		case *controlv1.SubscribeEventsResponse_Event:
			ev := item.Event
			if id := ev.GetTurnId(); id != "" && ev.GetThreadId() == thread {
				v := byID[id]
				if v == nil {
					v = newTaskView(id, contextID)
					byID[id] = v
					order = append(order, v)
				}
				v.apply(ev)
			}
		}
	}
}
