package domain

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

var now = time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

// fixture builds a task in status s, consistent with it: an active run in
// the run states, paused (from running) and cancelling; an unfinished
// blocker when blocked.
func fixture(s S) *tasksv1.Task {
	t := &tasksv1.Task{TaskId: "t1", RootTaskId: "t1", SessionId: "s1", Status: s, Spec: &tasksv1.TaskSpec{Title: "x"}}
	if IsRunState(s) || s == Paused || s == Cancelling {
		t.CurrentRunId = "run_1"
		t.Attempts = []*tasksv1.Attempt{{RunId: "run_1", AttemptId: "att_1", Ordinal: 1, Status: tasksv1.RunStatus_RUN_STATUS_RUNNING}}
	}
	if s == Paused {
		t.PausedFrom = Running
	}
	if s == Cancelling {
		t.CancelRequested = true
	}
	if s == Blocked {
		t.Edges = []*tasksv1.Edge{{Relation: blockedBy, TargetId: "blk", Status: tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE}}
	}
	return t
}

func run(t *tasksv1.Task, cmd Command) ([]*eventsv1.RuntimeEvent, error) {
	switch cmd {
	case CmdSubmit:
		return DecideSubmit(t, now)
	case CmdUpdate:
		return DecideUpdate(t, &tasksv1.TaskSpec{Title: "new"}, []string{"title"}, now)
	case CmdStart:
		return DecideStart(t, Start{RunID: "run_2", AttemptID: "att_2", Worker: &tasksv1.WorkerRef{WorkerId: "w"}, Now: now})
	case CmdProgress:
		return DecideProgress(t, Progress{RunID: "run_1", Progress: &tasksv1.Progress{Phase: "working"}, Now: now})
	case CmdPause:
		return DecidePause(t, "", now)
	case CmdResume:
		return DecideResume(t, "", now)
	case CmdCancel:
		return DecideCancel(t, Cancel{Reason: "user", Now: now})
	case CmdRetry:
		return DecideRetry(t, Retry{Reason: "try again", Now: now})
	case CmdComplete:
		return DecideComplete(t, Complete{RunID: "run_1", Now: now})
	case CmdFail:
		return DecideFail(t, Fail{RunID: "run_1", Error: &tasksv1.TaskError{Category: "transient", Retryable: true}, Now: now})
	case CmdArchive:
		return DecideArchive(t, "", now)
	case CmdTimeout:
		return DecideTimeout(t, "run_1", "run timeout", now)
	case CmdLose:
		return DecideLose(t, "run_1", now)
	case CmdBlock:
		return DecideLink(t, Link{Relation: blockedBy, TargetID: "other", TargetStatus: Queued, Now: now})
	case CmdLink:
		return DecideLink(t, Link{Relation: tasksv1.EdgeRelation_EDGE_RELATION_EVIDENCE, TargetID: "evd_1", Now: now})
	case CmdSpawnChild:
		_, err := DecideCreate(nil, Create{TaskID: "child", Spec: &tasksv1.TaskSpec{}, Parent: t, Now: now})
		return nil, err // the parent's own record does not change
	}
	panic(cmd)
}

func fold(t *tasksv1.Task, evs []*eventsv1.RuntimeEvent) *tasksv1.Task {
	for i, ev := range evs {
		ev.Sequence = uint64(100 + i)
		t = Apply(t, ev)
	}
	return t
}

// expected is written out by hand, independently of the transition table:
// for every status, the commands it allows and the status each leads to.
// A command missing from a row must be refused.
var expected = map[S]string{
	Draft:             "submit:queued update:draft cancel:cancelled block:draft link:draft spawn_child:draft",
	Accepted:          "update:accepted start:running pause:paused cancel:cancelled block:blocked link:accepted spawn_child:accepted",
	Queued:            "update:queued start:running pause:paused cancel:cancelled block:blocked link:queued spawn_child:queued",
	Preparing:         "update:preparing progress:preparing pause:paused cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost link:preparing spawn_child:preparing",
	Running:           "update:running progress:running pause:paused cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost link:running spawn_child:running",
	WaitingInput:      "update:waiting_input progress:waiting_input pause:paused cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost link:waiting_input spawn_child:waiting_input",
	WaitingPermission: "update:waiting_permission progress:waiting_permission pause:paused cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost link:waiting_permission spawn_child:waiting_permission",
	WaitingResource:   "update:waiting_resource progress:waiting_resource pause:paused cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost link:waiting_resource spawn_child:waiting_resource",
	Blocked:           "update:blocked pause:paused cancel:cancelled block:blocked link:blocked spawn_child:blocked",
	Paused:            "update:paused progress:paused resume:running cancel:cancelling complete:completed fail:failed timeout:timed_out lose:lost block:paused link:paused spawn_child:paused",
	Retrying:          "update:retrying start:running pause:paused cancel:cancelled block:retrying link:retrying spawn_child:retrying",
	Cancelling:        "progress:cancelling cancel:cancelling complete:completed fail:cancelled timeout:cancelled lose:cancelled link:cancelling",
	Cancelled:         "retry:retrying archive:archived link:cancelled",
	TimedOut:          "retry:retrying archive:archived link:timed_out",
	Failed:            "retry:retrying archive:archived link:failed",
	Lost:              "retry:retrying archive:archived link:lost",
	Completed:         "archive:archived link:completed",
	Archived:          "",
	Stale:             "",
	Unknown:           "",
}

func TestEveryStatusCommandPair(t *testing.T) {
	if len(AllStatuses) != 20 {
		t.Fatalf("%d statuses, the spec has 20", len(AllStatuses))
	}
	for _, s := range AllStatuses {
		row := map[Command]string{}
		for _, f := range strings.Fields(expected[s]) {
			cmd, to, _ := strings.Cut(f, ":")
			row[Command(cmd)] = to
		}
		for _, cmd := range AllCommands {
			t.Run(StatusName(s)+"/"+string(cmd), func(t *testing.T) {
				task := fixture(s)
				evs, err := run(task, cmd)
				want, ok := row[cmd]
				if !ok {
					var pe *fault.Error
					if !errors.As(err, &pe) {
						t.Fatalf("want refusal, got events %v err %v", testkit.Types(evs), err)
					}
					switch {
					case s == Blocked && cmd == CmdStart:
						if pe.Reason != ReasonTaskBlocked || pe.Metadata["blocked_by"] != "blk" {
							t.Fatalf("blocked start: %+v", pe)
						}
					default:
						if pe.Reason != ReasonIllegalTransition || pe.Metadata["status"] != StatusName(s) || pe.Metadata["command"] != string(cmd) {
							t.Fatalf("refusal: %+v", pe)
						}
						if len(Allowed(cmd)) > 0 && !strings.Contains(pe.Message, "needs ") {
							t.Fatalf("description names no allowed status: %q", pe.Message)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("want %s, got %v", want, err)
				}
				if got := StatusName(fold(task, evs).GetStatus()); got != want {
					t.Fatalf("status %s, want %s (events %v)", got, want, testkit.Types(evs))
				}
			})
		}
	}
}

// An archived blocker shows its dependents how it ended, not "archived"
// (which would keep their edges active forever).
func TestBlockerStatusOfArchivedTask(t *testing.T) {
	done := &tasksv1.Task{Status: Archived, Attempts: []*tasksv1.Attempt{
		{RunId: "r1", Status: tasksv1.RunStatus_RUN_STATUS_FAILED}, {RunId: "r2", Status: tasksv1.RunStatus_RUN_STATUS_COMPLETED}}}
	if got := BlockerStatus(done); got != Completed {
		t.Fatalf("archived after completing: %v", got)
	}
	if e := DecideDependency(&tasksv1.Task{TaskId: "d", Status: Blocked, Edges: []*tasksv1.Edge{{Relation: blockedBy, TargetId: "b", Status: tasksv1.EdgeStatus_EDGE_STATUS_ACTIVE}}},
		"b", BlockerStatus(done), now); len(e) != 1 || e[0].GetTaskDependencyUpdated().GetEdge().GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_SATISFIED {
		t.Fatalf("dependency on an archived completed blocker: %v", e)
	}
	for _, never := range []*tasksv1.Task{
		{Status: Archived},
		{Status: Archived, Attempts: []*tasksv1.Attempt{{RunId: "r1", Status: tasksv1.RunStatus_RUN_STATUS_FAILED}}},
	} {
		if got := BlockerStatus(never); got != Failed {
			t.Fatalf("archived without success: %v", got)
		}
	}
	if got := BlockerStatus(&tasksv1.Task{Status: Running}); got != Running {
		t.Fatalf("running: %v", got)
	}
}

// A start cut after its attempt: the task is queued with a running
// attempt. Its own command finishes it; any other start is refused as if
// the task ran.
func TestStartInFlight(t *testing.T) {
	q := fixture(Queued)
	evs, err := DecideStart(q, Start{RunID: "run_9", AttemptID: "att_9", Worker: &tasksv1.WorkerRef{WorkerId: "w"}, Now: now})
	if err != nil || len(evs) != 2 {
		t.Fatalf("start: %v %v", evs, err)
	}
	if _, ok := StartInFlight(Apply(q, evs[1])); ok {
		t.Fatal("queued task without an attempt is in flight")
	}
	cut := Apply(q, evs[0])
	at, ok := StartInFlight(cut)
	if !ok || at.GetRunId() != "run_9" || cut.GetStatus() != Queued {
		t.Fatalf("cut start: %v %v (%v)", at, ok, cut.GetStatus())
	}
	var fe *fault.Error
	if err := StartInProgress(cut); !errors.As(err, &fe) || fe.Metadata["status"] != "running" {
		t.Fatalf("another start: %v", err)
	}
	rest := FinishStart(cut, at, now)
	done := Apply(cut, rest[0])
	if len(rest) != 1 || rest[0].GetType() != TypeTaskStarted || done.GetStatus() != Running || rest[0].GetRunId() != "run_9" {
		t.Fatalf("finished: %v -> %v", rest, done.GetStatus())
	}
	if _, ok := StartInFlight(done); ok {
		t.Fatal("a running task is in flight")
	}
}
