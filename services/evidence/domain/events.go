package domain

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TrialStartedEvent is benchmark.trial.started of a trial as a harness reports
// it (ev carries the scope ids and the payload), with the refs its spine
// names (the task's TOML, Harbor's trial).
func TrialStartedEvent(ev *eventsv1.RuntimeEvent) *eventsv1.RuntimeEvent {
	ev.Type = events.TypeBenchmarkTrialStarted
	if ev.Refs == nil {
		ev.Refs = map[string]string{}
	}
	b := ev.GetBenchmarkTrialStarted().GetBenchmark()
	if r := b.GetTaskTomlRef(); r != "" {
		ev.Refs["taskTomlRef"] = r
	}
	if r := b.GetHarborTrialRef(); r != "" {
		ev.Refs["harborTrialRef"] = r
	}
	return ev
}

// EvidenceID derives the id of an exported pack from the tenant, session,
// kind, scope and content hash: exporting the same facts again finds the
// same object and appends nothing.
func EvidenceID(tenant, session string, changed *eventsv1.EvidenceChanged, contentSHA256 string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + session + "\x00" + changed.GetKind() + "\x00" + changed.GetScopeKind() + "\x00" + changed.GetScopeId() + "\x00" + contentSHA256))
	return "evd_" + hex.EncodeToString(sum[:13])
}

// EvidenceChanged records an exported pack: its id (the event id derives
// from it), the scope ids its export determined (ids) and the pack's ref.
func EvidenceChanged(evidenceID string, ids *eventsv1.RuntimeEvent, packRef string, changed *eventsv1.EvidenceChanged) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{
		Type: events.TypeEvidenceChanged, EventId: "evt_" + evidenceID, EvidenceId: evidenceID,
		ThreadId: ids.GetThreadId(), TurnId: ids.GetTurnId(), TaskId: ids.GetTaskId(), RunId: ids.GetRunId(),
		Refs:    map[string]string{"packRef": packRef},
		Payload: &eventsv1.RuntimeEvent_EvidenceChanged{EvidenceChanged: changed},
	}
}

// ComparisonCompleted records a benchmark comparison, with the ref of its
// quality report when there is one.
func ComparisonCompleted(cmp *eventsv1.BenchmarkComparisonCompleted, qcRef string) *eventsv1.RuntimeEvent {
	refs := map[string]string{}
	if qcRef != "" {
		refs["agentQcReportRef"] = qcRef
	}
	return &eventsv1.RuntimeEvent{Type: events.TypeBenchmarkComparisonCompleted, Refs: refs,
		Payload: &eventsv1.RuntimeEvent_BenchmarkComparisonCompleted{BenchmarkComparisonCompleted: cmp}}
}
