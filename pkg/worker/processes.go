package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// The control service's names for process requests on the thread
// (services/control/domain: ChangeProcessTerminateRequested, InputRefRole).
const (
	changeProcessTerminate = "process_terminate_requested"
	inputRefRole           = "input_ref"
)

// processWaitName is the tool that waits for the turn's background
// processes; it needs the turn's process table, so the worker runs it
// itself (processWait.Run is never called).
const processWaitName = "process_wait"

// maxInputQueue bounds stdin writes waiting for a process that does not
// read its input; more are dropped with a warning in the worker's log.
const maxInputQueue = 256

// procTable holds the background processes a turn started. They live as
// long as the turn: when it ends the worker kills those still running and
// reports process.terminated before the turn's terminal fact (facts of an
// ended turn are refused, and a process nobody holds would be
// unreachable by WriteProcessStdin and TerminateProcess).
type procTable struct {
	tu *turn
	// ctx outlives the turn's cancellation: a process's end is still
	// reported when an interrupt cancelled the turn.
	ctx   context.Context
	mu    sync.Mutex
	procs map[string]*proc
	// running counts the processes not yet ended (MaxTurnProcesses).
	running int
	wg      sync.WaitGroup
	silent  bool // the turn ended elsewhere: kill, report nothing
}

type proc struct {
	id, command string
	p           *tools.Process
	inputs      chan string
	ready       chan struct{} // closed once process.started is reported (or failed to be)
	unreported  bool          // process.started could not be reported; set before ready closes
	done        chan struct{} // closed once the end is reported
	mu          sync.Mutex
	killReason  string
	tail        string // the last output, for process_wait
	end         string // how it ended, for process_wait
}

func newProcTable(ctx context.Context, tu *turn) *procTable {
	return &procTable{tu: tu, ctx: context.WithoutCancel(ctx), procs: map[string]*proc{}}
}

// busy says whether a background process of the turn is still running:
// such a turn waits for a person in place rather than hand itself back
// (handing back would end its processes).
func (pt *procTable) busy() bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.running > 0
}

func (pt *procTable) event(typ string, pr *proc, payload any) *eventsv1.RuntimeEvent {
	ev := pt.tu.event(typ, "", "", payload)
	ev.ProcessId = pr.id
	return ev
}

func (pt *procTable) report(evs ...*eventsv1.RuntimeEvent) {
	pt.mu.Lock()
	silent := pt.silent
	pt.mu.Unlock()
	if silent {
		return
	}
	ctx, cancel := context.WithTimeout(pt.ctx, 10*time.Second)
	defer cancel()
	if err := pt.tu.report(ctx, evs...); err != nil {
		pt.tu.w.cfg.Logger.WarnContext(ctx, "reporting a process fact", "turn_id", pt.tu.t.GetTurnId(), "error", err)
	}
}

// start runs a background shell command for a tool call and answers at
// once with its process id.
func (pt *procTable) start(step, call, evalID string, args json.RawMessage, acc tools.Access, enf enforcement) (_ tools.Result, err error) {
	w := pt.tu.w
	if err := pt.reserve(); err != nil {
		return tools.Result{}, err
	}
	defer func() {
		if err != nil {
			pt.release()
		}
	}()
	pr := &proc{id: ids.New(ids.Process), inputs: make(chan string, maxInputQueue), ready: make(chan struct{}), done: make(chan struct{})}
	p, err := tools.Shell{}.Start(w.shellSandbox(enf), args, &procOutput{pt: pt, pr: pr, stream: "stdout"}, &procOutput{pt: pt, pr: pr, stream: "stderr"})
	if err != nil {
		return tools.Result{}, err
	}
	pr.p, pr.command = p, p.Command
	started := pt.event("process.started", pr, &eventsv1.RuntimeEvent_ProcessStarted{ProcessStarted: &eventsv1.ProcessStarted{
		Command: clip(p.Command, 4096), Cwd: p.Cwd}})
	// The call that started it, so the process joins its tool call.
	started.StepId, started.ToolCallId = step, call
	rctx, cancel := context.WithTimeout(pt.ctx, 10*time.Second)
	// The process's own sandbox.applied, then process.started: its output
	// waits for ready, so no fact of it comes before either.
	applied := w.appliedSandbox("shell", args, acc, enf)
	applied.Name = clip(p.Command, 4096)
	err = pt.tu.reportApplied(rctx, applied, "", "", pr.id, evalID)
	if err == nil {
		err = pt.tu.report(rctx, started)
	}
	cancel()
	if err != nil {
		// Unreported, nothing could reach it: it must not run.
		_ = p.Kill()
		pr.unreported = true
		close(pr.ready)
		_ = p.Wait()
		return tools.Result{}, err
	}
	pt.mu.Lock()
	pt.procs[pr.id] = pr
	pt.wg.Add(1)
	pt.mu.Unlock()
	close(pr.ready)
	go pt.feed(pr)
	go pt.await(pr)
	out := fmt.Sprintf("started process %s (pid %d): %s\nIts output, input and end are reported as process facts; wait for it with process_wait.", pr.id, p.Pid(), clip(p.Command, 200))
	return tools.Result{Output: out, Bytes: len(out)}, nil
}

// reserve takes a slot for a process of the turn and of the worker, or
// fails limit_exceeded naming the bound: processes are not queued, the
// model waits for one (process_wait) or ends one instead.
func (pt *procTable) reserve() error {
	cfg := pt.tu.w.cfg
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.running >= cfg.MaxTurnProcesses {
		return &tools.Failure{Category: tools.LimitExceeded, Message: fmt.Sprintf("this turn already runs %d background processes, its bound; wait for one to end (process_wait) first", pt.running)}
	}
	select {
	case pt.tu.w.processes <- struct{}{}:
	default:
		return &tools.Failure{Category: tools.LimitExceeded, Message: fmt.Sprintf("the worker already runs %d background processes, its bound; wait for one to end (process_wait) first", cfg.MaxProcesses)}
	}
	pt.running++
	return nil
}

// release gives back a slot reserve took.
func (pt *procTable) release() {
	pt.mu.Lock()
	pt.running--
	pt.mu.Unlock()
	<-pt.tu.w.processes
}

// procOutput reports what a process writes, chunk by chunk, through the
// output policy: secrets redacted, a chunk above the inline budget stored
// (StoreOutput with the process id) and referenced.
type procOutput struct {
	pt     *procTable
	pr     *proc
	stream string
}

func (o *procOutput) Write(b []byte) (int, error) {
	<-o.pr.ready
	if o.pr.unreported {
		return len(b), nil
	}
	pt, pr, w := o.pt, o.pr, o.pt.tu.w
	out, hits := redact(w.cfg.RedactionRules, string(b))
	pr.mu.Lock()
	pr.tail = tail(pr.tail+out, w.cfg.OutputBudget)
	pr.mu.Unlock()
	payload := &eventsv1.ProcessOutput{Stream: o.stream, Preview: head(out, previewBytes)}
	var facts []*eventsv1.RuntimeEvent
	if len(out) > w.cfg.OutputBudget {
		ctx, cancel := context.WithTimeout(pt.ctx, 10*time.Second)
		resp, err := w.control.StoreOutput(ctx, &controlv1.StoreOutputRequest{
			TurnId: pt.tu.t.GetTurnId(), ProcessId: pr.id, MediaType: "text/plain; charset=utf-8",
			Content: []byte(head(out, maxStoredOutput)), Truncated: len(out) > maxStoredOutput, Redacted: len(hits) > 0,
		})
		cancel()
		if err == nil {
			payload.Output = resp.GetOutput()
			facts = append(facts, pt.event("output.spilled", pr, &eventsv1.RuntimeEvent_OutputSpilled{OutputSpilled: &eventsv1.OutputFact{
				Output: payload.Output, Reason: fmt.Sprintf("%d bytes are above the inline budget of %d bytes", len(out), w.cfg.OutputBudget)}}))
		} else {
			facts = append(facts, pt.event("output.truncated", pr, &eventsv1.RuntimeEvent_OutputTruncated{OutputTruncated: &eventsv1.OutputFact{
				Reason: fmt.Sprintf("the process wrote %d bytes; only the %d-byte preview is kept (the store failed: %v)", len(out), previewBytes, err)}}))
		}
	}
	if len(hits) > 0 {
		facts = append(facts, pt.event("output.redacted", pr, &eventsv1.RuntimeEvent_OutputRedacted{OutputRedacted: &eventsv1.OutputFact{
			Output: payload.Output, Reason: "matched redaction rules: " + hitSummary(hits)}}))
	}
	pt.report(append(facts, pt.event("process.output", pr, &eventsv1.RuntimeEvent_ProcessOutput{ProcessOutput: payload}))...)
	return len(b), nil
}

// feed writes stdin requests (process.input facts) in order.
func (pt *procTable) feed(pr *proc) {
	for {
		select {
		case <-pr.done:
			return
		case uri := <-pr.inputs:
			data, err := pt.readInput(uri)
			if err == nil {
				_, err = pr.p.Write(data)
			}
			if err != nil {
				pt.tu.w.cfg.Logger.WarnContext(pt.ctx, "writing process stdin", "process_id", pr.id, "error", err)
			}
		}
	}
}

func (pt *procTable) readInput(uri string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(pt.ctx, 30*time.Second)
	defer cancel()
	var data []byte
	for off := int64(0); ; {
		resp, err := pt.tu.w.control.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: uri, Offset: off})
		if err != nil {
			return nil, err
		}
		data = append(data, resp.GetData()...)
		if resp.GetNextOffset() >= resp.GetSizeBytes() || resp.GetNextOffset() <= off {
			return data, nil
		}
		off = resp.GetNextOffset()
	}
}

// await reports the process's end once its output is reported.
func (pt *procTable) await(pr *proc) {
	defer pt.wg.Done()
	exit := pr.p.Wait()
	pt.release()
	pr.mu.Lock()
	reason := pr.killReason
	pr.mu.Unlock()
	var ev *eventsv1.RuntimeEvent
	switch {
	case reason != "" && exit.Signal != "":
		// A kill asked for; one that came after the process had exited on
		// its own is not a termination (it falls through to its exit).
		ev = pt.event("process.terminated", pr, &eventsv1.RuntimeEvent_ProcessTerminated{ProcessTerminated: &eventsv1.ProcessTerminated{Reason: reason, Signal: exit.Signal}})
		pr.end = "terminated (" + reason + ")"
	case exit.Err != nil:
		ev = pt.event("process.failed", pr, &eventsv1.RuntimeEvent_ProcessFailed{ProcessFailed: &eventsv1.ProcessFailed{Category: tools.IOError, Message: exit.Err.Error()}})
		pr.end = "failed: " + exit.Err.Error()
	case exit.Signal != "":
		ev = pt.event("process.failed", pr, &eventsv1.RuntimeEvent_ProcessFailed{ProcessFailed: &eventsv1.ProcessFailed{Category: "signaled", Message: "ended by " + exit.Signal}})
		pr.end = "failed: ended by " + exit.Signal
	default:
		ev = pt.event("process.completed", pr, &eventsv1.RuntimeEvent_ProcessCompleted{ProcessCompleted: &eventsv1.ProcessCompleted{ExitCode: int32(exit.Code)}})
		pr.end = fmt.Sprintf("completed with exit status %d", exit.Code)
	}
	pt.report(ev)
	close(pr.done)
}

func (pt *procTable) get(id string) *proc {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.procs[id]
}

// input queues a process.input fact's bytes for the process, if this turn
// holds it.
func (pt *procTable) input(ev *eventsv1.RuntimeEvent) {
	pr := pt.get(ev.GetProcessId())
	uri := ev.GetRefs()[inputRefRole]
	if pr == nil || uri == "" {
		return
	}
	select {
	case pr.inputs <- uri:
	default:
		pt.tu.w.cfg.Logger.WarnContext(pt.ctx, "process stdin queue full; input dropped", "process_id", pr.id, "event_id", ev.GetEventId())
	}
}

// terminate kills a process this turn holds; its end is reported as
// process.terminated with the reason.
func (pt *procTable) terminate(id, reason string) {
	pr := pt.get(id)
	if pr == nil {
		return
	}
	pr.mu.Lock()
	if pr.killReason == "" {
		pr.killReason = reason
	}
	pr.mu.Unlock()
	select {
	case <-pr.done:
	default:
		_ = pr.p.Kill()
	}
}

// closeAll kills every process still running (reason on their
// process.terminated; silent: nothing reported) and waits, bounded, for
// their ends to be reported.
func (pt *procTable) closeAll(reason string, silent bool) {
	pt.mu.Lock()
	pt.silent = pt.silent || silent
	running := make([]string, 0, len(pt.procs))
	for id := range pt.procs {
		running = append(running, id)
	}
	pt.mu.Unlock()
	for _, id := range running {
		pt.terminate(id, reason)
	}
	done := make(chan struct{})
	go func() { pt.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		pt.tu.w.cfg.Logger.Warn("processes did not end in time", "turn_id", pt.tu.t.GetTurnId())
	}
}

type processWaitArgs struct {
	ProcessID string `json:"process_id"`
	TimeoutMs int64  `json:"timeout_ms"`
}

// wait answers when the process (or every process of the turn) has ended,
// or when the timeout passes, with how each ended and its last output.
func (pt *procTable) wait(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a processWaitArgs
	if err := decodeStrict(raw, &a); err != nil {
		return tools.Result{}, err
	}
	timeout := 30 * time.Second
	if a.TimeoutMs > 0 {
		timeout = min(time.Duration(a.TimeoutMs)*time.Millisecond, 10*time.Minute)
	}
	pt.mu.Lock()
	var procs []*proc
	for id, pr := range pt.procs {
		if a.ProcessID == "" || id == a.ProcessID {
			procs = append(procs, pr)
		}
	}
	pt.mu.Unlock()
	if len(procs) == 0 {
		if a.ProcessID != "" {
			return tools.Result{}, &tools.Failure{Category: tools.NotFound, Message: "this turn holds no process " + a.ProcessID}
		}
		return tools.Result{Output: "no background processes"}, nil
	}
	slices.SortFunc(procs, func(x, y *proc) int { return strings.Compare(x.id, y.id) })
	timer := time.NewTimer(timeout)
	defer timer.Stop()
wait:
	for _, pr := range procs {
		select {
		case <-pr.done:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			return tools.Result{}, &tools.Failure{Category: tools.Cancelled, Message: "the wait was interrupted"}
		}
	}
	var b strings.Builder
	for _, pr := range procs {
		select {
		case <-pr.done:
			fmt.Fprintf(&b, "%s: %s\n", pr.id, pr.end)
		default:
			fmt.Fprintf(&b, "%s: still running after %s\n", pr.id, timeout)
		}
		pr.mu.Lock()
		if pr.tail != "" {
			fmt.Fprintf(&b, "last output:\n%s\n", pr.tail)
		}
		pr.mu.Unlock()
	}
	return tools.Result{Output: b.String(), Bytes: b.Len()}, nil
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &tools.Failure{Category: tools.InvalidArguments, Message: err.Error()}
	}
	return nil
}

// processWait is the registry entry of process_wait.
type processWait struct{}

func (processWait) Spec() tools.Spec {
	return tools.Spec{Name: processWaitName, Description: "Wait for a background process of this turn (or all of them when process_id is empty) to end, up to timeout_ms (default 30000); answers how each ended and its last output.",
		Schema:   `{"type":"object","properties":{"process_id":{"type":"string"},"timeout_ms":{"type":"integer","minimum":1}},"additionalProperties":false}`,
		ReadOnly: true, ConcurrencySafe: true, Interrupt: "cancel"}
}

func (processWait) Plan(_ *tools.Sandbox, raw json.RawMessage) (tools.Access, error) {
	var a processWaitArgs
	if err := decodeStrict(raw, &a); err != nil {
		return tools.Access{}, err
	}
	return tools.Access{Access: eventsv1.Access_ACCESS_READ}, nil
}

func (processWait) Run(context.Context, *tools.Sandbox, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, &tools.Failure{Category: tools.InvalidArguments, Message: "process_wait runs only inside a turn"}
}
