package domain

import (
	"strconv"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
)

// Object is a rendered JSON object.
type Object = jsonexport.Object

// PackSchema versions the evidence, replay and review pack documents.
const PackSchema = "agentruntime-evidence-pack-0.1.0"

// Signal applicability values (the Agent Runtime standard, Evidence and
// replay, "Signal Applicability").
const (
	Exported           = "exported"
	NotApplicable      = "not_applicable"
	Unsupported        = "unsupported"
	MissingCorrelation = "missing_correlation"
)

// Signal says whether one kind of evidence is in the pack.
type Signal struct {
	Name, Status, Detail string
}

// family is a signal backed by a set of event classes.
type family struct {
	name     string
	prefixes []string
}

var families = []family{
	{"tool_calls", []string{"tool."}},
	{"artifacts", []string{"artifact.", "output."}},
	{"context", []string{"context.", "history."}},
	{"routing", []string{"routing.", events.TypeTaskProfileResolved}},
	{"permission", []string{"permission.", "action."}},
	{"sandbox", []string{"sandbox."}},
	{"hooks", []string{"hook."}},
	{"processes", []string{"process."}},
	{"limits", []string{"cost.", "rate_limit.", "quota.", "limit."}},
	{"tasks", []string{"task."}},
	{"subagents", []string{"subagent."}},
	{"benchmark", []string{"benchmark."}},
}

func (f family) matches(typ string) bool {
	for _, p := range f.prefixes {
		if strings.HasPrefix(typ, p) {
			if p == "task." && typ == events.TypeTaskProfileResolved {
				return false
			}
			return true
		}
	}
	return false
}

// Signals computes applicability for the model. A family with events is
// exported; one without is not applicable, except where the scope's own
// facts say it applies: model calls without any routing fact cannot be
// joined to a routing decision (missing_correlation), and events without
// trace ids are not joined to traces by timestamp (missing_correlation).
// known_gaps lists only signals that apply and were not exported.
func (m *Model) Signals(verification, review bool) (signals []Signal, gaps []string) {
	add := func(name, status, detail string) {
		signals = append(signals, Signal{Name: name, Status: status, Detail: detail})
		if status == Unsupported || status == MissingCorrelation {
			gaps = append(gaps, name+": "+detail)
		}
	}
	add("runtime_summary", Exported, "")
	add("timeline", Exported, "")
	if len(m.Threads) > 0 {
		add("thread_read_model", Exported, "")
	} else {
		add("thread_read_model", NotApplicable, "no thread in scope")
	}
	failed := 0
	for _, c := range m.ToolCalls {
		if c.Status == "failed" {
			failed++
		}
	}
	failed += m.Counts[events.TypeModelFailed]
	if failed > 0 {
		add("failed_calls", Exported, "")
	} else {
		add("failed_calls", NotApplicable, "no failed call")
	}
	for _, f := range families {
		n := 0
		for typ, c := range m.Counts {
			if f.matches(typ) {
				n += c
			}
		}
		switch {
		case n > 0:
			add(f.name, Exported, "")
		case f.name == "routing" && m.ModelCalls > 0:
			add(f.name, MissingCorrelation, "model calls without a routing decision in the log")
		default:
			add(f.name, NotApplicable, "no "+f.name+" facts in scope")
		}
	}
	if verification {
		add("verification_outcomes", Exported, "")
	} else {
		add("verification_outcomes", NotApplicable, "no verifier reported")
	}
	if review {
		add("review_notes", Exported, "")
	} else {
		add("review_notes", NotApplicable, "no review notes given")
	}
	switch missing := len(m.Events) - m.EventsWithTrace; {
	case len(m.Events) == 0:
		add("telemetry", NotApplicable, "no events")
	case missing == 0:
		add("telemetry", Exported, "")
	default:
		add("telemetry", MissingCorrelation, strconv.Itoa(missing)+" of "+strconv.Itoa(len(m.Events))+" events carry no trace id; not joined by timestamp")
	}
	return signals, gaps
}

// JoinStatus is the telemetry join state of the scope.
func (m *Model) JoinStatus() string {
	switch {
	case len(m.Events) == 0:
		return NotApplicable
	case m.EventsWithTrace == len(m.Events):
		return "joined"
	case m.EventsWithTrace == 0:
		return MissingCorrelation
	}
	return "partial"
}

func signalObjects(signals []Signal) []any {
	out := make([]any, len(signals))
	for i, s := range signals {
		o := Object{"name": s.Name, "status": s.Status}
		if s.Detail != "" {
			o["detail"] = s.Detail
		}
		out[i] = o
	}
	return out
}

// Snapshot renders the session snapshot (the Agent Runtime standard, State
// snapshots; schema agentruntime-snapshot). The scope must be the session.
func (m *Model) Snapshot(opt jsonexport.Options) Object {
	schema := "agentruntime-0.1.0"
	if opt.Profile {
		schema = jsonexport.ProfileSchemaVersion
	}
	threads := make([]any, 0, len(m.Threads))
	for _, id := range m.threadOrder {
		threads = append(threads, m.threadObject(m.Threads[id], opt.Profile))
	}
	tasks := make([]any, 0, len(m.Tasks))
	summary := Object{"total": len(m.Tasks), "active": 0, "completed": 0, "failed": 0}
	for _, id := range m.taskOrder {
		t := m.Tasks[id]
		tasks = append(tasks, m.taskObject(t))
		switch t.Status {
		case "completed", "archived":
			summary["completed"] = summary["completed"].(int) + 1
		case "failed", "timed_out", "lost", "cancelled":
			summary["failed"] = summary["failed"].(int) + 1
		default:
			summary["active"] = summary["active"].(int) + 1
		}
	}
	out := Object{
		"schemaVersion":       schema,
		"sessionId":           m.Scope.Session,
		"threads":             threads,
		"tasks":               tasks,
		"taskSummary":         summary,
		"routingLimitSummary": m.routingSummary(),
		"telemetrySummary":    Object{"traceIds": strs(sortedKeys(m.TraceIDs)), "joinStatus": m.JoinStatus()},
		"evidenceRefs":        strs(m.EvidenceIDs),
		"sequence":            m.Covers(),
	}
	if m.RuntimeID != "" {
		out["runtimeId"] = m.RuntimeID
	}
	if len(m.Events) > 0 {
		out["updatedAt"] = ts(m.Events[len(m.Events)-1])
	}
	return out
}

func (m *Model) routingSummary() Object {
	d := m.LastRouting
	if d == nil {
		if m.ModelCalls > 0 {
			return Object{"status": MissingCorrelation}
		}
		return Object{"status": NotApplicable}
	}
	out := Object{"status": "known", "candidateCount": d.GetCandidateCount(), "singleCandidate": d.GetCandidateCount() == 1}
	if d.GetSelectedModelId() != "" {
		out["selectedModel"] = d.GetSelectedModelId()
	}
	if d.GetSelectedProviderId() != "" {
		out["selectedProvider"] = d.GetSelectedProviderId()
	}
	return out
}

func (m *Model) threadObject(th *Thread, profile bool) Object {
	turns := make([]any, 0, len(th.Turns))
	for _, u := range th.Turns {
		o := Object{"turnId": u.ID, "status": u.Status}
		for k, v := range map[string]string{"startedAt": u.StartedAt, "completedAt": u.EndedAt, "taskId": u.TaskID, "runId": u.RunID} {
			if v != "" {
				o[k] = v
			}
		}
		turns = append(turns, o)
	}
	pending := make([]any, 0, len(th.Pending))
	for _, id := range sortedKeys(th.Pending) {
		ev := th.Pending[id]
		o := Object{"actionId": id, "turnId": ev.GetTurnId(), "sequence": ev.GetSequence(), "requestedAt": ts(ev)}
		if ar := ev.GetActionRequired(); ar != nil {
			o["actionType"] = ar.GetActionType()
			o["prompt"] = ar.GetPrompt()
		}
		pending = append(pending, o)
	}
	queued := make([]any, 0, len(th.Queued))
	for _, id := range th.Queued {
		queued = append(queued, Object{"turnId": id})
	}
	incidents := make([]any, 0, len(th.Incidents))
	for _, in := range th.Incidents {
		incidents = append(incidents, in)
	}
	outcomes := make([]any, 0, len(m.VerificationOutcomes))
	for _, v := range m.VerificationOutcomes {
		outcomes = append(outcomes, jsonexport.Message(v.ProtoReflect()))
	}
	out := Object{
		"threadId": th.ID, "status": th.Status(), "turns": turns, "pendingRequests": pending,
		"queuedTurns": queued, "incidents": incidents,
		"evidenceSummary": Object{"evidenceRefs": strs(m.EvidenceIDs), "verificationOutcomes": outcomes},
	}
	if n := len(th.Compactions); n > 0 {
		// Where the thread's history starts after compaction: the last
		// boundary, and every summary the history was replaced by.
		out["compactionBoundary"] = th.Compactions[n-1]
		var refs []string
		for _, c := range th.Compactions {
			if r, ok := c["summaryRef"].(string); ok {
				refs = append(refs, r)
			}
		}
		out["historySummaryRefs"] = strs(refs)
	}
	if th.ActiveTurn != "" {
		out["activeTurnId"] = th.ActiveTurn
	} else if profile && len(th.Turns) > 0 {
		// The profile's fixture names the turn a settled thread ended
		// with as its activeTurnId.
		out["activeTurnId"] = th.Turns[len(th.Turns)-1].ID
	}
	return out
}

func (m *Model) taskObject(t *Task) Object {
	attempts := make([]any, 0, len(t.Attempts))
	for _, a := range t.Attempts {
		o := Object{"runId": a.RunID, "status": a.Status}
		if a.AttemptID != "" {
			o["attemptId"] = a.AttemptID
		}
		if a.NativeStatus != "" {
			o["nativeStatus"] = a.NativeStatus
		}
		attempts = append(attempts, o)
	}
	o := Object{"taskId": t.ID, "status": t.Status, "attempts": attempts, "evidenceRefs": strs(t.EvidenceRefs)}
	o["sessionId"] = m.Scope.Session
	for k, v := range map[string]string{"threadId": t.Thread, "turnId": t.Turn, "title": t.Title, "objective": t.Objective, "nativeStatus": t.NativeStatus, "currentRunId": t.CurrentRun} {
		if v != "" {
			o[k] = v
		}
	}
	return o
}

func (m *Model) scopeObject() Object {
	o := Object{"kind": string(m.Scope.Kind), "sessionId": m.Scope.Session}
	if m.Scope.ID != "" {
		o["id"] = m.Scope.ID
	}
	return o
}

func (m *Model) runtimeSummary() Object {
	counts := Object{}
	for k, v := range m.Counts {
		counts[k] = v
	}
	turns := 0
	for _, th := range m.Threads {
		turns += len(th.Turns)
	}
	o := Object{
		"eventCount": len(m.Events), "eventCounts": counts, "threads": len(m.Threads), "turns": turns,
		"tasks": len(m.Tasks), "toolCalls": len(m.ToolCalls), "modelCalls": m.ModelCalls, "tokens": m.Tokens,
		"costUsd": float64(m.CostNanos) / 1e9,
	}
	if m.RuntimeID != "" {
		o["runtimeId"] = m.RuntimeID
	}
	if len(m.Events) > 0 {
		o["firstSequence"], o["lastSequence"] = m.Events[0].GetSequence(), m.Covers()
		o["firstEventAt"], o["lastEventAt"] = ts(m.Events[0]), ts(m.Events[len(m.Events)-1])
	}
	return o
}

// timelineEntry is the compact form of an event in a pack's timeline: its
// identity, ids and trace, without the payload (sections carry payloads).
func timelineEntry(ev *eventsv1.RuntimeEvent) Object {
	full := jsonexport.Event(ev, jsonexport.Options{})
	delete(full, "payload")
	delete(full, "refs")
	delete(full, "schemaVersion")
	delete(full, "runtimeId")
	delete(full, "tenantId")
	delete(full, "sessionId")
	if len(ev.GetRefs()) > 0 {
		refs := Object{}
		for k, v := range ev.GetRefs() {
			refs[jsonexport.CamelCase(k)] = v
		}
		full["refs"] = refs
	}
	return full
}

func (m *Model) section(f family) []any {
	out := []any{}
	for _, ev := range m.Events {
		if f.matches(ev.GetType()) {
			out = append(out, jsonexport.Event(ev, jsonexport.Options{}))
		}
	}
	return out
}

func (m *Model) toolCallObjects(onlyFailed bool) []any {
	out := []any{}
	for _, id := range m.toolOrder {
		c := m.ToolCalls[id]
		if onlyFailed && c.Status != "failed" {
			continue
		}
		o := Object{"toolCallId": c.ID, "status": c.Status, "startSequence": c.StartSeq}
		for k, v := range map[string]string{"stepId": c.StepID, "threadId": c.Thread, "turnId": c.Turn, "toolName": c.Name, "argsJson": c.ArgsJSON} {
			if v != "" {
				o[k] = v
			}
		}
		if c.EndSeq != 0 {
			o["endSequence"] = c.EndSeq
		}
		if c.Result != nil {
			o["result"] = jsonexport.Message(c.Result.ProtoReflect())
		}
		if c.Failure != nil {
			o["failure"] = jsonexport.Message(c.Failure.ProtoReflect())
		}
		out = append(out, o)
	}
	if onlyFailed {
		for _, ev := range m.Events {
			if ev.GetType() == events.TypeModelFailed {
				out = append(out, jsonexport.Event(ev, jsonexport.Options{}))
			}
		}
	}
	return out
}

// EvidenceInput is what the caller adds to an evidence pack.
type EvidenceInput struct {
	VerificationOutcomes []*eventsv1.VerificationOutcome
	ReviewNotes          []string
}

// EvidencePack builds the evidence pack (the Agent Runtime standard,
// Evidence and replay, "Evidence pack"). It is a pure function of the model
// and input: the same scope at the same sequence renders to the same bytes.
func (m *Model) EvidencePack(in EvidenceInput) (Object, []Signal, []string) {
	signals, gaps := m.Signals(len(in.VerificationOutcomes) > 0, len(in.ReviewNotes) > 0)
	timeline := make([]any, len(m.Events))
	for i, ev := range m.Events {
		timeline[i] = timelineEntry(ev)
	}
	threads := []any{}
	for _, id := range m.threadOrder {
		threads = append(threads, m.threadObject(m.Threads[id], false))
	}
	tasks := []any{}
	for _, id := range m.taskOrder {
		tasks = append(tasks, m.taskObject(m.Tasks[id]))
	}
	outcomes := []any{}
	for _, v := range in.VerificationOutcomes {
		outcomes = append(outcomes, jsonexport.Message(v.ProtoReflect()))
	}
	pack := Object{
		"schemaVersion":        PackSchema,
		"kind":                 "evidence",
		"scope":                m.scopeObject(),
		"coversSequence":       m.Covers(),
		"runtimeSummary":       m.runtimeSummary(),
		"timeline":             timeline,
		"threadReadModel":      threads,
		"tasks":                tasks,
		"toolCalls":            m.toolCallObjects(false),
		"failedCalls":          m.toolCallObjects(true),
		"verificationOutcomes": outcomes,
		"reviewNotes":          strs(in.ReviewNotes),
		"telemetry":            m.telemetry(),
		"signals":              signalObjects(signals),
		"knownGaps":            strs(gaps),
	}
	for _, f := range families {
		if f.name == "tool_calls" || f.name == "tasks" {
			continue
		}
		pack[jsonexport.CamelCase(f.name)] = m.section(f)
	}
	return pack, signals, gaps
}

func (m *Model) telemetry() Object {
	return Object{
		"traceIds":           strs(sortedKeys(m.TraceIDs)),
		"eventsWithTrace":    m.EventsWithTrace,
		"eventsWithoutTrace": len(m.Events) - m.EventsWithTrace,
		"joinStatus":         m.JoinStatus(),
	}
}

// ReplayCase builds a replay case (the Agent Runtime standard, Evidence and
// replay, "Replay case"): the inputs and options as submitted, context and
// tool inventory refs, assertions on the state the log reached, and links to
// evidence.
func (m *Model) ReplayCase(graderInstructions string) Object {
	inputs := []any{}
	contextRefs, inventory, compactions := []any{}, []any{}, []any{}
	for _, ev := range m.Events {
		switch p := ev.GetPayload().(type) {
		case *eventsv1.RuntimeEvent_TurnSubmitted:
			o := jsonexport.Message(p.TurnSubmitted.ProtoReflect())
			o["threadId"], o["turnId"], o["sequence"], o["submittedAt"] = ev.GetThreadId(), ev.GetTurnId(), ev.GetSequence(), ts(ev)
			inputs = append(inputs, o)
		case *eventsv1.RuntimeEvent_ContextResolved:
			for _, r := range p.ContextResolved.GetRefs() {
				contextRefs = append(contextRefs, Object{"ref": r, "turnId": ev.GetTurnId(), "sequence": ev.GetSequence()})
			}
		case *eventsv1.RuntimeEvent_ContextCompactionCompleted:
			compactions = append(compactions, Object{"summaryRef": p.ContextCompactionCompleted.GetSummaryRef(), "sequence": ev.GetSequence(),
				"affectedTurnIds": strs(p.ContextCompactionCompleted.GetAffectedTurnIds())})
		case *eventsv1.RuntimeEvent_ToolCatalogResolved:
			o := Object{"toolNames": strs(p.ToolCatalogResolved.GetToolNames()), "turnId": ev.GetTurnId(), "sequence": ev.GetSequence()}
			if r := p.ToolCatalogResolved.GetInventoryRef(); r != "" {
				o["inventoryRef"] = r
			}
			inventory = append(inventory, o)
		}
	}
	assertions := []any{}
	for _, id := range m.threadOrder {
		th := m.Threads[id]
		assertions = append(assertions, Object{"path": "threads[" + id + "].status", "equals": th.Status()})
		for _, u := range th.Turns {
			assertions = append(assertions, Object{"path": "threads[" + id + "].turns[" + u.ID + "].status", "equals": u.Status})
		}
	}
	for _, id := range m.toolOrder {
		assertions = append(assertions, Object{"path": "toolCalls[" + id + "].status", "equals": m.ToolCalls[id].Status})
	}
	for _, id := range m.taskOrder {
		assertions = append(assertions, Object{"path": "tasks[" + id + "].status", "equals": m.Tasks[id].Status})
	}
	out := Object{
		"schemaVersion":      PackSchema,
		"kind":               "replay",
		"scope":              m.scopeObject(),
		"coversSequence":     m.Covers(),
		"input":              inputs,
		"contextRefs":        contextRefs,
		"compactions":        compactions,
		"toolInventoryRefs":  inventory,
		"expectedState":      assertions,
		"evidenceLinks":      strs(m.EvidenceIDs),
		"traceIds":           strs(sortedKeys(m.TraceIDs)),
		"eventCount":         len(m.Events),
		"graderInstructions": graderInstructions,
	}
	if graderInstructions == "" {
		out["graderInstructions"] = Object{"status": NotApplicable}
	}
	return out
}

// ReviewPack builds what a reviewer looks at: failures, incidents, actions
// and their outcomes, permission and sandbox decisions, gaps, notes.
func (m *Model) ReviewPack(notes []string) Object {
	signals, gaps := m.Signals(len(m.VerificationOutcomes) > 0, len(notes) > 0)
	actions, decisions := []any{}, []any{}
	for _, ev := range m.Events {
		switch {
		case strings.HasPrefix(ev.GetType(), "action."):
			actions = append(actions, jsonexport.Event(ev, jsonexport.Options{}))
		case strings.HasPrefix(ev.GetType(), "permission."), strings.HasPrefix(ev.GetType(), "sandbox."), strings.HasPrefix(ev.GetType(), "hook."):
			decisions = append(decisions, jsonexport.Event(ev, jsonexport.Options{}))
		}
	}
	incidents := []any{}
	for _, id := range m.threadOrder {
		for _, in := range m.Threads[id].Incidents {
			incidents = append(incidents, in)
		}
	}
	outcomes := []any{}
	for _, v := range m.VerificationOutcomes {
		outcomes = append(outcomes, jsonexport.Message(v.ProtoReflect()))
	}
	return Object{
		"schemaVersion":        PackSchema,
		"kind":                 "review",
		"scope":                m.scopeObject(),
		"coversSequence":       m.Covers(),
		"runtimeSummary":       m.runtimeSummary(),
		"failedCalls":          m.toolCallObjects(true),
		"incidents":            incidents,
		"actions":              actions,
		"policyDecisions":      decisions,
		"verificationOutcomes": outcomes,
		"evidenceLinks":        strs(m.EvidenceIDs),
		"reviewNotes":          strs(notes),
		"signals":              signalObjects(signals),
		"knownGaps":            strs(gaps),
	}
}

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
