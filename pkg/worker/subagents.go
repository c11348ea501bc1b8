package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// spawnAgentName is the delegation tool; it acts through the control
// service for the turn, so the worker runs it itself.
const spawnAgentName = "spawn_agent"

const (
	defaultSubagentWait = 2 * time.Minute
	maxSubagentWait     = 10 * time.Minute
)

type spawnAgentArgs struct {
	Objective string `json:"objective"`
	Role      string `json:"role"`
	// Wait (default true) waits for the subagent's first turn to end.
	Wait      *bool `json:"wait"`
	TimeoutMs int64 `json:"timeout_ms"`
	// Agent, when set, is a remote A2A agent's card URL: the subagent is
	// that peer, driven by the control service (docs/a2a.md).
	Agent string `json:"agent"`
}

func parseSpawnAgent(raw json.RawMessage) (spawnAgentArgs, error) {
	var a spawnAgentArgs
	if err := decodeStrict(raw, &a); err != nil {
		return a, err
	}
	if strings.TrimSpace(a.Objective) == "" {
		return a, &tools.Failure{Category: tools.InvalidArguments, Message: "objective is required"}
	}
	return a, nil
}

// spawnAgent is the registry entry of spawn_agent.
type spawnAgent struct{}

func (spawnAgent) Spec() tools.Spec {
	return tools.Spec{Name: spawnAgentName, Description: "Delegate an objective to a subagent with its own thread; by default waits (timeout_ms, default 120000) for it to finish and answers its summary. A subagent that does not finish in time is closed and its turn interrupted. With wait: false it answers the subagent's id at once. With agent (a remote A2A agent's card URL, among those the runtime allows) the subagent is that agent.",
		Schema:    `{"type":"object","properties":{"objective":{"type":"string"},"role":{"type":"string"},"wait":{"type":"boolean"},"timeout_ms":{"type":"integer","minimum":1},"agent":{"type":"string"}},"required":["objective"],"additionalProperties":false}`,
		Interrupt: "cancel"}
}

// Plan: a subagent acts with its own tool calls, each under permission;
// spawning it is asked for as an execution (the default policy asks).
func (spawnAgent) Plan(_ *tools.Sandbox, raw json.RawMessage) (tools.Access, error) {
	if _, err := parseSpawnAgent(raw); err != nil {
		return tools.Access{}, err
	}
	return tools.Access{Access: eventsv1.Access_ACCESS_EXECUTE}, nil
}

func (spawnAgent) Run(context.Context, *tools.Sandbox, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, &tools.Failure{Category: tools.InvalidArguments, Message: "spawn_agent runs only inside a turn"}
}

// spawnAgent creates the subagent (SpawnSubagent: a child thread whose
// first turn is the objective; any worker of the tenant runs it) and
// waits for it. A turn that may park hands itself back while it waits
// (*mustWait): control resumes it when the subagent ends, and closes the
// subagent at the wait's deadline, whether or not a worker runs. A wait in
// place that times out or is interrupted closes the subagent and
// interrupts its turn: nothing keeps running for a parent that stopped
// listening. The subagent's id derives from the call, so a call run again
// (a run lost mid-call) finds the subagent it spawned, not a second one.
func (tu *turn) spawnAgent(ctx context.Context, callID string, raw json.RawMessage) (tools.Result, error) {
	a, err := parseSpawnAgent(raw)
	if err != nil {
		return tools.Result{}, err
	}
	c := tu.w.control
	sp, err := c.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{
		SessionId: tu.t.GetSessionId(), ParentThreadId: tu.t.GetThreadId(), ParentTurnId: tu.t.GetTurnId(),
		SubagentId: ids.Derive(ids.Subagent, tu.t.GetTurnId(), callID),
		Role:       clip(a.Role, 120), Isolation: "isolated", Objective: clip(a.Objective, 16000),
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: a.Objective}}}, Agent: a.Agent,
	})
	if err != nil {
		return tools.Result{}, &tools.Failure{Category: "subagent_unavailable", Message: status.Convert(err).Message()}
	}
	s := sp.GetSubagent()
	if a.Wait != nil && !*a.Wait {
		out := fmt.Sprintf("spawned subagent %s (thread %s); it runs on its own", s.GetSubagentId(), s.GetChildThreadId())
		return tools.Result{Output: out, Bytes: len(out)}, nil
	}
	timeout := defaultSubagentWait
	if a.TimeoutMs > 0 {
		timeout = min(time.Duration(a.TimeoutMs)*time.Millisecond, maxSubagentWait)
	}
	deadline := time.Now().Add(timeout)
	if !tu.mayPark() {
		return tu.awaitSubagent(ctx, s, deadline)
	}
	// The wait is recorded (subagent.status "waited_on") as for a wait in
	// place; a subagent that already ended answers at once.
	wr, err := c.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: tu.t.GetSessionId(), SubagentIds: []string{s.GetSubagentId()},
		Timeout: durationpb.New(time.Millisecond)})
	if err == nil && wr.GetAllTerminal() && len(wr.GetSubagents()) == 1 {
		return subagentOutcome(wr.GetSubagents()[0], deadline)
	}
	return tools.Result{}, &mustWait{call: parkedCall{CallID: callID, Subagent: s.GetSubagentId(), Until: deadline.UnixMilli()}}
}

// resumeSubagent is a parked spawn_agent call continued: its subagent
// ended, or its wait's deadline closed it.
func (tu *turn) resumeSubagent(ctx context.Context, pc parkedCall) (tools.Result, error) {
	s := &controlv1.Subagent{SessionId: tu.t.GetSessionId(), SubagentId: pc.Subagent}
	return tu.awaitSubagent(ctx, s, time.UnixMilli(pc.Until))
}

// awaitSubagent waits for s to end, until deadline, and answers its
// outcome (WaitSubagents).
func (tu *turn) awaitSubagent(ctx context.Context, s *controlv1.Subagent, deadline time.Time) (tools.Result, error) {
	c := tu.w.control
	for {
		// WaitSubagents answers at its own deadline; ask again until ours
		// (at least once: a resumed wait finds its subagent ended).
		left := max(time.Until(deadline), time.Millisecond)
		wr, err := c.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: tu.t.GetSessionId(), SubagentIds: []string{s.GetSubagentId()},
			Timeout: durationpb.New(min(left, 30*time.Second))})
		if ctx.Err() != nil {
			tu.stopSubagent(s, "the parent turn was interrupted")
			return tools.Result{}, &tools.Failure{Category: tools.Cancelled, Message: "interrupted while waiting for subagent " + s.GetSubagentId()}
		}
		if err != nil {
			return tools.Result{}, &tools.Failure{Category: "subagent_unavailable", Message: status.Convert(err).Message()}
		}
		if len(wr.GetSubagents()) == 1 {
			s = wr.GetSubagents()[0]
		}
		if wr.GetAllTerminal() && len(wr.GetSubagents()) == 1 {
			return subagentOutcome(s, deadline)
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	tu.stopSubagent(s, "did not finish in time")
	return tools.Result{}, &tools.Failure{Category: tools.TimedOut, Message: fmt.Sprintf("subagent %s did not finish in time; it was closed", s.GetSubagentId())}
}

// subagentOutcome is the call's answer from the subagent's end. Closed
// at or after the wait's deadline: the runtime closed it because the
// wait timed out.
func subagentOutcome(s *controlv1.Subagent, deadline time.Time) (tools.Result, error) {
	if s.GetStatus() == controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED && !time.Now().Before(deadline) {
		return tools.Result{}, &tools.Failure{Category: tools.TimedOut, Message: fmt.Sprintf("subagent %s did not finish in time; it was closed", s.GetSubagentId())}
	}
	out := fmt.Sprintf("subagent %s (thread %s) %s", s.GetSubagentId(), s.GetChildThreadId(), enums.Word(s.GetStatus()))
	if s.GetSummary() != "" {
		out += ": " + s.GetSummary()
	}
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED {
		return tools.Result{}, &tools.Failure{Category: "subagent_failed", Message: out}
	}
	return tools.Result{Output: out, Bytes: len(out)}, nil
}

// stopSubagent closes the subagent and interrupts its thread's turn, on a
// context of its own (the turn's may be cancelled).
func (tu *turn) stopSubagent(s *controlv1.Subagent, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := tu.w.control
	if _, err := c.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: s.GetSessionId(), ThreadId: s.GetChildThreadId(), Reason: reason}); err != nil {
		tu.w.cfg.Logger.WarnContext(ctx, "interrupting a subagent", "subagent_id", s.GetSubagentId(), "error", err)
	}
	if _, err := c.CloseSubagent(ctx, &controlv1.CloseSubagentRequest{SessionId: s.GetSessionId(), SubagentId: s.GetSubagentId(), Reason: reason}); err != nil {
		tu.w.cfg.Logger.WarnContext(ctx, "closing a subagent", "subagent_id", s.GetSubagentId(), "error", err)
	}
}
