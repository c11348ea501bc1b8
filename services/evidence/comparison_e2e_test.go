package evidence_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

// The Agent Runtime standard's acceptance scenario "Benchmark trial export"
// ("a candidate comparison must include baseline/candidate configs,
// aggregate deltas, evidence completeness, and P0 Agent QC regression
// count"): through gRPC, a dataset and two configurations are recorded,
// trials run and are rewarded, and CompareBenchmarkRuns names the two
// configurations; the response and the exported event carry both
// configurations as recorded, the deltas, the completeness of both sides
// and the P0 count. Unknown, missing or unpaired configurations and trials
// are refused with the field named.
func TestBenchmarkComparisonCarriesItsConfigurations(t *testing.T) {
	s := startSystem(t)
	ctx := as(t, keyAcme)
	recordDefinitions(t, s) // dataset, baseline-cfg, candidate-cfg (of baseline-cfg) in s1
	must[*evidencev1.RecordBenchmarkConfigurationResponse](t)(s.evidence.RecordBenchmarkConfiguration(ctx, &evidencev1.RecordBenchmarkConfigurationRequest{SessionId: "s1",
		Configuration: &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "stray-cfg", Role: "candidate", PromptProfile: "prompts/v9",
			SingleChangedVariable: "prompt", BaselineConfigurationId: "another-baseline"}}))

	// A trial whose calls carry a W3C trace context has its trace id on
	// its events, so its exported pack has no telemetry gap: with a reward
	// with details, an end and an artifact manifest its evidence is
	// complete.
	traced := func(trace string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	}
	trial := func(id, role string, reward float64, timedOut, export bool) {
		tctx := traced(strings.Repeat(id[len(id)-1:], 32))
		must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(tctx, &evidencev1.StartBenchmarkTrialRequest{
			SessionId: "s1", ThreadId: "th-" + id, TurnId: "turn-" + id, TaskId: "task-" + id, RunId: "run-" + id, Benchmark: spine(id, role), Attempt: 1, TimeoutSec: 300}))
		must[*evidencev1.RecordBenchmarkRewardResponse](t)(s.evidence.RecordBenchmarkReward(tctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: id, Value: reward,
			RewardRef: "/logs/verifier/reward.json", DetailsRef: "/logs/verifier/reward-details.json", Criteria: []string{"trajectory-present"}}))
		end := &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: id}
		if timedOut {
			end.FailureCategory, end.TimedOut = "timeout", true
		}
		must[*evidencev1.EndBenchmarkTrialResponse](t)(s.evidence.EndBenchmarkTrial(tctx, end))
		if export {
			exp := must[*evidencev1.ExportBenchmarkTrialResponse](t)(s.evidence.ExportBenchmarkTrial(tctx, &evidencev1.ExportBenchmarkTrialRequest{SessionId: "s1", TrialId: id,
				Refs: map[string]string{"artifactManifestRef": "/logs/artifacts/manifest.json"}}))
			if exp.GetWrite().GetSequence() == 0 {
				t.Fatalf("export of %s: %v", id, exp)
			}
		}
	}
	trial("trial-base-1", "baseline", 0.5, false, true) // complete
	trial("trial-base-2", "baseline", 0.7, true, false) // timed out, never exported: incomplete
	trial("trial-cand-3", "candidate", 1, false, true)
	trial("trial-cand-4", "candidate", 0.9, false, true)
	refs := func(ids ...string) []*evidencev1.TrialRef {
		out := make([]*evidencev1.TrialRef, len(ids))
		for i, id := range ids {
			out[i] = &evidencev1.TrialRef{SessionId: "s1", TrialId: id}
		}
		return out
	}
	req := func() *evidencev1.CompareBenchmarkRunsRequest {
		return &evidencev1.CompareBenchmarkRunsRequest{SessionId: "s1", ComparisonId: "cmp-feedback-v2",
			BaselineConfigurationId: "baseline-cfg", CandidateConfigurationId: "candidate-cfg",
			Baseline: refs("trial-base-1", "trial-base-2"), Candidate: refs("trial-cand-3", "trial-cand-4"),
			P0QcGateRegressionCount: 1, Decision: "needs-review", AgentQcReportRef: ".lime/qc/current-agent-qc-report.json"}
	}

	// Bad input first: nothing of it may be recorded.
	unknown := req()
	unknown.CandidateConfigurationId = "never-recorded"
	assertNotFoundNaming(t, s.evidence, unknown, "candidate_configuration_id", "never-recorded")
	unknown = req()
	unknown.BaselineConfigurationId = "never-recorded"
	assertNotFoundNaming(t, s.evidence, unknown, "baseline_configuration_id", "never-recorded")
	// Configurations are looked up in the comparison's session: recorded
	// in s1, they are not s2's (nor another tenant's).
	elsewhere := req()
	elsewhere.SessionId = "s2"
	assertNotFoundNaming(t, s.evidence, elsewhere, "baseline_configuration_id", "baseline-cfg")
	if _, err := s.evidence.CompareBenchmarkRuns(as(t, keyGlobex), req()); status.Code(err) != codes.NotFound {
		t.Errorf("another tenant's configurations: %v", err)
	}
	for _, field := range []string{"baseline_configuration_id", "candidate_configuration_id"} {
		missing := req()
		if field == "baseline_configuration_id" {
			missing.BaselineConfigurationId = ""
		} else {
			missing.CandidateConfigurationId = ""
		}
		_, err := s.evidence.CompareBenchmarkRuns(ctx, missing)
		assertField(t, err, field)
	}
	same := req()
	same.CandidateConfigurationId = "baseline-cfg"
	_, err := s.evidence.CompareBenchmarkRuns(ctx, same)
	assertField(t, err, "candidate_configuration_id")
	// stray-cfg is a candidate of another baseline.
	stray := req()
	stray.CandidateConfigurationId = "stray-cfg"
	_, err = s.evidence.CompareBenchmarkRuns(ctx, stray)
	assertPrecondition(t, err, "NOT_CANDIDATE_OF_BASELINE")
	assertSubject(t, err, "candidate_configuration_id")
	// A candidate trial named as a baseline one ran the other configuration.
	swapped := req()
	swapped.Baseline = refs("trial-base-1", "trial-cand-3")
	_, err = s.evidence.CompareBenchmarkRuns(ctx, swapped)
	assertPrecondition(t, err, "TRIAL_CONFIGURATION_MISMATCH")
	assertSubject(t, err, "baseline[1]")
	// A candidate trial on another dataset version makes the A/B invalid.
	other := spine("trial-cand-5", "candidate")
	other.DatasetVersion = "2026-06-frozen"
	must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
		SessionId: "s1", ThreadId: "th5", TurnId: "turn5", TaskId: "task5", RunId: "run5", Benchmark: other, Attempt: 1}))
	drift := req()
	drift.Candidate = refs("trial-cand-3", "trial-cand-5")
	_, err = s.evidence.CompareBenchmarkRuns(ctx, drift)
	assertPrecondition(t, err, "DATASET_MISMATCH")
	assertSubject(t, err, "candidate[1]")

	res := must[*evidencev1.CompareBenchmarkRunsResponse](t)(s.evidence.CompareBenchmarkRuns(ctx, req()))
	cmp := res.GetComparison()
	baseCfg, candCfg := cmp.GetBaselineConfiguration(), cmp.GetCandidateConfiguration()
	if baseCfg.GetConfigurationId() != "baseline-cfg" || baseCfg.GetToolProfile() != "tools/default" || baseCfg.GetModelProfile() != "gpt-5-4" ||
		candCfg.GetConfigurationId() != "candidate-cfg" || candCfg.GetToolProfile() != "tools/feedback-v2" ||
		candCfg.GetSingleChangedVariable() != "tool failure feedback profile" || candCfg.GetBaselineConfigurationId() != "baseline-cfg" ||
		strings.Join(cmp.GetChangedProfiles(), ",") != "tool" ||
		cmp.GetDatasetId() != "lime-internal-agent-runtime-tasks" || cmp.GetDatasetVersion() != "2026-05-frozen" {
		t.Errorf("configurations: %v", cmp)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(cmp.GetBaselineMeanReward(), 0.6) || !near(cmp.GetCandidateMeanReward(), 0.95) || !near(cmp.GetMeanRewardDelta(), 0.35) ||
		cmp.GetBaselineTimeoutRate() != 0.5 || cmp.GetCandidateTimeoutRate() != 0 || cmp.GetTimeoutRateDelta() != -0.5 {
		t.Errorf("aggregates: %v", cmp)
	}
	if cmp.GetBaselineEvidenceCompletenessRate() != 0.5 || cmp.GetEvidenceCompletenessRate() != 1 {
		t.Errorf("evidence completeness: baseline %v, candidate %v", cmp.GetBaselineEvidenceCompletenessRate(), cmp.GetEvidenceCompletenessRate())
	}
	if cmp.GetP0QcGateRegressionCount() != 1 || cmp.GetDecision() != "needs-review" {
		t.Errorf("the caller's P0 count and decision: %v", cmp)
	}
	// A retry is the recorded comparison's sequence, appending nothing.
	again := must[*evidencev1.CompareBenchmarkRunsResponse](t)(s.evidence.CompareBenchmarkRuns(ctx, req()))
	if !again.GetWrite().GetDeduplicated() || again.GetWrite().GetSequence() != res.GetWrite().GetSequence() {
		t.Errorf("retried comparison: %v, first %v", again.GetWrite(), res.GetWrite())
	}

	// The event alone, as exported in both formats, says the same: one
	// comparison (the refused ones recorded nothing), valid, with both
	// configurations in the profile's camelCase naming.
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []evidencev1.Format{evidencev1.Format_FORMAT_CORE, evidencev1.Format_FORMAT_LIME_PROFILE} {
		var found []map[string]any
		for _, e := range exportAll(t, s, "s1", format) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(e), &doc); err != nil {
				t.Fatal(err)
			}
			if doc["type"] != "benchmark.comparison.completed" {
				continue
			}
			found = append(found, doc)
			if err := v.Event([]byte(e), format == evidencev1.Format_FORMAT_LIME_PROFILE); err != nil {
				t.Errorf("%v: comparison invalid: %v\n%s", format, err, e)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%v: %d comparison events, want 1", format, len(found))
		}
		b, _ := found[0]["benchmark"].(map[string]any)
		c, _ := found[0]["comparison"].(map[string]any)
		bc, _ := c["baselineConfiguration"].(map[string]any)
		cc, _ := c["candidateConfiguration"].(map[string]any)
		refs, _ := found[0]["refs"].(map[string]any)
		if b["baselineConfigurationId"] != "baseline-cfg" || b["candidateConfigurationId"] != "candidate-cfg" ||
			b["singleChangedVariable"] != "tool failure feedback profile" || b["datasetVersion"] != "2026-05-frozen" {
			t.Errorf("%v: benchmark object %v", format, b)
		}
		if bc["configurationId"] != "baseline-cfg" || bc["toolProfile"] != "tools/default" || bc["routingProfile"] != "single-model" ||
			cc["configurationId"] != "candidate-cfg" || cc["toolProfile"] != "tools/feedback-v2" || cc["baselineConfigurationId"] != "baseline-cfg" ||
			cc["singleChangedVariable"] != "tool failure feedback profile" {
			t.Errorf("%v: configurations %v / %v", format, bc, cc)
		}
		if ch, _ := c["changedProfiles"].([]any); len(ch) != 1 || ch[0] != "tool" {
			t.Errorf("%v: changedProfiles %v", format, c["changedProfiles"])
		}
		// The spec's promotion guard reads these fields.
		if delta, _ := c["meanRewardDelta"].(float64); !near(delta, 0.35) || c["evidenceCompletenessRate"] != 1.0 ||
			c["baselineEvidenceCompletenessRate"] != 0.5 || c["p0QcGateRegressionCount"] != 1.0 || c["timeoutRateDelta"] != -0.5 ||
			c["decision"] != "needs-review" || refs["agentQcReportRef"] != ".lime/qc/current-agent-qc-report.json" {
			t.Errorf("%v: comparison %v, refs %v", format, c, refs)
		}
	}
}

// assertNotFoundNaming checks a comparison is NotFound for the
// configuration id, naming the request field that named it.
func assertNotFoundNaming(t *testing.T, c evidencev1.EvidenceServiceClient, r *evidencev1.CompareBenchmarkRunsRequest, field, id string) {
	t.Helper()
	_, err := c.CompareBenchmarkRuns(as(t, keyAcme), r)
	st := status.Convert(err)
	var info *errdetails.ResourceInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.ResourceInfo); ok {
			info = ri
		}
	}
	if st.Code() != codes.NotFound || !strings.HasPrefix(st.Message(), field+": ") || info.GetResourceType() != "benchmark configuration" ||
		info.GetResourceName() != id || info.GetDescription() != "named by "+field {
		t.Errorf("want NotFound of %s naming %s, got %v (%v)", id, field, err, info)
	}
}

// assertSubject checks a FailedPrecondition's violation is about subject.
func assertSubject(t *testing.T, err error, subject string) {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok {
			for _, v := range pf.GetViolations() {
				if v.GetSubject() == subject {
					return
				}
			}
		}
	}
	t.Errorf("want a precondition failure about %s, got %v", subject, err)
}
