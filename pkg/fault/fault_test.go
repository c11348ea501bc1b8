package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

func TestUnderPrefixesEveryViolatedField(t *testing.T) {
	e := fault.InvalidFields(fault.Violation{Field: "model.id", Description: "required"}, fault.Violation{Field: "model.provider_id", Description: "unknown"})
	got := e.Under("changes[2]")
	if got.Field() != "changes[2].model.id" || got.Violations[1].Field != "changes[2].model.provider_id" || e.Field() != "model.id" {
		t.Fatalf("under: %+v (original %+v)", got.Violations, e.Violations)
	}
	// Any other refusal becomes an invalid prefix that says why.
	nf := fault.NotFound("model", "x").Under("changes[0]")
	if nf.Kind != fault.KindInvalid || nf.Field() != "changes[0]" || nf.Violations[0].Description != `changes[0]: model "x" not found` {
		t.Fatalf("not found under a prefix: %+v", nf)
	}
}

func TestSentinelKeepsItsIdentityAndText(t *testing.T) {
	errGone := fault.Sentinel("store: gone", fault.Unavailable("retry", 0))
	wrapped := fmt.Errorf("load: %w", errGone)
	if !errors.Is(wrapped, errGone) || wrapped.Error() != "load: store: gone" {
		t.Fatalf("sentinel lost: %v", wrapped)
	}
	if e, ok := fault.As(wrapped); !ok || e.Kind != fault.KindUnavailable {
		t.Fatalf("classification lost: %v", e)
	}
	if fault.Refused(wrapped) {
		t.Fatal("an unavailable store is not a refusal")
	}
}

func TestCauseStaysFindable(t *testing.T) {
	errEnded := errors.New("trial ended")
	e := &fault.Error{Kind: fault.KindPrecondition, Reason: "TRIAL_ENDED", Message: errEnded.Error(), Err: fmt.Errorf("%w: as failed", errEnded)}
	if !errors.Is(e, errEnded) || !fault.Refused(e) || !fault.HasReason(fmt.Errorf("wrap: %w", e), "TRIAL_ENDED") {
		t.Fatalf("cause or reason lost: %v", e)
	}
	if fault.Refused(errors.New("plain")) || fault.Is(nil, fault.KindNotFound) {
		t.Fatal("an error of no kind is neither refused nor of a kind")
	}
}
