package evidence_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

// fixtureDir holds the Lime profile's fixtures as the spec publishes them
// (vendored byte for byte: pkg/spec/conformance's test checks they validate).
const fixtureDir = "../../pkg/spec/conformance/testdata/lime-profile"

// shapeDiff names every field of want (a fixture) that got (a real export)
// lacks or holds as another JSON kind, as a path: payload.scope.path.
// Arrays compare their first element's shape; values are not compared.
func shapeDiff(path string, want, got any) []string {
	kind := func(v any) string { return fmt.Sprintf("%T", v) }
	if kind(want) != kind(got) {
		return []string{fmt.Sprintf("%s: fixture has %s, export has %s", path, kind(want), kind(got))}
	}
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, path+"."+k+": missing from the export")
				continue
			}
			out = append(out, shapeDiff(path+"."+k, wv, gv)...)
		}
	case []any:
		// An empty array is this run's data, not a shape.
		if g := got.([]any); len(w) > 0 && len(g) > 0 {
			out = append(out, shapeDiff(path+"[0]", w[0], g[0])...)
		}
	}
	return out
}

// A consumer written against the Lime profile's fixtures reads a real
// export. For each event fixture, an event of the same class
// exported in profile mode from a real run carries every field of the
// fixture, as the same JSON kind; the enumerated values the fixtures show
// are the ones the runtime writes.
func TestProfileExportCarriesEveryFixtureField(t *testing.T) {
	s := startSystem(t)
	turn := runScenario(t, s)
	ctx := as(t, keyAcme)
	must[*evidencev1.ExportEvidenceResponse](t)(s.evidence.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{
		Scope: &evidencev1.Scope{SessionId: "s1", Kind: evidencev1.ScopeKind_SCOPE_KIND_TURN, Id: turn}, MinSequence: head(t, s, "s1"),
		VerificationOutcomes: []*eventsv1.VerificationOutcome{{Name: "profile_fixture_validation", Status: "passed"}}}))
	byType := map[string]map[string]any{}
	for _, e := range exportAll(t, s, "s1", evidencev1.Format_FORMAT_LIME_PROFILE) {
		var m map[string]any
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			t.Fatal(err)
		}
		if _, seen := byType[m["type"].(string)]; !seen {
			byType[m["type"].(string)] = m
		}
	}
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*-event.json"))
	if len(files) != 5 {
		t.Fatalf("want the 5 event fixtures, found %d", len(files))
	}
	for _, f := range files {
		var fx map[string]any
		if err := json.Unmarshal(must[[]byte](t)(os.ReadFile(f)), &fx); err != nil {
			t.Fatal(err)
		}
		typ := fx["type"].(string)
		got, ok := byType[typ]
		if !ok {
			t.Errorf("%s: no %s exported", filepath.Base(f), typ)
			continue
		}
		// Ids and the envelope's values differ run to run; the fixture's
		// envelope fields the run has (taskId, runId...) must be there.
		diff := shapeDiff("payload", fx["payload"], got["payload"])
		for k := range fx {
			if _, ok := got[k]; !ok && k != "payload" && k != "traceId" {
				diff = append(diff, k+": missing from the export")
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			b, _ := json.Marshal(got["payload"])
			t.Errorf("%s (%s):\n  %s\n  export payload: %s", filepath.Base(f), typ, strings.Join(diff, "\n  "), b)
		}
	}
	// The values a consumer switches on are the fixtures' vocabulary.
	for typ, want := range map[string]map[string]any{
		"turn.submitted":           {"status": "accepted"},
		"action.required":          {"actionType": "tool_permission", "toolName": "write_file", "decisionKind": "allow_or_deny"},
		"task.attempt.failed":      {"status": "failed", "retryable": true, "failureCategory": "tool_failed"},
		"routing.single_candidate": {"taskKind": "coding", "candidateCount": float64(1)},
		"evidence.changed":         {},
	} {
		p, _ := byType[typ]["payload"].(map[string]any)
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s payload.%s = %v, want %v", typ, k, p[k], v)
			}
		}
	}
	// The session snapshot against the profile's thread read snapshot.
	var fx, snap map[string]any
	if err := json.Unmarshal(must[[]byte](t)(os.ReadFile(filepath.Join(fixtureDir, "thread-read-snapshot.json"))), &fx); err != nil {
		t.Fatal(err)
	}
	sr := must[*evidencev1.ExportSnapshotResponse](t)(s.evidence.ExportSnapshot(ctx, &evidencev1.ExportSnapshotRequest{SessionId: "s1", Format: evidencev1.Format_FORMAT_LIME_PROFILE}))
	if err := json.Unmarshal([]byte(sr.GetSnapshotJson()), &snap); err != nil {
		t.Fatal(err)
	}
	// Sessions have no workspace in this runtime (docs/spec-conformance.md):
	// the profile's optional workspaceId is the one field not carried.
	delete(fx, "workspaceId")
	if diff := shapeDiff("snapshot", fx, snap); len(diff) > 0 {
		sort.Strings(diff)
		t.Errorf("thread-read-snapshot.json:\n  %s\n  export: %s", strings.Join(diff, "\n  "), sr.GetSnapshotJson())
	}
	// The benchmark trial pack against the profile's trial pack.
	recordDefinitions(t, s)
	sp := spine("trial-cand-1", "candidate")
	sp.SingleChangedVariable = "tool failure feedback profile"
	must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
		SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1", Benchmark: sp, Attempt: 1, TimeoutSec: 300}))
	must[*evidencev1.RecordBenchmarkRewardResponse](t)(s.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: "trial-cand-1", Value: 1,
		RewardRef: "/logs/verifier/reward.json", DetailsRef: "/logs/verifier/reward-details.json", Criteria: []string{"trajectory-present"}, FailureCategory: "none"}))
	must[*evidencev1.EndBenchmarkTrialResponse](t)(s.evidence.EndBenchmarkTrial(ctx, &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial-cand-1"}))
	exp := must[*evidencev1.ExportBenchmarkTrialResponse](t)(s.evidence.ExportBenchmarkTrial(ctx, &evidencev1.ExportBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial-cand-1", MinSequence: head(t, s, "s1"),
		Refs: map[string]string{"artifactManifestRef": "/logs/artifacts/manifest.json", "agentQcReportRef": ".lime/qc/current-agent-qc-report.json",
			"harborTrialResultRef": "jobs/candidate/trial-cand-1/result.json", "harborVerifierStdoutRef": "jobs/candidate/trial-cand-1/verifier/test-stdout.txt"}}))
	var fxPack, pack map[string]any
	if err := json.Unmarshal(must[[]byte](t)(os.ReadFile(filepath.Join(fixtureDir, "benchmark-trial-pack.json"))), &fxPack); err != nil {
		t.Fatal(err)
	}
	body := must[[]byte](t)(s.log.GetObject(ctx, exp.GetPack().GetUri()))
	if err := json.Unmarshal(body, &pack); err != nil {
		t.Fatal(err)
	}
	// A trial pack carries no verdict: promotion is the comparison's
	// decision (CompareBenchmarkRuns), never one trial's.
	// The P0 Agent QC regression count and the verifier's trajectory
	// transfer are facts of the QC report and of Harbor, which the runtime
	// does not read: the comparison takes the count from its caller.
	for _, k := range []string{"promotionEligible", "p0QcGateRegressionCount", "separateVerifierTrajectoryTransferred"} {
		delete(fxPack["decisionInputs"].(map[string]any), k)
	}
	if diff := shapeDiff("pack", fxPack, pack); len(diff) > 0 {
		sort.Strings(diff)
		t.Errorf("benchmark-trial-pack.json:\n  %s\n  export: %s", strings.Join(diff, "\n  "), body)
	}

	vo, _ := byType["evidence.changed"]["payload"].(map[string]any)["verificationOutcomes"].([]any)
	if len(vo) != 1 || vo[0].(map[string]any)["name"] != "profile_fixture_validation" {
		t.Errorf("evidence.changed verificationOutcomes = %v", vo)
	}
}

// The exported session snapshot carries the compaction boundary (the
// last context.compaction.completed: its summary ref and
// the turns it replaced) and the thread's history summary refs, in both
// formats, and stays valid against the schemas.
func TestSnapshotCarriesTheCompactionBoundary(t *testing.T) {
	s := startSystem(t)
	turn := runScenario(t, s)
	ctx := as(t, keyAcme)
	// The next turn of the thread compacts the history before it.
	next := must[*controlv1.SubmitTurnResponse](t)(s.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go on"}}}})).GetTurn().GetTurnId()
	must[*controlv1.ReportEventsResponse](t)(s.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{
		Type: "turn.started", SessionId: "s1", ThreadId: "th1", TurnId: next, Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}},
	}, {
		Type: "context.compaction.completed", SessionId: "s1", ThreadId: "th1", TurnId: next,
		Payload: &eventsv1.RuntimeEvent_ContextCompactionCompleted{ContextCompactionCompleted: &eventsv1.ContextCompaction{
			Trigger: "auto", AffectedTurnIds: []string{turn}, SummaryRef: "object://AGENTRUNTIME_OBJECTS/summaries/th1-1.md", TokensBefore: 90000, TokensAfter: 4000}},
	}}}))
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []evidencev1.Format{evidencev1.Format_FORMAT_CORE, evidencev1.Format_FORMAT_LIME_PROFILE} {
		sr := must[*evidencev1.ExportSnapshotResponse](t)(s.evidence.ExportSnapshot(ctx, &evidencev1.ExportSnapshotRequest{SessionId: "s1", Format: format, MinSequence: head(t, s, "s1")}))
		if err := v.Snapshot([]byte(sr.GetSnapshotJson()), format == evidencev1.Format_FORMAT_LIME_PROFILE); err != nil {
			t.Errorf("snapshot (%v) does not validate: %v", format, err)
		}
		var snap struct {
			Threads []struct {
				Boundary struct {
					SummaryRef      string   `json:"summaryRef"`
					AffectedTurnIds []string `json:"affectedTurnIds"`
					Sequence        uint64   `json:"sequence"`
				} `json:"compactionBoundary"`
				SummaryRefs []string `json:"historySummaryRefs"`
			} `json:"threads"`
		}
		if err := json.Unmarshal([]byte(sr.GetSnapshotJson()), &snap); err != nil {
			t.Fatal(err)
		}
		if len(snap.Threads) != 1 || snap.Threads[0].Boundary.SummaryRef != "object://AGENTRUNTIME_OBJECTS/summaries/th1-1.md" ||
			len(snap.Threads[0].Boundary.AffectedTurnIds) != 1 || snap.Threads[0].Boundary.Sequence == 0 || len(snap.Threads[0].SummaryRefs) != 1 {
			t.Errorf("snapshot (%v) has no compaction boundary: %s", format, sr.GetSnapshotJson())
		}
	}
}
