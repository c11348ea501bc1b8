package domain

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

func mustEvents(t *testing.T) func([]*eventsv1.RuntimeEvent, error) []*eventsv1.RuntimeEvent {
	return func(evs []*eventsv1.RuntimeEvent, err error) []*eventsv1.RuntimeEvent {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

func foldJob(j *tasksv1.Job, evs []*eventsv1.RuntimeEvent) *tasksv1.Job {
	for i, ev := range evs {
		ev.Sequence = uint64(100 + i)
		j = ApplyJob(j, ev)
	}
	return j
}

func TestBackoff(t *testing.T) {
	p := &tasksv1.RetryPolicy{InitialBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(5 * time.Second)}
	for n, want := range map[uint32]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 10: 5 * time.Second} {
		if got := Backoff(p, n); got != want {
			t.Errorf("after %d attempts: %v, want %v", n, got, want)
		}
	}
}

func TestLostRunIsKeptAndRetriedByPolicy(t *testing.T) {
	task := fixture(Running)
	task.Spec.RetryPolicy = &tasksv1.RetryPolicy{MaxAttempts: 2, InitialBackoff: durationpb.New(time.Second)}
	evs, err := DecideLose(task, "run_1", now)
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.Types(evs); len(got) != 3 || got[0] != TypeAttemptFailed || got[1] != TypeTaskLost || got[2] != TypeTaskRetrying {
		t.Fatalf("events %v", got)
	}
	task = fold(task, evs)
	if task.GetStatus() != Retrying || !task.GetNotBefore().AsTime().Equal(now.Add(time.Second)) {
		t.Fatalf("status %v not_before %v", task.GetStatus(), task.GetNotBefore())
	}
	if a := task.GetAttempts()[0]; a.GetStatus() != tasksv1.RunStatus_RUN_STATUS_LOST || a.GetError().GetCategory() != CategoryLost {
		t.Fatalf("lost attempt %v", a)
	}
	// The second loss exhausts max_attempts: the task stays lost.
	task = fold(task, mustEvents(t)(DecideStart(task, Start{RunID: "run_2", AttemptID: "att_2", Worker: &tasksv1.WorkerRef{}, Now: now})))
	task = fold(task, mustEvents(t)(DecideLose(task, "run_2", now)))
	if task.GetStatus() != Lost || len(task.GetAttempts()) != 2 {
		t.Fatalf("status %v attempts %d", task.GetStatus(), len(task.GetAttempts()))
	}
}

func TestNonRetryableCategoryFails(t *testing.T) {
	task := fixture(Running)
	task.Spec.RetryPolicy = &tasksv1.RetryPolicy{MaxAttempts: 5, NonRetryableCategories: []string{"invalid_input"}}
	task = fold(task, mustEvents(t)(DecideFail(task, Fail{RunID: "run_1", Error: &tasksv1.TaskError{Category: "invalid_input", Retryable: true}, Now: now})))
	if task.GetStatus() != Failed {
		t.Fatalf("status %v", task.GetStatus())
	}
}

func TestCompletionNeedsAcceptanceFacts(t *testing.T) {
	task := fixture(Running)
	task.Spec.Acceptance = &tasksv1.Acceptance{RequiredArtifacts: []string{"report.md"}, RequiredEvidence: []string{"evd_1"}}
	_, err := DecideComplete(task, Complete{RunID: "run_1", Now: now})
	var pe *fault.Error
	if !errors.As(err, &pe) || pe.Reason != ReasonAcceptanceNotMet || pe.Metadata["missing"] != "artifact:report.md,evidence:evd_1" {
		t.Fatalf("err %v", err)
	}
	task = fold(task, mustEvents(t)(DecideProgress(task, Progress{RunID: "run_1", Artifacts: []string{"report.md"}, Now: now})))
	evs, err := DecideComplete(task, Complete{RunID: "run_1", EvidenceRefs: []string{"evd_1"}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if fold(task, evs).GetStatus() != Completed {
		t.Fatal("not completed")
	}
	if _, err := DecideComplete(task, Complete{RunID: "run_9", EvidenceRefs: []string{"evd_1"}, Now: now}); !errors.As(err, &pe) || pe.Reason != ReasonRunMismatch {
		t.Fatalf("other run: %v", err)
	}
}

func TestDependencyFailureIsSurfacedAndCompletionUnblocks(t *testing.T) {
	task := fixture(Blocked)
	task = fold(task, DecideDependency(task, "blk", Failed, now))
	if task.GetStatus() != Blocked || task.GetStatusReason() != "dependency failed: blk" {
		t.Fatalf("status %v reason %q", task.GetStatus(), task.GetStatusReason())
	}
	if evs := DecideDependency(task, "blk", Failed, now); len(evs) != 0 {
		t.Fatalf("replayed resolution appended %v", testkit.Types(evs))
	}
	task = fold(task, DecideDependency(task, "blk", Completed, now))
	if task.GetStatus() != Queued || !Runnable(task) {
		t.Fatalf("status %v", task.GetStatus())
	}
}

func TestPathExists(t *testing.T) {
	g := map[string][]string{"a": {"b"}, "b": {"c"}, "c": nil}
	next := func(id string) ([]string, error) { return g[id], nil }
	if ok, _ := PathExists("a", "c", next); !ok {
		t.Fatal("a reaches c")
	}
	if ok, _ := PathExists("c", "a", next); ok {
		t.Fatal("c does not reach a")
	}
}

func TestJobItemRetryKeepsItemsApart(t *testing.T) {
	var j *tasksv1.Job
	evs, err := DecideCreateJob(nil, CreateJob{JobID: "job_1", Spec: &tasksv1.JobSpec{}, Items: []JobItemInput{{ItemID: "a"}, {ItemID: "b"}}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	j = foldJob(j, evs)
	j = foldJob(j, mustEvents(t)(DecideStartItem(j, "a", "r_a1", "thr_1", "w", now)))
	j = foldJob(j, mustEvents(t)(DecideStartItem(j, "b", "r_b1", "thr_2", "w", now)))
	out := &commonv1.OutputRef{Uri: "object://x/a"}
	j = foldJob(j, mustEvents(t)(DecideCompleteItem(j, "a", "r_a1", out, now)))
	j = foldJob(j, mustEvents(t)(DecideFailItem(j, "b", "r_b1", &tasksv1.TaskError{Category: "transient", Message: "boom", Retryable: true}, now)))
	if j.GetStatus() != JobFailed || Item(j, "a").GetStatus() != ItemCompleted || Item(j, "b").GetLastError().GetMessage() != "boom" {
		t.Fatalf("job %v", j)
	}
	if _, err := DecideRetryItem(j, "a", "again", now); err == nil {
		t.Fatal("a completed item was retried")
	}
	j = foldJob(j, mustEvents(t)(DecideRetryItem(j, "b", "again", now)))
	if j.GetStatus() != JobRunning || Item(j, "b").GetStatus() != ItemPending || Item(j, "a").GetStatus() != ItemCompleted {
		t.Fatalf("after retry %v", j)
	}
	j = foldJob(j, mustEvents(t)(DecideStartItem(j, "b", "r_b2", "thr_2", "w", now)))
	j = foldJob(j, mustEvents(t)(DecideCompleteItem(j, "b", "r_b2", out, now)))
	if j.GetStatus() != JobCompleted || Item(j, "b").GetAttempts() != 2 || j.GetCounts().GetCompleted() != 2 {
		t.Fatalf("end %v", j)
	}
	// A replayed completion of a's first run appends nothing: one output.
	if evs, err := DecideCompleteItem(j, "a", "r_a1", out, now); err != nil || len(evs) != 0 {
		t.Fatalf("replay: %v %v", evs, err)
	}
}
