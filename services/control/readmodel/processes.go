package readmodel

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// processTerminateRequested is domain.ChangeProcessTerminateRequested (the
// projector does not import the domain).
const processTerminateRequested = "process_terminate_requested"

// ProcessKey is a long-lived process's document.
func ProcessKey(tenant, process string) string { return "proc:" + tenant + ":" + process }

// TurnProcessesIndex lists a turn's processes by start sequence.
func TurnProcessesIndex(tenant, turn string) string { return "tprocs:" + tenant + ":" + turn }

// Process reads a process document.
func Process(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Process, bool, error) {
	return get(ctx, store, ProcessKey(tenant, id), &controlv1.Process{})
}

// processDoc loads the event's process; other is true when the id is
// another session's (own).
func (t *tx) processDoc() (p *controlv1.Process, ok, other bool) {
	id := t.ev.GetProcessId()
	if id == "" {
		return nil, false, false
	}
	return own(t, ProcessKey(t.tenant(), id), newProcess)
}

func newProcess() *controlv1.Process { return &controlv1.Process{} }

// process follows a process's lifecycle facts. process.started creates
// the document (a repeated start is ignored: the first one names the
// holder); an end fact closes it once.
func (t *tx) process() {
	ev := t.ev
	p, ok, other := t.processDoc()
	if ev.GetType() == events.TypeProcessStarted {
		if ok || other || ev.GetProcessId() == "" {
			return
		}
		t.put(ProcessKey(t.tenant(), ev.GetProcessId()), &controlv1.Process{
			ProcessId: ev.GetProcessId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(),
			RunId: ev.GetRunId(), Status: domain.ProcessRunning, Command: ev.GetProcessStarted().GetCommand(),
			StartedSequence: t.seq(), Sequence: t.seq(),
		})
		t.adds = append(t.adds, projection.IndexEntry{Index: TurnProcessesIndex(t.tenant(), ev.GetTurnId()), Member: ev.GetProcessId(), Score: float64(t.seq())})
		return
	}
	if !ok || p.Status != domain.ProcessRunning {
		return
	}
	switch ev.GetType() {
	case events.TypeProcessCompleted:
		p.Status = domain.ProcessCompleted
	case events.TypeProcessFailed:
		p.Status = domain.ProcessFailed
	case events.TypeProcessTerminated:
		p.Status = domain.ProcessTerminated
	default:
		return
	}
	p.TerminateRequested = false
	p.Sequence = t.seq()
	t.put(ProcessKey(t.tenant(), p.ProcessId), p)
}

func (t *tx) processTerminateRequested() {
	p, ok, _ := t.processDoc()
	if !ok || p.Status != domain.ProcessRunning {
		return
	}
	p.TerminateRequested, p.Sequence = true, t.seq()
	t.put(ProcessKey(t.tenant(), p.ProcessId), p)
}

// processesLost follows a run recorded lost (its lease lapsed): the
// processes that run held died with its worker, or at least nobody holds
// them any more, so they are "lost" rather than left "running" for
// requests nobody would act on.
func (t *tx) processesLost() {
	ev := t.ev
	if t.err != nil || ev.GetTurnId() == "" || ev.GetRunId() == "" {
		return
	}
	entries, err := t.store.Range(t.ctx, TurnProcessesIndex(t.tenant(), ev.GetTurnId()), projection.RangeQuery{})
	if err != nil {
		t.err = err
		return
	}
	for _, e := range entries {
		p, ok, _ := own(t, ProcessKey(t.tenant(), e.Member), newProcess)
		if !ok || p.Status != domain.ProcessRunning || p.RunId != ev.GetRunId() {
			continue
		}
		p.Status, p.TerminateRequested, p.Sequence = domain.ProcessLost, false, t.seq()
		t.put(ProcessKey(t.tenant(), p.ProcessId), p)
	}
}
