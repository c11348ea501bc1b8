package domain

import (
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Process statuses (the Process read model).
const (
	ProcessRunning    = controlv1.ProcessStatus_PROCESS_STATUS_RUNNING
	ProcessCompleted  = controlv1.ProcessStatus_PROCESS_STATUS_COMPLETED
	ProcessFailed     = controlv1.ProcessStatus_PROCESS_STATUS_FAILED
	ProcessTerminated = controlv1.ProcessStatus_PROCESS_STATUS_TERMINATED
	// ProcessLost: the run holding it was recorded lost.
	ProcessLost = controlv1.ProcessStatus_PROCESS_STATUS_LOST
)

// ChangeProcessTerminateRequested is the thread.updated change that asks
// the worker holding a process to kill it. There is no process.* class for
// a request: process.terminated says it happened, and only the worker
// knows when it has.
const ChangeProcessTerminateRequested = "process_terminate_requested"

// InputRefRole names the envelope ref of process.input that holds the
// stored stdin bytes.
const InputRefRole = "input_ref"

// processReachable checks that a request can still reach the process: it
// is running and its turn has not ended (a worker stops its processes when
// its turn ends, so a process of an ended turn has no holder any more).
func processReachable(tu *controlv1.Turn, p *controlv1.Process) error {
	if p.GetStatus() != ProcessRunning {
		return precondition(ReasonProcessEnded, "process/"+p.GetProcessId(), "process %s already ended as %s", p.GetProcessId(), enums.Word(p.GetStatus()))
	}
	if Terminal(tu.GetStatus()) {
		return precondition(ReasonTurnEnded, "turn/"+tu.GetTurnId(), "turn %s of process %s already ended as %s", tu.GetTurnId(), p.GetProcessId(), enums.Word(tu.GetStatus()))
	}
	return nil
}

// ProcessInput is a WriteProcessStdin request whose bytes are stored.
type ProcessInput struct {
	// InputURI is the stored bytes' object uri.
	InputURI string
	// Preview is a short display form of the bytes.
	Preview string
}

// DecideProcessInput records stdin for a running process of a running
// turn: process.input with the stored bytes' ref, under the holder's run.
func DecideProcessInput(tu *controlv1.Turn, p *controlv1.Process, in ProcessInput) ([]*eventsv1.RuntimeEvent, error) {
	if err := processReachable(tu, p); err != nil {
		return nil, err
	}
	ev := processEvent(events.TypeProcessInput, p)
	ev.Refs = map[string]string{InputRefRole: in.InputURI}
	ev.Payload = &eventsv1.RuntimeEvent_ProcessInput{ProcessInput: &eventsv1.ProcessInput{Preview: in.Preview}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// DecideTerminateProcess asks the holder of a running process to kill it.
// A second request while the first is pending appends nothing.
func DecideTerminateProcess(tu *controlv1.Turn, p *controlv1.Process, reason string) ([]*eventsv1.RuntimeEvent, error) {
	if err := processReachable(tu, p); err != nil {
		return nil, err
	}
	if p.GetTerminateRequested() {
		return nil, nil
	}
	if reason == "" {
		reason = "terminate requested"
	}
	ev := processEvent(events.TypeThreadUpdated, p)
	ev.Payload = &eventsv1.RuntimeEvent_ThreadUpdated{ThreadUpdated: &eventsv1.ThreadUpdated{
		Change: ChangeProcessTerminateRequested, TurnId: p.GetTurnId(), Reason: reason}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

func processEvent(typ string, p *controlv1.Process) *eventsv1.RuntimeEvent {
	ev := event(typ, Scope{Session: p.GetSessionId(), Thread: p.GetThreadId(), Turn: p.GetTurnId()})
	ev.ProcessId, ev.RunId = p.GetProcessId(), p.GetRunId()
	return ev
}
