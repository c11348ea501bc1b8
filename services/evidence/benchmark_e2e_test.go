package evidence_test

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

func spine(trial, role string) *eventsv1.BenchmarkSpine {
	return &eventsv1.BenchmarkSpine{DatasetId: "lime-internal-agent-runtime-tasks", DatasetVersion: "2026-05-frozen", DatasetRef: "benchmarks/lime-agent-runtime",
		BenchmarkTaskId: "tool-approval-sandbox-boundary", TrialId: trial, ConfigurationId: role + "-cfg", Role: role,
		HarborJobRef: "jobs/" + role, HarborTrialRef: "jobs/" + role + "/" + trial, TaskTomlRef: "benchmarks/lime-agent-runtime/task.toml"}
}

// Spec scenario "Benchmark trial export": a trial started on a real turn,
// rewarded and ended, exports a pack in the shape of the Lime fixture with
// the correlation spine and an ATIF trajectory; runs compare with deltas
// and the caller's decision; every benchmark event is profile-valid.
func TestBenchmarkTrialExport(t *testing.T) {
	s := startSystem(t)
	turn := runScenario(t, s)
	ctx := as(t, keyAcme)
	recordDefinitions(t, s)
	start := func(trial, role string) {
		must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
			SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1", Benchmark: spine(trial, role), Attempt: 1, TimeoutSec: 300}))
	}
	start("trial-cand-1", "candidate")
	start("trial-base-1", "baseline")
	// A retried start appends nothing; a start with other facts is refused.
	again := must[*evidencev1.StartBenchmarkTrialResponse](t)(s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
		SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1", Benchmark: spine("trial-cand-1", "candidate"), Attempt: 1, TimeoutSec: 300}))
	if !again.GetWrite().GetDeduplicated() {
		t.Errorf("retried start appended: %v", again)
	}
	_, err := s.evidence.StartBenchmarkTrial(ctx, &evidencev1.StartBenchmarkTrialRequest{
		SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1", Benchmark: spine("trial-cand-1", "candidate"), Attempt: 2})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("conflicting start: %v", err)
	}
	if _, err := s.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: "nope", Value: 1}); status.Code(err) != codes.NotFound {
		t.Errorf("reward of an unknown trial: %v", err)
	}
	for trial, value := range map[string]float64{"trial-cand-1": 1, "trial-base-1": 0.5} {
		must[*evidencev1.RecordBenchmarkRewardResponse](t)(s.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: trial, Value: value,
			RewardRef: "/logs/verifier/reward.json", DetailsRef: "/logs/verifier/reward-details.json", Criteria: []string{"approval-denial-facts", "trajectory-present"}, FailureCategory: "none"}))
		must[*evidencev1.EndBenchmarkTrialResponse](t)(s.evidence.EndBenchmarkTrial(ctx, &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: trial}))
	}
	// A trial that timed out fails with its category.
	start("trial-cand-2", "candidate")
	must[*evidencev1.EndBenchmarkTrialResponse](t)(s.evidence.EndBenchmarkTrial(ctx, &evidencev1.EndBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial-cand-2",
		FailureCategory: "timeout", TimedOut: true, Message: "agent timeout after 300s"}))
	if _, err := s.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: "trial-cand-1", Value: 0}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("second, different reward: %v", err)
	}
	exp := must[*evidencev1.ExportBenchmarkTrialResponse](t)(s.evidence.ExportBenchmarkTrial(ctx, &evidencev1.ExportBenchmarkTrialRequest{SessionId: "s1", TrialId: "trial-cand-1",
		Refs: map[string]string{"artifactManifestRef": "/logs/artifacts/manifest.json", "agentQcReportRef": ".lime/qc/current-agent-qc-report.json"}}))
	var pack struct {
		Benchmark          map[string]any `json:"benchmark"`
		RuntimeCorrelation map[string]any `json:"runtimeCorrelation"`
		Refs               map[string]any `json:"refs"`
		Metrics            map[string]any `json:"metrics"`
		Trajectory         map[string]any `json:"trajectory"`
		Reward             map[string]any `json:"reward"`
		DecisionInputs     map[string]any `json:"decisionInputs"`
		KnownGaps          []string       `json:"knownGaps"`
	}
	if err := json.Unmarshal(must[[]byte](t)(s.log.GetObject(ctx, exp.GetPack().GetUri())), &pack); err != nil {
		t.Fatal(err)
	}
	// The joinability check of the spec's "Lime testing examples".
	for _, v := range []any{pack.Benchmark["datasetId"], pack.Benchmark["taskId"], pack.Benchmark["trialId"], pack.Benchmark["harborJobRef"],
		pack.RuntimeCorrelation["sessionId"], pack.RuntimeCorrelation["threadId"], pack.RuntimeCorrelation["turnId"], pack.RuntimeCorrelation["runId"],
		pack.Refs["trajectoryRef"], pack.Refs["rewardDetailsRef"], pack.Refs["artifactManifestRef"]} {
		if s, _ := v.(string); s == "" {
			t.Fatalf("trial pack is not joinable: %+v", pack)
		}
	}
	if pack.Metrics["reward"] != 1.0 || pack.Reward["value"] != 1.0 || pack.Trajectory["exportStatus"] != "exported" || pack.Metrics["tokens"] != 1280.0 {
		t.Errorf("trial pack %+v", pack)
	}
	if _, ok := pack.DecisionInputs["promotionEligible"]; ok {
		t.Error("the trial pack must not carry a verdict")
	}
	var traj struct {
		SchemaVersion string `json:"schema_version"`
		Steps         []struct {
			Source    string `json:"source"`
			ToolCalls []struct {
				ID string `json:"tool_call_id"`
			} `json:"tool_calls"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(must[[]byte](t)(s.log.GetObject(ctx, exp.GetTrajectory().GetUri())), &traj); err != nil {
		t.Fatal(err)
	}
	if traj.SchemaVersion != "ATIF-v1.4" || len(traj.Steps) < 2 || traj.Steps[0].Source != "user" || traj.Steps[1].ToolCalls[0].ID != "tc1" {
		t.Errorf("trajectory %+v", traj)
	}

	cmp := must[*evidencev1.CompareBenchmarkRunsResponse](t)(s.evidence.CompareBenchmarkRuns(ctx, &evidencev1.CompareBenchmarkRunsRequest{SessionId: "s1", ComparisonId: "cmp1",
		BaselineConfigurationId: "baseline-cfg", CandidateConfigurationId: "candidate-cfg",
		Baseline: []*evidencev1.TrialRef{{SessionId: "s1", TrialId: "trial-base-1"}}, Candidate: []*evidencev1.TrialRef{{SessionId: "s1", TrialId: "trial-cand-1"}},
		Decision: "needs-review", AgentQcReportRef: ".lime/qc/report.json"})).GetComparison()
	// No tracing runs in this test, so the candidate's pack names the
	// missing trace correlation as a gap (never joined by timestamp) and
	// its evidence is not complete; the baseline was never exported.
	if len(pack.KnownGaps) != 1 || pack.RuntimeCorrelation["traceId"] != "missing_correlation" {
		t.Errorf("trial pack gaps %v, trace %v", pack.KnownGaps, pack.RuntimeCorrelation["traceId"])
	}
	if cmp.GetMeanRewardDelta() != 0.5 || cmp.GetEvidenceCompletenessRate() != 0 || cmp.GetBaselineEvidenceCompletenessRate() != 0 || cmp.GetDecision() != "needs-review" {
		t.Errorf("comparison %v", cmp)
	}

	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	violations := map[string]string{}
	for _, e := range exportAll(t, s, "s1", evidencev1.Format_FORMAT_LIME_PROFILE) {
		var h struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(e), &h)
		seen[h.Type] = true
		if err := v.Event([]byte(e), true); err != nil {
			violations[h.Type] = err.Error()
		}
	}
	reportViolations(t, violations)
	for _, k := range []string{"benchmark.dataset.resolved", "benchmark.configuration.resolved", "benchmark.trial.started", "benchmark.reward.recorded",
		"benchmark.trial.completed", "benchmark.trial.failed", "benchmark.comparison.completed"} {
		if !seen[k] {
			t.Errorf("no %s exported", k)
		}
	}
}

// recordDefinitions records the run's dataset version and its baseline and
// candidate configurations, and checks they are immutable: the same facts
// again append nothing, other facts under the same name are refused.
func recordDefinitions(t *testing.T, s *system) {
	t.Helper()
	ctx := as(t, keyAcme)
	dataset := func() *eventsv1.BenchmarkDatasetResolved {
		return &eventsv1.BenchmarkDatasetResolved{DatasetId: "lime-internal-agent-runtime-tasks", DatasetVersion: "2026-05-frozen",
			DatasetRef: "benchmarks/lime-agent-runtime", SelectionPolicy: "all", FrozenAt: timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)),
			HarborRegistryRef: "registry/lime-agent-runtime@2026-05-frozen", TaskIds: []string{"tool-approval-sandbox-boundary"}}
	}
	first := must[*evidencev1.RecordBenchmarkDatasetResponse](t)(s.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: dataset()})).GetWrite()
	again := must[*evidencev1.RecordBenchmarkDatasetResponse](t)(s.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: dataset()})).GetWrite()
	if first.GetDeduplicated() || !again.GetDeduplicated() || again.GetSequence() != first.GetSequence() || again.GetEventIds()[0] != first.GetEventIds()[0] {
		t.Errorf("dataset: first %v, again %v", first, again)
	}
	changed := dataset()
	changed.TaskIds = append(changed.TaskIds, "smuggled-task")
	_, err := s.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: changed})
	assertPrecondition(t, err, "DATASET_CONFLICT")
	// Another version of the same dataset is another fact.
	next := dataset()
	next.DatasetVersion = "2026-06-frozen"
	must[*evidencev1.RecordBenchmarkDatasetResponse](t)(s.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: next}))
	_, err = s.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: &eventsv1.BenchmarkDatasetResolved{DatasetId: "d"}})
	assertField(t, err, "dataset.dataset_version")

	for _, c := range []*eventsv1.BenchmarkConfigurationResolved{
		{ConfigurationId: "baseline-cfg", Role: "baseline", RuntimeProfile: "lime-runtime-1.4", AgentProfile: "coder", ModelProfile: "gpt-5-4",
			PromptProfile: "prompts/v1", ToolProfile: "tools/default", ContextProfile: "ctx/default", RoutingProfile: "single-model"},
		{ConfigurationId: "candidate-cfg", Role: "candidate", RuntimeProfile: "lime-runtime-1.4", AgentProfile: "coder", ModelProfile: "gpt-5-4",
			PromptProfile: "prompts/v1", ToolProfile: "tools/feedback-v2", ContextProfile: "ctx/default", RoutingProfile: "single-model",
			SingleChangedVariable: "tool failure feedback profile", BaselineConfigurationId: "baseline-cfg"},
	} {
		w := must[*evidencev1.RecordBenchmarkConfigurationResponse](t)(s.evidence.RecordBenchmarkConfiguration(ctx, &evidencev1.RecordBenchmarkConfigurationRequest{SessionId: "s1", Configuration: c})).GetWrite()
		if w.GetDeduplicated() {
			t.Errorf("configuration %s deduplicated on first record", c.GetConfigurationId())
		}
	}
	_, err = s.evidence.RecordBenchmarkConfiguration(ctx, &evidencev1.RecordBenchmarkConfigurationRequest{SessionId: "s1",
		Configuration: &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "candidate-cfg", Role: "candidate", ToolProfile: "tools/other"}})
	assertPrecondition(t, err, "CONFIGURATION_CONFLICT")
	_, err = s.evidence.RecordBenchmarkConfiguration(ctx, &evidencev1.RecordBenchmarkConfigurationRequest{SessionId: "s1",
		Configuration: &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "x", Role: "champion"}})
	assertField(t, err, "configuration.role")
	_, err = s.evidence.RecordBenchmarkConfiguration(ctx, &evidencev1.RecordBenchmarkConfigurationRequest{SessionId: "s1"})
	assertField(t, err, "configuration")
}

// assertPrecondition checks a FailedPrecondition names reason.
func assertPrecondition(t *testing.T, err error, reason string) {
	t.Helper()
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reason && st.Code() == codes.FailedPrecondition {
			return
		}
	}
	t.Errorf("want FailedPrecondition %s, got %v", reason, err)
}

// assertField checks an InvalidArgument names field.
func assertField(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && st.Code() == codes.InvalidArgument {
			for _, v := range br.GetFieldViolations() {
				if v.GetField() == field {
					return
				}
			}
		}
	}
	t.Errorf("want InvalidArgument on %s, got %v", field, err)
}
