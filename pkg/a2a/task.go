package a2a

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// AnswerArtifact is the id of a task's answer artifact (the turn's final
// text).
const AnswerArtifact = "answer"

// taskView folds one turn's runtime events, in log order, into its A2A
// task, and says what each event changed as stream items. It is pure: the
// same events give the same items, with the same ids, so a replay of the
// turn (GetTask, SubscribeToTask) yields what a live stream sent.
type taskView struct {
	task    Task
	pending []pendingAction
	// step and text are the latest model step that streamed text, and
	// its text: the whole answer when the turn's summary is clipped.
	step string
	text strings.Builder
}

// pendingAction is an action the turn waits for, as an input-required
// status says it.
type pendingAction struct {
	ID, Type, Prompt, Schema string
	Decisions                []string
}

func newTaskView(turnID, contextID string) *taskView {
	return &taskView{task: Task{ID: turnID, ContextID: contextID, Status: TaskStatus{State: StateSubmitted}}}
}

// apply folds ev (an event of the view's turn) and returns the stream
// items it makes: status and artifact updates.
func (v *taskView) apply(ev *eventsv1.RuntimeEvent) []StreamResponse {
	ts := ""
	if t := ev.GetTimestamp(); t != nil {
		ts = t.AsTime().UTC().Format(time.RFC3339Nano)
	}
	msgID := fmt.Sprintf("%s-%d", v.task.ID, ev.GetSequence())
	switch ev.GetType() {
	case events.TypeTurnSubmitted:
		if v.task.Status.Timestamp == "" {
			v.task.Status.Timestamp = ts
		}
	case events.TypeTurnStarted:
		if v.task.Status.State == StateSubmitted {
			return v.status(TaskStatus{State: StateWorking, Timestamp: ts})
		}
	case events.TypeActionRequired:
		r := ev.GetActionRequired()
		id := ev.GetActionId()
		if id == "" || slices.ContainsFunc(v.pending, func(p pendingAction) bool { return p.ID == id }) {
			return nil
		}
		v.pending = append(v.pending, pendingAction{ID: id, Type: r.GetActionType(), Prompt: r.GetPrompt(), Schema: r.GetJsonSchema(), Decisions: r.GetDecisions()})
		return v.status(v.inputRequired(msgID, ts))
	case events.TypeActionResolved:
		id := ev.GetActionId()
		i := slices.IndexFunc(v.pending, func(p pendingAction) bool { return p.ID == id })
		if i < 0 {
			return nil
		}
		v.pending = slices.Delete(v.pending, i, i+1)
		if len(v.pending) > 0 {
			return v.status(v.inputRequired(msgID, ts))
		}
		return v.status(TaskStatus{State: StateWorking, Timestamp: ts})
	case events.TypeModelDelta:
		if ev.GetStepId() != v.step {
			v.step = ev.GetStepId()
			v.text.Reset()
		}
		v.text.WriteString(ev.GetModelDelta().GetText())
	case events.TypeTurnCompleted:
		v.pending = nil
		answer := ev.GetTurnCompleted().GetSummary()
		// The worker clips the summary (with an ellipsis); the final
		// step's text is the whole answer.
		if cut, ok := strings.CutSuffix(answer, "…"); ok && strings.HasPrefix(v.text.String(), cut) {
			answer = v.text.String()
		}
		art := Artifact{ArtifactID: AnswerArtifact, Name: "answer", Parts: []Part{TextPart(answer)}}
		v.task.Artifacts = []Artifact{art}
		out := []StreamResponse{{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Artifact: art, LastChunk: true}}}
		return append(out, v.status(TaskStatus{State: StateCompleted, Timestamp: ts, Message: v.agentMessage(msgID, TextPart(answer))})...)
	case events.TypeQueueChanged:
		// A queued turn taken out of the queue ends cancelled, with no
		// turn.failed of its own.
		q := ev.GetQueueChanged()
		if q.GetChange() != "removed" || q.GetTurnId() != v.task.ID || terminal(v.task.Status.State) {
			return nil
		}
		text := "removed from the queue"
		if r := q.GetReason(); r != "" {
			text += ": " + r
		}
		return v.status(TaskStatus{State: StateCanceled, Timestamp: ts, Message: v.agentMessage(msgID, TextPart(text))})
	case events.TypeTurnFailed:
		v.pending = nil
		f := ev.GetTurnFailed()
		state := StateFailed
		if f.GetOutcome() == eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED {
			state = StateCanceled
		}
		text := f.GetMessage()
		if text == "" {
			text = "the turn ended: " + strings.ToLower(strings.TrimPrefix(f.GetOutcome().String(), "TURN_OUTCOME_"))
		}
		if c := f.GetCategory(); c != "" {
			text = c + ": " + text
		}
		return v.status(TaskStatus{State: state, Timestamp: ts, Message: v.agentMessage(msgID, TextPart(text))})
	}
	return nil
}

// inputRequired is the status of a turn waiting for its pending actions:
// each action's prompt, and a data part saying how to answer it
// (docs/a2a.md, "Answering input-required").
func (v *taskView) inputRequired(msgID, ts string) TaskStatus {
	var parts []Part
	for _, p := range v.pending {
		parts = append(parts, TextPart(p.Prompt))
		d := map[string]any{"actionId": p.ID, "actionType": p.Type, "decisions": p.Decisions}
		if p.Schema != "" {
			d["payloadSchema"] = json.RawMessage(p.Schema)
			if !json.Valid([]byte(p.Schema)) {
				d["payloadSchema"] = p.Schema
			}
		}
		raw, _ := json.Marshal(d)
		parts = append(parts, Part{Data: raw, Metadata: map[string]any{"agentruntime": "action"}})
	}
	return TaskStatus{State: StateInputRequired, Timestamp: ts, Message: v.agentMessage(msgID, parts...)}
}

func (v *taskView) agentMessage(id string, parts ...Part) *Message {
	return &Message{MessageID: id, ContextID: v.task.ContextID, TaskID: v.task.ID, Role: RoleAgent, Parts: parts}
}

func (v *taskView) status(s TaskStatus) []StreamResponse {
	v.task.Status = s
	return []StreamResponse{{StatusUpdate: &TaskStatusUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Status: s}}}
}

// snapshot is the task as it is now, with a copy of its slices.
func (v *taskView) snapshot() Task {
	t := v.task
	t.Artifacts = slices.Clone(t.Artifacts)
	return t
}

// --- cursors ----------------------------------------------------------------

// cursor is a stream item's place: the k-th item made of the runtime event
// at seq (the cursor extension, docs/a2a.md).
type cursor struct {
	seq uint64
	k   int
}

func (c cursor) String() string { return strconv.FormatUint(c.seq, 10) + "." + strconv.Itoa(c.k) }

// after says whether c comes after o.
func (c cursor) after(o cursor) bool { return c.seq > o.seq || (c.seq == o.seq && c.k > o.k) }

func parseCursor(s string) (cursor, error) {
	a, b, ok := strings.Cut(s, ".")
	seq, err1 := strconv.ParseUint(a, 10, 64)
	k, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || k < 0 {
		return cursor{}, fmt.Errorf("%q is not a cursor this server issued (SEQUENCE.INDEX)", s)
	}
	return cursor{seq: seq, k: k}, nil
}
