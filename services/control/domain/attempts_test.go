package domain

import (
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// attemptStates are the claims read model's states of a turn.
func attemptStates() map[string]*controlv1.TurnAttempts {
	running := &controlv1.TurnAttempt{Attempt: 1, RunId: "run1", WorkerId: "w1", Status: controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_RUNNING}
	lost := &controlv1.TurnAttempt{Attempt: 1, RunId: "run1", WorkerId: "w1", Status: controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_LOST}
	return map[string]*controlv1.TurnAttempts{
		"never claimed": nil,
		"run1 running":  {TurnId: "t1", Attempts: []*controlv1.TurnAttempt{running}},
		"run1 lost, retry pending": {TurnId: "t1", RetryPending: true, MaxAttempts: 3,
			Attempts: []*controlv1.TurnAttempt{lost}},
		"run2 running after run1 lost": {TurnId: "t1", MaxAttempts: 3, Attempts: []*controlv1.TurnAttempt{lost,
			{Attempt: 2, RunId: "run2", WorkerId: "w2", Status: controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_RUNNING}}},
		"run1 lost, no retry": {TurnId: "t1", MaxAttempts: 1, Attempts: []*controlv1.TurnAttempt{lost}},
	}
}

func claimThread(turnStatus string, active bool) (*controlv1.ThreadRead, *controlv1.Turn) {
	th := &controlv1.ThreadRead{SessionId: "s", ThreadId: "th", Status: controlv1.ThreadStatus_THREAD_STATUS_RUNNING, QueuedTurnIds: []string{"t2"}}
	if active {
		th.ActiveTurnId = "t1"
	}
	if turnStatus == "waiting_permission" {
		th.PendingActions = []*controlv1.Action{{ActionId: "a1", SessionId: "s", ThreadId: "th", TurnId: "t1", Status: controlv1.ActionStatus_ACTION_STATUS_PENDING, ActionType: "approval"}}
	}
	return th, &controlv1.Turn{TurnId: "t1", SessionId: "s", ThreadId: "th", Status: turnStatusOf(turnStatus)}
}

func withRuns(evs []*eventsv1.RuntimeEvent, err error) string {
	if err != nil {
		return outcome(evs, err)
	}
	var out []string
	for _, e := range evs {
		s := e.GetType()
		if r := e.GetRunStatus(); r != nil {
			s += "(" + r.GetPhase() + " next=" + r.GetMetadata()["next"] + " attempt=" + r.GetMetadata()["attempt"] + ")"
		}
		if a := e.GetActionResolved(); a != nil {
			s += "(" + strings.TrimPrefix(a.GetOutcome().String(), "ACTION_OUTCOME_") + ")"
		}
		if f := e.GetTurnFailed(); f != nil {
			s += "(" + strings.TrimPrefix(f.GetOutcome().String(), "TURN_OUTCOME_") + ":" + f.GetCategory() + ")"
		}
		if q := e.GetQueueChanged(); q != nil {
			s += "(" + q.GetChange() + ":" + q.GetTurnId() + ")"
		}
		s += "@" + e.GetRunId()
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// Every (turn status, attempts) pair a claim can meet.
func TestDecideClaim(t *testing.T) {
	want := map[string]string{
		"accepted/active/never claimed":                           "turn.started@run9",
		"accepted/not active/never claimed":                       "error TURN_NOT_CLAIMABLE",
		"queued/never claimed":                                    "error TURN_NOT_CLAIMABLE",
		"steered/never claimed":                                   "error TURN_NOT_CLAIMABLE",
		"running/never claimed":                                   "error TURN_NOT_CLAIMABLE",
		"running/run1 running":                                    "error TURN_NOT_CLAIMABLE",
		"running/run1 lost, retry pending":                        "turn.started@run9 run.status(retrying next= attempt=2)@run9",
		"running/run2 running after run1 lost":                    "error TURN_NOT_CLAIMABLE",
		"running/run1 lost, no retry":                             "error TURN_NOT_CLAIMABLE",
		"waiting_permission/run1 lost, retry pending":             "turn.started@run9 run.status(retrying next= attempt=2)@run9",
		"interrupting/run1 lost, retry pending":                   "error TURN_NOT_CLAIMABLE",
		"interrupting/run1 running":                               "error TURN_NOT_CLAIMABLE",
		"completed/run1 lost, retry pending":                      "error TURN_ENDED",
		"failed/run1 lost, no retry":                              "error TURN_ENDED",
		"cancelled/never claimed":                                 "error TURN_ENDED",
		"accepted/active/run1 lost, retry pending (stale model)":  "turn.started@run9",
		"running/run2 running after run1 lost (second claimer)":   "error TURN_NOT_CLAIMABLE",
		"waiting_permission/run1 running":                         "error TURN_NOT_CLAIMABLE",
		"timed_out/run1 running":                                  "error TURN_ENDED",
		"queued/run1 lost, retry pending (queue moved it behind)": "error TURN_NOT_CLAIMABLE",
	}
	st := attemptStates()
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			parts := strings.SplitN(name, "/", 2)
			status, rest := parts[0], parts[1]
			active := !strings.HasPrefix(rest, "not active")
			rest = strings.TrimPrefix(strings.TrimPrefix(rest, "active/"), "not active/")
			if i := strings.Index(rest, " ("); i > 0 {
				rest = rest[:i]
			}
			at, ok := st[rest]
			if !ok {
				t.Fatalf("no attempts state %q", rest)
			}
			th, tu := claimThread(status, active)
			got := withRuns(DecideClaim(th, tu, at, Claim{RunID: "run9", WorkerID: "w9"}))
			if got != w {
				t.Fatalf("got %s\nwant %s", got, w)
			}
		})
	}
}

func TestDecideClaimRetryNamesTheAttempt(t *testing.T) {
	th, tu := claimThread("running", true)
	evs, err := DecideClaim(th, tu, attemptStates()["run1 lost, retry pending"], Claim{RunID: "run9", WorkerID: "w9"})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].GetTurnStarted().GetWorkerId() != "w9" || evs[0].GetTurnId() != "t1" || evs[0].GetSessionId() != "s" {
		t.Fatalf("turn.started = %v", evs[0])
	}
	r := evs[1].GetRunStatus()
	if r.GetTitle() != "attempt 2 of 3" || r.GetMetadata()["previous_run_id"] != "run1" || r.GetMetadata()["worker_id"] != "w9" {
		t.Fatalf("run.status = %v", r)
	}
}

// Every (turn status, attempts, budget) a lapsed lease can meet.
func TestDecideLoss(t *testing.T) {
	type c struct {
		status, attempts, run string
		budget                int
	}
	cases := map[c]string{
		// The current run is lost: retry within the budget.
		{"running", "run1 running", "run1", 3}: "run.status(lost next=retry attempt=1)@run1",
		// Its pending approval is cancelled: nobody waits on it any more.
		{"waiting_permission", "run1 running", "run1", 3}: "run.status(lost next=retry attempt=1)@run1 action.resolved(CANCELLED)@",
		// Budget spent: the turn fails lost and the queue moves.
		{"running", "run1 running", "run1", 1}:                        "run.status(lost next=fail attempt=1)@run1 turn.failed(FAILED:lost)@run1 queue.changed(dequeued:t2)@",
		{"running", "run2 running after run1 lost", "run2", 2}:        "run.status(lost next=fail attempt=2)@run2 turn.failed(FAILED:lost)@run2 queue.changed(dequeued:t2)@",
		{"waiting_permission", "run1 running", "run1", 1}:             "run.status(lost next=fail attempt=1)@run1 action.resolved(CANCELLED)@ turn.failed(FAILED:lost)@run1 queue.changed(dequeued:t2)@",
		{"running", "run2 running after run1 lost", "run2", 3}:        "run.status(lost next=retry attempt=2)@run2",
		{"interrupting", "run1 running", "run1", 3}:                   "run.status(lost next=cancel attempt=1)@run1 turn.failed(CANCELLED:interrupted)@run1 queue.changed(dequeued:t2)@",
		{"running", "run1 running", "other", 3}:                       "",
		{"running", "run1 lost, retry pending", "run1", 3}:            "",
		{"running", "run2 running after run1 lost", "run1", 3}:        "",
		{"running", "never claimed", "run1", 3}:                       "",
		{"completed", "run1 running", "run1", 3}:                      "",
		{"failed", "run1 running", "run1", 3}:                         "",
		{"cancelled", "run1 running", "run1", 3}:                      "",
		{"accepted", "run1 lost, retry pending", "run1", 3}:           "",
		{"running", "run1 lost, no retry", "run1", 1}:                 "",
		{"waiting_permission", "run1 lost, retry pending", "run1", 3}: "",
	}
	st := attemptStates()
	for k, want := range cases {
		t.Run(k.status+"/"+k.attempts+"/"+k.run, func(t *testing.T) {
			th, tu := claimThread(k.status, true)
			got := withRuns(DecideLoss(th, tu, st[k.attempts], Loss{RunID: k.run, MaxAttempts: k.budget, Source: "default"}))
			if got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestDecideLossOfANotActiveTurnLeavesTheQueue(t *testing.T) {
	th, tu := claimThread("running", false)
	got := withRuns(DecideLoss(th, tu, attemptStates()["run1 running"], Loss{RunID: "run1", MaxAttempts: 1}))
	if got != "run.status(lost next=fail attempt=1)@run1 turn.failed(FAILED:lost)@run1" {
		t.Fatal(got)
	}
}

func TestMaxAttempts(t *testing.T) {
	for _, c := range []struct {
		options map[string]string
		want    int
		source  string
	}{
		{nil, 3, "default"},
		{map[string]string{"max_attempts": "1"}, 1, "option max_attempts"},
		{map[string]string{"max_attempts": "10"}, 10, "option max_attempts"},
		{map[string]string{"max_attempts": "0"}, 3, `default (option max_attempts="0" is not an integer in 1..10)`},
		{map[string]string{"max_attempts": "11"}, 3, `default (option max_attempts="11" is not an integer in 1..10)`},
		{map[string]string{"max_attempts": "two"}, 3, `default (option max_attempts="two" is not an integer in 1..10)`},
	} {
		n, src := MaxAttempts(&controlv1.Turn{Options: c.options}, DefaultMaxAttempts)
		if n != c.want || src != c.source {
			t.Errorf("%v: %d %q, want %d %q", c.options, n, src, c.want, c.source)
		}
	}
}

// A worker cannot declare its own run lost (the claims read model would
// make the turn claimable on it) nor a retry.
func TestWorkersCannotReportLossOrRetry(t *testing.T) {
	th, tu := claimThread("running", true)
	for _, phase := range []string{PhaseLost, PhaseRetrying} {
		ev := &eventsv1.RuntimeEvent{Type: "run.status", TurnId: "t1", Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: phase, Metadata: map[string]string{"next": "retry"}}}}
		_, err := DecideReport(th, tu, []*eventsv1.RuntimeEvent{ev})
		var de *fault.Error
		if !asError(err, &de) || de.Kind != fault.KindInvalid || de.Violations[0].Field != "events[0].run_status.phase" {
			t.Fatalf("%s: %v", phase, err)
		}
	}
	ok := &eventsv1.RuntimeEvent{Type: "run.status", TurnId: "t1", Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "routing"}}}
	if _, err := DecideReport(th, tu, []*eventsv1.RuntimeEvent{ok}); err != nil {
		t.Fatal(err)
	}
	tu.Status = controlv1.TurnStatus_TURN_STATUS_COMPLETED
	if _, err := DecideReport(th, tu, []*eventsv1.RuntimeEvent{ok}); err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Fatalf("run.status after the end: %v", err)
	}
}

func asError(err error, target **fault.Error) bool {
	e, ok := err.(*fault.Error)
	if ok {
		*target = e
	}
	return ok
}

// turnStatusOf is the status whose word is word ("waiting_permission").
func turnStatusOf(word string) controlv1.TurnStatus {
	st, ok := enums.Parse[controlv1.TurnStatus](word)
	if !ok {
		panic("no turn status " + word)
	}
	return st
}
