package domain

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func startEv(attempt uint32) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: "benchmark.trial.started", SessionId: "s", ThreadId: "th", TurnId: "tu", TaskId: "k", RunId: "r", Sequence: 1,
		Payload: &eventsv1.RuntimeEvent_BenchmarkTrialStarted{BenchmarkTrialStarted: &eventsv1.BenchmarkTrialStarted{
			Benchmark: &eventsv1.BenchmarkSpine{TrialId: "t1", DatasetId: "d"}, Attempt: attempt}}}
}

func trialIn(state string, rewarded bool) *Trial {
	if state == TrialNone {
		return nil
	}
	t := ApplyTrial(nil, startEv(1))
	switch state {
	case TrialCompleted:
		evs, _ := EndTrial(t, "", "", false, 5)
		t = ApplyTrial(t, evs[0])
	case TrialFailed:
		evs, _ := EndTrial(t, "timeout", "", true, 5)
		t = ApplyTrial(t, evs[0])
	}
	if rewarded {
		evs, _ := RecordReward(t, &eventsv1.BenchmarkRewardRecorded{Value: 1})
		t = ApplyTrial(t, evs[0])
	}
	return t
}

// Every trial command against every trial state.
func TestTrialCommands(t *testing.T) {
	type cmd struct {
		name string
		run  func(*Trial) ([]*eventsv1.RuntimeEvent, error)
	}
	cmds := []cmd{
		{"start same", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) { return StartTrial(tr, startEv(1)) }},
		{"start other", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) { return StartTrial(tr, startEv(2)) }},
		{"complete", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) { return EndTrial(tr, "none", "", false, 1) }},
		{"fail timeout", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) { return EndTrial(tr, "timeout", "", true, 1) }},
		{"reward 1", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) {
			return RecordReward(tr, &eventsv1.BenchmarkRewardRecorded{Value: 1})
		}},
		{"reward 0", func(tr *Trial) ([]*eventsv1.RuntimeEvent, error) {
			return RecordReward(tr, &eventsv1.BenchmarkRewardRecorded{Value: 0})
		}},
	}
	type want struct {
		typ string // "" with err nil: no-op
		err error
	}
	cases := map[string]map[string]want{
		"none": {
			"start same": {typ: "benchmark.trial.started"}, "start other": {typ: "benchmark.trial.started"},
			"complete": {err: ErrTrialNotFound}, "fail timeout": {err: ErrTrialNotFound},
			"reward 1": {err: ErrTrialNotFound}, "reward 0": {err: ErrTrialNotFound},
		},
		"started": {
			"start same": {}, "start other": {err: ErrTrialExists},
			"complete": {typ: "benchmark.trial.completed"}, "fail timeout": {typ: "benchmark.trial.failed"},
			"reward 1": {typ: "benchmark.reward.recorded"}, "reward 0": {typ: "benchmark.reward.recorded"},
		},
		"started+rewarded": {
			"start same": {}, "start other": {err: ErrTrialExists},
			"complete": {typ: "benchmark.trial.completed"}, "fail timeout": {typ: "benchmark.trial.failed"},
			"reward 1": {}, "reward 0": {err: ErrRewarded},
		},
		"completed": {
			"start same": {}, "start other": {err: ErrTrialExists},
			"complete": {}, "fail timeout": {err: ErrTrialEnded},
			"reward 1": {typ: "benchmark.reward.recorded"}, "reward 0": {typ: "benchmark.reward.recorded"},
		},
		"failed": {
			"start same": {}, "start other": {err: ErrTrialExists},
			"complete": {err: ErrTrialEnded}, "fail timeout": {},
			"reward 1": {typ: "benchmark.reward.recorded"}, "reward 0": {typ: "benchmark.reward.recorded"},
		},
	}
	states := map[string]func() *Trial{
		"none":             func() *Trial { return trialIn(TrialNone, false) },
		"started":          func() *Trial { return trialIn(TrialStarted, false) },
		"started+rewarded": func() *Trial { return trialIn(TrialStarted, true) },
		"completed":        func() *Trial { return trialIn(TrialCompleted, false) },
		"failed":           func() *Trial { return trialIn(TrialFailed, false) },
	}
	for state, byCmd := range cases {
		for _, c := range cmds {
			w := byCmd[c.name]
			evs, err := c.run(states[state]())
			if !errors.Is(err, w.err) || (w.err == nil && err != nil) {
				t.Errorf("%s / %s: err %v, want %v", state, c.name, err, w.err)
				continue
			}
			switch {
			case w.typ == "" && len(evs) != 0:
				t.Errorf("%s / %s: appended %v, want nothing", state, c.name, evs)
			case w.typ != "" && (len(evs) != 1 || evs[0].GetType() != w.typ):
				t.Errorf("%s / %s: got %v, want %s", state, c.name, evs, w.typ)
			case w.typ != "" && w.typ != "benchmark.trial.started" && (evs[0].GetTaskId() != "k" || evs[0].GetRunId() != "r" || evs[0].GetThreadId() != "th"):
				t.Errorf("%s / %s: event lost the trial's scope ids: %v", state, c.name, evs[0])
			}
		}
	}
}

func TestCompareIsAnInputNeverAVerdict(t *testing.T) {
	done := func(reward float64, timedOut, exported bool) *Trial {
		tr := trialIn(TrialCompleted, false)
		evs, _ := RecordReward(tr, &eventsv1.BenchmarkRewardRecorded{Value: reward})
		tr = ApplyTrial(tr, evs[0])
		tr.TimedOut = timedOut
		if exported {
			tr = ApplyTrial(tr, &eventsv1.RuntimeEvent{Payload: &eventsv1.RuntimeEvent_EvidenceChanged{EvidenceChanged: &eventsv1.EvidenceChanged{Kind: "benchmark_trial"}}})
		}
		return tr
	}
	unrewarded := trialIn(TrialStarted, false)
	base, cand := configurations()
	c, err := Compare(ComparisonInput{ID: "c", BaselineConfiguration: base, CandidateConfiguration: cand,
		Baseline:  []*Trial{ran(done(0.5, true, false), "base"), ran(done(0.5, false, true), "base")},
		Candidate: []*Trial{ran(done(1, false, true), "cand"), ran(unrewarded, "cand")}, P0Regressions: 2, Decision: "blocked"})
	if err != nil {
		t.Fatal(err)
	}
	if c.GetBaselineMeanReward() != 0.5 || c.GetCandidateMeanReward() != 1 || c.GetMeanRewardDelta() != 0.5 {
		t.Errorf("means %v", c)
	}
	if c.GetBaselineTimeoutRate() != 0.5 || c.GetCandidateTimeoutRate() != 0 || c.GetTimeoutRateDelta() != -0.5 {
		t.Errorf("timeouts %v", c)
	}
	if c.GetBaselineEvidenceCompletenessRate() != 0.5 || c.GetEvidenceCompletenessRate() != 0.5 || len(c.GetUnrewardedTrialIds()) != 1 {
		t.Errorf("completeness %v", c)
	}
	if c.GetDecision() != "blocked" || c.GetP0QcGateRegressionCount() != 2 {
		t.Errorf("the caller's decision and P0 count must be recorded as given: %v", c)
	}
	// Both configurations, what differs between them and the dataset
	// version travel with the comparison.
	if !proto.Equal(c.GetBaselineConfiguration(), base) || !proto.Equal(c.GetCandidateConfiguration(), cand) ||
		strings.Join(c.GetChangedProfiles(), ",") != "tool" || c.GetDatasetId() != "d" || c.GetDatasetVersion() != "v1" {
		t.Errorf("configurations %v", c)
	}
}

func configurations() (base, cand *eventsv1.BenchmarkConfigurationResolved) {
	base = &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "base", Role: "baseline", ModelProfile: "m", ToolProfile: "tools/v1"}
	cand = &eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "cand", Role: "candidate", ModelProfile: "m", ToolProfile: "tools/v2",
		SingleChangedVariable: "tool profile", BaselineConfigurationId: "base"}
	return base, cand
}

// ran says the trial started with configuration cfg on dataset d v1.
func ran(t *Trial, cfg string) *Trial {
	t.Spine.ConfigurationId, t.Spine.DatasetVersion = cfg, "v1"
	return t
}

// A comparison pairs a candidate with the baseline it names, and each
// side's trials with that side's configuration, on one dataset version.
func TestCompareRefusesSidesThatDoNotPair(t *testing.T) {
	base, cand := configurations()
	other := proto.Clone(cand).(*eventsv1.BenchmarkConfigurationResolved)
	other.BaselineConfigurationId = "someone-else"
	orphan := proto.Clone(cand).(*eventsv1.BenchmarkConfigurationResolved)
	orphan.BaselineConfigurationId = ""
	trial := func(cfg string) *Trial { return ran(trialIn(TrialCompleted, true), cfg) }
	otherDataset := trial("cand")
	otherDataset.Spine.DatasetVersion = "v2"
	for _, c := range []struct {
		name                string
		base, cand          *eventsv1.BenchmarkConfigurationResolved
		baseline, candidate []*Trial
		reason, subject     string
		cause               error
	}{
		{"candidate of another baseline", base, other, []*Trial{trial("base")}, []*Trial{trial("cand")}, ReasonNotCandidateOf, "candidate_configuration_id", ErrNotCandidateOf},
		{"candidate of no baseline", base, orphan, []*Trial{trial("base")}, []*Trial{trial("cand")}, ReasonNotCandidateOf, "candidate_configuration_id", ErrNotCandidateOf},
		{"baseline trial of the candidate", base, cand, []*Trial{trial("base"), trial("cand")}, []*Trial{trial("cand")}, ReasonTrialConfiguration, "baseline[1]", ErrTrialConfiguration},
		{"candidate trial of another configuration", base, cand, []*Trial{trial("base")}, []*Trial{trial("x")}, ReasonTrialConfiguration, "candidate[0]", ErrTrialConfiguration},
		{"candidate trial on another dataset version", base, cand, []*Trial{trial("base")}, []*Trial{trial("cand"), otherDataset}, ReasonDatasetMismatch, "candidate[1]", ErrDatasetMismatch},
	} {
		_, err := Compare(ComparisonInput{ID: "c", BaselineConfiguration: c.base, CandidateConfiguration: c.cand, Baseline: c.baseline, Candidate: c.candidate})
		f, ok := fault.As(err)
		if !ok || f.Kind != fault.KindPrecondition || f.Reason != c.reason || f.Subject != c.subject || !errors.Is(err, c.cause) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	_, err := Compare(ComparisonInput{ID: "c", BaselineConfiguration: base, CandidateConfiguration: base})
	if f, ok := fault.As(err); !ok || f.Field() != "candidate_configuration_id" {
		t.Errorf("same configuration on both sides: %v", err)
	}
}
