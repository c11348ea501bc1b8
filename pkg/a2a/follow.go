package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// idPattern is the runtime's id rule (the API's protovalidate patterns).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

const maxIDLen = 128

// taskRef is where a task (a turn) lives.
type taskRef struct {
	turnID, sessionID, threadID string
}

func (t taskRef) contextID() string { return contextOf(t.sessionID, t.threadID) }

// contextOf is the A2A contextId of a session's thread: SESSION/THREAD, or
// the one id when the thread has the session's (a context this server
// made, or a client named).
func contextOf(session, thread string) string {
	if session == thread {
		return session
	}
	return session + "/" + thread
}

// parseContext reads a contextId: SESSION/THREAD, or one id naming both a
// session and its thread (thread ids are unique in a tenant, so each
// context is its own session).
func parseContext(field, s string) (session, thread string, err *rpcError) {
	session, thread, ok := strings.Cut(s, "/")
	if !ok {
		thread = session
	}
	for _, p := range []string{session, thread} {
		if len(p) > maxIDLen || !idPattern.MatchString(p) {
			return "", "", invalidParams(field, "%q is not a context of this agent: SESSION/THREAD, each of letters, digits, - and _ (at most %d)", s, maxIDLen)
		}
	}
	return session, thread, nil
}

// newContext names a new session and its thread for a message without a
// contextId.
func newContext() (session, thread string) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := "a2a-" + hex.EncodeToString(b[:])
	return id, id
}

func checkTaskID(field, id string) *rpcError {
	if id == "" {
		return invalidParams(field, "required")
	}
	if len(id) > maxIDLen || !idPattern.MatchString(id) {
		// No turn has such an id.
		return taskNotFound(id)
	}
	return nil
}

// locate finds a task's session and thread. Another tenant's turn is
// NotFound, as the API says it.
func (h *Handler) locate(ctx context.Context, id string) (taskRef, *rpcError) {
	resp, err := h.control.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: id})
	if err != nil {
		return taskRef{}, fromStatus(err, id)
	}
	a := resp.GetAttempts()
	return taskRef{turnID: id, sessionID: a.GetSessionId(), threadID: a.GetThreadId()}, nil
}

// start is the sequence a task's events start from, and the thread as
// it is now.
func (h *Handler) start(ctx context.Context, ref taskRef, minSeq uint64) (uint64, *controlv1.ThreadRead, *rpcError) {
	read, err := h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: ref.sessionID, ThreadId: ref.threadID, MinSequence: minSeq})
	if err != nil {
		return 0, nil, fromStatus(err, ref.turnID)
	}
	thread := read.GetThread()
	if a := thread.GetActiveTurn(); a.GetTurnId() == ref.turnID && a.GetSubmittedSequence() > 0 {
		return a.GetSubmittedSequence(), thread, nil
	}
	att, err := h.control.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: ref.turnID})
	if err != nil {
		return 0, nil, fromStatus(err, ref.turnID)
	}
	if list := att.GetAttempts().GetAttempts(); len(list) > 0 && list[0].GetStartedSequence() > 0 {
		return list[0].GetStartedSequence(), thread, nil
	}
	if slices.Contains(thread.GetQueuedTurnIds(), ref.turnID) {
		// Queued: nothing of it after turn.submitted but its start.
		return thread.GetSequence() + 1, thread, nil
	}
	// Ended before any run (interrupted while queued): its events are
	// somewhere in the thread.
	return 1, thread, nil
}

// follow is what a stream or a read of a task does: it folds the task's
// events from its start, hands every item after `after` to emit (when not
// nil) with its cursor, and returns when the task has ended, or earlier
// by its until.
type follow struct {
	ref   taskRef
	from  uint64
	after *cursor
	emit  func(StreamResponse, cursor, string) error
	until until
	// keepalive, when set, makes follow a stream's: it is called on the
	// subscription's heartbeats, which come every streamHeartbeat.
	keepalive func() error
}

// until says where a follow ends before the task does.
type until int

const (
	// untilPresent ends at the end of the log as it is: when the
	// subscription, having sent every event there is, goes idle (a
	// heartbeat that says where it is). The read model is not the
	// present: it may lag the log, and a task read right after its cancel
	// would still be waiting.
	untilPresent until = iota
	// untilWaits ends where the task waits for its client: the fold is
	// input-required, and nothing of the turn follows in the log (waits).
	untilWaits
)

// heartbeat is how long an idle subscription of a read waits before it
// says where it is: a read ends on it. A stream's heartbeats are rarer:
// they only keep its connection alive.
const (
	heartbeat       = 20 * time.Millisecond
	streamHeartbeat = time.Second
	// keepaliveEvery heartbeats a stream writes an SSE comment, so that
	// proxies do not cut an idle stream.
	keepaliveEvery = 15
)

func (h *Handler) follow(ctx context.Context, f follow) (*taskView, *rpcError) {
	v := newTaskView(f.ref.turnID, f.ref.contextID())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	beat := heartbeat
	if f.keepalive != nil {
		beat = streamHeartbeat
	}
	sub, err := h.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: f.ref.sessionID, ThreadId: f.ref.threadID,
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: f.from,
		Heartbeat: durationpb.New(beat),
	})
	if err != nil {
		return nil, fromStatus(err, f.ref.turnID)
	}
	beats := 0
	for {
		resp, err := sub.Recv()
		if err != nil {
			return v, fromStatus(err, f.ref.turnID)
		}
		switch item := resp.GetItem().(type) {
		case *controlv1.SubscribeEventsResponse_Heartbeat:
			// The first heartbeat (no sequence) says the subscription is
			// live; the next ones that it went idle.
			if item.Heartbeat.GetSequence() > 0 && f.until == untilPresent {
				return v, nil
			}
			if beats++; f.keepalive != nil && beats%keepaliveEvery == 0 {
				if err := f.keepalive(); err != nil {
					return v, &rpcError{Code: codeInternal, Message: err.Error()}
				}
			}
		case *controlv1.SubscribeEventsResponse_Gap:
			return v, &rpcError{Code: codeInternal, Message: "the task's history is no longer in the log"}
		case *controlv1.SubscribeEventsResponse_Event:
			ev := item.Event
			if ev.GetTurnId() != f.ref.turnID {
				break
			}
			items := v.apply(ev)
			for k, out := range items {
				at := cursor{seq: ev.GetSequence(), k: k}
				if f.emit == nil || (f.after != nil && !at.after(*f.after)) {
					continue
				}
				if err := f.emit(out, at, ev.GetType()); err != nil {
					return v, &rpcError{Code: codeInternal, Message: err.Error()}
				}
			}
			if terminal(v.task.Status.State) {
				return v, nil
			}
			if f.until == untilWaits && interrupted(v.task.Status.State) {
				waits, err := h.waits(ctx, f.ref, ev.GetSequence())
				if err != nil || waits {
					return v, err
				}
			}
		}
	}
}

// waits says whether the task, input-required after the event at seq,
// still waits at the end of the log: a subscription of the turn's
// lifecycle events after seq goes idle with none of them. The read model
// cannot say it: it may lag the log, where the answer already is.
func (h *Handler) waits(ctx context.Context, ref taskRef, seq uint64) (bool, *rpcError) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := h.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: ref.sessionID, ThreadId: ref.threadID, TypePrefixes: []string{"action.", "turn.", "queue."},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: seq + 1,
		Heartbeat: durationpb.New(heartbeat),
	})
	if err != nil {
		return false, fromStatus(err, ref.turnID)
	}
	for {
		resp, err := sub.Recv()
		if err != nil {
			return false, fromStatus(err, ref.turnID)
		}
		switch item := resp.GetItem().(type) {
		case *controlv1.SubscribeEventsResponse_Heartbeat:
			if item.Heartbeat.GetSequence() > 0 {
				return true, nil
			}
		case *controlv1.SubscribeEventsResponse_Event:
			if item.Event.GetTurnId() == ref.turnID {
				return false, nil
			}
		}
	}
}
