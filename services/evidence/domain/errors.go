package domain

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Reasons of the service's precondition failures
// (google.rpc.ErrorInfo.reason).
const (
	ReasonTrialExists           = "TRIAL_EXISTS"
	ReasonTrialEnded            = "TRIAL_ENDED"
	ReasonRewardRecorded        = "REWARD_RECORDED"
	ReasonDatasetConflict       = "DATASET_CONFLICT"
	ReasonConfigurationConflict = "CONFIGURATION_CONFLICT"
	ReasonNotCaughtUp           = "NOT_CAUGHT_UP"
	// Comparisons: the candidate configuration names another baseline (or
	// none); a trial ran another configuration than its side's; trials
	// ran different dataset versions.
	ReasonNotCandidateOf     = "NOT_CANDIDATE_OF_BASELINE"
	ReasonTrialConfiguration = "TRIAL_CONFIGURATION_MISMATCH"
	ReasonDatasetMismatch    = "DATASET_MISMATCH"
)

// ConfigurationNotFound is the refusal of a comparison naming, in field, a
// configuration never recorded in the comparison's session.
func ConfigurationNotFound(field, id string) error {
	return &fault.Error{Kind: fault.KindNotFound, Resource: "benchmark configuration", ID: id, Subject: field,
		Err: fmt.Errorf("%w: %s %s", ErrConfigurationNotFound, field, id)}
}

// TrialNotFound is the refusal of a command on a trial that was never
// started; err (ErrTrialNotFound, maybe wrapped) stays its cause.
func TrialNotFound(err error) error {
	return &fault.Error{Kind: fault.KindNotFound, Resource: "benchmark trial", ID: err.Error(), Err: err}
}

// refused is a precondition failure about subject whose cause (a sentinel
// of this package, maybe wrapped) says what happened.
func refused(reason, subject string, err error) error {
	return &fault.Error{Kind: fault.KindPrecondition, Reason: reason, Subject: subject, Message: err.Error(), Err: err}
}

// CheckSpine refuses a trial start whose spine lacks an id a comparison
// joins on, or names an unknown role.
func CheckSpine(b *eventsv1.BenchmarkSpine) error {
	for _, f := range []struct{ field, value string }{
		{"benchmark.trial_id", b.GetTrialId()}, {"benchmark.dataset_id", b.GetDatasetId()},
		{"benchmark.benchmark_task_id", b.GetBenchmarkTaskId()}, {"benchmark.configuration_id", b.GetConfigurationId()},
	} {
		if f.value == "" {
			return fault.Invalid(f.field, "required")
		}
	}
	switch b.GetRole() {
	case "", "baseline", "candidate", "control":
		return nil
	}
	return fault.Invalid("benchmark.role", "must be baseline, candidate or control")
}
