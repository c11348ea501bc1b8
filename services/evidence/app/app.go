// Package app holds the evidence service's use cases: exports read the
// log of a scope up to a sequence and fold it with the pure domain; trial
// commands run the write path (pkg/command) on the trial aggregate.
package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
	"github.com/agentruntime/agentruntime/services/evidence/readmodel"
)

// Errors a caller can cause, beside the domain's.
var (
	// ErrScopeNotFound: the scope has no events (also for another tenant's
	// session: existence must not leak).
	ErrScopeNotFound = errors.New("scope not found")
	// ErrAhead: at_sequence is beyond what the projection has applied.
	ErrAhead = errors.New("sequence not reached")
)

const (
	catchUp   = 5 * time.Second
	trialKind = "benchmark_trial"
)

// App is the evidence service's use cases.
type App struct {
	Log   *eventlog.Log
	Store projection.Store
	// w decides trial and comparison commands on the aggregate as it
	// holds it (command.Writer, docs/adr/0005-hot-path.md): folded from
	// the aggregate's own subject by the read model's own Project.
	w *command.Writer
	// Now is the clock for trial durations (tests pin it).
	Now func() time.Time
}

// New builds the use cases.
func New(log *eventlog.Log, store projection.Store) *App {
	return &App{Log: log, Store: store, w: command.NewWriter(log, readmodel.Projection{}, command.Options{}), Now: time.Now}
}

// reach waits for min and returns the position reads of the session's
// events may cover: the read model's checkpoint of the session's
// partition (min may be a token of another partition: a write elsewhere
// the caller wants reflected).
func (a *App) reach(ctx context.Context, tenant, session string, min uint64) (uint64, error) {
	reached, err := projector.WaitForSession(ctx, a.Log, a.Store, readmodel.Name, tenant, session, min, catchUp)
	return reached, behind(err, "min_sequence")
}

// behind answers a read model that did not catch up in time as
// FailedPrecondition NOT_CAUGHT_UP on the field that asked for it.
func behind(err error, field string) error {
	if errors.Is(err, projector.ErrBehind) {
		return &fault.Error{Kind: fault.KindPrecondition, Reason: domain.ReasonNotCaughtUp, Subject: field, Message: err.Error(), Err: err}
	}
	return err
}

func scopeNotFound(err error) error {
	return &fault.Error{Kind: fault.KindNotFound, Resource: "scope", ID: err.Error(), Err: err}
}

var errStop = errors.New("stop")

// fold reads a session's log up to upTo (inclusive) into a model of scope.
func (a *App) fold(ctx context.Context, tenant string, scope domain.Scope, upTo uint64) (*domain.Model, error) {
	m := domain.NewModel(scope)
	_, err := a.Log.Read(ctx, []string{a.Log.Subjects.Session(tenant, scope.Session)}, eventlog.FromStart, func(r *eventlog.Record) error {
		if r.Event.GetSequence() > upTo {
			return errStop
		}
		m.Apply(r.Event)
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	if len(m.Events) == 0 {
		return nil, scopeNotFound(fmt.Errorf("%w: %s %s", ErrScopeNotFound, scope.Kind, scopeName(scope)))
	}
	return m, nil
}

func scopeName(s domain.Scope) string {
	if s.ID == "" {
		return s.Session
	}
	return s.Session + "/" + s.ID
}

// ExportRequest is one pack export.
type ExportRequest struct {
	Tenant     string
	Kind       string // "evidence", "replay", "review"
	Scope      domain.Scope
	AtSequence uint64
	MinSeq     uint64
	Evidence   domain.EvidenceInput
	Grader     string
}

// ExportResult answers an export.
type ExportResult struct {
	EvidenceID    string
	Pack          *commonv1.OutputRef
	ContentSHA256 string
	Covers        uint64
	Signals       []domain.Signal
	KnownGaps     []string
	Write         *commonv1.WriteResult
}

// Export builds, stores and records a pack.
func (a *App) Export(ctx context.Context, r ExportRequest) (*ExportResult, error) {
	if r.AtSequence != 0 && a.Log.PartitionOfPosition(r.AtSequence) != a.Log.Subjects.PartitionOf(r.Tenant, r.Scope.Session) {
		return nil, fault.Invalid("at_sequence", "%d is not a position of session %s's events", r.AtSequence, r.Scope.Session)
	}
	reached, err := a.reach(ctx, r.Tenant, r.Scope.Session, max(r.MinSeq, r.AtSequence))
	if err != nil {
		return nil, err
	}
	upTo := reached
	if r.AtSequence != 0 {
		upTo = r.AtSequence
	}
	m, err := a.fold(ctx, r.Tenant, r.Scope, upTo)
	if err != nil {
		return nil, err
	}
	var pack domain.Object
	res := &ExportResult{Covers: m.Covers()}
	switch r.Kind {
	case "replay":
		pack = m.ReplayCase(r.Grader)
	case "review":
		pack = m.ReviewPack(r.Evidence.ReviewNotes)
	default:
		pack, res.Signals, res.KnownGaps = m.EvidencePack(r.Evidence)
	}
	changed := &eventsv1.EvidenceChanged{Kind: r.Kind, ScopeKind: string(r.Scope.Kind), ScopeId: r.Scope.ID,
		CoversSequence: m.Covers(), VerificationOutcomes: r.Evidence.VerificationOutcomes, KnownGaps: res.KnownGaps}
	ids := scopeIDs(m)
	if err := a.store(ctx, r.Tenant, r.Scope.Session, pack, changed, ids, res); err != nil {
		return nil, err
	}
	return res, nil
}

// scopeIDs are the envelope ids of an export's evidence.changed: the
// scope's own, and those the scope determines without ambiguity.
func scopeIDs(m *domain.Model) *eventsv1.RuntimeEvent {
	ev := &eventsv1.RuntimeEvent{}
	switch m.Scope.Kind {
	case domain.ScopeThread:
		ev.ThreadId = m.Scope.ID
	case domain.ScopeTurn:
		ev.TurnId = m.Scope.ID
		if th := m.ThreadIDs(); len(th) == 1 {
			ev.ThreadId = th[0]
		}
		// The turn's task, when it ran exactly one (the Lime profile's
		// evidence.changed names the task and run it covers).
		var only *domain.Task
		n := 0
		for _, t := range m.Tasks {
			if t.Turn == m.Scope.ID {
				only, n = t, n+1
			}
		}
		if n == 1 {
			ev.TaskId, ev.RunId = only.ID, only.CurrentRun
		}
	case domain.ScopeTask:
		ev.TaskId = m.Scope.ID
		if t := m.Tasks[m.Scope.ID]; t != nil {
			ev.ThreadId, ev.TurnId, ev.RunId = t.Thread, t.Turn, t.CurrentRun
		}
	}
	if ev.TurnId != "" && ev.ThreadId == "" {
		ev.TurnId = "" // a turn without its thread would be a half join
	}
	return ev
}

// store writes the canonical JSON of pack to the object store and appends
// evidence.changed. The evidence id derives from the tenant, kind, scope
// and content hash, and the event id from the evidence id, so exporting
// the same facts again finds the same object and appends nothing.
func (a *App) store(ctx context.Context, tenant, session string, pack domain.Object, changed *eventsv1.EvidenceChanged, ids *eventsv1.RuntimeEvent, res *ExportResult) error {
	body, err := jsonexport.Marshal(pack)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	res.ContentSHA256 = hex.EncodeToString(sum[:])
	res.EvidenceID = domain.EvidenceID(tenant, session, changed, res.ContentSHA256)
	ref, err := a.Log.PutObject(ctx, "evidence/"+tenant+"/"+session+"/"+res.EvidenceID+".json", "evidence", "application/json", body)
	if err != nil {
		return err
	}
	res.Pack = ref
	changed.Pack = ref
	ev := domain.EvidenceChanged(res.EvidenceID, ids, ref.GetUri(), changed)
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "evidence", ID: res.EvidenceID}
	appended, err := a.Log.Append(ctx, agg, eventlog.ExpectSequence(0), ev)
	if err != nil {
		return err
	}
	res.Write = command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write()
	return nil
}

// SessionSummary answers GetEvidenceSummary from the projection.
type SessionSummary struct {
	Reached  uint64
	Summary  readmodel.Summary
	TraceIDs []string
	Evidence []string
	Trials   []string
	Signals  []domain.Signal
}

// Summary reads a session's evidence summary.
func (a *App) Summary(ctx context.Context, tenant, session string, minSeq uint64) (*SessionSummary, error) {
	reached, err := a.reach(ctx, tenant, session, minSeq)
	if err != nil {
		return nil, err
	}
	raw, err := a.Store.Get(ctx, readmodel.SummaryKey(tenant, session))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, scopeNotFound(fmt.Errorf("%w: session %s", ErrScopeNotFound, session))
	}
	if err != nil {
		return nil, err
	}
	out := &SessionSummary{Reached: reached}
	if err := json.Unmarshal(raw, &out.Summary); err != nil {
		return nil, err
	}
	for _, idx := range []struct {
		name string
		to   *[]string
	}{{readmodel.TracesIndex(tenant, session), &out.TraceIDs}, {readmodel.ExportsIndex(tenant, session), &out.Evidence}, {readmodel.TrialsIndex(tenant, session), &out.Trials}} {
		entries, err := a.Store.Range(ctx, idx.name, projection.RangeQuery{})
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			*idx.to = append(*idx.to, e.Member)
		}
	}
	out.Signals = summarySignals(out.Summary)
	return out, nil
}

// summarySignals is the applicability the counts alone can tell: a family
// with events is exported, one without is not applicable, and events
// without trace ids are a missing correlation.
func summarySignals(s readmodel.Summary) []domain.Signal {
	m := domain.NewModel(domain.Scope{Kind: domain.ScopeSession})
	for typ, n := range s.Counts {
		m.Counts[typ] = int(n)
		if typ == events.TypeModelRequested {
			m.ModelCalls = int(n)
		}
	}
	m.EventsWithTrace = int(s.WithTrace)
	m.Events = make([]*eventsv1.RuntimeEvent, s.Count) // only its length is read
	m.Threads = map[string]*domain.Thread{}
	if s.Counts[events.TypeThreadStarted] > 0 {
		m.Threads["_"] = &domain.Thread{}
	}
	signals, _ := m.Signals(false, false)
	return signals
}

// Snapshot renders a session snapshot at the projection's sequence.
func (a *App) Snapshot(ctx context.Context, tenant, session string, profile bool, minSeq uint64) ([]byte, uint64, error) {
	reached, err := a.reach(ctx, tenant, session, minSeq)
	if err != nil {
		return nil, 0, err
	}
	m, err := a.fold(ctx, tenant, domain.Scope{Kind: domain.ScopeSession, Session: session}, reached)
	if err != nil {
		return nil, 0, err
	}
	// Evidence exports are links in a snapshot: fold them in.
	body, err := jsonexport.Marshal(m.Snapshot(jsonexport.Options{Profile: profile}))
	return body, m.Covers(), err
}

// maxEvents bounds one ExportEvents page.
const maxEvents = 10000

// EventsQuery selects a page of ExportEvents.
type EventsQuery struct {
	// Session is the session to export; eventlog.NoSession exports the
	// tenant's session-less facts.
	Session string
	Profile bool
	From    uint64
	Limit   int
	MinSeq  uint64
}

// Skipped is an event of a page not rendered in the requested format.
type Skipped struct {
	Sequence       uint64
	EventID, Type  string
	Reason, Detail string
}

// EventsPage is one page of rendered events.
type EventsPage struct {
	JSON    []string
	Skipped []Skipped
	// Next is where to continue; 0 at the end.
	Next uint64
}

// Events renders a page of a session's events, or of the tenant's
// session-less facts. An event the format cannot represent
// (jsonexport.Skip) is listed with its reason, never rendered invalid and
// never dropped: rendered and skipped together are every event of the page.
func (a *App) Events(ctx context.Context, tenant string, q EventsQuery) (*EventsPage, error) {
	reached, err := a.reach(ctx, tenant, q.Session, q.MinSeq)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > maxEvents {
		limit = maxEvents
	}
	opt := jsonexport.Options{Profile: q.Profile}
	page := &EventsPage{}
	n := 0
	_, err = a.Log.Read(ctx, []string{a.Log.Subjects.Session(tenant, q.Session)}, eventlog.FromSequence(q.From), func(r *eventlog.Record) error {
		if r.Event.GetSequence() > reached {
			return errStop
		}
		if n == limit {
			page.Next = r.Event.GetSequence()
			return errStop
		}
		n++
		if reason, detail := jsonexport.Skip(r.Event, opt); reason != "" {
			page.Skipped = append(page.Skipped, Skipped{Sequence: r.Event.GetSequence(), EventID: r.Event.GetEventId(), Type: r.Event.GetType(), Reason: reason, Detail: detail})
			return nil
		}
		b, err := jsonexport.Marshal(jsonexport.Event(r.Event, opt))
		if err != nil {
			return err
		}
		page.JSON = append(page.JSON, string(b))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	// A session with no events does not exist (or is another tenant's);
	// the tenant's own session-less facts always exist, possibly none.
	if n == 0 && q.From <= 1 && q.Session != eventlog.NoSession {
		return nil, scopeNotFound(fmt.Errorf("%w: session %s", ErrScopeNotFound, q.Session))
	}
	return page, nil
}
