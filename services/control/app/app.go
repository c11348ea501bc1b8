// Package app holds the control service's use cases. Commands decide on
// the aggregate as the writer holds it (command.Writer: the thread's or
// session's own events folded by the read model's fold), append with its
// expected sequence and answer from the decision; reads come from the read
// model and wait for min_sequence (docs/architecture.md, "The write path";
// docs/adr/0005-hot-path.md).
package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/clienttool"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fanout"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// ReadTimeout bounds how long a read waits for min_sequence.
const ReadTimeout = 5 * time.Second

// App is the control service's use cases.
type App struct {
	Log   *eventlog.Log
	Store projection.Store
	w     *command.Writer
	now   func() time.Time
	// Hub feeds event subscriptions (the process's one, ADR 0006).
	Hub *fanout.Hub
	// limits of new subscriptions (nil: DefaultSubscriberLimits).
	limits atomic.Pointer[SubscriberLimits]
	// MaxQueuedTurns bounds each thread's queue (0: unbounded); New sets
	// DefaultMaxQueuedTurns.
	MaxQueuedTurns int
	// fair decides a submitted turn's place in its fair queue.
	fair fairshare.Tagger
	// PeerCheck says why a SpawnSubagent may not name an A2A peer's card
	// URL (the allowlist, --a2a-peers); nil: no peer may be named.
	PeerCheck func(cardURL string) error
}

// DefaultMaxQueuedTurns is a thread's queue bound unless configured.
const DefaultMaxQueuedTurns = 1000

// New builds the use cases on a log and the service's store.
func New(log *eventlog.Log, store projection.Store) *App {
	return &App{Log: log, Store: store, now: time.Now, MaxQueuedTurns: DefaultMaxQueuedTurns, fair: fairshare.Tagger{Queue: readmodel.TurnQueue},
		w: command.NewWriter(log, command.Folds(readmodel.Projection{}, readmodel.Claims{Subjects: log.Subjects}), command.Options{})}
}

// Instrument records the command path's metrics (conflict retries) on mp.
func (a *App) Instrument(mp metric.MeterProvider) error { return a.w.Instrument(mp) }

// Caller is who acts: the tenant and subject from the credentials.
type Caller = auth.Principal

func threadAgg(tenant, session, thread string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "thread", ID: thread}
}

// turnAgg is a turn's own subject: its step facts (model output, tool
// results), which decide nothing on the thread.
func turnAgg(tenant, session, turn string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "turn", ID: turn}
}

// requireSession answers NotFound unless the session exists. The read model
// may not have folded a session a command just created (commands answer
// without waiting for it, docs/adr/0005-hot-path.md), so a miss there is
// confirmed on the session's own subject in the log before it is refused.
func (a *App) requireSession(ctx context.Context, tenant, session string) error {
	if _, ok, err := readmodel.Session(ctx, a.Store, tenant, session); err != nil || ok {
		return err
	}
	st, err := a.w.Refresh(ctx, sessionAgg(tenant, session))
	if err != nil {
		return err
	}
	if _, ok, err := readmodel.Session(ctx, st, tenant, session); err != nil || ok {
		return err
	}
	return fault.NotFoundWith("session", session, "session "+session+" not found")
}

func sessionAgg(tenant, session string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "session", ID: session}
}

// caughtUp waits until the read model has applied seq.
func (a *App) caughtUp(ctx context.Context, seq uint64) (uint64, error) {
	return projector.WaitFor(ctx, a.Log, a.Store, readmodel.Name, seq, ReadTimeout)
}

// caughtUpIn waits until the read model has applied seq, for a read of one
// session, and answers how far it has applied that session's events: on a
// partitioned log the checkpoint of the session's partition, not of the
// partition seq is of (0 there when seq is 0, which says nothing).
func (a *App) caughtUpIn(ctx context.Context, tenant, session string, seq uint64) (uint64, error) {
	got, err := a.caughtUp(ctx, seq)
	if err != nil || a.Log.Partitions() == 1 {
		return got, err
	}
	return projector.Checkpoint(ctx, a.Log.Of(tenant, session), a.Store, readmodel.Name)
}

// checkpointName is the checkpoint the consumer named name keeps for log:
// a partition's view (Log.Of, Log.Views) or a log of one partition.
func checkpointName(log *eventlog.Log, name string) string {
	k, _ := log.View()
	return projector.CheckpointName(name, log.Partitions(), k)
}

// caughtUpToHead waits until the read model has applied everything in
// log (the whole log: every partition's head; a session's Log.Of: its
// partition's). A read by id that finds nothing calls it before answering
// NotFound: a client that saw an id in the event stream (action.required,
// say) and acts on it at once may be faster than the projector.
func (a *App) caughtUpToHead(ctx context.Context, log *eventlog.Log) error {
	return projector.CaughtUp(ctx, log, a.Store, readmodel.Name, nil, ReadTimeout)
}

// lookup reads a document by id, and when it is missing reads it again
// once the read model has caught up with every partition of the log.
func lookup[T any](ctx context.Context, a *App, read func() (T, bool, error)) (T, bool, error) {
	return lookupOn(ctx, a, a.Log, read)
}

// lookupIn is lookup of a document of a known session: the wait is for
// the session's partition only.
func lookupIn[T any](ctx context.Context, a *App, tenant, session string, read func() (T, bool, error)) (T, bool, error) {
	return lookupOn(ctx, a, a.Log.Of(tenant, session), read)
}

func lookupOn[T any](ctx context.Context, a *App, log *eventlog.Log, read func() (T, bool, error)) (T, bool, error) {
	v, ok, err := read()
	if err != nil || ok {
		return v, ok, err
	}
	if err := a.caughtUpToHead(ctx, log); err != nil {
		return v, false, err
	}
	return read()
}

// thread loads a thread of the caller's tenant in the given session;
// another session's (or tenant's) thread is NotFound.
func (a *App) thread(ctx context.Context, c Caller, session, thread string) (*controlv1.ThreadRead, error) {
	th, ok, err := lookupIn(ctx, a, c.Tenant, session, func() (*controlv1.ThreadRead, bool, error) { return readmodel.Thread(ctx, a.Store, c.Tenant, thread) })
	if err != nil {
		return nil, err
	}
	if !ok || th.SessionId != session {
		return nil, fault.NotFoundWith("thread", thread, "thread "+thread+" not found in session "+session)
	}
	return th, nil
}

// threadIn reads a thread from an aggregate's state as the writer holds it
// (command.State): what it lacks does not exist at that state.
func threadIn(ctx context.Context, st projection.Store, c Caller, session, thread string) (*controlv1.ThreadRead, error) {
	th, ok, err := readmodel.Thread(ctx, st, c.Tenant, thread)
	if err != nil {
		return nil, err
	}
	if !ok || th.SessionId != session {
		return nil, fault.NotFoundWith("thread", thread, "thread "+thread+" not found in session "+session)
	}
	return th, nil
}

// turnIn reads a turn from a thread's state as the writer holds it.
func turnIn(ctx context.Context, st projection.Store, c Caller, turn string) (*controlv1.Turn, error) {
	tu, ok, err := readmodel.Turn(ctx, st, c.Tenant, turn)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("turn", turn, "turn "+turn+" not found")
	}
	return tu, nil
}

func (a *App) turn(ctx context.Context, c Caller, turn string) (*controlv1.Turn, error) {
	tu, ok, err := lookup(ctx, a, func() (*controlv1.Turn, bool, error) { return readmodel.Turn(ctx, a.Store, c.Tenant, turn) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("turn", turn, "turn "+turn+" not found")
	}
	return tu, nil
}

// SubmitTurn admits a turn, creating the session and thread when the
// policy allows. A retry with the same turn id or idempotency key returns
// the existing turn and appends nothing: the decision finds it in the
// thread's own events, and the events carry ids derived from the key, so
// even a retry racing its first attempt from another replica is one turn.
func (a *App) SubmitTurn(ctx context.Context, c Caller, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
	if raw, ok := req.GetOptions()[clienttool.Option]; ok {
		// A worker could only fail the turn later: say it now.
		if _, err := clienttool.Parse(raw); err != nil {
			var v *clienttool.Violation
			errors.As(err, &v)
			return nil, fault.Invalid("options["+clienttool.Option+"]"+v.Field, "%s", v.Message)
		}
	}
	if err := fairshare.Validate("", req.GetPriority(), req.GetFairnessKey(), req.FairnessWeight); err != nil {
		return nil, err
	}
	// The turn's place in its priority's fair queue is decided here and
	// recorded in turn.submitted (pkg/fairshare).
	class := fairshare.Resolve(req.GetPriority(), req.GetFairnessKey(), req.GetFairnessWeight(), req.GetSessionId())
	tag, err := a.fair.Tag(ctx, a.Store, c.Tenant, class, a.Log.Partitions())
	if err != nil {
		return nil, err
	}
	if err := a.ensureThread(ctx, c, req); err != nil {
		return nil, err
	}
	turnID := req.GetTurnId()
	if turnID == "" {
		turnID = ids.New(ids.Turn)
	}
	key := command.Key("submit:turn:" + turnID)
	if k := req.GetIdempotencyKey(); k != "" {
		key = command.Key("submit:key:" + k)
	}
	var existing *controlv1.Turn
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, req.GetSessionId(), req.GetThreadId()), key, func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		existing = nil
		th, err := threadIn(ctx, st, c, req.GetSessionId(), req.GetThreadId())
		if err != nil {
			return nil, err
		}
		if dup, err := a.findSubmitted(ctx, st, c, req, turnID); err != nil || dup != nil {
			existing = dup
			return nil, err
		}
		return domain.DecideSubmit(th, domain.Submit{
			TurnID: turnID, IdempotencyKey: req.GetIdempotencyKey(), Input: req.GetInput(), Options: req.GetOptions(),
			Metadata: req.GetMetadata(), Busy: req.GetBusyPolicy(), ExpectedActiveTurnID: req.GetExpectedActiveTurnId(),
			SubmittedBy: c.Subject, MaxQueued: a.MaxQueuedTurns,
			Class: class, FairTag: tag,
		})
	})
	if err != nil {
		return nil, err
	}
	if existing == nil && len(res.Appended) > 0 && res.Appended[0].Duplicate {
		// The log knew the derived ids: a retry that raced its first attempt.
		existing, err = a.findSubmitted(ctx, res.State, c, req, turnID)
		if err != nil {
			return nil, err
		}
	}
	if existing != nil {
		return &controlv1.SubmitTurnResponse{Turn: existing, Deduplicated: true, Sequence: res.Sequence}, nil
	}
	tu, err := turnIn(ctx, res.State, c, turnID)
	if err != nil {
		return nil, err
	}
	return &controlv1.SubmitTurnResponse{Turn: tu, Sequence: res.Sequence}, nil
}

// findSubmitted finds the turn a retried submit already created, in the
// thread's state as the writer holds it.
func (a *App) findSubmitted(ctx context.Context, st projection.Store, c Caller, req *controlv1.SubmitTurnRequest, turnID string) (*controlv1.Turn, error) {
	if key := req.GetIdempotencyKey(); key != "" {
		id, ok, err := readmodel.TurnByIdempotencyKey(ctx, st, c.Tenant, req.GetThreadId(), key)
		if err != nil || ok {
			if err != nil {
				return nil, err
			}
			return turnIn(ctx, st, c, id)
		}
	}
	tu, ok, err := readmodel.Turn(ctx, st, c.Tenant, turnID)
	if err != nil || ok {
		return tu, err
	}
	if req.GetTurnId() == "" {
		return nil, nil // a fresh id: nobody else has it
	}
	// A caller's turn id may name a turn of another thread: only the read
	// model knows every thread's turns.
	other, ok, err := readmodel.Turn(ctx, a.Store, c.Tenant, turnID)
	if err != nil || !ok {
		return nil, err
	}
	if other.ThreadId != req.GetThreadId() || other.SessionId != req.GetSessionId() {
		return nil, &fault.Error{Kind: fault.KindAlreadyExists, Resource: "turn", ID: turnID,
			Message: fmt.Sprintf("turn %s already exists in another thread", turnID)}
	}
	return nil, nil
}

// ensureThread creates the session and the thread when they are missing
// and the create policy allows it.
func (a *App) ensureThread(ctx context.Context, c Caller, req *controlv1.SubmitTurnRequest) error {
	create := req.GetCreatePolicy() != controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING
	session, thread := req.GetSessionId(), req.GetThreadId()
	// Fast path: a thread this process holds exists (nothing deletes one).
	if st, held := a.w.Held(threadAgg(c.Tenant, session, thread)); held {
		if _, ok, err := readmodel.Thread(ctx, st, c.Tenant, thread); err != nil || ok {
			return err
		}
	}
	// A thread id is global in its tenant: one of another session lives on
	// another subject, which only the read model sees.
	if th, ok, err := readmodel.Thread(ctx, a.Store, c.Tenant, thread); err != nil {
		return err
	} else if ok && th.SessionId != session {
		return &fault.Error{Kind: fault.KindAlreadyExists, Resource: "thread", ID: thread,
			Message: fmt.Sprintf("thread %s belongs to another session", thread)}
	}
	open := domain.Open{Session: session, Thread: thread, Create: create, Title: req.GetSessionTitle(), CreatedBy: c.Subject}
	_, err := a.w.Execute(ctx, sessionAgg(c.Tenant, session), "create-session", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		_, ok, err := readmodel.Session(ctx, st, c.Tenant, session)
		if err != nil {
			return nil, err
		}
		return domain.DecideOpenSession(ok, open)
	})
	if err != nil {
		return err
	}
	// A thread this process does not hold is most often new (a
	// conversation's first turn): it is created at the expected sequence 0
	// without reading the log first (ExecuteNew); one that exists answers a
	// conflict, is read, and is decided again (a no-op). Sessions hold many
	// threads, so a session is read first as before.
	_, err = a.w.ExecuteNew(ctx, threadAgg(c.Tenant, session, thread), "create-thread", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		_, ok, err := readmodel.Thread(ctx, st, c.Tenant, thread)
		if err != nil {
			return nil, err
		}
		return domain.DecideOpenThread(ok, open)
	})
	return err
}

// InterruptTurn records the intent to stop a turn, then cancels what can
// be cancelled now.
func (a *App) InterruptTurn(ctx context.Context, c Caller, req *controlv1.InterruptTurnRequest) (*controlv1.InterruptTurnResponse, error) {
	var target *controlv1.Turn
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, req.GetSessionId(), req.GetThreadId()), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, err := threadIn(ctx, st, c, req.GetSessionId(), req.GetThreadId())
		if err != nil {
			return nil, err
		}
		id := req.GetTurnId()
		if id == "" {
			id = th.ActiveTurnId
		}
		target = nil
		var at *controlv1.TurnAttempts
		if id != "" {
			if target, err = turnIn(ctx, st, c, id); err != nil {
				var de *fault.Error
				if errors.As(err, &de) && de.Kind == fault.KindNotFound {
					de.Message = "turn " + id + " not found in thread " + th.ThreadId
				}
				return nil, err
			}
			// Its runs, folded into the thread's state (claims): whether a
			// worker holds it.
			if at, err = readmodel.Attempts(ctx, st, c.Tenant, id); err != nil {
				return nil, err
			}
		}
		return domain.DecideInterrupt(th, target, domain.Interrupt{
			TurnID: id, Reason: req.GetReason(), CancelQueue: req.GetQueuePolicy() == controlv1.QueuePolicy_QUEUE_POLICY_CANCEL,
			Attempts: at,
		})
	})
	if err != nil {
		return nil, err
	}
	if target == nil && req.GetTurnId() == "" {
		// A remote subagent's thread has no turns: interrupting it
		// closes the subagent, which cancels the peer's task.
		if seq, ok, err := a.interruptPeer(ctx, c, res.State, req); err != nil || ok {
			return &controlv1.InterruptTurnResponse{Accepted: ok, Sequence: seq}, err
		}
	}
	if target == nil || len(res.Appended) == 0 {
		return &controlv1.InterruptTurnResponse{Accepted: false, Turn: target, Sequence: res.Sequence}, nil
	}
	tu, err := turnIn(ctx, res.State, c, target.TurnId)
	if err != nil {
		return nil, err
	}
	return &controlv1.InterruptTurnResponse{Accepted: true, Turn: tu, Sequence: res.Sequence}, nil
}

// ResumeThread records recovery facts (what is pending, what was running)
// and marks the thread resumed. A thread whose active turn was running when
// the runtime stopped is reported, never silently continued. It answers
// with the thread's whole read (joined with other owners' summaries), so
// it reads the read model at the sequence it wrote.
func (a *App) ResumeThread(ctx context.Context, c Caller, req *controlv1.ResumeThreadRequest) (*controlv1.ResumeThreadResponse, error) {
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, req.GetSessionId(), req.GetThreadId()), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, err := threadIn(ctx, st, c, req.GetSessionId(), req.GetThreadId())
		if err != nil {
			return nil, err
		}
		return domain.DecideResumeThread(th, st.Last, req.GetResumeToken()), nil
	})
	if err != nil {
		return nil, err
	}
	if _, err := a.caughtUp(ctx, res.Sequence); err != nil {
		return nil, err
	}
	th, err := a.thread(ctx, c, req.GetSessionId(), req.GetThreadId())
	if err != nil {
		return nil, err
	}
	return &controlv1.ResumeThreadResponse{Thread: th, Sequence: res.Sequence}, nil
}

// RemoveQueuedTurn and PromoteQueuedTurn mutate the queue.
func (a *App) RemoveQueuedTurn(ctx context.Context, c Caller, req *controlv1.RemoveQueuedTurnRequest) (*controlv1.RemoveQueuedTurnResponse, error) {
	q, seq, err := a.queueOp(ctx, c, req.GetSessionId(), req.GetThreadId(), func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideRemoveQueued(th, req.GetQueuedTurnId())
	})
	if err != nil {
		return nil, err
	}
	return &controlv1.RemoveQueuedTurnResponse{QueuedTurnIds: q, Sequence: seq}, nil
}

func (a *App) PromoteQueuedTurn(ctx context.Context, c Caller, req *controlv1.PromoteQueuedTurnRequest) (*controlv1.PromoteQueuedTurnResponse, error) {
	q, seq, err := a.queueOp(ctx, c, req.GetSessionId(), req.GetThreadId(), func(th *controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecidePromoteQueued(th, req.GetQueuedTurnId())
	})
	if err != nil {
		return nil, err
	}
	return &controlv1.PromoteQueuedTurnResponse{QueuedTurnIds: q, Sequence: seq}, nil
}

func (a *App) queueOp(ctx context.Context, c Caller, session, thread string, decide func(*controlv1.ThreadRead) ([]*eventsv1.RuntimeEvent, error)) ([]string, uint64, error) {
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, session, thread), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		th, err := threadIn(ctx, st, c, session, thread)
		if err != nil {
			return nil, err
		}
		return decide(th)
	})
	if err != nil {
		return nil, 0, err
	}
	th, err := threadIn(ctx, res.State, c, session, thread)
	if err != nil {
		return nil, 0, err
	}
	return th.QueuedTurnIds, res.Sequence, nil
}
