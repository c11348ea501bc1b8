// Package domain holds the evidence service's pure logic: the fold of a
// scope's events into a session model (threads, turns, tasks, tool calls,
// telemetry), the packs built from it (evidence, replay, review, benchmark
// trial, ATIF trajectory), signal applicability, and the benchmark trial
// state machine. No I/O: the app layer reads the log and the store and
// hands events and state in.
package domain

import (
	"sort"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
)

// ScopeKind is what an export covers.
type ScopeKind string

const (
	ScopeSession ScopeKind = "session"
	ScopeThread  ScopeKind = "thread"
	ScopeTurn    ScopeKind = "turn"
	ScopeTask    ScopeKind = "task"
)

// Scope selects the events an export covers.
type Scope struct {
	Kind    ScopeKind
	Session string
	// ID is the thread, turn or task id; empty for a session.
	ID string
	// AlsoTask adds a task's events to a turn scope (a benchmark trial
	// covers its turn and its task run).
	AlsoTask string
}

// Includes reports whether an event of the scope's session belongs to it.
// Earlier exports (evidence.changed) never do: a pack must not depend on
// how often the scope was exported before.
func (s Scope) Includes(ev *eventsv1.RuntimeEvent) bool {
	if ev.GetType() == events.TypeEvidenceChanged {
		return false
	}
	if s.AlsoTask != "" && ev.GetTaskId() == s.AlsoTask {
		return true
	}
	switch s.Kind {
	case ScopeThread:
		return ev.GetThreadId() == s.ID
	case ScopeTurn:
		return ev.GetTurnId() == s.ID
	case ScopeTask:
		return ev.GetTaskId() == s.ID
	}
	return true
}

// Model is what a scope's events say, folded in log order.
type Model struct {
	Scope     Scope
	RuntimeID string
	TenantID  string
	// Events are the scope's events in log order.
	Events []*eventsv1.RuntimeEvent
	// EvidenceIDs are earlier evidence exports of the session (links only;
	// their content is not part of any pack).
	EvidenceIDs          []string
	VerificationOutcomes []*eventsv1.VerificationOutcome
	Threads              map[string]*Thread
	threadOrder          []string
	Tasks                map[string]*Task
	taskOrder            []string
	ToolCalls            map[string]*ToolCall
	toolOrder            []string
	TraceIDs             map[string]bool
	EventsWithTrace      int
	Counts               map[string]int
	LastRouting          *eventsv1.RoutingDecision
	RoutingEvents        int
	ModelCalls           int
	Tokens               int64
	CostNanos            int64
	DeniedSideEffects    int
	Artifacts            int
}

// Thread is the thread read model as the spec's snapshot shows it.
type Thread struct {
	ID         string
	ActiveTurn string
	Turns      []*Turn
	turns      map[string]*Turn
	Queued     []string
	Pending    map[string]*eventsv1.RuntimeEvent
	Incidents  []jsonexport.Object
	// Compactions are the thread's context.compaction.completed facts, in
	// order: the last is the boundary the thread's history starts from.
	Compactions []jsonexport.Object
	Closed      bool
	lastStatus  string
}

// Turn is one turn's state.
type Turn struct {
	ID                 string
	Status             string
	StartedAt, EndedAt string
	TaskID, RunID      string
	Input              *eventsv1.TurnSubmitted
	SubmittedAt        string
}

// Task is one task's state.
type Task struct {
	ID, Thread, Turn     string
	Title, Objective     string
	Status, NativeStatus string
	CurrentRun           string
	Attempts             []*Attempt
	EvidenceRefs         []string
}

// Attempt is one run of a task.
type Attempt struct {
	RunID, AttemptID     string
	Status, NativeStatus string
}

// ToolCall gathers a tool call's events.
type ToolCall struct {
	ID, StepID, Thread, Turn string
	Name                     string
	Status                   string
	ArgsJSON                 string
	Result                   *eventsv1.ToolResult
	Failure                  *eventsv1.ToolFailed
	StartSeq, EndSeq         uint64
}

// NewModel starts an empty fold of scope.
func NewModel(scope Scope) *Model {
	return &Model{
		Scope: scope, Threads: map[string]*Thread{}, Tasks: map[string]*Task{},
		ToolCalls: map[string]*ToolCall{}, TraceIDs: map[string]bool{}, Counts: map[string]int{},
	}
}

// Apply folds one event of the scope's session, in log order.
func (m *Model) Apply(ev *eventsv1.RuntimeEvent) {
	if ch := ev.GetEvidenceChanged(); ch != nil {
		if ch.GetKind() == "evidence" && m.Scope.Includes(scopeView(ev)) {
			m.EvidenceIDs = append(m.EvidenceIDs, ev.GetEvidenceId())
			m.VerificationOutcomes = append(m.VerificationOutcomes, ch.GetVerificationOutcomes()...)
		}
		return
	}
	if !m.Scope.Includes(ev) {
		return
	}
	m.Events = append(m.Events, ev)
	m.Counts[ev.GetType()]++
	if m.RuntimeID == "" {
		m.RuntimeID = ev.GetRuntimeId()
	}
	if m.TenantID == "" {
		m.TenantID = ev.GetTenantId()
	}
	if t := ev.GetTraceId(); t != "" {
		m.TraceIDs[t] = true
		m.EventsWithTrace++
	}
	m.applyThread(ev)
	m.applyTask(ev)
	m.applyTool(ev)
	m.applyFacts(ev)
}

// scopeView lets an evidence.changed be matched by its scope ids.
func scopeView(ev *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(), TaskId: ev.GetTaskId()}
}

func (m *Model) thread(id string) *Thread {
	t := m.Threads[id]
	if t == nil {
		t = &Thread{ID: id, turns: map[string]*Turn{}, Pending: map[string]*eventsv1.RuntimeEvent{}}
		m.Threads[id] = t
		m.threadOrder = append(m.threadOrder, id)
	}
	return t
}

func (t *Thread) turn(id string) *Turn {
	u := t.turns[id]
	if u == nil {
		u = &Turn{ID: id, Status: "unknown"}
		t.turns[id] = u
		t.Turns = append(t.Turns, u)
	}
	return u
}

func ts(ev *eventsv1.RuntimeEvent) string {
	if ev.GetTimestamp() == nil {
		return ""
	}
	return jsonexport.Time(ev.GetTimestamp().AsTime())
}

func (m *Model) applyThread(ev *eventsv1.RuntimeEvent) {
	if ev.GetThreadId() == "" {
		return
	}
	th := m.thread(ev.GetThreadId())
	var turn *Turn
	if ev.GetTurnId() != "" {
		turn = th.turn(ev.GetTurnId())
		if ev.GetTaskId() != "" && turn.TaskID == "" {
			turn.TaskID = ev.GetTaskId()
		}
		if ev.GetRunId() != "" {
			turn.RunID = ev.GetRunId()
		}
	}
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TurnSubmitted:
		turn.Input, turn.SubmittedAt = p.TurnSubmitted, ts(ev)
		switch p.TurnSubmitted.GetAdmission() {
		case "queued":
			turn.Status = "queued"
		case "steered":
			turn.Status = "steered"
		default:
			turn.Status = "accepted"
			th.ActiveTurn = turn.ID
		}
	case *eventsv1.RuntimeEvent_TurnStarted:
		turn.Status, turn.StartedAt, th.ActiveTurn = "running", ts(ev), turn.ID
	case *eventsv1.RuntimeEvent_TurnCompleted:
		turn.Status, turn.EndedAt = "completed", ts(ev)
		th.endTurn(turn)
	case *eventsv1.RuntimeEvent_TurnFailed:
		turn.Status, turn.EndedAt = turnOutcome(p.TurnFailed.GetOutcome()), ts(ev)
		th.endTurn(turn)
		th.incident(ev, p.TurnFailed.GetCategory(), p.TurnFailed.GetMessage())
	case *eventsv1.RuntimeEvent_QueueChanged:
		th.Queued = events.FoldQueue(th.Queued, p.QueueChanged)
		if p.QueueChanged.GetChange() == "dequeued" && p.QueueChanged.GetTurnId() != "" {
			th.ActiveTurn = p.QueueChanged.GetTurnId()
			if u := th.turns[th.ActiveTurn]; u != nil && u.Status == "queued" {
				u.Status = "accepted"
			}
		}
	case *eventsv1.RuntimeEvent_ActionRequired:
		th.Pending[ev.GetActionId()] = ev
	case *eventsv1.RuntimeEvent_ActionResolved:
		delete(th.Pending, ev.GetActionId())
	case *eventsv1.RuntimeEvent_ContextCompactionCompleted:
		c := p.ContextCompactionCompleted
		b := jsonexport.Object{"sequence": ev.GetSequence(), "affectedTurnIds": strs(c.GetAffectedTurnIds()),
			"tokensBefore": c.GetTokensBefore(), "tokensAfter": c.GetTokensAfter()}
		if c.GetSummaryRef() != "" {
			b["summaryRef"] = c.GetSummaryRef()
		}
		if c.GetTrigger() != "" {
			b["trigger"] = c.GetTrigger()
		}
		if ev.GetTurnId() != "" {
			b["turnId"] = ev.GetTurnId()
		}
		th.Compactions = append(th.Compactions, b)
	case *eventsv1.RuntimeEvent_ThreadUpdated:
		if p.ThreadUpdated.GetChange() == "closed" {
			th.Closed = true
		}
	case *eventsv1.RuntimeEvent_ToolFailed:
		th.incident(ev, p.ToolFailed.GetCategory(), p.ToolFailed.GetMessage())
	case *eventsv1.RuntimeEvent_ModelFailed:
		th.incident(ev, p.ModelFailed.GetCategory(), p.ModelFailed.GetMessage())
	case *eventsv1.RuntimeEvent_RuntimeError:
		th.incident(ev, p.RuntimeError.GetCode(), p.RuntimeError.GetMessage())
	case *eventsv1.RuntimeEvent_SandboxViolation:
		th.incident(ev, "sandbox_violation", "")
	case *eventsv1.RuntimeEvent_ProcessFailed:
		th.incident(ev, p.ProcessFailed.GetCategory(), p.ProcessFailed.GetMessage())
	}
}

func (th *Thread) endTurn(turn *Turn) {
	th.lastStatus = turn.Status
	if th.ActiveTurn == turn.ID {
		th.ActiveTurn = ""
	}
}

func (th *Thread) incident(ev *eventsv1.RuntimeEvent, category, message string) {
	in := jsonexport.Object{"type": ev.GetType(), "sequence": ev.GetSequence(), "eventId": ev.GetEventId()}
	for k, v := range map[string]string{"category": category, "message": message, "turnId": ev.GetTurnId(), "toolCallId": ev.GetToolCallId()} {
		if v != "" {
			in[k] = v
		}
	}
	th.Incidents = append(th.Incidents, in)
}

func turnOutcome(o eventsv1.TurnOutcome) string {
	switch o {
	case eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED:
		return "cancelled"
	case eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT:
		return "timed_out"
	}
	return "failed"
}

// Status is the thread's status in the snapshot's vocabulary. A thread
// waiting on an action is blocked; with an active turn it is running (or
// queued when that turn has not been picked up); otherwise it shows how its
// last turn ended, or idle when none has.
func (th *Thread) Status() string {
	switch {
	case len(th.Pending) > 0:
		return "blocked"
	case th.ActiveTurn != "":
		if u := th.turns[th.ActiveTurn]; u != nil && u.Status == "running" {
			return "running"
		}
		return "queued"
	case len(th.Queued) > 0:
		return "queued"
	}
	switch th.lastStatus {
	case "completed":
		return "completed"
	case "cancelled":
		return "cancelled"
	case "failed", "timed_out":
		return "failed"
	case "":
		if len(th.Turns) == 0 {
			return "idle"
		}
		// Turns exist but none started or ended in this scope: the log
		// does not say more.
		return "unknown"
	}
	return "unknown"
}

func (m *Model) task(id string) *Task {
	t := m.Tasks[id]
	if t == nil {
		t = &Task{ID: id, Status: "unknown"}
		m.Tasks[id] = t
		m.taskOrder = append(m.taskOrder, id)
	}
	return t
}

// taskStatusBySuffix is the status a task transition event implies when
// its payload does not name one.
var taskStatusBySuffix = map[string]string{
	"accepted": "accepted", "queued": "queued", "started": "running", "blocked": "blocked",
	"paused": "paused", "resumed": "running", "retrying": "retrying", "cancel_requested": "cancelling",
	"cancelled": "cancelled", "timed_out": "timed_out", "failed": "failed", "lost": "lost",
	"completed": "completed", "archived": "archived", "waiting": "waiting_input",
}

func taskStatus(s tasksv1.TaskStatus) string {
	if s == tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED {
		return ""
	}
	return enums.Word(s)
}

func (m *Model) applyTask(ev *eventsv1.RuntimeEvent) {
	typ := ev.GetType()
	if !strings.HasPrefix(typ, "task.") || ev.GetTaskId() == "" || typ == events.TypeTaskProfileResolved {
		return
	}
	t := m.task(ev.GetTaskId())
	if t.Thread == "" {
		t.Thread, t.Turn = ev.GetThreadId(), ev.GetTurnId()
	}
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TaskCreated:
		task := p.TaskCreated.GetTask()
		t.Title, t.Objective = task.GetSpec().GetTitle(), task.GetSpec().GetObjective()
		if s := taskStatus(task.GetStatus()); s != "" {
			t.Status = s
		} else {
			t.Status = "accepted"
		}
		t.NativeStatus = task.GetNativeStatus()
		return
	case *eventsv1.RuntimeEvent_TaskAttemptStarted:
		t.CurrentRun = ev.GetRunId()
		t.Attempts = append(t.Attempts, &Attempt{RunID: ev.GetRunId(), AttemptID: ev.GetAttemptId(), Status: "running"})
		t.Status = "running"
		return
	case *eventsv1.RuntimeEvent_TaskAttemptCompleted:
		t.attempt(ev).Status = "completed"
		return
	case *eventsv1.RuntimeEvent_TaskAttemptFailed:
		a := t.attempt(ev)
		a.Status, a.NativeStatus = attemptStatus(p.TaskAttemptFailed.GetStatus())
		return
	case *eventsv1.RuntimeEvent_TaskProgress:
		if s := taskStatus(p.TaskProgress.GetTo()); s != "" {
			t.Status = s
		}
		t.EvidenceRefs = append(t.EvidenceRefs, p.TaskProgress.GetEvidenceRefs()...)
		return
	case *eventsv1.RuntimeEvent_TaskCompleted:
		t.Status, t.NativeStatus = "completed", p.TaskCompleted.GetNativeStatus()
		t.EvidenceRefs = append(t.EvidenceRefs, p.TaskCompleted.GetEvidenceRefs()...)
		return
	}
	if tr, ok := transition(ev); ok {
		if s := taskStatus(tr.GetTo()); s != "" {
			t.Status = s
		} else if s, ok := taskStatusBySuffix[strings.TrimPrefix(typ, "task.")]; ok {
			t.Status = s
		}
		if tr.GetNativeStatus() != "" {
			t.NativeStatus = tr.GetNativeStatus()
		}
		return
	}
	if s, ok := taskStatusBySuffix[strings.TrimPrefix(typ, "task.")]; ok {
		t.Status = s
	}
}

// transition returns the TaskTransition payload of the many task.* classes
// that share it.
func transition(ev *eventsv1.RuntimeEvent) (*eventsv1.TaskTransition, bool) {
	m := ev.ProtoReflect()
	fd := m.WhichOneof(m.Descriptor().Oneofs().ByName("payload"))
	if fd == nil {
		return nil, false
	}
	tr, ok := m.Get(fd).Message().Interface().(*eventsv1.TaskTransition)
	return tr, ok
}

func (t *Task) attempt(ev *eventsv1.RuntimeEvent) *Attempt {
	for i := len(t.Attempts) - 1; i >= 0; i-- {
		if t.Attempts[i].RunID == ev.GetRunId() {
			return t.Attempts[i]
		}
	}
	a := &Attempt{RunID: ev.GetRunId(), AttemptID: ev.GetAttemptId(), Status: "unknown"}
	t.Attempts = append(t.Attempts, a)
	return a
}

// attemptStatus maps a run's end to the snapshot's status vocabulary, which
// has no "lost" or "timed_out": those keep their native status beside it.
// A lost run's outcome is not known, so it is "unknown", never "failed".
func attemptStatus(s tasksv1.RunStatus) (status, native string) {
	switch s {
	case tasksv1.RunStatus_RUN_STATUS_CANCELLED:
		return "cancelled", ""
	case tasksv1.RunStatus_RUN_STATUS_LOST:
		return "unknown", "lost"
	case tasksv1.RunStatus_RUN_STATUS_TIMED_OUT:
		return "failed", "timed_out"
	case tasksv1.RunStatus_RUN_STATUS_COMPLETED:
		return "completed", ""
	}
	return "failed", ""
}

func (m *Model) applyTool(ev *eventsv1.RuntimeEvent) {
	if !strings.HasPrefix(ev.GetType(), "tool.") || ev.GetToolCallId() == "" {
		return
	}
	c := m.ToolCalls[ev.GetToolCallId()]
	if c == nil {
		c = &ToolCall{ID: ev.GetToolCallId(), Status: "unknown", StartSeq: ev.GetSequence()}
		m.ToolCalls[c.ID] = c
		m.toolOrder = append(m.toolOrder, c.ID)
	}
	if c.StepID == "" {
		c.StepID = ev.GetStepId()
	}
	if c.Thread == "" {
		c.Thread, c.Turn = ev.GetThreadId(), ev.GetTurnId()
	}
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_ToolStarted:
		c.Name, c.Status = p.ToolStarted.GetToolName(), "running"
	case *eventsv1.RuntimeEvent_ToolArgs:
		c.ArgsJSON = p.ToolArgs.GetSafeArgsJson()
	case *eventsv1.RuntimeEvent_ToolResult:
		c.Result, c.EndSeq = p.ToolResult, ev.GetSequence()
		c.Status = "completed"
		if p.ToolResult.GetIsError() {
			c.Status = "failed"
		}
		if p.ToolResult.GetOutput() != nil {
			m.Artifacts++
		}
	case *eventsv1.RuntimeEvent_ToolFailed:
		c.Failure, c.EndSeq, c.Status = p.ToolFailed, ev.GetSequence(), "failed"
	}
}

func (m *Model) applyFacts(ev *eventsv1.RuntimeEvent) {
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_RoutingDecided:
		m.LastRouting = p.RoutingDecided.GetDecision()
	case *eventsv1.RuntimeEvent_RoutingSingleCandidate:
		m.LastRouting = p.RoutingSingleCandidate.GetDecision()
	case *eventsv1.RuntimeEvent_ModelRequested:
		m.ModelCalls++
	case *eventsv1.RuntimeEvent_ModelCompleted:
		u := p.ModelCompleted.GetUsage()
		m.Tokens += u.GetInputTokens() + u.GetOutputTokens()
	case *eventsv1.RuntimeEvent_CostRecorded:
		m.CostNanos += p.CostRecorded.GetCost().GetTotalNanos()
	case *eventsv1.RuntimeEvent_PermissionEvaluated:
		if p.PermissionEvaluated.GetDecision() == eventsv1.Decision_DECISION_DENY {
			m.DeniedSideEffects++
		}
	case *eventsv1.RuntimeEvent_PermissionResolved:
		if !p.PermissionResolved.GetAllowed() {
			m.DeniedSideEffects++
		}
	case *eventsv1.RuntimeEvent_ArtifactChanged:
		m.Artifacts++
	}
	if strings.HasPrefix(ev.GetType(), "routing.") {
		m.RoutingEvents++
	}
}

// ThreadIDs in first-seen order.
func (m *Model) ThreadIDs() []string { return m.threadOrder }

// TaskIDs in first-seen order.
func (m *Model) TaskIDs() []string { return m.taskOrder }

// ToolCallIDs in first-seen order.
func (m *Model) ToolCallIDs() []string { return m.toolOrder }

// Covers is the last sequence folded into the scope (0: nothing).
func (m *Model) Covers() uint64 {
	if len(m.Events) == 0 {
		return 0
	}
	return m.Events[len(m.Events)-1].GetSequence()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
