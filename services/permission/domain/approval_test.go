package domain

import (
	"fmt"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TestResolveEveryStateAndAnswer covers every (state, answer) pair.
func TestResolveEveryStateAndAnswer(t *testing.T) {
	resolved := eventsv1.ActionOutcome_ACTION_OUTCOME_RESOLVED
	answers := []struct {
		name string
		a    Answer
		// result from pending
		resolution eventsv1.PermissionResolution
		allowed    bool
	}{
		{"allow_once", Answer{Outcome: resolved, Decision: AllowOnce}, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, true},
		{"allow_session", Answer{Outcome: resolved, Decision: AllowSession}, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_ALLOWED, true},
		{"deny", Answer{Outcome: resolved, Decision: Deny}, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_DENIED, false},
		{"timed_out", Answer{Outcome: eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT}, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_TIMED_OUT, false},
		{"cancelled", Answer{Outcome: eventsv1.ActionOutcome_ACTION_OUTCOME_CANCELLED}, eventsv1.PermissionResolution_PERMISSION_RESOLUTION_CANCELLED, false},
	}
	bad := []Answer{{Outcome: resolved, Decision: "allow_forever"}, {Outcome: eventsv1.ActionOutcome_ACTION_OUTCOME_UNSPECIFIED}}
	// Terminal states, each reached by the answer of the same index.
	priors := map[ApprovalState]int{ApprovalAllowed: 0, ApprovalDenied: 2, ApprovalTimedOut: 3, ApprovalCancelled: 4}

	for _, a := range answers {
		got, err := Resolve(ApprovalPending, nil, "pev_1", a.a)
		if err != nil || got.GetResolution() != a.resolution || got.GetAllowed() != a.allowed || got.GetEvaluationId() != "pev_1" {
			t.Errorf("pending + %s: %v, %v", a.name, got, err)
		}
		if a.a.Outcome == eventsv1.ActionOutcome_ACTION_OUTCOME_TIMED_OUT && got.GetDecision() != Deny {
			t.Errorf("a timeout applies the timeout decision deny, got %q", got.GetDecision())
		}
	}
	for state, idx := range priors {
		prior, _ := Resolve(ApprovalPending, nil, "pev_1", answers[idx].a)
		if ApprovalStateOf(prior.GetResolution()) != state {
			t.Fatalf("%s: prior resolves to %s", state, ApprovalStateOf(prior.GetResolution()))
		}
		for i, a := range answers {
			t.Run(fmt.Sprintf("%s+%s", state, a.name), func(t *testing.T) {
				got, err := Resolve(state, prior, "pev_1", a.a)
				same := i == idx
				switch {
				case same && (got != nil || err != nil):
					t.Errorf("a repeated answer must be a no-op, got %v, %v", got, err)
				case !same && state == ApprovalAllowed && i == 1:
					// allow_session after allow_once: a different answer.
					if !fault.HasReason(err, ReasonAlreadyResolved) {
						t.Errorf("want %s, got %v, %v", ReasonAlreadyResolved, got, err)
					}
				case !same:
					if e, ok := fault.As(err); !ok || e.Reason != ReasonAlreadyResolved || e.Metadata["state"] != state.String() {
						t.Errorf("want %s{%s}, got %v, %v", ReasonAlreadyResolved, state, got, err)
					}
				}
			})
		}
	}
	for _, s := range []ApprovalState{ApprovalPending, ApprovalAllowed, ApprovalDenied, ApprovalTimedOut, ApprovalCancelled} {
		for _, b := range bad {
			if _, err := Resolve(s, nil, "pev_1", b); !fault.Is(err, fault.KindInvalid) {
				t.Errorf("%s + %+v: want an invalid decision, got %v", s, b, err)
			}
		}
	}
}
