package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// inputPreviewBytes bounds the display preview of stdin on process.input.
const inputPreviewBytes = 64

// process loads a process of the caller's tenant; another tenant's (or
// none) is NotFound.
func (a *App) process(ctx context.Context, c Caller, id string) (*controlv1.Process, error) {
	p, ok, err := lookup(ctx, a, func() (*controlv1.Process, bool, error) { return readmodel.Process(ctx, a.Store, c.Tenant, id) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("process", id, "process "+id+" not found")
	}
	return p, nil
}

// processIn reads a process from a thread's state as the writer holds it.
func processIn(ctx context.Context, st projection.Store, c Caller, id string) (*controlv1.Process, error) {
	p, ok, err := readmodel.Process(ctx, st, c.Tenant, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("process", id, "process "+id+" not found")
	}
	return p, nil
}

// WriteProcessStdin stores the bytes next to the turn's outputs and
// records process.input on the thread; the worker holding the process
// (it watches its thread) reads them back and writes them to stdin. The
// bytes are not inline in the log: stdin may be large, and the log keeps
// a ref and a short preview.
func (a *App) WriteProcessStdin(ctx context.Context, c Caller, req *controlv1.WriteProcessStdinRequest) (*controlv1.WriteProcessStdinResponse, error) {
	p, err := a.process(ctx, c, req.GetProcessId())
	if err != nil {
		return nil, err
	}
	// Checked before storing anything, and again in the decision below.
	tu, err := a.turn(ctx, c, p.TurnId)
	if err != nil {
		return nil, err
	}
	if _, err := domain.DecideProcessInput(tu, p, domain.ProcessInput{}); err != nil {
		return nil, err
	}
	data := req.GetData()
	sum := sha256.Sum256(data)
	name := "output/" + c.Tenant + "/" + p.SessionId + "/" + p.TurnId + "/" + hex.EncodeToString(sum[:])
	ref, err := a.Log.PutObject(ctx, name, "process:"+p.ProcessId+":stdin", "application/octet-stream", data)
	if err != nil {
		return nil, err
	}
	in := domain.ProcessInput{InputURI: ref.GetUri(), Preview: inputPreview(data)}
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, p.SessionId, p.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		p, err := processIn(ctx, st, c, req.GetProcessId())
		if err != nil {
			return nil, err
		}
		tu, err := turnIn(ctx, st, c, p.TurnId)
		if err != nil {
			return nil, err
		}
		return domain.DecideProcessInput(tu, p, in)
	})
	if err != nil {
		return nil, err
	}
	out := &controlv1.WriteProcessStdinResponse{Sequence: res.Sequence}
	if len(res.Appended) > 0 {
		out.EventId = res.Appended[0].EventID
	}
	return out, nil
}

// TerminateProcess records the request on the thread for the worker that
// holds the process; process.terminated follows from that worker.
func (a *App) TerminateProcess(ctx context.Context, c Caller, req *controlv1.TerminateProcessRequest) (*controlv1.TerminateProcessResponse, error) {
	p, err := a.process(ctx, c, req.GetProcessId())
	if err != nil {
		return nil, err
	}
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, p.SessionId, p.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		p, err := processIn(ctx, st, c, req.GetProcessId())
		if err != nil {
			return nil, err
		}
		tu, err := turnIn(ctx, st, c, p.TurnId)
		if err != nil {
			return nil, err
		}
		reason := req.GetReason()
		if reason == "" && c.Subject != "" {
			reason = "terminate requested by " + c.Subject
		}
		return domain.DecideTerminateProcess(tu, p, reason)
	})
	if err != nil {
		return nil, err
	}
	return &controlv1.TerminateProcessResponse{Accepted: len(res.Appended) > 0, Sequence: res.Sequence}, nil
}

// inputPreview is a short display form: the head when it is text, the
// size otherwise.
func inputPreview(data []byte) string {
	if !utf8.Valid(data) {
		return fmt.Sprintf("[%d bytes]", len(data))
	}
	if len(data) <= inputPreviewBytes {
		return string(data)
	}
	cut := inputPreviewBytes
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return string(data[:cut]) + "…"
}
