package readmodel

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/routingsummary"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// Projection is the control read model.
type Projection struct{}

// Name implements projector.Projection.
func (Projection) Name() string { return Name }

// FoldVersion is the projection's fold version (projection.Fold).
func (Projection) FoldVersion() int { return FoldVersion }

// Filters implements projector.Projection: the whole log, because the thread
// read model joins every owner's facts.
func (Projection) Filters() []string { return nil }

// Project implements projector.Projection.
func (Projection) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	tx := &tx{ctx: ctx, store: store, ev: rec.Event, docs: map[string]proto.Message{}, puts: map[string][]byte{}}
	if err := tx.apply(); err != nil {
		return projection.Batch{}, err
	}
	return tx.batch()
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

// batch is what the event changes. A document that does not marshal fails
// the fold (the projector retries and reports it) rather than being left
// out of the batch, which would drop the change silently.
func (t *tx) batch() (projection.Batch, error) {
	t.operationalIndexes()
	var b projection.Batch
	for _, key := range t.order {
		if _, dirty := t.puts[key]; !dirty {
			continue
		}
		raw, err := proto.Marshal(t.docs[key])
		if err != nil {
			return projection.Batch{}, fmt.Errorf("marshal %s: %w", key, err)
		}
		b.Puts = append(b.Puts, projection.KV{Key: key, Value: raw})
	}
	for key, raw := range t.puts {
		if raw != nil {
			b.Puts = append(b.Puts, projection.KV{Key: key, Value: raw})
		}
	}
	b.IndexAdds, b.IndexRemoves = t.adds, t.removes
	return b, nil
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
	case typ == events.TypeSessionCreated:
		p := ev.GetSessionCreated()
		s := &controlv1.Session{
			SessionId: ev.GetSessionId(), Title: p.GetTitle(), Metadata: p.GetMetadata(), CreatedBy: p.GetCreatedBy(),
			CreatedAt: ev.GetTimestamp(), UpdatedAt: ev.GetTimestamp(), Sequence: t.seq(),
		}
		t.put(SessionKey(t.tenant(), s.SessionId), s)
		t.adds = append(t.adds, projection.IndexEntry{Index: SessionsIndex(t.tenant()), Member: s.SessionId, Score: t.millis()})
	case typ == events.TypeSessionUpdated:
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
	case typ == events.TypeThreadStarted:
		t.threadStarted()
	case typ == events.TypeThreadUpdated:
		t.threadUpdated()
	case typ == events.TypeTurnSubmitted:
		t.turnSubmitted()
	case typ == events.TypeTurnStarted:
		if tu, ok := t.turn(ev.GetTurnId()); ok {
			tu.Status, tu.StartedAt = domain.TurnRunning, ev.GetTimestamp()
			tu.Parked, tu.ParkedStepId, tu.ParkedCallIds = false, "", nil
			t.touchTurn(tu)
			if th, ok := t.thread(tu.ThreadId); ok {
				t.refreshThreadStatus(th)
				t.touchThread(th)
			}
		}
	case typ == events.TypeTurnCompleted || typ == events.TypeTurnFailed:
		t.turnEnded()
	case typ == events.TypeQueueChanged:
		t.queueChanged()
	case typ == events.TypeActionRequired:
		t.actionRequired()
	case typ == events.TypeActionResolved:
		t.actionResolved()
	case strings.HasPrefix(typ, "subagent."):
		t.subagent()
	case typ == events.TypeChannelPeerTaskLinked || typ == events.TypeChannelPeerTaskUpdated:
		t.peerTask()
	case strings.HasPrefix(typ, "process."):
		t.process()
	case typ == events.TypeRunStatus && ev.GetRunStatus().GetPhase() == "lost":
		t.processesLost()
	case typ == events.TypeRunStatus && ev.GetRunStatus().GetPhase() == domain.PhaseParked:
		if tu, ok := t.turn(ev.GetTurnId()); ok && !domain.Terminal(tu.Status) {
			md := ev.GetRunStatus().GetMetadata()
			tu.Parked, tu.ParkedStepId, tu.ParkedCallIds = true, md["step_id"], nil
			for _, c := range strings.Split(md["call_ids"], ",") {
				if c != "" {
					tu.ParkedCallIds = append(tu.ParkedCallIds, c)
				}
			}
			t.touchTurn(tu)
		}
		// Its background processes ended with the run that parked.
		t.processesLost()
	case domain.WebhookFact(ev) != nil:
		t.webhook()
	case typ == events.TypeChannelConnected, typ == events.TypeChannelDisconnected, typ == events.TypeChannelResumed, typ == events.TypeChannelMessage:
		t.channel()
	case typ == events.TypeSnapshotUpdated && ev.GetSnapshotUpdated().GetKind() == "tool_inventory":
		p := ev.GetSnapshotUpdated()
		scope := ev.GetSessionId()
		if scope == "" {
			scope = "_"
		}
		t.put(ToolsKey(t.tenant(), scope, p.GetWorkerId()), p)
		t.adds = append(t.adds, projection.IndexEntry{Index: ToolsIndex(t.tenant(), scope), Member: p.GetWorkerId(), Score: float64(t.seq())})
	case typ == events.TypeContextCompactionCompleted:
		if th, ok := t.thread(ev.GetThreadId()); ok {
			if ref := ev.GetContextCompactionCompleted().GetSummaryRef(); ref != "" {
				th.CompactionSummaryRefs = append(th.CompactionSummaryRefs, ref)
			}
			t.touchThread(th)
		}
	case typ == events.TypeHistoryRollbackCompleted:
		for _, id := range ev.GetHistoryRollbackCompleted().GetRemovedTurnIds() {
			if tu, ok := t.turn(id); ok {
				tu.Status = domain.TurnRolledBack
				t.touchTurn(tu)
				t.removes = append(t.removes, projection.IndexEntry{Index: SessionTurnsIndex(t.tenant(), tu.SessionId), Member: tu.TurnId},
					projection.IndexEntry{Index: TenantTurnsIndex(t.tenant()), Member: tu.TurnId})
			}
		}
	case typ == events.TypePermissionRequested:
		t.adds = append(t.adds, projection.IndexEntry{Index: PermissionRequestsIndex, Member: t.tenant() + "|" + ev.GetActionId(), Score: float64(t.seq())})
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Permission })
	case strings.HasPrefix(typ, "permission."), strings.HasPrefix(typ, "sandbox."), strings.HasPrefix(typ, "hook."):
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Permission })
		t.refusal()
	case strings.HasPrefix(typ, "routing."), strings.HasPrefix(typ, "cost."), strings.HasPrefix(typ, "quota."),
		typ == events.TypeRateLimitHit, typ == events.TypeTaskProfileResolved:
		if th, ok := t.thread(ev.GetThreadId()); ok {
			if th.RoutingLimit == nil {
				th.RoutingLimit = &routingv1.RoutingLimitSummary{}
			}
			routingsummary.FoldThread(th.RoutingLimit, ev)
		}
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Routing })
	case strings.HasPrefix(typ, "task.") || strings.HasPrefix(typ, "job."):
		if typ == events.TypeTaskCreated {
			if th, ok := t.thread(ev.GetThreadId()); ok && !slices.Contains(th.TaskIds, ev.GetTaskId()) {
				th.TaskIds = append(th.TaskIds, ev.GetTaskId())
			}
		}
		t.summary(func(th *controlv1.ThreadRead) **controlv1.Summary { return &th.Tasks })
	case typ == events.TypeEvidenceChanged:
		if th, ok := t.thread(ev.GetThreadId()); ok && ev.GetEvidenceId() != "" && !slices.Contains(th.EvidenceRefs, ev.GetEvidenceId()) {
			th.EvidenceRefs = append(th.EvidenceRefs, ev.GetEvidenceId())
			t.touchThread(th)
		}
	}
	switch typ {
	case events.TypeRuntimeError, events.TypeModelFailed, events.TypeToolFailed, events.TypeProcessFailed, events.TypeContextCompactionFailed, events.TypeSandboxViolation, events.TypeHookFailed:
		t.incident()
	}
	return t.err
}

// terminal is the domain's rule for a final turn status: one rule for
// deciding and projecting.
var terminal = domain.Terminal
