// Package readmodel builds the control service's read models from the log:
// sessions, threads (the thread read model), turns, actions, subagents and
// channels, and the indexes that page them. One projection over the whole
// log, because the thread read model joins every owner's facts.
package readmodel

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Name is the projection's checkpoint key.
const Name = "control"

// FoldVersion is the control projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md). 2: turns hold their priority, fairness key
// and weight. 3: subagents hold their A2A peer (agent, peer task ids,
// state, open input action) and remote subagents are indexed
// (PeersIndex). 4: a tenant's turns are indexed by submission time
// (TenantTurnsIndex, what ListTurns pages).
const FoldVersion = 4

// Keys of documents and indexes, all tenant-scoped so one tenant can never
// address another's.
func SessionKey(tenant, session string) string { return "sess:" + tenant + ":" + session }
func ThreadKey(tenant, thread string) string   { return "thr:" + tenant + ":" + thread }
func TurnKey(tenant, turn string) string       { return "turn:" + tenant + ":" + turn }
func ActionKey(tenant, action string) string   { return "act:" + tenant + ":" + action }
func SubagentKey(tenant, sub string) string    { return "sub:" + tenant + ":" + sub }
func ChannelKey(tenant, ch string) string      { return "chan:" + tenant + ":" + ch }
func IdempotencyKey(tenant, thread, key string) string {
	return "idem:" + tenant + ":" + thread + ":" + key
}

// ToolsKey is one worker's tool inventory for a session ("_" for every
// session of the tenant).
func ToolsKey(tenant, session, worker string) string {
	return "tools:" + tenant + ":" + session + ":" + worker
}

// ToolsIndex lists the workers with inventories for a session scope.
func ToolsIndex(tenant, session string) string { return "toolsets:" + tenant + ":" + session }

// SessionsIndex lists a tenant's sessions by creation sequence.
func SessionsIndex(tenant string) string { return "sessions:" + tenant }

// SessionTurnsIndex lists a session's turns by submission sequence.
func SessionTurnsIndex(tenant, session string) string { return "sturns:" + tenant + ":" + session }

// TenantTurnsIndex lists a tenant's turns across its sessions by the time
// of their turn.submitted (unix milliseconds: positions of different
// partitions of the log do not compare); members are turn ids. Each member
// is written by its session's partition only. A rolled-back turn leaves
// it, as it leaves SessionTurnsIndex.
func TenantTurnsIndex(tenant string) string { return "tturns:" + tenant }

// PeersIndex lists the remote (A2A peer) subagents the control service
// still drives, across tenants; members are PeerMember. A subagent leaves
// it when it ends, or when it was closed and its peer task was cancelled
// (or never linked).
const PeersIndex = "peers:active"

// PeerMember is "<tenant>|<session>|<subagent id>": the driver of a
// partition of the log tells its own by the session.
func PeerMember(tenant, session, sub string) string { return tenant + "|" + session + "|" + sub }

// ChildrenIndex lists a thread's direct subagents.
func ChildrenIndex(tenant, thread string) string { return "children:" + tenant + ":" + thread }

// DueActionsIndex lists pending actions with a deadline by expiry (unix
// milliseconds); members are "<tenant>|<action_id>".
const DueActionsIndex = "actions:due"

// PendingActionsIndex lists every tenant's pending actions by request time
// (unix milliseconds); members "<tenant>|<action_id>". The operator's
// gauges count it and read its oldest entry.
const PendingActionsIndex = "actions:pending"

// QueuedTurnsIndex lists every tenant's queued turns (members
// "<tenant>|<turn_id>") by the sequence that queued them.
const QueuedTurnsIndex = "turns:queued"

// ThreadStatuses are the statuses a thread read model can have; each has an
// index of the threads in it (ThreadsByStatusIndex).
var ThreadStatuses = []controlv1.ThreadStatus{
	controlv1.ThreadStatus_THREAD_STATUS_IDLE, controlv1.ThreadStatus_THREAD_STATUS_RUNNING,
	controlv1.ThreadStatus_THREAD_STATUS_INTERRUPTING, controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION,
	controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT, controlv1.ThreadStatus_THREAD_STATUS_CLOSED,
}

// ThreadsByStatusIndex lists the threads (members "<tenant>|<thread_id>")
// whose status is status; the index is named by the status's word
// ("threads:status:waiting_input").
func ThreadsByStatusIndex(status controlv1.ThreadStatus) string {
	return "threads:status:" + enums.Word(status)
}

// PermissionRequestsIndex lists permission.requested facts not yet turned
// into actions; members "<tenant>|<action_id>", scored by sequence.
const PermissionRequestsIndex = "permission:requested"

func get[T proto.Message](ctx context.Context, store projection.Store, key string, msg T) (T, bool, error) {
	raw, err := store.Get(ctx, key)
	if errors.Is(err, projection.ErrNotFound) {
		return msg, false, nil
	}
	if err != nil {
		return msg, false, err
	}
	if err := proto.Unmarshal(raw, msg); err != nil {
		return msg, false, err
	}
	return msg, true, nil
}

// Session reads a session document.
func Session(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Session, bool, error) {
	return get(ctx, store, SessionKey(tenant, id), &controlv1.Session{})
}

// Thread reads a thread document.
func Thread(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.ThreadRead, bool, error) {
	return get(ctx, store, ThreadKey(tenant, id), &controlv1.ThreadRead{})
}

// Turn reads a turn document.
func Turn(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Turn, bool, error) {
	return get(ctx, store, TurnKey(tenant, id), &controlv1.Turn{})
}

// Action reads an action document.
func Action(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Action, bool, error) {
	return get(ctx, store, ActionKey(tenant, id), &controlv1.Action{})
}

// Subagent reads a subagent document.
func Subagent(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Subagent, bool, error) {
	return get(ctx, store, SubagentKey(tenant, id), &controlv1.Subagent{})
}

// Channel reads a channel document.
func Channel(ctx context.Context, store projection.Store, tenant, id string) (*controlv1.Channel, bool, error) {
	return get(ctx, store, ChannelKey(tenant, id), &controlv1.Channel{})
}

// TurnByIdempotencyKey finds the turn a key was first used for.
func TurnByIdempotencyKey(ctx context.Context, store projection.Store, tenant, thread, key string) (string, bool, error) {
	raw, err := store.Get(ctx, IdempotencyKey(tenant, thread, key))
	if errors.Is(err, projection.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(raw), true, nil
}
