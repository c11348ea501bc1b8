package enums_test

import (
	"testing"

	"github.com/agentruntime/agentruntime/pkg/enums"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

func TestWordAndParse(t *testing.T) {
	if got := enums.Word(controlv1.TurnStatus_TURN_STATUS_WAITING_PERMISSION); got != "waiting_permission" {
		t.Fatalf("Word = %q", got)
	}
	if got := enums.Word(controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_TIMED_OUT); got != "timed_out" {
		t.Fatalf("Word = %q", got)
	}
	if got := enums.Word(commonv1.FactState_FACT_STATE_NOT_APPLICABLE); got != "not_applicable" {
		t.Fatalf("Word = %q", got)
	}
	if got := enums.Word(controlv1.ThreadStatus_THREAD_STATUS_UNSPECIFIED); got != "unspecified" {
		t.Fatalf("Word = %q", got)
	}
	if got := enums.Word(controlv1.ThreadStatus(99)); got != "99" {
		t.Fatalf("Word of an unknown value = %q", got)
	}
	if s, ok := enums.Parse[controlv1.SubagentStatus]("waiting_input"); !ok || s != controlv1.SubagentStatus_SUBAGENT_STATUS_WAITING_INPUT {
		t.Fatalf("Parse = %v %v", s, ok)
	}
	for _, w := range []string{"", "unspecified", "nope"} {
		if s, ok := enums.Parse[controlv1.TurnStatus](w); ok || s != 0 {
			t.Fatalf("Parse(%q) = %v %v", w, s, ok)
		}
	}
}
