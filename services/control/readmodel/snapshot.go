package readmodel

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// LimeSchemaVersion is the schema version of Lime profile snapshots.
const LimeSchemaVersion = "lime-profile-0.4.0"

// SnapshotStatus maps a thread's status onto the spec's snapshot statuses:
// waiting for a human or policy is "blocked" (an action is missing),
// interrupting is still "running", a closed thread is "completed".
func SnapshotStatus(status controlv1.ThreadStatus) string {
	switch status {
	case controlv1.ThreadStatus_THREAD_STATUS_IDLE:
		return "idle"
	case controlv1.ThreadStatus_THREAD_STATUS_RUNNING, controlv1.ThreadStatus_THREAD_STATUS_INTERRUPTING:
		return "running"
	case controlv1.ThreadStatus_THREAD_STATUS_WAITING_PERMISSION, controlv1.ThreadStatus_THREAD_STATUS_WAITING_INPUT:
		return "blocked"
	case controlv1.ThreadStatus_THREAD_STATUS_CLOSED:
		return "completed"
	}
	return "unknown"
}

func rfc3339(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano)
}

// SessionSnapshotJSON renders the session snapshot in the spec's JSON shape
// (the Agent Runtime standard, State snapshots; schema
// agentruntime-snapshot.schema.json): camelCase ids, RFC 3339 times, the
// spec's thread statuses. turns are the session's turns to include (e.g. the
// recent window), by thread. With lime set it also carries what the Lime
// profile requires, honest where this service does not know: summaries say
// "unknown" rather than a guess.
func SessionSnapshotJSON(runtimeID string, s *controlv1.Session, threads []*controlv1.ThreadRead, turns []*controlv1.Turn, lime bool) map[string]any {
	byThread := map[string][]any{}
	for _, tu := range turns {
		t := map[string]any{"turnId": tu.TurnId, "status": enums.Word(tu.Status)}
		if v := rfc3339(tu.StartedAt); v != "" {
			t["startedAt"] = v
		}
		if v := rfc3339(tu.EndedAt); v != "" && tu.Status == domain.TurnCompleted {
			t["completedAt"] = v
		}
		byThread[tu.ThreadId] = append(byThread[tu.ThreadId], t)
	}
	var evidence []any
	outThreads := []any{}
	for _, th := range threads {
		t := map[string]any{"threadId": th.ThreadId, "status": SnapshotStatus(th.Status)}
		if th.ActiveTurnId != "" {
			t["activeTurnId"] = th.ActiveTurnId
		}
		t["turns"] = nonNil(byThread[th.ThreadId])
		pending := []any{}
		for _, a := range th.PendingActions {
			pending = append(pending, map[string]any{"actionId": a.ActionId, "turnId": a.TurnId, "type": a.ActionType, "status": enums.Word(a.Status), "decisions": a.Decisions})
		}
		t["pendingRequests"] = pending
		queued := []any{}
		for i, id := range th.QueuedTurnIds {
			queued = append(queued, map[string]any{"turnId": id, "position": i})
		}
		t["queuedTurns"] = queued
		incidents := []any{}
		for _, in := range th.Incidents {
			incidents = append(incidents, map[string]any{"type": in.Type, "turnId": in.TurnId, "category": in.Category, "message": in.Message, "sequence": in.Sequence})
		}
		t["incidents"] = incidents
		refs := []any{}
		for _, r := range th.EvidenceRefs {
			refs = append(refs, r)
			evidence = append(evidence, r)
		}
		t["evidenceSummary"] = map[string]any{"evidenceRefs": refs}
		if len(th.CompactionSummaryRefs) > 0 {
			// Where the thread's history starts after compaction.
			t["historySummaryRefs"] = th.CompactionSummaryRefs
		}
		t["permissionState"] = summaryJSON(th.Permission)
		t["modelRouting"] = routingJSON(th)
		outThreads = append(outThreads, t)
	}
	out := map[string]any{
		"schemaVersion": "agentruntime-0.1.0",
		"sessionId":     s.SessionId,
		"threads":       outThreads,
		"evidenceRefs":  nonNil(evidence),
	}
	if v := rfc3339(s.UpdatedAt); v != "" {
		out["updatedAt"] = v
	}
	if runtimeID != "" {
		out["runtimeId"] = runtimeID
	}
	if lime {
		out["schemaVersion"] = LimeSchemaVersion
		// Tasks, routing and telemetry are other owners' facts; this
		// snapshot states what it does not carry instead of inventing it.
		out["tasks"] = []any{}
		out["taskSummary"] = map[string]any{"state": "unknown"}
		out["routingLimitSummary"] = map[string]any{"state": "unknown"}
		// The latest routed thread speaks for the session.
		var latest *controlv1.ThreadRead
		for _, th := range threads {
			if th.RoutingLimit != nil && (latest == nil || th.RoutingLimit.LastSequence > latest.RoutingLimit.LastSequence) {
				latest = th
			}
		}
		if latest != nil {
			out["routingLimitSummary"] = routingJSON(latest)
		}
		out["telemetrySummary"] = map[string]any{"joinStatus": "unknown"}
	}
	return out
}

// routingJSON is the thread's routing facts: the joined summary, and the
// routing service's own fold when a routing fact has arrived.
func routingJSON(th *controlv1.ThreadRead) map[string]any {
	out := summaryJSON(th.Routing)
	if rl := th.RoutingLimit; rl != nil {
		out["candidateCount"] = rl.CandidateCount
		out["singleCandidate"] = rl.SingleCandidate
		if d := rl.GetDecision(); d != nil {
			out["selectedProvider"] = d.GetSelectedProviderId()
			out["selectedModel"] = d.GetSelectedModelId()
		}
		out["fallbackCount"] = rl.FallbackCount
	}
	return out
}

func summaryJSON(s *controlv1.Summary) map[string]any {
	if s == nil || s.State == commonv1.FactState_FACT_STATE_UNSPECIFIED {
		return map[string]any{"state": "unknown"}
	}
	out := map[string]any{"state": enums.Word(s.State)}
	for k, v := range s.Facts {
		out[k] = v
	}
	return out
}

func nonNil(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
