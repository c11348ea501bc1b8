package jsonexport_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
)

// Skip names exactly the events a format cannot represent: a class the
// published schema does not list (any format), a fact of no session (the
// Lime profile). Everything else renders, and renders valid.
func TestSkip(t *testing.T) {
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	ev := func(typ, session string) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{Type: typ, EventId: "evt_1", Timestamp: timestamppb.Now(), Sequence: 7, RuntimeId: "rt", TenantId: "acme",
			SessionId: session, ThreadId: "th1", TurnId: "tu1", SubagentId: "sub1"}
	}
	for _, c := range []struct {
		ev      *eventsv1.RuntimeEvent
		profile bool
		want    string
	}{
		{ev("limit.changed", "_"), false, ""},
		{ev("limit.changed", "_"), true, jsonexport.SkipNoSession},
		{ev("policy.changed", ""), true, jsonexport.SkipNoSession},
		{ev("policy.changed", "s1"), true, ""},
		{ev("subagent.output", "s1"), false, jsonexport.SkipTypeNotInSchema},
		{ev("subagent.output", "s1"), true, jsonexport.SkipTypeNotInSchema},
		{ev("channel.peer_task.linked", "s1"), false, jsonexport.SkipTypeNotInSchema},
		{ev("subagent.status", "s1"), true, ""},
	} {
		reason, detail := jsonexport.Skip(c.ev, jsonexport.Options{Profile: c.profile})
		if reason != c.want || (reason != "") != (detail != "") {
			t.Errorf("Skip(%s in %q, profile %v) = %q, %q; want %q", c.ev.GetType(), c.ev.GetSessionId(), c.profile, reason, detail, c.want)
		}
		if reason != "" {
			continue
		}
		doc, err := jsonexport.Marshal(jsonexport.Event(c.ev, jsonexport.Options{Profile: c.profile}))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Event(doc, c.profile); err != nil {
			t.Errorf("%s (profile %v) renders invalid: %v\n%s", c.ev.GetType(), c.profile, err, doc)
		}
	}
}

// Dataset and configuration facts carry the profile's benchmark object.
func TestBenchmarkDefinitionObjects(t *testing.T) {
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*eventsv1.RuntimeEvent{
		{Type: "benchmark.dataset.resolved", Payload: &eventsv1.RuntimeEvent_BenchmarkDatasetResolved{BenchmarkDatasetResolved: &eventsv1.BenchmarkDatasetResolved{
			DatasetId: "ds", DatasetVersion: "2026-05-frozen", DatasetRef: "benchmarks/ds", FrozenAt: timestamppb.Now()}}},
		{Type: "benchmark.configuration.resolved", Payload: &eventsv1.RuntimeEvent_BenchmarkConfigurationResolved{BenchmarkConfigurationResolved: &eventsv1.BenchmarkConfigurationResolved{
			ConfigurationId: "cand", Role: "candidate", SingleChangedVariable: "prompt"}}},
	} {
		ev.EventId, ev.Timestamp, ev.RuntimeId, ev.SessionId = "evt_1", timestamppb.Now(), "rt", "s1"
		out := jsonexport.Event(ev, jsonexport.Options{Profile: true})
		b, _ := out["benchmark"].(jsonexport.Object)
		if len(b) == 0 {
			t.Errorf("%s has no benchmark object: %v", ev.GetType(), out)
		}
		doc, _ := jsonexport.Marshal(out)
		if err := v.Event(doc, true); err != nil {
			t.Errorf("%s: %v", ev.GetType(), err)
		}
	}
}

// A comparison's profile objects carry both configurations, the deltas,
// the completeness of both sides and the P0 count, and stay valid.
func TestComparisonCarriesItsConfigurations(t *testing.T) {
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	ev := &eventsv1.RuntimeEvent{Type: "benchmark.comparison.completed", EventId: "evt_1", Timestamp: timestamppb.Now(), RuntimeId: "rt", SessionId: "s1",
		Refs: map[string]string{}, Payload: &eventsv1.RuntimeEvent_BenchmarkComparisonCompleted{BenchmarkComparisonCompleted: &eventsv1.BenchmarkComparisonCompleted{
			ComparisonId: "cmp", BaselineTrialIds: []string{"b1"}, CandidateTrialIds: []string{"c1"}, MeanRewardDelta: 0.5,
			BaselineEvidenceCompletenessRate: 1, EvidenceCompletenessRate: 0.5, P0QcGateRegressionCount: 1, DatasetId: "ds", DatasetVersion: "v1",
			BaselineConfiguration:  &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "base", Role: "baseline", ToolProfile: "tools/v1"},
			CandidateConfiguration: &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "cand", Role: "candidate", ToolProfile: "tools/v2", SingleChangedVariable: "tool profile", BaselineConfigurationId: "base"},
			ChangedProfiles:        []string{"tool"}}}}
	for _, profile := range []bool{false, true} {
		out := jsonexport.Event(ev, jsonexport.Options{Profile: profile})
		doc, err := jsonexport.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Event(doc, profile); err != nil {
			t.Errorf("profile %v: %v\n%s", profile, err, doc)
		}
		var got struct {
			Benchmark  map[string]any `json:"benchmark"`
			Comparison struct {
				Baseline  map[string]any `json:"baselineConfiguration"`
				Candidate map[string]any `json:"candidateConfiguration"`
				Changed   []string       `json:"changedProfiles"`
				Delta     float64        `json:"meanRewardDelta"`
				Complete  *float64       `json:"evidenceCompletenessRate"`
				BaseDone  *float64       `json:"baselineEvidenceCompletenessRate"`
				P0        *int           `json:"p0QcGateRegressionCount"`
			} `json:"comparison"`
		}
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatal(err)
		}
		c := got.Comparison
		if got.Benchmark["baselineConfigurationId"] != "base" || got.Benchmark["candidateConfigurationId"] != "cand" ||
			got.Benchmark["singleChangedVariable"] != "tool profile" || got.Benchmark["datasetVersion"] != "v1" ||
			c.Baseline["toolProfile"] != "tools/v1" || c.Candidate["baselineConfigurationId"] != "base" || len(c.Changed) != 1 ||
			c.Delta != 0.5 || c.Complete == nil || *c.Complete != 0.5 || c.BaseDone == nil || *c.BaseDone != 1 || c.P0 == nil || *c.P0 != 1 {
			t.Errorf("profile %v: %s", profile, doc)
		}
	}
}
