package readmodel

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/routingsummary"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// maxIncidents bounds the incidents a thread keeps in its read model; older
// ones remain in the log and the evidence export.
const maxIncidents = 50

// Projection is the control read model.
type Projection struct{}

// Name implements projector.Projection.
func (Projection) Name() string { return Name }

// Filters implements projector.Projection: the whole log, because the thread
// read model joins every owner's facts.
func (Projection) Filters() []string { return nil }

// Project implements projector.Projection.
func (Projection) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	tx := &tx{ctx: ctx, store: store, ev: rec.Event, docs: map[string]proto.Message{}, puts: map[string][]byte{}}
	if err := tx.apply(); err != nil {
		return projection.Batch{}, err
	}
	return tx.batch(), nil
}

// tx collects one event's changes: documents read once, changed in place,
// written together.
type tx struct {
	ctx     context.Context
	store   projection.Store
	ev      *eventsv1.RuntimeEvent
	docs    map[string]proto.Message
	order   []string
	puts    map[string][]byte
	adds    []projection.IndexEntry
	removes []projection.IndexEntry
	err     error
	// loaded is each thread's status and queue as read, so batch() can
	// move it between the operational indexes (ThreadsByStatusIndex,
	// QueuedTurnsIndex) when they changed.
	loaded map[string]threadWas
}

type threadWas struct {
	status controlv1.ThreadStatus
	queued []string
}

func load[T proto.Message](t *tx, key string, fresh func() T) (T, bool) {
	if m, ok := t.docs[key]; ok {
		return m.(T), true
	}
	var zero T
	if t.err != nil {
		return zero, false
	}
	m, found, err := get(t.ctx, t.store, key, fresh())
	if err != nil {
		t.err = err
		return zero, false
	}
	if !found {
		return zero, false
	}
	t.docs[key] = m
	t.order = append(t.order, key)
	return m, true
}

func (t *tx) put(key string, m proto.Message) {
	if _, ok := t.docs[key]; !ok {
		t.order = append(t.order, key)
	}
	t.docs[key] = m
	t.puts[key] = nil // marked dirty; serialized in batch()
}

func (t *tx) batch() projection.Batch {
	t.operationalIndexes()
	var b projection.Batch
	for _, key := range t.order {
		if _, dirty := t.puts[key]; !dirty {
			continue
		}
		raw, err := proto.Marshal(t.docs[key])
		if err != nil {
			continue
		}
		b.Puts = append(b.Puts, projection.KV{Key: key, Value: raw})
	}
	for key, raw := range t.puts {
		if raw != nil {
			b.Puts = append(b.Puts, projection.KV{Key: key, Value: raw})
		}
	}
	b.IndexAdds, b.IndexRemoves = t.adds, t.removes
	return b
}

func (t *tx) tenant() string { return t.ev.GetTenantId() }
func (t *tx) seq() uint64    { return t.ev.GetSequence() }

// millis is the event's time in unix milliseconds: the score of indexes
// read across sessions (SessionsIndex, ClaimableIndex). Positions of
// different partitions of the log are not ordered; times are, and every
// partition's fold scores a fact the same.
func (t *tx) millis() float64 { return Millis(t.ev) }

// Millis is an event's time in unix milliseconds (0 when it has none).
func Millis(ev *eventsv1.RuntimeEvent) float64 {
	if ev.GetTimestamp() == nil {
		return 0
	}
	return float64(ev.GetTimestamp().AsTime().UnixMilli())
}

// sessionDoc is a document of one session under an id a caller may choose:
// a thread, turn, action, subagent, channel or process.
type sessionDoc interface {
	proto.Message
	GetSessionId() string
}

// own loads a document of the event's own session. Such ids are unique in
// a tenant, but the uniqueness checks read the read model, so two sessions
// may both use one before either sees the other. Then the session first
// folded keeps the document and another session's facts about the id
// change nothing (other is true): sessions may live in different
// partitions of the log, folded concurrently and in any order, so a fact
// must never change a document of another session. A fact of no session
// owns none.
func own[T sessionDoc](t *tx, key string, fresh func() T) (doc T, ok, other bool) {
	doc, ok = load(t, key, fresh)
	if ok && doc.GetSessionId() != t.ev.GetSessionId() {
		var zero T
		return zero, false, true
	}
	return doc, ok, false
}

// taken says whether the id of key is another session's (own).
func taken[T sessionDoc](t *tx, key string, fresh func() T) bool {
	_, _, other := own(t, key, fresh)
	return other
}

func newThread() *controlv1.ThreadRead { return &controlv1.ThreadRead{} }
func newTurn() *controlv1.Turn         { return &controlv1.Turn{} }

func (t *tx) session() (*controlv1.Session, bool) {
	return load(t, SessionKey(t.tenant(), t.ev.GetSessionId()), func() *controlv1.Session { return &controlv1.Session{} })
}

func (t *tx) thread(id string) (*controlv1.ThreadRead, bool) {
	if id == "" {
		return nil, false
	}
	th, ok, _ := own(t, ThreadKey(t.tenant(), id), newThread)
	if ok {
		t.remember(th)
	}
	return th, ok
}

// remember notes a thread's status and queue the first time the event
// sees it.
func (t *tx) remember(th *controlv1.ThreadRead) {
	if t.loaded == nil {
		t.loaded = map[string]threadWas{}
	}
	if _, seen := t.loaded[th.ThreadId]; !seen {
		t.loaded[th.ThreadId] = threadWas{status: th.Status, queued: slices.Clone(th.QueuedTurnIds)}
	}
}

// operationalIndexes moves the threads the event touched between the
// status indexes and the queued-turns index: what the operator's gauges
// count (pkg/metrics).
func (t *tx) operationalIndexes() {
	for _, key := range t.order {
		if _, dirty := t.puts[key]; !dirty {
			continue
		}
		th, ok := t.docs[key].(*controlv1.ThreadRead)
		if !ok {
			continue
		}
		was, seen := t.loaded[th.ThreadId]
		if !seen {
			was = threadWas{} // created by this event
		}
		member := t.tenant() + "|" + th.ThreadId
		if was.status != th.Status {
			if was.status != controlv1.ThreadStatus_THREAD_STATUS_UNSPECIFIED {
				t.removes = append(t.removes, projection.IndexEntry{Index: ThreadsByStatusIndex(was.status), Member: member})
			}
			if th.Status != controlv1.ThreadStatus_THREAD_STATUS_UNSPECIFIED {
				t.adds = append(t.adds, projection.IndexEntry{Index: ThreadsByStatusIndex(th.Status), Member: member, Score: float64(t.seq())})
			}
		}
		if slices.Equal(was.queued, th.QueuedTurnIds) {
			continue // most events touching a thread leave its queue alone
		}
		// Sets, not slices.Contains: a queue holds up to its bound (1,000
		// by default) and a quadratic diff per event would cost more than
		// the event.
		now := make(map[string]bool, len(th.QueuedTurnIds))
		for _, id := range th.QueuedTurnIds {
			now[id] = true
		}
		before := make(map[string]bool, len(was.queued))
		for _, id := range was.queued {
			before[id] = true
			if !now[id] {
				t.removes = append(t.removes, projection.IndexEntry{Index: QueuedTurnsIndex, Member: t.tenant() + "|" + id})
			}
		}
		for _, id := range th.QueuedTurnIds {
			if !before[id] {
				t.adds = append(t.adds, projection.IndexEntry{Index: QueuedTurnsIndex, Member: t.tenant() + "|" + id, Score: float64(t.seq())})
			}
		}
	}
}

func (t *tx) turn(id string) (*controlv1.Turn, bool) {
	if id == "" {
		return nil, false
	}
	tu, ok, _ := own(t, TurnKey(t.tenant(), id), newTurn)
	return tu, ok
}

func (t *tx) touchThread(th *controlv1.ThreadRead) {
	th.Sequence = t.seq()
	th.UpdatedAt = t.ev.GetTimestamp()
	t.put(ThreadKey(t.tenant(), th.ThreadId), th)
}

func (t *tx) touchTurn(tu *controlv1.Turn) {
	tu.Sequence = t.seq()
	t.put(TurnKey(t.tenant(), tu.TurnId), tu)
}

func (t *tx) apply() error {
	ev := t.ev
	typ := ev.GetType()
	switch {
	case typ == "session.created":
		p := ev.GetSessionCreated()
		s := &controlv1.Session{
			SessionId: ev.GetSessionId(), Title: p.GetTitle(), Metadata: p.GetMetadata(), CreatedBy: p.GetCreatedBy(),
			CreatedAt: ev.GetTimestamp(), UpdatedAt: ev.GetTimestamp(), Sequence: t.seq(),
		}
		t.put(SessionKey(t.tenant(), s.SessionId), s)
		t.adds = append(t.adds, projection.IndexEntry{Index: SessionsIndex(t.tenant()), Member: s.SessionId, Score: t.millis()})
	case typ == "session.updated":
		if s, ok := t.session(); ok {
			p := ev.GetSessionUpdated()
			if p.GetTitle() != "" {
				s.Title = p.GetTitle()
			}
			for k, v := range p.GetMetadata() {
				if s.Metadata == nil {
					s.Metadata = map[string]string{}
				}
				s.Metadata[k] = v
			}
			s.UpdatedAt, s.Sequence = ev.GetTimestamp(), t.seq()
			t.put(SessionKey(t.tenant(), s.SessionId), s)
		}
	case typ == "thread.started":
		t.threadStarted()
	case typ == "thread.updated":
		t.threadUpdated()
	case typ == "turn.submitted":
		t.turnSubmitted()
	case typ == "turn.started":
		if tu, ok := t.turn(ev.GetTurnId()); ok {
			tu.Status, tu.StartedAt = domain.TurnRunning, ev.GetTimestamp()
			t.touchTurn(tu)
			if th, ok := t.thread(tu.ThreadId); ok {
				t.refreshThreadStatus(th)
				t.touchThread(th)
			}
		}
	case typ == "turn.completed" || typ == "turn.failed":
		t.turnEnded()
	case typ == "queue.changed":
		t.queueChanged()
	case typ == "action.required":
		t.actionRequired()
	case typ == "action.resolved":
		t.actionResolved()
	case strings.HasPrefix(typ, "subagent."):
		t.subagent()
	case strings.HasPrefix(typ, "process."):
		t.process()
	case typ == "run.status" && ev.GetRunStatus().GetPhase() == "lost":
		t.processesLost()
	case typ == "channel.connected", typ == "channel.disconnected", typ == "channel.resumed", typ == "channel.message":
		t.channel()
	case typ == "snapshot.updated" && ev.GetSnapshotUpdated().GetKind() == "tool_inventory":
		p := ev.GetSnapshotUpdated()
		scope := ev.GetSessionId()
		if scope == "" {
			scope = "_"
		}
		t.put(ToolsKey(t.tenant(), scope, p.GetWorkerId()), p)
		t.adds = append(t.adds, projection.IndexEntry{Index: ToolsIndex(t.tenant(), scope), Member: p.GetWorkerId(), Score: float64(t.seq())})
	case typ == "context.compaction.completed":
		if th, ok := t.thread(ev.GetThreadId()); ok {
			if ref := ev.GetContextCompactionCompleted().GetSummaryRef(); ref != "" {
				th.CompactionSummaryRefs = append(th.CompactionSummaryRefs, ref)
			}
			t.touchThread(th)
		}
	case typ == "history.rollback.completed":
		for _, id := range ev.GetHistoryRollbackCompleted().GetRemovedTurnIds() {
			if tu, ok := t.turn(id); ok {
				tu.Status = domain.TurnRolledBack
				t.touchTurn(tu)
				t.removes = append(t.removes, projection.IndexEntry{Index: SessionTurnsIndex(t.tenant(), tu.SessionId), Member: tu.TurnId})
			}
		}
	case typ == "permission.requested":
		t.adds = append(t.adds, projection.IndexEntry{Index: PermissionRequestsIndex, Member: t.tenant() + "|" + ev.GetActionId(), Score: float64(t.seq())})
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Permission })
	case strings.HasPrefix(typ, "permission."), strings.HasPrefix(typ, "sandbox."), strings.HasPrefix(typ, "hook."):
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Permission })
		t.refusal()
	case strings.HasPrefix(typ, "routing."), strings.HasPrefix(typ, "cost."), strings.HasPrefix(typ, "quota."),
		typ == "rate_limit.hit", typ == "task.profile.resolved":
		if th, ok := t.thread(ev.GetThreadId()); ok {
			if th.RoutingLimit == nil {
				th.RoutingLimit = &routingv1.RoutingLimitSummary{}
			}
			routingsummary.FoldThread(th.RoutingLimit, ev)
		}
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Routing })
	case strings.HasPrefix(typ, "task.") || strings.HasPrefix(typ, "job."):
		if typ == "task.created" {
			if th, ok := t.thread(ev.GetThreadId()); ok && !slices.Contains(th.TaskIds, ev.GetTaskId()) {
				th.TaskIds = append(th.TaskIds, ev.GetTaskId())
			}
		}
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Tasks })
	case typ == "evidence.changed":
		if th, ok := t.thread(ev.GetThreadId()); ok && ev.GetEvidenceId() != "" && !slices.Contains(th.EvidenceRefs, ev.GetEvidenceId()) {
			th.EvidenceRefs = append(th.EvidenceRefs, ev.GetEvidenceId())
			t.touchThread(th)
		}
	}
	switch typ {
	case "runtime.error", "model.failed", "tool.failed", "process.failed", "context.compaction.failed", "sandbox.violation", "hook.failed":
		t.incident()
	}
	return t.err
}

func (t *tx) threadStarted() {
	ev := t.ev
	if taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
		return
	}
	p := ev.GetThreadStarted()
	th := &controlv1.ThreadRead{
		SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), Status: controlv1.ThreadStatus_THREAD_STATUS_IDLE, Title: p.GetTitle(),
		ParentThreadId: p.GetParentThreadId(), ParentTurnId: p.GetParentTurnId(), SubagentId: p.GetSubagentId(),
		CreatedAt: ev.GetTimestamp(),
		Routing:   &controlv1.Summary{State: commonv1.FactState_FACT_STATE_UNKNOWN}, Permission: &controlv1.Summary{State: commonv1.FactState_FACT_STATE_UNKNOWN},
		Tasks: &controlv1.Summary{State: commonv1.FactState_FACT_STATE_NOT_APPLICABLE},
	}
	t.touchThread(th)
	if s, ok := t.session(); ok {
		if !slices.Contains(s.ThreadIds, th.ThreadId) {
			s.ThreadIds = append(s.ThreadIds, th.ThreadId)
		}
		s.UpdatedAt, s.Sequence = ev.GetTimestamp(), t.seq()
		t.put(SessionKey(t.tenant(), s.SessionId), s)
	}
}

func (t *tx) threadUpdated() {
	ev := t.ev
	th, ok := t.thread(ev.GetThreadId())
	if !ok {
		return
	}
	p := ev.GetThreadUpdated()
	switch p.GetChange() {
	case "interrupt_requested":
		if tu, ok := t.turn(p.GetTurnId()); ok && !terminal(tu.Status) {
			tu.Status = domain.TurnInterrupting
			t.touchTurn(tu)
		}
	case "resumed":
		if th.Diagnostics == nil {
			th.Diagnostics = map[string]string{}
		}
		th.Diagnostics["resumed_at_sequence"] = strconv.FormatUint(t.seq(), 10)
		for k, v := range p.GetFacts() {
			th.Diagnostics["recovery."+k] = v
		}
	case "closed":
		th.Status = domain.ThreadClosed
		t.touchThread(th)
		return
	case processTerminateRequested:
		t.processTerminateRequested()
		return
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) turnSubmitted() {
	ev := t.ev
	// A turn of another session, or one on another session's thread, is
	// that session's: nothing of it is folded here (own).
	if taken(t, TurnKey(t.tenant(), ev.GetTurnId()), newTurn) || taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
		return
	}
	p := ev.GetTurnSubmitted()
	tu := &controlv1.Turn{
		TurnId: ev.GetTurnId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(),
		Status: admitted(p.GetAdmission()), Admission: admitted(p.GetAdmission()), Input: p.GetInput(), Options: p.GetOptions(),
		Metadata: p.GetMetadata(), IdempotencyKey: p.GetIdempotencyKey(), SubmittedAt: ev.GetTimestamp(),
		SteeredInto: p.GetSteeredInto(), SubmittedSequence: t.seq(), TraceId: ev.GetTraceId(), SpanId: ev.GetSpanId(),
	}
	t.touchTurn(tu)
	t.adds = append(t.adds, projection.IndexEntry{Index: SessionTurnsIndex(t.tenant(), tu.SessionId), Member: tu.TurnId, Score: float64(t.seq())})
	if p.GetIdempotencyKey() != "" {
		t.puts[IdempotencyKey(t.tenant(), tu.ThreadId, p.GetIdempotencyKey())] = []byte(tu.TurnId)
	}
	if th, ok := t.thread(tu.ThreadId); ok {
		th.TurnCount++
		switch p.GetAdmission() {
		case "accepted":
			th.ActiveTurnId = tu.TurnId
		case "queued":
			th.QueuedTurnIds = append(th.QueuedTurnIds, tu.TurnId)
		}
		t.refreshThreadStatus(th)
		t.touchThread(th)
	}
	if s, ok := t.session(); ok {
		s.TurnCount++
		s.UpdatedAt, s.Sequence = ev.GetTimestamp(), t.seq()
		t.put(SessionKey(t.tenant(), s.SessionId), s)
	}
}

func (t *tx) turnEnded() {
	ev := t.ev
	tu, ok := t.turn(ev.GetTurnId())
	if !ok {
		return
	}
	tu.EndedAt = ev.GetTimestamp()
	if ev.GetType() == "turn.completed" {
		tu.Status = domain.TurnCompleted
		tu.OutcomeMessage = ev.GetTurnCompleted().GetSummary()
		tu.OutcomeCategory = ev.GetTurnCompleted().GetStopReason()
	} else {
		p := ev.GetTurnFailed()
		switch p.GetOutcome() {
		case eventsv1.TurnOutcome_TURN_OUTCOME_CANCELLED:
			tu.Status = domain.TurnCancelled
		case eventsv1.TurnOutcome_TURN_OUTCOME_TIMED_OUT:
			tu.Status = domain.TurnTimedOut
		default:
			tu.Status = domain.TurnFailed
		}
		tu.OutcomeCategory, tu.OutcomeMessage = p.GetCategory(), p.GetMessage()
	}
	t.touchTurn(tu)
	th, ok := t.thread(tu.ThreadId)
	if !ok {
		return
	}
	if th.ActiveTurnId == tu.TurnId {
		th.ActiveTurnId = ""
		th.LastTurnId, th.LastOutcome = tu.TurnId, tu.Status
	}
	th.QueuedTurnIds = slices.DeleteFunc(th.QueuedTurnIds, func(id string) bool { return id == tu.TurnId })
	if tu.Status == domain.TurnFailed || tu.Status == domain.TurnTimedOut {
		t.addIncident(th, &controlv1.Incident{Type: ev.GetType(), TurnId: tu.TurnId, Category: tu.OutcomeCategory, Message: tu.OutcomeMessage, Sequence: t.seq()})
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) queueChanged() {
	ev := t.ev
	th, ok := t.thread(ev.GetThreadId())
	if !ok {
		return
	}
	p := ev.GetQueueChanged()
	th.QueuedTurnIds = events.FoldQueue(th.QueuedTurnIds, p)
	switch p.GetChange() {
	case "dequeued":
		th.ActiveTurnId = p.GetTurnId()
		if tu, ok := t.turn(p.GetTurnId()); ok {
			tu.Status = domain.TurnAccepted
			t.touchTurn(tu)
		}
	case "removed", "cleared":
		if tu, ok := t.turn(p.GetTurnId()); ok && !terminal(tu.Status) {
			tu.Status, tu.EndedAt, tu.OutcomeCategory, tu.OutcomeMessage = domain.TurnCancelled, ev.GetTimestamp(), p.GetChange(), p.GetReason()
			t.touchTurn(tu)
		}
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) actionRequired() {
	ev := t.ev
	if taken(t, ActionKey(t.tenant(), ev.GetActionId()), newAction) {
		return
	}
	p := ev.GetActionRequired()
	a := &controlv1.Action{
		ActionId: ev.GetActionId(), SessionId: ev.GetSessionId(), ThreadId: ev.GetThreadId(), TurnId: ev.GetTurnId(),
		ActionType: p.GetActionType(), Prompt: p.GetPrompt(), JsonSchema: p.GetJsonSchema(), Decisions: p.GetDecisions(),
		DecisionOnTimeout: p.GetDecisionOnTimeout(), ExpiresAt: p.GetExpiresAt(), Context: p.GetContext(),
		RequestedBy: p.GetRequestedBy(), Status: domain.ActionPending, RequestedAt: ev.GetTimestamp(),
		RequesterSubject: p.GetRequesterSubject(), RequesterRole: p.GetRequesterRole(),
		StepId: ev.GetStepId(), ToolCallId: ev.GetToolCallId(), Sequence: t.seq(),
	}
	t.put(ActionKey(t.tenant(), a.ActionId), a)
	if a.ExpiresAt != nil {
		t.adds = append(t.adds, projection.IndexEntry{Index: DueActionsIndex, Member: t.tenant() + "|" + a.ActionId, Score: float64(a.ExpiresAt.AsTime().UnixMilli())})
	}
	t.removes = append(t.removes, projection.IndexEntry{Index: PermissionRequestsIndex, Member: t.tenant() + "|" + a.ActionId})
	t.adds = append(t.adds, projection.IndexEntry{Index: PendingActionsIndex, Member: t.tenant() + "|" + a.ActionId, Score: float64(ev.GetTimestamp().AsTime().UnixMilli())})
	if th, ok := t.thread(a.ThreadId); ok {
		th.PendingActions = append(th.PendingActions, a)
		t.refreshThreadStatus(th)
		t.touchThread(th)
	}
	if tu, ok := t.turn(a.TurnId); ok && !terminal(tu.Status) {
		tu.Status = waitingTurnStatus(a.ActionType)
		t.touchTurn(tu)
	}
}

func (t *tx) actionResolved() {
	ev := t.ev
	a, ok, _ := own(t, ActionKey(t.tenant(), ev.GetActionId()), newAction)
	if !ok {
		return
	}
	p := ev.GetActionResolved()
	switch p.GetOutcome() {
	case eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_TIMED_OUT
	case eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_CANCELLED
	default:
		a.Status = controlv1.ActionStatus_ACTION_STATUS_RESOLVED
	}
	a.Decision, a.PayloadJson, a.Responder, a.ResolvedAt, a.Sequence = p.GetDecision(), p.GetPayloadJson(), p.GetResponder(), ev.GetTimestamp(), t.seq()
	t.put(ActionKey(t.tenant(), a.ActionId), a)
	t.removes = append(t.removes,
		projection.IndexEntry{Index: DueActionsIndex, Member: t.tenant() + "|" + a.ActionId},
		projection.IndexEntry{Index: PendingActionsIndex, Member: t.tenant() + "|" + a.ActionId})
	th, ok := t.thread(a.ThreadId)
	if !ok {
		return
	}
	th.PendingActions = slices.DeleteFunc(th.PendingActions, func(x *controlv1.Action) bool { return x.ActionId == a.ActionId })
	if tu, ok := t.turn(a.TurnId); ok && !terminal(tu.Status) {
		tu.Status = domain.TurnRunning
		if tu.StartedAt == nil {
			tu.Status = domain.TurnAccepted
		}
		for _, other := range th.PendingActions {
			if other.TurnId == tu.TurnId {
				tu.Status = waitingTurnStatus(other.ActionType)
			}
		}
		t.touchTurn(tu)
	}
	t.refreshThreadStatus(th)
	t.touchThread(th)
}

func (t *tx) subagent() {
	ev := t.ev
	key := SubagentKey(t.tenant(), ev.GetSubagentId())
	if ev.GetType() == "subagent.spawned" {
		// The children index is keyed by the parent thread: another
		// session's thread lists none of this one's subagents.
		if taken(t, key, newSubagent) || taken(t, ThreadKey(t.tenant(), ev.GetThreadId()), newThread) {
			return
		}
		p := ev.GetSubagentSpawned()
		depth := int32(0)
		if parent, ok := t.thread(ev.GetThreadId()); ok && parent.SubagentId != "" {
			if ps, ok, _ := own(t, SubagentKey(t.tenant(), parent.SubagentId), newSubagent); ok {
				depth = ps.Depth + 1
			}
		}
		s := &controlv1.Subagent{
			SubagentId: ev.GetSubagentId(), SessionId: ev.GetSessionId(), ParentThreadId: ev.GetThreadId(), ParentTurnId: ev.GetTurnId(),
			ChildThreadId: p.GetChildThreadId(), Role: p.GetRole(), Isolation: p.GetIsolation(), ModelPolicy: p.GetModelPolicy(),
			Objective: p.GetObjective(), Status: controlv1.SubagentStatus_SUBAGENT_STATUS_RUNNING, Depth: depth, Sequence: t.seq(),
		}
		t.put(key, s)
		t.adds = append(t.adds, projection.IndexEntry{Index: ChildrenIndex(t.tenant(), ev.GetThreadId()), Member: s.SubagentId, Score: float64(t.seq())})
		return
	}
	s, ok, _ := own(t, key, newSubagent)
	if !ok {
		return
	}
	p := subagentPayload(ev)
	switch ev.GetType() {
	// Closing is the parent's decision and stays until a resume: a child
	// turn that ends after it (the interrupt a close sends) is in the log
	// but does not reopen the subagent.
	case "subagent.completed":
		if s.Status != subagentClosed {
			s.Status = controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED
		}
	case "subagent.failed":
		if s.Status != subagentClosed {
			s.Status = controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED
		}
	case "subagent.closed":
		s.Status = subagentClosed
	case "subagent.status":
		// A waiting/running report that arrives after the child's end
		// does not reopen it; only a resume does.
		ended := s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || s.Status == subagentClosed
		// The payload carries the spec's word; one this build does not
		// know changes nothing.
		if st, known := enums.Parse[controlv1.SubagentStatus](p.GetStatus()); known && (!ended || p.GetReason() == "resumed") {
			s.Status = st
		}
	}
	if p.GetSummary() != "" {
		s.Summary = p.GetSummary()
	}
	s.Sequence = t.seq()
	t.put(key, s)
}

// subagentPayload is the SubagentStatus payload of any subagent.* class
// but spawned.
func subagentPayload(ev *eventsv1.RuntimeEvent) *eventsv1.SubagentStatus {
	for _, p := range []*eventsv1.SubagentStatus{ev.GetSubagentStatus(), ev.GetSubagentCompleted(), ev.GetSubagentFailed(),
		ev.GetSubagentClosed(), ev.GetSubagentInput(), ev.GetSubagentOutput()} {
		if p != nil {
			return p
		}
	}
	return nil
}

func newAction() *controlv1.Action     { return &controlv1.Action{} }
func newSubagent() *controlv1.Subagent { return &controlv1.Subagent{} }

func (t *tx) channel() {
	ev := t.ev
	key := ChannelKey(t.tenant(), ev.GetChannelId())
	c, ok, other := own(t, key, func() *controlv1.Channel { return &controlv1.Channel{} })
	if other {
		return
	}
	if !ok {
		c = &controlv1.Channel{ChannelId: ev.GetChannelId(), SessionId: ev.GetSessionId()}
	}
	var p *eventsv1.ChannelFact
	switch ev.GetType() {
	case "channel.connected":
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_CONNECTED, ev.GetChannelConnected()
	case "channel.resumed":
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_CONNECTED, ev.GetChannelResumed()
	case "channel.disconnected":
		c.Status, p = controlv1.ChannelStatus_CHANNEL_STATUS_DISCONNECTED, ev.GetChannelDisconnected()
	case "channel.message":
		p = ev.GetChannelMessage()
	}
	if p.GetPeer() != "" {
		c.Peer = p.GetPeer()
	}
	if p.GetLastAckedSequence() > c.LastAckedSequence {
		c.LastAckedSequence = p.GetLastAckedSequence()
	}
	c.Sequence = t.seq()
	t.put(key, c)
}

// summary records another owner's fact on the thread's joined summary: the
// state becomes known at this sequence; the details stay in the owner's
// events and its own summary RPC.
func (t *tx) summary(field func(*controlv1.ThreadRead) **controlv1.Summary) {
	th, ok := t.thread(t.ev.GetThreadId())
	if !ok {
		return
	}
	s := field(th)
	if *s == nil {
		*s = &controlv1.Summary{}
	}
	(*s).State = commonv1.FactState_FACT_STATE_KNOWN
	if (*s).Facts == nil {
		(*s).Facts = map[string]string{}
	}
	(*s).Facts["last_event"] = t.ev.GetType()
	if t.ev.GetTurnId() != "" {
		(*s).Facts["last_turn_id"] = t.ev.GetTurnId()
	}
	(*s).Sequence = t.seq()
	t.touchThread(th)
}

func (t *tx) incident() {
	th, ok := t.thread(t.ev.GetThreadId())
	if !ok {
		return
	}
	t.addIncident(th, &controlv1.Incident{Type: t.ev.GetType(), TurnId: t.ev.GetTurnId(), Category: incidentCategory(t.ev),
		Message: incidentMessage(t.ev), Sequence: t.seq()})
	t.touchThread(th)
}

// Refusal facts on the thread's permission summary: why the last refused
// call was refused, joined from the permission service's facts.
const (
	RefusalCause        = "refusal_cause"         // rule, mode, hook, host_policy, sandbox, sandbox_violation, human
	RefusalReason       = "refusal_reason"        // the decision's reason
	RefusalRuleRefs     = "refusal_rule_refs"     // comma-separated rule refs
	RefusalHookRunIDs   = "refusal_hook_run_ids"  // comma-separated hook run ids
	RefusalTool         = "refusal_tool"          // the tool or target name
	RefusalPaths        = "refusal_paths"         // comma-separated paths
	RefusalCommand      = "refusal_command"       // the command's subcommands, or the violated host
	RefusalToolCallID   = "refusal_tool_call_id"  // the refused call
	RefusalEvaluationID = "refusal_evaluation_id" // the permission evaluation
	RefusalActionID     = "refusal_action_id"     // the approval a person denied
	RefusalViolation    = "refusal_violation"     // what the refusing decision's sandbox check found
)

// refusal records why a call was refused when the fact says it was: a
// deny decision (rule, mode, hook, host policy, sandbox), a blocked
// sandbox violation, or a person's denial of an approval.
func (t *tx) refusal() {
	ev := t.ev
	facts := map[string]string{}
	switch {
	case ev.GetPermissionEvaluated() != nil:
		pe := ev.GetPermissionEvaluated()
		if pe.GetDecision() != eventsv1.Decision_DECISION_DENY {
			return
		}
		facts[RefusalCause] = enums.Word(pe.GetDecisionSource())
		facts[RefusalReason] = pe.GetDecisionReason()
		facts[RefusalRuleRefs] = strings.Join(pe.GetRuleRefs(), ",")
		facts[RefusalHookRunIDs] = strings.Join(pe.GetHookRunIds(), ",")
		facts[RefusalTool] = pe.GetName()
		facts[RefusalPaths] = strings.Join(pe.GetPaths(), ",")
		var cmds []string
		for _, c := range pe.GetSubcommands() {
			cmds = append(cmds, strings.Join(c.GetArgv(), " "))
		}
		facts[RefusalCommand] = strings.Join(cmds, " && ")
		facts[RefusalEvaluationID] = pe.GetEvaluationId()
	case ev.GetSandboxViolation() != nil:
		v := ev.GetSandboxViolation()
		if !v.GetBlocked() {
			return
		}
		if th, ok := t.thread(ev.GetThreadId()); ok && th.Permission != nil && v.GetEvaluationId() != "" &&
			th.Permission.Facts[RefusalEvaluationID] == v.GetEvaluationId() {
			// A violation the refusing decision found: the decision's
			// cause stands, the violation is said beside it.
			th.Permission.Facts[RefusalViolation] = v.GetTarget()
			return
		}
		facts[RefusalCause] = "sandbox_violation"
		facts[RefusalReason] = v.GetReason()
		if v.GetKind() == eventsv1.ViolationKind_VIOLATION_KIND_NETWORK {
			facts[RefusalCommand] = v.GetTarget()
		} else {
			facts[RefusalPaths] = v.GetTarget()
		}
		facts[RefusalEvaluationID] = v.GetEvaluationId()
	case ev.GetPermissionResolved() != nil:
		r := ev.GetPermissionResolved()
		if r.GetAllowed() {
			return
		}
		facts[RefusalCause] = "human"
		facts[RefusalReason] = "denied by " + r.GetResponder()
		facts[RefusalActionID] = ev.GetActionId()
	default:
		return
	}
	facts[RefusalToolCallID] = ev.GetToolCallId()
	th, ok := t.thread(ev.GetThreadId())
	if !ok || th.Permission == nil {
		return
	}
	for k := range th.Permission.Facts {
		if strings.HasPrefix(k, "refusal_") {
			delete(th.Permission.Facts, k)
		}
	}
	for k, v := range facts {
		if v != "" {
			th.Permission.Facts[k] = v
		}
	}
}

func incidentCategory(ev *eventsv1.RuntimeEvent) string {
	switch {
	case ev.GetToolFailed() != nil:
		return ev.GetToolFailed().GetCategory()
	case ev.GetProcessFailed() != nil:
		return ev.GetProcessFailed().GetCategory()
	case ev.GetModelFailed() != nil:
		return ev.GetModelFailed().GetCategory()
	case ev.GetRuntimeError() != nil:
		return ev.GetRuntimeError().GetCode()
	case ev.GetSandboxViolation() != nil:
		return enums.Word(ev.GetSandboxViolation().GetKind())
	}
	return ""
}

func (t *tx) addIncident(th *controlv1.ThreadRead, in *controlv1.Incident) {
	th.Incidents = append(th.Incidents, in)
	if len(th.Incidents) > maxIncidents {
		th.Incidents = th.Incidents[len(th.Incidents)-maxIncidents:]
	}
}

func incidentMessage(ev *eventsv1.RuntimeEvent) string {
	switch {
	case ev.GetRuntimeError() != nil:
		return ev.GetRuntimeError().GetMessage()
	case ev.GetModelFailed() != nil:
		return ev.GetModelFailed().GetMessage()
	case ev.GetToolFailed() != nil:
		return ev.GetToolFailed().GetMessage()
	case ev.GetProcessFailed() != nil:
		return ev.GetProcessFailed().GetMessage()
	}
	return ev.GetType()
}

// refreshThreadStatus derives the thread's status from its active turn and
// pending actions: a pending permission wins over input, which wins over
// running; no active turn is idle.
func (t *tx) refreshThreadStatus(th *controlv1.ThreadRead) {
	if th.Status == domain.ThreadClosed {
		return
	}
	status := controlv1.ThreadStatus_THREAD_STATUS_IDLE
	if th.ActiveTurnId != "" {
		status = controlv1.ThreadStatus_THREAD_STATUS_RUNNING
		if tu, ok := t.turn(th.ActiveTurnId); ok && tu.Status == domain.TurnInterrupting {
			status = controlv1.ThreadStatus_THREAD_STATUS_INTERRUPTING
		}
	}
	for _, a := range th.PendingActions {
		switch waitingTurnStatus(a.ActionType) {
		case controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION:
			status = controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION
		default:
			if status != controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION {
				status = controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT
			}
		}
	}
	th.Status = status
}

// waitingTurnStatus is what a pending action of actionType makes its turn
// wait for.
func waitingTurnStatus(actionType string) controlv1.TurnStatus {
	if actionType == "permission" {
		return controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION
	}
	return controlv1.TurnStatus_TURN_STATUS_WAITING_INPUT
}

// admitted is the status a turn.submitted's admission word gives the turn
// (accepted, queued or steered).
func admitted(admission string) controlv1.TurnStatus {
	st, _ := enums.Parse[controlv1.TurnStatus](admission)
	return st
}

const subagentClosed = controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED

// terminal is the domain's rule for a final turn status: one rule for
// deciding and projecting.
var terminal = domain.Terminal
