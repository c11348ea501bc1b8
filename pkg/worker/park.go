// Parking: a turn that must wait for a person, or whose worker is
// stopping, is handed back instead of held. The worker stores a checkpoint
// (the transcript and the step it stopped in) and reports run.status
// "parked" naming it; control releases the lease and makes the turn
// claimable again once the actions it waits for are answered; any worker
// that claims it then continues from the checkpoint (ClaimTurnResponse
// checkpoint_uri). A wait costs no slot, lease, heartbeat or stream.

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
)

// checkpointVersion is the shape of checkpoint a worker writes; a worker
// resumes only the versions it knows (older ones start from the input).
const checkpointVersion = 1

// maxCheckpoint is what one StoreOutput call takes: a transcript beyond it
// cannot be handed back, and its turn waits in place as before.
const maxCheckpoint = 3 << 20

// Why a run parks (control's run.status "parked" metadata "reason").
const (
	parkWait  = "wait"
	parkDrain = "drain"
)

// checkpoint is what a parked run hands back.
type checkpoint struct {
	Version int    `json:"version"`
	Model   string `json:"model"`
	Routed  bool   `json:"routed"`
	// Steps is how many model steps the turn has taken.
	Steps int `json:"steps"`
	// Messages is the transcript: through the assistant message that
	// asked for Step's calls when Step is set.
	Messages []provider.Message `json:"messages"`
	Step     *pendingStep       `json:"step,omitempty"`
}

// pendingStep is a model step whose tool calls did not all run.
type pendingStep struct {
	ID    string              `json:"id"`
	Calls []provider.ToolCall `json:"calls"`
	// Results of the calls that ran, by index in Calls.
	Results map[int]provider.Message `json:"results,omitempty"`
	// Parked: the calls that wait for an answer, by index in Calls.
	Parked map[int]parkedCall `json:"parked,omitempty"`
}

// parkedCall is a call that waits for an answer: an approval (what its
// permission evaluation said, and where the answer will be), or, Client,
// a client tool's result.
type parkedCall struct {
	// CallID is the call's id in the facts (tool.started ... tool.result).
	CallID   string `json:"call_id"`
	ActionID string `json:"action_id"`
	// From is where to look for the answer in the session's events.
	From uint64 `json:"from"`
	// Own: the worker opened the action itself (askUnconfined); its
	// action.resolved answers it, not a permission.resolved.
	Own bool `json:"own,omitempty"`
	// Client: a call to a client tool (clienttools.go); its action's
	// answer carries the call's result, not a permission.
	Client bool `json:"client,omitempty"`
	// Subagent: a spawn_agent call that waits for the subagent it spawned
	// (subagents.go), until Until (unix milliseconds); ActionID is empty.
	Subagent  string          `json:"subagent,omitempty"`
	Until     int64           `json:"until_ms,omitempty"`
	EvalID    string          `json:"eval_id,omitempty"`
	Rewritten string          `json:"rewritten,omitempty"`
	Profile   json.RawMessage `json:"profile,omitempty"`
	// Input: a request_user_input call (userinput.go); its action's
	// answer is the call's result.
	Input bool `json:"input,omitempty"`
}

// errParked ends a turn's loop whose run handed the turn back: nothing
// more is reported by this run.
var errParked = errors.New("the turn was parked")

// mustWait is a call that must wait for a person: runTools parks the step.
type mustWait struct{ call parkedCall }

func (m *mustWait) Error() string { return "waits for action " + m.call.ActionID }

// stepParked is runTools' answer when calls of the step must wait.
type stepParked struct{ step *pendingStep }

func (s *stepParked) Error() string { return "the step waits for a person" }

// progress is where a running turn is, for a hand back at any moment: the
// transcript at the last step boundary and the calls of the current step
// that completed.
type progress struct {
	mu    sync.Mutex
	steps int
	msgs  []provider.Message
	step  *pendingStep
}

func (p *progress) boundary(msgs []provider.Message, steps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs, p.steps, p.step = msgs, steps, nil
}

func (p *progress) startStep(msgs []provider.Message, steps int, step *pendingStep) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs, p.steps, p.step = msgs, steps, step
}

func (p *progress) completed(i int, m provider.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.step != nil {
		p.step.Results[i] = m
	}
}

// snapshot is a checkpoint of what completed: in-flight calls and model
// calls run again on resume.
func (p *progress) snapshot(tu *turn) *checkpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	cp := &checkpoint{Version: checkpointVersion, Model: tu.model, Routed: tu.routed, Steps: p.steps, Messages: p.msgs}
	if p.step != nil {
		s := *p.step
		s.Results = make(map[int]provider.Message, len(p.step.Results))
		for k, v := range p.step.Results {
			s.Results[k] = v
		}
		s.Parked = nil
		cp.Step = &s
	}
	return cp
}

// park hands the turn back: it stores cp and reports run.status "parked"
// naming it and the actions it waits for. Background processes end first
// (they belong to the run). errParked on success; an error when the
// checkpoint could not be stored or the park reported.
func (tu *turn) park(ctx context.Context, cp *checkpoint, reason string) error {
	raw, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if len(raw) > maxCheckpoint {
		return fmt.Errorf("the checkpoint is %d bytes, above the %d a stored output takes", len(raw), maxCheckpoint)
	}
	stored, err := tu.w.control.StoreOutput(ctx, &controlv1.StoreOutputRequest{
		TurnId: tu.t.GetTurnId(), ToolCallId: "checkpoint:" + tu.runID, MediaType: "application/json", Content: raw})
	if err != nil {
		return err
	}
	var waits, calls, subs, untils []string
	step := ""
	if cp.Step != nil {
		step = cp.Step.ID
		for _, pc := range cp.Step.Parked {
			calls = append(calls, pc.CallID)
			if pc.Subagent != "" {
				subs, untils = append(subs, pc.Subagent), append(untils, strconv.FormatInt(pc.Until, 10))
				continue
			}
			waits = append(waits, pc.ActionID)
		}
	}
	title, detail := "handed back: waiting for a person", "the worker released the turn while "+strconv.Itoa(len(waits))+" action(s) wait for an answer; any worker resumes it then"
	if len(subs) > 0 {
		title = "handed back: waiting for subagents"
		detail = "the worker released the turn while " + strconv.Itoa(len(waits)) + " action(s) wait for an answer and " + strconv.Itoa(len(subs)) + " subagent(s) run; any worker resumes it when all are done"
	}
	if reason == parkDrain {
		title, detail = "handed back: the worker is stopping", "worker "+tu.w.cfg.WorkerID+" is draining; another worker resumes the turn from its checkpoint"
	}
	md := map[string]string{"reason": reason, "action_ids": strings.Join(waits, ","), "worker_id": tu.w.cfg.WorkerID,
		"step_id": step, "call_ids": strings.Join(calls, ",")}
	if len(subs) > 0 {
		md["subagent_ids"], md["subagent_deadlines_ms"] = strings.Join(subs, ","), strings.Join(untils, ",")
	}
	tu.procs.closeAll("the turn was handed back", false)
	err = tu.report(ctx, tu.event("run.status", "", "", &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{
		Phase: "parked", Title: title, Detail: detail, Checkpoints: []string{stored.GetOutput().GetUri()},
		Metadata: md,
	}}))
	if err != nil {
		return err
	}
	return errParked
}

// loadCheckpoint reads the checkpoint a claim resumes from; nil when the
// claim starts the turn from its input.
func (w *Worker) loadCheckpoint(ctx context.Context, claim *controlv1.ClaimTurnResponse) (*checkpoint, error) {
	uri := claim.GetCheckpointUri()
	if uri == "" {
		return nil, nil
	}
	var raw []byte
	for off := int64(0); ; {
		resp, err := w.control.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: uri, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("reading checkpoint %s: %w", uri, err)
		}
		raw = append(raw, resp.GetData()...)
		if resp.GetNextOffset() >= resp.GetSizeBytes() || len(resp.GetData()) == 0 {
			break
		}
		off = resp.GetNextOffset()
	}
	cp := &checkpoint{}
	if err := json.Unmarshal(raw, cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", uri, err)
	}
	if cp.Version != checkpointVersion {
		return nil, fmt.Errorf("checkpoint %s is version %d; this worker resumes version %d", uri, cp.Version, checkpointVersion)
	}
	return cp, nil
}

// parkedPermission is the permission a parked call resumes with: what its
// evaluation said, and the answer the person gave, read from the log.
func (tu *turn) parkedPermission(ctx context.Context, pc parkedCall) (permission, error) {
	p := permission{evalID: pc.EvalID, rewritten: pc.Rewritten}
	if len(pc.Profile) > 0 {
		p.profile = &eventsv1.SandboxProfile{}
		if err := protojson.Unmarshal(pc.Profile, p.profile); err != nil {
			return p, fmt.Errorf("the parked call's sandbox profile: %w", err)
		}
	}
	var err error
	p.allowed, p.why, err = tu.awaitApproval(ctx, pc.ActionID, pc.From, pc.Own)
	if !p.allowed {
		p.rewritten = ""
	}
	return p, err
}

// waitFor is the answer of permit when the call must wait for a person.
func waitFor(callID, actionID string, from uint64, own bool, p permission) error {
	pc := parkedCall{CallID: callID, ActionID: actionID, From: from, Own: own, EvalID: p.evalID, Rewritten: p.rewritten}
	if p.profile != nil {
		pc.Profile, _ = protojson.Marshal(p.profile)
	}
	return &mustWait{call: pc}
}

// parked is the parked call at index k of a resumed step.
func (s *pendingStep) parked(k int) (parkedCall, bool) {
	if s == nil {
		return parkedCall{}, false
	}
	pc, ok := s.Parked[k]
	return pc, ok
}

// mayPark says whether a call that must wait for a person hands the turn
// back: not after a hand back failed, and not while the turn's background
// processes run (they would end with the run).
func (tu *turn) mayPark() bool {
	return !tu.holdWaits && !tu.procs.busy()
}
