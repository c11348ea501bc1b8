package agui

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// plan is what a run streams: the turn's events from a sequence, the
// first ones (up to and including after) only to know what is open.
type plan struct {
	turnID string
	from   uint64
	after  *position
	state  *controlv1.ThreadRead
	// answered are the actions this run's resume answered: their
	// action.required does not interrupt it, whatever a read model not yet
	// at the answer says.
	answered map[string]bool
	// floor is the sequence the answers reached: reads wait for it.
	floor uint64
}

// position is an AG-UI event's place: the k-th made of the runtime event
// at seq.
type position struct {
	seq uint64
	k   int
}

const lastOfEvent = int(^uint(0) >> 1)

// probeDecision is offered by no action (decisions are the runtime's
// words: allow_once, deny, ...): RespondAction with it answers nothing,
// and returns an answered action as it was answered.
const probeDecision = "ag-ui: read the answer"

// plan makes the API calls a run starts with: a new turn for the newest
// user message, the answers of a resume, or the place of a reconnect. Every
// error here is the caller's answer, before any event is sent.
func (h *Handler) plan(ctx context.Context, in *run) (*plan, error) {
	switch {
	case in.cursor != nil:
		c := in.cursor
		read, err := h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: in.sessionID, ThreadId: in.threadID})
		if err != nil {
			return nil, err
		}
		// A cursor of another thread's turn would follow nothing.
		att, err := h.control.GetTurnAttempts(ctx, &controlv1.GetTurnAttemptsRequest{TurnId: c.turnID})
		if err != nil {
			return nil, err
		}
		if a := att.GetAttempts(); a.GetSessionId() != in.sessionID || a.GetThreadId() != in.threadID {
			return nil, invalidStatus(in.cursorField, "the cursor is of a turn of another thread")
		}
		return &plan{turnID: c.turnID, from: c.from, after: &position{seq: c.seq, k: c.k}, state: read.GetThread()}, nil
	case len(in.resume) > 0:
		return h.planResume(ctx, in)
	}
	req := &controlv1.SubmitTurnRequest{
		SessionId: in.sessionID, ThreadId: in.threadID,
		// The message id: a retried run of the same message is the same
		// turn, not a second one.
		IdempotencyKey: "ag-ui:" + in.userMessageID,
		Input:          []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: in.userText}}},
		Metadata:       map[string]string{"ag_ui_run_id": in.runID},
	}
	if len(in.tools) > 0 {
		// The front end's tools ride with the turn; the worker offers them.
		offered, err := clienttool.Encode(in.tools)
		if err != nil {
			return nil, err
		}
		req.Options = map[string]string{clienttool.Option: offered}
	}
	resp, err := h.control.SubmitTurn(ctx, req)
	if err != nil {
		return nil, err
	}
	read, err := h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: in.sessionID, ThreadId: in.threadID, MinSequence: resp.GetSequence()})
	if err != nil {
		return nil, err
	}
	turn := resp.GetTurn()
	return &plan{turnID: turn.GetTurnId(), from: turn.GetSubmittedSequence(), state: read.GetThread()}, nil
}

// planResume answers each interrupt through RespondAction (a repeated
// answer is harmless: the first one stands) and streams the rest of the
// turn: from its start when it is still active, the events up to the
// answered action.required only to know what is open, so nothing between
// the interrupt and the answer is missed.
func (h *Handler) planResume(ctx context.Context, in *run) (*plan, error) {
	read, err := h.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: in.sessionID, ThreadId: in.threadID})
	if err != nil {
		return nil, err
	}
	thread := read.GetThread()
	answered := map[string]bool{}
	var floor uint64
	var turnID string
	var required, resolved uint64
	for _, a := range in.resume {
		field := a.field
		pending := findAction(thread.GetPendingActions(), a.actionID)
		decision := a.decision
		if pending != nil {
			if a.cancelled {
				decision = cancelDecision(pending)
				if decision == "" {
					return nil, invalidStatus(field+".status", "action "+a.actionID+" has no decision for a cancel; answer it with one of its decisions")
				}
			} else if !slices.Contains(pending.GetDecisions(), decision) {
				return nil, invalidStatus(field+".payload.decision", "\""+decision+"\" is not offered; the interrupt offers "+joinQuoted(pending.GetDecisions()))
			}
			if required == 0 || pending.GetSequence() < required {
				required = pending.GetSequence()
			}
		} else {
			// Not pending here: answered already (a repeated resume, or an
			// answer from elsewhere), or not this thread's. A decision no
			// action offers reads the first answer back and never answers
			// an action pending in another thread.
			decision, a.payloadJSON = probeDecision, ""
		}
		resp, err := h.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: a.actionID, Decision: decision, PayloadJson: a.payloadJSON})
		if pending == nil && status.Code(err) == codes.InvalidArgument {
			return nil, invalidStatus(a.idField, "action "+a.actionID+" is pending in another thread, not in "+in.threadID)
		}
		if a.idField != field+".interruptId" && status.Code(err) == codes.NotFound {
			return nil, invalidStatus(a.idField, "no front-end tool call "+a.actionID+" waits for a result in thread "+in.threadID)
		}
		if err != nil {
			return nil, err
		}
		act := resp.GetAction()
		answered[a.actionID] = true
		floor = max(floor, resp.GetSequence())
		if act.GetThreadId() != in.threadID || act.GetSessionId() != in.sessionID {
			return nil, invalidStatus(a.idField, "action "+a.actionID+" is not in thread "+in.threadID)
		}
		if turnID != "" && act.GetTurnId() != turnID {
			return nil, invalidStatus(a.idField, "the interrupts of one resume belong to one turn")
		}
		turnID = act.GetTurnId()
		if pending == nil && (resolved == 0 || act.GetSequence() < resolved) {
			resolved = act.GetSequence()
		}
	}
	p := &plan{turnID: turnID, state: thread, answered: answered, floor: floor}
	if active := thread.GetActiveTurn(); active.GetTurnId() == turnID && active.GetSubmittedSequence() > 0 {
		p.from = active.GetSubmittedSequence()
		switch {
		case required > 0:
			p.after = &position{seq: required, k: lastOfEvent}
		case resolved > 0:
			p.after = &position{seq: resolved - 1, k: lastOfEvent}
		}
		return p, nil
	}
	// The turn is no longer active (every answer was a repeat, and the turn
	// went on): its rest from the first answer.
	switch {
	case required > 0 && (resolved == 0 || required < resolved):
		p.from = required + 1
	default:
		p.from = resolved
	}
	return p, nil
}

func findAction(actions []*controlv1.Action, id string) *controlv1.Action {
	for _, a := range actions {
		if a.GetActionId() == id {
			return a
		}
	}
	return nil
}

// cancelDecision is what a cancelled interrupt answers: the decision the
// runtime itself applies when nobody answers in time when it is one the
// action offers (not a fallback such as cancel_turn), else a deny.
func cancelDecision(a *controlv1.Action) string {
	if slices.Contains(a.GetDecisions(), a.GetDecisionOnTimeout()) {
		return a.GetDecisionOnTimeout()
	}
	if slices.Contains(a.GetDecisions(), "deny") {
		return "deny"
	}
	return ""
}

// --- errors ---------------------------------------------------------------

type httpError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, field, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(httpError{Code: code, Message: message, Field: field})
}

// invalidStatus is a caller's mistake found while planning.
func invalidStatus(field, msg string) error {
	st, _ := status.New(codes.InvalidArgument, field+": "+msg).WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}},
	})
	return st.Err()
}

// writeStatus answers with an API error as HTTP: the status Connect gives
// the same code, the code's Connect name, the message and the first field
// a BadRequest names.
func writeStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	field := ""
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			field = br.GetFieldViolations()[0].GetField()
			break
		}
	}
	code := connect.Code(st.Code())
	writeError(w, httpStatus(st.Code()), code.String(), field, st.Message())
}

func httpStatus(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.FailedPrecondition:
		return http.StatusPreconditionFailed
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Canceled:
		return 499
	}
	return http.StatusInternalServerError
}
