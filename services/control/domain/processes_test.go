package domain

import (
	"errors"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Every process status against every turn status, for both requests.
func TestDecideProcessRequests(t *testing.T) {
	turnStatuses := []string{"accepted", "running", "waiting_permission", "interrupting", "completed", "failed", "cancelled", "timed_out"}
	procStatuses := []controlv1.ProcessStatus{ProcessRunning, ProcessCompleted, ProcessFailed, ProcessTerminated, ProcessLost}
	for _, ts := range turnStatuses {
		for _, ps := range procStatuses {
			for _, pending := range []bool{false, true} {
				tu := &controlv1.Turn{TurnId: "turn1", Status: turnStatusOf(ts)}
				p := &controlv1.Process{ProcessId: "proc1", SessionId: "s1", ThreadId: "th1", TurnId: "turn1", RunId: "run1", Status: ps, TerminateRequested: pending}
				wantReason := ""
				switch {
				case ps != ProcessRunning:
					wantReason = "PROCESS_ENDED"
				case Terminal(turnStatusOf(ts)):
					wantReason = "TURN_ENDED"
				}
				name := ts + "/" + enums.Word(ps)
				if pending {
					name += "/terminate_pending"
				}
				t.Run(name, func(t *testing.T) {
					in, err := DecideProcessInput(tu, p, ProcessInput{InputURI: "object://b/output/t1/s1/turn1/abc", Preview: "hi"})
					checkReason(t, err, wantReason)
					if wantReason == "" {
						if len(in) != 1 || in[0].GetType() != "process.input" || in[0].GetProcessId() != "proc1" || in[0].GetRunId() != "run1" ||
							in[0].GetTurnId() != "turn1" || in[0].GetRefs()[InputRefRole] != "object://b/output/t1/s1/turn1/abc" || in[0].GetProcessInput().GetPreview() != "hi" {
							t.Fatalf("input: %v", in)
						}
					}
					term, err := DecideTerminateProcess(tu, p, "")
					checkReason(t, err, wantReason)
					switch {
					case wantReason != "":
					case pending:
						if len(term) != 0 {
							t.Fatalf("a pending terminate is asked again: %v", term)
						}
					default:
						u := term[0].GetThreadUpdated()
						if len(term) != 1 || term[0].GetType() != "thread.updated" || term[0].GetProcessId() != "proc1" ||
							u.GetChange() != ChangeProcessTerminateRequested || u.GetTurnId() != "turn1" || u.GetReason() == "" {
							t.Fatalf("terminate: %v", term)
						}
					}
				})
			}
		}
	}
}

func checkReason(t *testing.T, err error, reason string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var de *fault.Error
	if !errors.As(err, &de) || de.Kind != fault.KindPrecondition || de.Reason != reason {
		t.Fatalf("error = %v, want FailedPrecondition %s", err, reason)
	}
}
