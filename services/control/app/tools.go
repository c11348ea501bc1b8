package app

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// RegisterTools records the tools a worker offers, for one session or (no
// session) for every session of the tenant. A new registration replaces
// the worker's previous one for that scope.
func (a *App) RegisterTools(ctx context.Context, c Caller, req *controlv1.RegisterToolsRequest) (*controlv1.RegisterToolsResponse, error) {
	seen := map[string]bool{}
	for i, t := range req.GetTools() {
		if seen[t.GetName()] {
			return nil, fault.Invalid("tools["+strconv.Itoa(i)+"].name", "%s", "tool "+t.GetName()+" is listed twice")
		}
		seen[t.GetName()] = true
	}
	session := req.GetSessionId()
	if session != "" {
		if err := a.requireSession(ctx, c.Tenant, session); err != nil {
			return nil, err
		}
	} else {
		session = eventlog.NoSession
	}
	ev := domain.ToolInventory(req.GetSessionId(), req.GetWorkerId(), req.GetTools(), req.GetFacts())
	res, err := a.Log.Append(ctx, eventlog.Aggregate{Tenant: c.Tenant, Session: session, Kind: "tools", ID: req.GetWorkerId()}, eventlog.Any, ev)
	if err != nil {
		return nil, err
	}
	return &controlv1.RegisterToolsResponse{Sequence: res[len(res)-1].Sequence}, nil
}

// GetToolInventory returns the tools available in a session: the tenant's
// tools and the session's own, a session's registration winning on a name
// clash; sorted by name. The two are in two partitions of a partitioned
// log (the tenant's session-less `_` and the session's): min_sequence
// waits for its own, the tenant's partition is waited for up to its head
// (tools registered for the tenant before the call are listed, whatever
// token the caller holds), and the response's sequence is min_sequence's
// partition's checkpoint, as ListSessions'.
func (a *App) GetToolInventory(ctx context.Context, c Caller, req *controlv1.GetToolInventoryRequest) (*controlv1.GetToolInventoryResponse, error) {
	seq, err := a.caughtUp(ctx, req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	if a.Log.Partitions() > 1 {
		if err := projector.CaughtUp(ctx, a.Log.Of(c.Tenant, ""), a.Store, readmodel.Name, nil, ReadTimeout); err != nil {
			return nil, err
		}
	}
	byName := map[string]*eventsv1.ToolSpec{}
	scopes := []string{"_"}
	if s := req.GetSessionId(); s != "" {
		if err := a.requireSession(ctx, c.Tenant, s); err != nil {
			return nil, err
		}
		scopes = append(scopes, s)
	}
	for _, scope := range scopes {
		workers, err := a.Store.Range(ctx, readmodel.ToolsIndex(c.Tenant, scope), projection.RangeQuery{})
		if err != nil {
			return nil, err
		}
		for _, w := range workers {
			raw, err := a.Store.Get(ctx, readmodel.ToolsKey(c.Tenant, scope, w.Member))
			if err != nil {
				return nil, err
			}
			inv := &eventsv1.SnapshotUpdated{}
			if err := proto.Unmarshal(raw, inv); err != nil {
				return nil, err
			}
			for _, t := range inv.GetTools() {
				byName[t.GetName()] = t
			}
		}
	}
	out := &controlv1.GetToolInventoryResponse{Sequence: seq}
	for _, t := range byName {
		out.Tools = append(out.Tools, t)
	}
	slices.SortFunc(out.Tools, func(x, y *eventsv1.ToolSpec) int { return strings.Compare(x.GetName(), y.GetName()) })
	return out, nil
}
