package app

import (
	"context"
	"strings"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

func (a *App) subagent(ctx context.Context, c Caller, session, id string) (*controlv1.Subagent, error) {
	s, ok, err := lookupIn(ctx, a, c.Tenant, session, func() (*controlv1.Subagent, bool, error) { return readmodel.Subagent(ctx, a.Store, c.Tenant, id) })
	if err != nil {
		return nil, err
	}
	if !ok || s.SessionId != session {
		return nil, fault.NotFoundWith("subagent", id, "subagent "+id+" not found in session "+session)
	}
	return s, nil
}

// SpawnSubagent starts a child thread linked to its parent session, thread
// and turn. The child thread is created first, so a subagent.spawned fact
// never names a thread that does not exist; a retry with the same
// subagent id returns it.
func (a *App) SpawnSubagent(ctx context.Context, c Caller, req *controlv1.SpawnSubagentRequest) (*controlv1.SpawnSubagentResponse, error) {
	session := req.GetSessionId()
	if agent := req.GetAgent(); agent != "" {
		if err := a.checkPeer(agent); err != nil {
			return nil, fault.Invalid("agent", "%s", err.Error())
		}
		if req.GetObjective() == "" {
			return nil, fault.Invalid("objective", "required with agent: it is the message sent to the peer")
		}
	}
	parent, err := a.thread(ctx, c, session, req.GetParentThreadId())
	if err != nil {
		return nil, err
	}
	turn, err := a.turn(ctx, c, req.GetParentTurnId())
	if err != nil {
		return nil, err
	}
	if turn.ThreadId != parent.ThreadId {
		return nil, fault.NotFoundWith("turn", turn.TurnId, "turn "+turn.TurnId+" not found in thread "+parent.ThreadId)
	}
	subID := req.GetSubagentId()
	if subID == "" {
		subID = ids.New(ids.Subagent)
	}
	if s, ok, err := readmodel.Subagent(ctx, a.Store, c.Tenant, subID); err != nil {
		return nil, err
	} else if ok {
		if s.SessionId != session || s.ParentThreadId != parent.ThreadId {
			return nil, &fault.Error{Kind: fault.KindAlreadyExists, Resource: "subagent", ID: subID, Message: "subagent " + subID + " already exists under another parent"}
		}
		return &controlv1.SpawnSubagentResponse{Subagent: s}, nil
	}
	// The child thread's id derives from the subagent's, so a retry after a
	// partial failure finds the same thread.
	childID := "thr_" + subID
	if _, err := a.w.Execute(ctx, threadAgg(c.Tenant, session, childID), "create-thread", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if _, ok, err := readmodel.Thread(ctx, st, c.Tenant, childID); err != nil || ok {
			return nil, err
		}
		return []*eventsv1.RuntimeEvent{{Type: events.TypeThreadStarted, SessionId: session, ThreadId: childID,
			Payload: &eventsv1.RuntimeEvent_ThreadStarted{ThreadStarted: &eventsv1.ThreadStarted{
				Title: req.GetRole(), ParentThreadId: parent.ThreadId, ParentTurnId: turn.TurnId, SubagentId: subID,
			}}}}, nil
	}); err != nil {
		return nil, err
	}
	isolation := req.GetIsolation()
	if isolation == "" {
		isolation = "isolated"
	}
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, session, parent.ThreadId), command.Key("spawn:"+subID), func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if _, ok, err := readmodel.Subagent(ctx, st, c.Tenant, subID); err != nil || ok {
			return nil, err
		}
		return []*eventsv1.RuntimeEvent{{Type: events.TypeSubagentSpawned, SessionId: session, ThreadId: parent.ThreadId, TurnId: turn.TurnId, SubagentId: subID,
			Payload: &eventsv1.RuntimeEvent_SubagentSpawned{SubagentSpawned: &eventsv1.SubagentSpawned{
				ChildThreadId: childID, Role: req.GetRole(), Isolation: isolation, ModelPolicy: req.GetModelPolicy(), Objective: req.GetObjective(),
				Agent: req.GetAgent(),
			}}}}, nil
	})
	if err != nil {
		return nil, err
	}
	seq := res.Sequence
	// A remote subagent's child thread takes no turn: the control
	// service sends the objective to the peer (Peers).
	if len(req.GetInput()) > 0 && req.GetAgent() == "" {
		sub, err := a.SubmitTurn(ctx, c, &controlv1.SubmitTurnRequest{
			SessionId: session, ThreadId: childID, Input: req.GetInput(), IdempotencyKey: "spawn:" + subID,
			CreatePolicy: controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING,
		})
		if err != nil {
			return nil, err
		}
		seq = sub.Sequence
	}
	if _, err := a.caughtUp(ctx, seq); err != nil {
		return nil, err
	}
	s, err := a.subagent(ctx, c, session, subID)
	if err != nil {
		return nil, err
	}
	return &controlv1.SpawnSubagentResponse{Subagent: s, Sequence: seq}, nil
}

// subagentFact appends a subagent.* fact on the parent thread.
func (a *App) subagentFact(ctx context.Context, c Caller, s *controlv1.Subagent, typ string, p *eventsv1.SubagentStatus) (uint64, error) {
	ev := domain.SubagentFact(s, typ, p)
	res, err := a.Log.Append(ctx, threadAgg(c.Tenant, s.SessionId, s.ParentThreadId), eventlog.Any, ev)
	if err != nil {
		return 0, err
	}
	return res[len(res)-1].Sequence, nil
}

// SendSubagentInput submits input to the child thread (queued behind its
// active turn) and records subagent.input on the parent.
func (a *App) SendSubagentInput(ctx context.Context, c Caller, req *controlv1.SendSubagentInputRequest) (*controlv1.SendSubagentInputResponse, error) {
	s, err := a.subagent(ctx, c, req.GetSessionId(), req.GetSubagentId())
	if err != nil {
		return nil, err
	}
	if s.GetAgent() != "" {
		// Its child thread takes no turns: a worker would run one as a
		// local subagent's.
		return nil, fault.Precondition("SUBAGENT_REMOTE", "subagent/"+s.SubagentId, "subagent "+s.SubagentId+" is the A2A peer "+s.GetAgent()+"; input reaches it through the input actions it opens", nil)
	}
	if s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED {
		return nil, &fault.Error{Kind: fault.KindPrecondition, Reason: domain.ReasonSubagentClosed, Subject: "subagent/" + s.SubagentId, Message: "subagent " + s.SubagentId + " is closed; resume it first"}
	}
	sub, err := a.SubmitTurn(ctx, c, &controlv1.SubmitTurnRequest{
		SessionId: s.SessionId, ThreadId: s.ChildThreadId, Input: req.GetInput(),
		CreatePolicy: controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING, BusyPolicy: controlv1.BusyPolicy_BUSY_POLICY_ENQUEUE,
	})
	if err != nil {
		return nil, err
	}
	seq, err := a.subagentFact(ctx, c, s, events.TypeSubagentInput, &eventsv1.SubagentStatus{ChildThreadId: s.ChildThreadId, InputTurnId: sub.Turn.TurnId})
	if err != nil {
		return nil, err
	}
	return &controlv1.SendSubagentInputResponse{Turn: sub.Turn, Sequence: seq}, nil
}

func subagentTerminal(status controlv1.SubagentStatus) bool {
	switch status {
	case controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED, controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED, controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED:
		return true
	}
	return false
}

// WaitSubagents returns when every named subagent is terminal, or at the
// deadline with the state they are in.
func (a *App) WaitSubagents(ctx context.Context, c Caller, req *controlv1.WaitSubagentsRequest) (*controlv1.WaitSubagentsResponse, error) {
	timeout := req.GetTimeout().AsDuration()
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The wait is a fact on the parent's thread: subagent.status with the
	// subagent's status and reason "waited_on" for each one not ended.
	for _, id := range req.GetSubagentIds() {
		s, err := a.subagent(ctx, c, req.GetSessionId(), id)
		if err != nil {
			return nil, err
		}
		if !subagentTerminal(s.Status) {
			if _, err := a.subagentFact(ctx, c, s, events.TypeSubagentStatus, &eventsv1.SubagentStatus{Status: enums.Word(s.Status), ChildThreadId: s.ChildThreadId, Reason: "waited_on"}); err != nil {
				return nil, err
			}
		}
	}
	// The subagents are of the session, so their changes are in its
	// partition of the log: its checkpoint moves with them.
	log := a.Log.Of(c.Tenant, req.GetSessionId())
	for {
		seq, err := projector.Checkpoint(ctx, log, a.Store, readmodel.Name)
		if err != nil {
			return nil, err
		}
		out := &controlv1.WaitSubagentsResponse{AllTerminal: true, Sequence: seq}
		for _, id := range req.GetSubagentIds() {
			s, err := a.subagent(ctx, c, req.GetSessionId(), id)
			if err != nil {
				return nil, err
			}
			out.Subagents = append(out.Subagents, s)
			out.AllTerminal = out.AllTerminal && subagentTerminal(s.Status)
		}
		if out.AllTerminal {
			return out, nil
		}
		// Wake on the next change of the read model, not on a timer.
		if _, err := a.Store.WaitFor(wctx, checkpointName(log, readmodel.Name), seq+1); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return out, nil
		}
	}
}

// ResumeSubagent reopens a closed or idle subagent.
func (a *App) ResumeSubagent(ctx context.Context, c Caller, req *controlv1.ResumeSubagentRequest) (*controlv1.ResumeSubagentResponse, error) {
	s, err := a.subagent(ctx, c, req.GetSessionId(), req.GetSubagentId())
	if err != nil {
		return nil, err
	}
	seq, err := a.subagentFact(ctx, c, s, events.TypeSubagentStatus, &eventsv1.SubagentStatus{Status: "running", ChildThreadId: s.ChildThreadId, Reason: "resumed"})
	if err != nil {
		return nil, err
	}
	if _, err := a.caughtUp(ctx, seq); err != nil {
		return nil, err
	}
	s, err = a.subagent(ctx, c, req.GetSessionId(), req.GetSubagentId())
	if err != nil {
		return nil, err
	}
	return &controlv1.ResumeSubagentResponse{Subagent: s, Sequence: seq}, nil
}

// CloseSubagent closes a subagent; its thread stays readable.
func (a *App) CloseSubagent(ctx context.Context, c Caller, req *controlv1.CloseSubagentRequest) (*controlv1.CloseSubagentResponse, error) {
	s, err := a.subagent(ctx, c, req.GetSessionId(), req.GetSubagentId())
	if err != nil {
		return nil, err
	}
	seq := s.Sequence
	if s.Status != controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED {
		if seq, err = a.subagentFact(ctx, c, s, events.TypeSubagentClosed, &eventsv1.SubagentStatus{Status: "closed", ChildThreadId: s.ChildThreadId, Reason: req.GetReason()}); err != nil {
			return nil, err
		}
		if _, err := a.caughtUp(ctx, seq); err != nil {
			return nil, err
		}
		if s, err = a.subagent(ctx, c, req.GetSessionId(), req.GetSubagentId()); err != nil {
			return nil, err
		}
	}
	return &controlv1.CloseSubagentResponse{Subagent: s, Sequence: seq}, nil
}

// ListSubagents lists a thread's children, or all its descendants.
func (a *App) ListSubagents(ctx context.Context, c Caller, req *controlv1.ListSubagentsRequest) (*controlv1.ListSubagentsResponse, error) {
	seq, err := a.caughtUpIn(ctx, c.Tenant, req.GetSessionId(), req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	if _, err := a.thread(ctx, c, req.GetSessionId(), req.GetThreadId()); err != nil {
		return nil, err
	}
	out := &controlv1.ListSubagentsResponse{Sequence: seq}
	frontier := []string{req.GetThreadId()}
	for len(frontier) > 0 {
		thread := frontier[0]
		frontier = frontier[1:]
		children, err := a.Store.Range(ctx, readmodel.ChildrenIndex(c.Tenant, thread), projection.RangeQuery{})
		if err != nil {
			return nil, err
		}
		for _, e := range children {
			s, err := a.subagent(ctx, c, req.GetSessionId(), e.Member)
			if err != nil {
				return nil, err
			}
			out.Subagents = append(out.Subagents, s)
			if req.GetRecursive() {
				frontier = append(frontier, s.ChildThreadId)
			}
		}
	}
	return out, nil
}

// CloseDueSubagents closes every subagent a parked run waits for whose
// wait is past its deadline, or whose parent turn ended while it waited
// (readmodel.DueSubagentsIndex), and interrupts its turn: the parent's
// wait is over, so nothing keeps running for it. The subagent's end
// resumes the parent, which tells its model the wait timed out. Safe on
// every replica at once: a second close finds the subagent closed.
func (a *App) CloseDueSubagents(ctx context.Context) (int, error) {
	due, err := a.Store.Range(ctx, readmodel.DueSubagentsIndex, rangeUpTo(float64(a.now().UnixMilli()), 256))
	if err != nil {
		return 0, err
	}
	closed := 0
	for _, e := range due {
		tenant, id, ok := strings.Cut(e.Member, "|")
		if !ok {
			continue
		}
		s, found, err := readmodel.Subagent(ctx, a.Store, tenant, id)
		if err != nil {
			return closed, err
		}
		if !found || subagentTerminal(s.Status) {
			continue // its end is being folded, which takes it out
		}
		reason := "its parent's wait for it timed out"
		if e.Score == 0 {
			reason = "its parent turn ended while it waited"
		}
		// Closed first: the close is what the parent resumes on, and a
		// subagent closed by its parent stays closed when its turn then
		// fails.
		c := Caller{Tenant: tenant}
		if _, err := a.CloseSubagent(ctx, c, &controlv1.CloseSubagentRequest{SessionId: s.SessionId, SubagentId: id, Reason: reason}); err != nil {
			return closed, err
		}
		if _, err := a.InterruptTurn(ctx, c, &controlv1.InterruptTurnRequest{SessionId: s.SessionId, ThreadId: s.ChildThreadId, Reason: reason}); err != nil && !fault.Is(err, fault.KindNotFound) && !fault.Is(err, fault.KindPrecondition) {
			return closed, err
		}
		closed++
	}
	return closed, nil
}
