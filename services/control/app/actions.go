package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// actionIn reads an action from a thread's state as the writer holds it.
func actionIn(ctx context.Context, st projection.Store, c Caller, id string) (*controlv1.Action, error) {
	act, ok, err := readmodel.Action(ctx, st, c.Tenant, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("action", id, "action "+id+" not found")
	}
	return act, nil
}

func (a *App) action(ctx context.Context, c Caller, id string) (*controlv1.Action, error) {
	act, ok, err := lookup(ctx, a, func() (*controlv1.Action, bool, error) { return readmodel.Action(ctx, a.Store, c.Tenant, id) })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("action", id, "action "+id+" not found")
	}
	return act, nil
}

// maxJSONDepth bounds how deep an action's schema and a response to it may
// nest: validation against a schema with alternatives (anyOf, oneOf) can
// take time exponential in the response's depth, and a few bytes of
// brackets would otherwise hold a request for seconds.
const maxJSONDepth = 16

// errExternalRef refuses every reference a schema makes outside itself:
// the server reads no file and fetches no URL for a caller's schema.
var errExternalRef = errors.New("references outside the schema are not loaded")

type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, errExternalRef }

// compileSchema compiles a JSON Schema given as text: self-contained (no
// $ref to a file or URL is loaded) and at most maxJSONDepth deep.
func compileSchema(text string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	if d := jsonDepth(doc, 0); d > maxJSONDepth {
		return nil, fmt.Errorf("nests %d levels deep; at most %d", d, maxJSONDepth)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource("action.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("action.json")
}

// jsonDepth is how deeply a decoded JSON value nests, stopping once it
// exceeds the bound.
func jsonDepth(v any, d int) int {
	if d > maxJSONDepth {
		return d
	}
	deepest := d
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, d+1))
		}
	case []any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, d+1))
		}
	}
	return deepest
}

// RequestAction opens a human or policy decision on a live turn and moves
// the turn and thread to waiting. A retry with the same action id returns
// the action.
//
// requester is the principal whose call asked (the caller of
// RequestAction).
//
// The ids of permission actions (ids.Reserved) are refused: the runtime
// mints them and opens those actions itself, with its own prompt
// (openPermissionAction), so no caller can open, first, the action a
// person will approve for a permission request.
func (a *App) RequestAction(ctx context.Context, c Caller, req *controlv1.RequestActionRequest, requestedBy string, requester auth.Principal) (*controlv1.RequestActionResponse, error) {
	if ids.Reserved(req.GetActionId()) {
		return nil, fault.Invalid("action_id", "%s", fmt.Sprintf("%q is reserved: the runtime mints the ids of permission actions (%s_...) and opens those actions itself", req.GetActionId(), ids.PermissionAction))
	}
	return a.requestAction(ctx, c, req, requestedBy, requester, nil)
}

// requestAction opens an action. same, when set, says whether an action
// that already has the id is the one asked for; when it is not, the
// request is refused (AlreadyExists) rather than answered with it.
func (a *App) requestAction(ctx context.Context, c Caller, req *controlv1.RequestActionRequest, requestedBy string, requester auth.Principal, same func(*controlv1.Action) bool) (*controlv1.RequestActionResponse, error) {
	if req.GetJsonSchema() != "" {
		if _, err := compileSchema(req.GetJsonSchema()); err != nil {
			return nil, fault.Invalid("json_schema", "%s", "not a valid JSON Schema: "+err.Error())
		}
	}
	actionID := req.GetActionId()
	if actionID == "" {
		actionID = ids.New(ids.Action)
	}
	var existing *controlv1.Action
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, req.GetSessionId(), req.GetThreadId()), command.Key("action:"+actionID), func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		existing = nil
		if _, err := threadIn(ctx, st, c, req.GetSessionId(), req.GetThreadId()); err != nil {
			return nil, err
		}
		tu, ok, err := readmodel.Turn(ctx, st, c.Tenant, req.GetTurnId())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fault.NotFoundWith("turn", req.GetTurnId(), "turn "+req.GetTurnId()+" not found in thread "+req.GetThreadId())
		}
		if act, ok, err := readmodel.Action(ctx, st, c.Tenant, actionID); err != nil || ok {
			if err == nil && act.TurnId != tu.TurnId {
				return nil, &fault.Error{Kind: fault.KindAlreadyExists, Resource: "action", ID: actionID, Message: "action " + actionID + " already exists on another turn"}
			}
			if err == nil && same != nil && !same(act) {
				return nil, &fault.Error{Kind: fault.KindAlreadyExists, Resource: "action", ID: actionID, Message: "action " + actionID + " already exists and is not the one asked for"}
			}
			existing = act
			return nil, err
		}
		return domain.DecideRequestAction(tu, domain.RequestAction{
			ActionID: actionID, Type: req.GetActionType(), Prompt: req.GetPrompt(), JSONSchema: req.GetJsonSchema(),
			Decisions: req.GetDecisions(), Timeout: req.GetTimeout().AsDuration(), DecisionOnTimeout: req.GetDecisionOnTimeout(),
			Context: req.GetContext(), RequestedBy: requestedBy, StepID: req.GetStepId(), ToolCall: req.GetToolCallId(), Now: a.now(),
			RequesterSubject: requester.Subject, RequesterRole: requester.Role,
		})
	})
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return &controlv1.RequestActionResponse{Action: existing, Sequence: res.Sequence}, nil
	}
	act, err := actionIn(ctx, res.State, c, actionID)
	if err != nil {
		return nil, err
	}
	return &controlv1.RequestActionResponse{Action: act, Sequence: res.Sequence}, nil
}

// RespondAction resolves a pending action exactly once: the decision must
// be offered and the payload must match the schema; a second response gets
// the first resolution.
func (a *App) RespondAction(ctx context.Context, c Caller, req *controlv1.RespondActionRequest) (*controlv1.RespondActionResponse, error) {
	act, err := a.action(ctx, c, req.GetActionId())
	if err != nil {
		return nil, err
	}
	schemaErr := validatePayload(act.GetJsonSchema(), req.GetPayloadJson())
	alreadyResolved := false
	res, err := a.w.Execute(ctx, threadAgg(c.Tenant, act.SessionId, act.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		cur, err := actionIn(ctx, st, c, req.GetActionId())
		if err != nil {
			return nil, err
		}
		alreadyResolved = cur.Status != domain.ActionPending
		return domain.DecideRespond(cur, domain.Respond{Decision: req.GetDecision(), PayloadJSON: req.GetPayloadJson(), Responder: c, SchemaError: schemaErr})
	})
	if err != nil {
		return nil, err
	}
	act, err = actionIn(ctx, res.State, c, req.GetActionId())
	if err != nil {
		return nil, err
	}
	return &controlv1.RespondActionResponse{Action: act, AlreadyResolved: alreadyResolved, Sequence: res.Sequence}, nil
}

func validatePayload(schemaText, payload string) error {
	if schemaText == "" {
		return nil
	}
	schema, err := compileSchema(schemaText)
	if err != nil {
		return fmt.Errorf("the action's schema does not compile: %w", err)
	}
	if payload == "" {
		payload = "null"
	}
	var doc any
	if doc, err = jsonschema.UnmarshalJSON(strings.NewReader(payload)); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if d := jsonDepth(doc, 0); d > maxJSONDepth {
		return fmt.Errorf("nests %d levels deep; at most %d", d, maxJSONDepth)
	}
	if err := schema.Validate(doc); err != nil {
		return err
	}
	return nil
}

// ExpireDue resolves every pending action whose deadline has passed with
// its timeout decision. Safe on every replica at once: each resolution is a
// command on the thread, and a second replica finds it resolved.
func (a *App) ExpireDue(ctx context.Context) (int, error) {
	now := a.now()
	maxScore := float64(now.UnixMilli())
	due, err := a.Store.Range(ctx, readmodel.DueActionsIndex, rangeUpTo(maxScore, 256))
	if err != nil {
		return 0, err
	}
	expired := 0
	for _, e := range due {
		tenant, actionID, ok := strings.Cut(e.Member, "|")
		if !ok {
			continue
		}
		c := Caller{Tenant: tenant}
		act, err := a.action(ctx, c, actionID)
		if err != nil {
			continue
		}
		res, err := a.w.Execute(ctx, threadAgg(tenant, act.SessionId, act.ThreadId), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
			cur, err := actionIn(ctx, st, c, actionID)
			if err != nil {
				return nil, err
			}
			if cur.DecisionOnTimeout != domain.FallbackCancelTurn || cur.TurnId == "" {
				return domain.DecideTimeout(cur, now), nil
			}
			th, err := threadIn(ctx, st, c, cur.SessionId, cur.ThreadId)
			if err != nil {
				return nil, err
			}
			tu, err := turnIn(ctx, st, c, cur.TurnId)
			if err != nil {
				return nil, err
			}
			// The turn's runs are folded into the thread's state (claims).
			at, err := readmodel.Attempts(ctx, st, c.Tenant, cur.TurnId)
			if err != nil {
				return nil, err
			}
			return domain.DecideTimeoutOn(th, tu, at, cur, now)
		})
		if err != nil {
			return expired, err
		}
		if len(res.Appended) > 0 {
			expired++
		}
	}
	return expired, nil
}
