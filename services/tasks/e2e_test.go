package tasks_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

var worker = &tasksv1.WorkerRef{WorkerId: "w1", Kind: "agent", ThreadId: "thr_1"}

// getTask reads a task at least as of minSequence (the sequence a write
// answered: writes do not wait for the read model, reads do).
func getTask(t *testing.T, c tasksv1.TasksServiceClient, id string, minSequence uint64) *tasksv1.GetTaskResponse {
	t.Helper()
	return must[*tasksv1.GetTaskResponse](t)(c.GetTask(context.Background(), &tasksv1.GetTaskRequest{TaskId: id, MinSequence: minSequence}))
}

func getJob(t *testing.T, c tasksv1.TasksServiceClient, id string, minSequence uint64) *tasksv1.Job {
	t.Helper()
	return must[*tasksv1.GetJobResponse](t)(c.GetJob(context.Background(), &tasksv1.GetJobRequest{JobId: id, MinSequence: minSequence})).GetJob()
}

// Spec scenario "Agent task retry and graph": a long-running task creates
// child work and then fails; the runtime keeps the task_id, records the
// failed attempt with its run_id, keeps parent and dependency edges, and a
// retry starts a new attempt instead of overwriting history. The process
// restarts in the middle.
func TestAgentTaskRetryAndGraph(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := e.start()
	c := p.client

	parent := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{
		SessionId: "sess_1", IdempotencyKey: "create-parent",
		Spec: &tasksv1.TaskSpec{Title: "migrate", Objective: "migrate the schema", TaskKind: "coding", Owner: "alice",
			Constraints: &tasksv1.Constraints{SandboxProfile: "workspace-write", MaxCostUsd: 2}},
	})).GetTask()
	again := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{
		SessionId: "sess_1", IdempotencyKey: "create-parent", Spec: &tasksv1.TaskSpec{Title: "migrate"},
	}))
	if again.GetTask().GetTaskId() != parent.GetTaskId() || !again.GetResult().GetDeduplicated() {
		t.Fatalf("repeated create: %v", again)
	}
	st := must[*tasksv1.StartTaskResponse](t)(c.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: parent.GetTaskId(), Worker: worker}))
	firstRun := st.GetRunId()

	// Child work: a child task and a second child blocked by the first.
	child1 := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: parent.GetTaskId(), Spec: &tasksv1.TaskSpec{Title: "write migration"}})).GetTask()
	child2 := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: parent.GetTaskId(), BlockedBy: []string{child1.GetTaskId()}, Spec: &tasksv1.TaskSpec{Title: "run migration"}})).GetTask()
	if child2.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_BLOCKED || child1.GetSessionId() != "sess_1" {
		t.Fatalf("child2 %v, child1 session %q", child2.GetStatus(), child1.GetSessionId())
	}
	// A blocked task cannot start, and says by what.
	_, err := c.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: child2.GetTaskId(), Worker: worker})
	assertPrecondition(t, err, "TASK_BLOCKED")

	must[*tasksv1.AppendTaskProgressResponse](t)(c.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{
		TaskId: parent.GetTaskId(), RunId: firstRun,
		Progress: &tasksv1.Progress{Phase: "working", Counters: map[string]int64{"files": 3},
			OutputRefs: []*commonv1.OutputRef{{Uri: "object://AGENTRUNTIME_OBJECTS/out1", SizeBytes: 10}}},
	}))
	failed := must[*tasksv1.FailTaskResponse](t)(c.FailTask(ctx, &tasksv1.FailTaskRequest{
		TaskId: parent.GetTaskId(), RunId: firstRun, Error: &tasksv1.TaskError{Category: "transient", Code: "E_DB", Message: "database went away", Retryable: true},
	}))
	if failed.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_FAILED {
		t.Fatalf("fail -> %v (no retry policy: failed)", failed.GetStatus())
	}
	// Completing a failed task is illegal; the error names the statuses
	// that would allow it.
	_, err = c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: parent.GetTaskId(), RunId: firstRun})
	pf := assertPrecondition(t, err, "ILLEGAL_TRANSITION")
	if pf.GetDescription() != "task is failed; complete needs preparing, running, waiting_input, waiting_permission, waiting_resource, paused or cancelling" {
		t.Fatalf("description %q", pf.GetDescription())
	}

	// Restart in the middle.
	p.stop()
	p = e.start()
	c = p.client

	got := getTask(t, c, parent.GetTaskId(), failed.GetResult().GetSequence())
	if tk := got.GetTask(); tk.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_FAILED || len(tk.GetAttempts()) != 1 || tk.GetAttempts()[0].GetRunId() != firstRun ||
		tk.GetAttempts()[0].GetError().GetCode() != "E_DB" || len(tk.GetAttempts()[0].GetOutputRefs()) != 1 {
		t.Fatalf("after restart: %v", tk)
	}
	if n := len(got.GetReverseEdges()); n != 2 {
		t.Fatalf("parent shows %d child edges, want 2", n)
	}

	retried := must[*tasksv1.RetryTaskResponse](t)(c.RetryTask(ctx, &tasksv1.RetryTaskRequest{TaskId: parent.GetTaskId(), Reason: "database is back", Worker: worker}))
	tk := getTask(t, c, parent.GetTaskId(), retried.GetResult().GetSequence()).GetTask()
	if tk.GetTaskId() != parent.GetTaskId() || len(tk.GetAttempts()) != 2 || tk.GetCurrentRunId() != retried.GetRunId() ||
		tk.GetAttempts()[0].GetStatus() != tasksv1.RunStatus_RUN_STATUS_FAILED || tk.GetAttempts()[1].GetReason() != "database is back" ||
		tk.GetSpec().GetConstraints().GetSandboxProfile() != "workspace-write" {
		t.Fatalf("after retry: %v", tk)
	}

	// The children: completing the first unblocks the second by itself.
	c1run := must[*tasksv1.StartTaskResponse](t)(c.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: child1.GetTaskId(), Worker: worker})).GetRunId()
	must[*tasksv1.CompleteTaskResponse](t)(c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: child1.GetTaskId(), RunId: c1run, Summary: "written"}))
	testkit.Eventually(t, "child2 unblocked", func() bool {
		return getTask(t, c, child2.GetTaskId(), 0).GetTask().GetStatus() == tasksv1.TaskStatus_TASK_STATUS_QUEUED
	})

	// Restart again: every attempt and edge is still there.
	p.stop()
	p = e.start()
	c = p.client
	tk = getTask(t, c, parent.GetTaskId(), 0).GetTask()
	if len(tk.GetAttempts()) != 2 || tk.GetAttempts()[0].GetRunId() != firstRun || tk.GetAttempts()[1].GetRunId() != retried.GetRunId() {
		t.Fatalf("attempts after restart: %v", tk.GetAttempts())
	}
	c2 := getTask(t, c, child2.GetTaskId(), 0).GetTask()
	var edges []string
	for _, e := range c2.GetEdges() {
		edges = append(edges, e.GetRelation().String()+":"+e.GetTargetId()+":"+e.GetStatus().String())
	}
	want := []string{"EDGE_RELATION_PARENT:" + parent.GetTaskId() + ":EDGE_STATUS_ACTIVE", "EDGE_RELATION_BLOCKED_BY:" + child1.GetTaskId() + ":EDGE_STATUS_SATISFIED"}
	if len(edges) != 2 || edges[0] != want[0] || edges[1] != want[1] {
		t.Fatalf("child2 edges %v, want %v", edges, want)
	}
	list := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{ParentTaskId: parent.GetTaskId()}))
	if len(list.GetTasks()) != 2 {
		t.Fatalf("children listed: %d", len(list.GetTasks()))
	}
}

func assertPrecondition(t *testing.T, err error, reason string) *errdetails.PreconditionFailure_Violation {
	t.Helper()
	st := wantCode(t, err, codes.FailedPrecondition)
	for _, d := range st.Details() {
		if pf, ok := d.(*errdetails.PreconditionFailure); ok && len(pf.GetViolations()) > 0 {
			if pf.GetViolations()[0].GetType() != reason {
				t.Fatalf("reason %q, want %q", pf.GetViolations()[0].GetType(), reason)
			}
			return pf.GetViolations()[0]
		}
	}
	t.Fatalf("no precondition details in %v", err)
	return nil
}

// Spec scenario "Job item retry": one item fails; job and item status are
// kept apart, only that item is retried, its attempt count and last error
// are kept, and no output is duplicated. The process restarts in the
// middle.
func TestJobItemRetry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p := e.start()
	c := p.client
	job := must[*tasksv1.CreateJobResponse](t)(c.CreateJob(ctx, &tasksv1.CreateJobRequest{
		SessionId: "sess_1", Spec: &tasksv1.JobSpec{Title: "label rows"},
		Items: []*tasksv1.JobItemInput{{ItemId: "a", InputRef: "row:1"}, {ItemId: "b", InputRef: "row:2"}, {ItemId: "c", InputRef: "row:3"}},
	})).GetJob()
	runs := map[string]string{}
	for _, id := range []string{"a", "b", "c"} {
		runs[id] = must[*tasksv1.StartJobItemResponse](t)(c.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job.GetJobId(), ItemId: id, ThreadId: "thr_" + id})).GetRunId()
	}
	outA := &commonv1.OutputRef{Uri: "object://AGENTRUNTIME_OBJECTS/a", SizeBytes: 5}
	must[*tasksv1.CompleteJobItemResponse](t)(c.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job.GetJobId(), ItemId: "a", RunId: runs["a"], OutputRef: outA}))
	must[*tasksv1.FailJobItemResponse](t)(c.FailJobItem(ctx, &tasksv1.FailJobItemRequest{JobId: job.GetJobId(), ItemId: "b", RunId: runs["b"], Error: &tasksv1.TaskError{Category: "transient", Message: "rate limited", Retryable: true}}))
	lastC := must[*tasksv1.CompleteJobItemResponse](t)(c.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job.GetJobId(), ItemId: "c", RunId: runs["c"], OutputRef: outA}))

	j := getJob(t, c, job.GetJobId(), lastC.GetResult().GetSequence())
	if j.GetStatus() != tasksv1.JobStatus_JOB_STATUS_FAILED || j.GetCounts().GetCompleted() != 2 || j.GetCounts().GetFailed() != 1 {
		t.Fatalf("job after one failure: %v %v", j.GetStatus(), j.GetCounts())
	}

	p.stop()
	p = e.start()
	c = p.client

	// Retrying a completed item is refused: its output exists once.
	_, err := c.RetryJobItem(ctx, &tasksv1.RetryJobItemRequest{JobId: job.GetJobId(), ItemId: "a", Reason: "again"})
	assertPrecondition(t, err, "ILLEGAL_ITEM_TRANSITION")
	ri := must[*tasksv1.RetryJobItemResponse](t)(c.RetryJobItem(ctx, &tasksv1.RetryJobItemRequest{JobId: job.GetJobId(), ItemId: "b", Reason: "rate limit lifted"}))
	j = getJob(t, c, job.GetJobId(), ri.GetResult().GetSequence())
	items := map[string]*tasksv1.JobItem{}
	for _, it := range j.GetItems() {
		items[it.GetItemId()] = it
	}
	if j.GetStatus() != tasksv1.JobStatus_JOB_STATUS_RUNNING || items["b"].GetStatus() != tasksv1.JobItemStatus_JOB_ITEM_STATUS_PENDING ||
		items["a"].GetStatus() != tasksv1.JobItemStatus_JOB_ITEM_STATUS_COMPLETED || items["b"].GetAttempts() != 1 || items["b"].GetLastError().GetMessage() != "rate limited" {
		t.Fatalf("after item retry: %v", j)
	}
	// A late duplicate completion of a's run appends nothing.
	dup := must[*tasksv1.CompleteJobItemResponse](t)(c.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job.GetJobId(), ItemId: "a", RunId: runs["a"], OutputRef: outA}))
	if !dup.GetResult().GetDeduplicated() {
		t.Fatal("duplicate completion appended")
	}
	rb := must[*tasksv1.StartJobItemResponse](t)(c.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job.GetJobId(), ItemId: "b", ThreadId: "thr_b"}))
	if rb.GetAttempt() != 2 {
		t.Fatalf("b attempt %d", rb.GetAttempt())
	}
	done := must[*tasksv1.CompleteJobItemResponse](t)(c.CompleteJobItem(ctx, &tasksv1.CompleteJobItemRequest{JobId: job.GetJobId(), ItemId: "b", RunId: rb.GetRunId(), OutputRef: outA}))
	j = getJob(t, c, job.GetJobId(), done.GetResult().GetSequence())
	if j.GetStatus() != tasksv1.JobStatus_JOB_STATUS_COMPLETED || j.GetCounts().GetCompleted() != 3 {
		t.Fatalf("job end: %v %v", j.GetStatus(), j.GetCounts())
	}
	// Cancelling an ended job is refused; completed items are untouched.
	_, err = c.CancelJob(ctx, &tasksv1.CancelJobRequest{JobId: job.GetJobId()})
	assertPrecondition(t, err, "JOB_ENDED")
}

// A worker that stops heartbeating: its run becomes lost, a new attempt
// starts by policy (when another worker polls), and the lost attempt stays
// in the history. The stale worker is fenced: its heartbeat, progress and
// the run's end are LEASE_LOST and nothing it sends is recorded; only the
// current holder, with its run id AND its lease token, is heard.
func TestWorkerStopsHeartbeating(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.start().client
	task := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{
		Spec: &tasksv1.TaskSpec{Title: "long job", TaskKind: "batch", RetryPolicy: &tasksv1.RetryPolicy{MaxAttempts: 3}},
	})).GetTask()
	ttl := durationpb.New(300 * time.Millisecond)
	first := must[*tasksv1.PollTaskResponse](t)(c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w1", LeaseTtl: ttl}))
	if first.GetTask().GetTaskId() != task.GetTaskId() {
		t.Fatalf("poll got %v", first.GetTask())
	}
	if first.GetLeaseToken() == "" {
		t.Fatal("the poll handed out no lease token")
	}
	hb := must[*tasksv1.HeartbeatTaskResponse](t)(c.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: task.GetTaskId(), RunId: first.GetRunId(), LeaseToken: first.GetLeaseToken(), LeaseTtl: ttl}))
	if hb.GetCancelRequested() {
		t.Fatal("cancel requested")
	}
	// The run id alone (in every task.* event a viewer sees) is not the lease.
	_, err := c.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: task.GetTaskId(), RunId: first.GetRunId(), LeaseTtl: ttl})
	assertPrecondition(t, err, "LEASE_LOST")
	// w1 goes silent. w2 long-polls and gets the new attempt once the
	// sweeper has marked w1's run lost.
	second := must[*tasksv1.PollTaskResponse](t)(c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w2", Wait: durationpb.New(20 * time.Second), LeaseTtl: durationpb.New(time.Minute)}))
	if second.GetTask().GetTaskId() != task.GetTaskId() || second.GetRunId() == first.GetRunId() {
		t.Fatalf("second poll %v", second)
	}
	tk := getTask(t, c, task.GetTaskId(), second.GetResult().GetSequence()).GetTask()
	if len(tk.GetAttempts()) != 2 {
		t.Fatalf("attempts %v", tk.GetAttempts())
	}
	lost := tk.GetAttempts()[0]
	if lost.GetRunId() != first.GetRunId() || lost.GetStatus() != tasksv1.RunStatus_RUN_STATUS_LOST || lost.GetError().GetCategory() != "lost" || lost.GetWorker().GetWorkerId() != "w1" {
		t.Fatalf("lost attempt %v", lost)
	}
	if a := tk.GetAttempts()[1]; a.GetStatus() != tasksv1.RunStatus_RUN_STATUS_RUNNING || a.GetWorker().GetWorkerId() != "w2" || tk.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("new attempt %v, status %v", a, tk.GetStatus())
	}
	stale, staleToken := first.GetRunId(), first.GetLeaseToken()
	_, err = c.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: task.GetTaskId(), RunId: stale, LeaseToken: staleToken})
	assertPrecondition(t, err, "LEASE_LOST")
	// w1 cannot report progress on, complete or fail a run that is no
	// longer its.
	_, err = c.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: task.GetTaskId(), RunId: stale, LeaseToken: staleToken, Progress: &tasksv1.Progress{Phase: "stale", Percent: 90}})
	assertPrecondition(t, err, "LEASE_LOST")
	_, err = c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: task.GetTaskId(), RunId: stale, LeaseToken: staleToken, Summary: "stale"})
	assertPrecondition(t, err, "LEASE_LOST")
	_, err = c.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: task.GetTaskId(), RunId: stale, LeaseToken: staleToken, Error: &tasksv1.TaskError{Category: "stale"}})
	assertPrecondition(t, err, "LEASE_LOST")
	// Nor with the current run's id (it lacks that run's token).
	_, err = c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: task.GetTaskId(), RunId: second.GetRunId(), LeaseToken: staleToken, Summary: "stale"})
	assertPrecondition(t, err, "LEASE_LOST")
	_, err = c.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: task.GetTaskId(), RunId: second.GetRunId(), Progress: &tasksv1.Progress{Phase: "stale"}})
	assertPrecondition(t, err, "LEASE_LOST")
	// None of it was recorded: the task is as the second poll left it.
	after := getTask(t, c, task.GetTaskId(), second.GetResult().GetSequence()).GetTask()
	if after.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_RUNNING || len(after.GetAttempts()) != 2 || after.GetCurrentRunId() != second.GetRunId() ||
		after.GetProgress().GetPhase() == "stale" || after.GetAttempts()[0].GetStatus() != tasksv1.RunStatus_RUN_STATUS_LOST ||
		after.GetAttempts()[1].GetStatus() != tasksv1.RunStatus_RUN_STATUS_RUNNING || after.GetVersion() != tk.GetVersion() {
		t.Fatalf("the stale worker's reports changed the task: %v\nbefore: %v", after, tk)
	}
	// The holder is heard.
	must[*tasksv1.AppendTaskProgressResponse](t)(c.AppendTaskProgress(ctx, &tasksv1.AppendTaskProgressRequest{TaskId: task.GetTaskId(), RunId: second.GetRunId(), LeaseToken: second.GetLeaseToken(), Progress: &tasksv1.Progress{Phase: "working", Percent: 50}}))

	// Cancellation reaches the live worker in its heartbeat reply.
	cr := must[*tasksv1.CancelTaskResponse](t)(c.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: task.GetTaskId(), Reason: "user stop"}))
	if cr.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_CANCELLING {
		t.Fatalf("cancel -> %v", cr.GetStatus())
	}
	hb = must[*tasksv1.HeartbeatTaskResponse](t)(c.HeartbeatTask(ctx, &tasksv1.HeartbeatTaskRequest{TaskId: task.GetTaskId(), RunId: second.GetRunId(), LeaseToken: second.GetLeaseToken()}))
	if !hb.GetCancelRequested() {
		t.Fatal("heartbeat did not carry the cancellation")
	}
	fr := must[*tasksv1.FailTaskResponse](t)(c.FailTask(ctx, &tasksv1.FailTaskRequest{TaskId: task.GetTaskId(), RunId: second.GetRunId(), LeaseToken: second.GetLeaseToken(), Error: &tasksv1.TaskError{Category: "cancelled"}}))
	if fr.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_CANCELLED {
		t.Fatalf("settled -> %v", fr.GetStatus())
	}
}

// Another tenant sees nothing: not found, never "forbidden".
func TestTenantIsolation(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).start().client
	task := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(asTenant(ctx, "acme"), &tasksv1.CreateTaskRequest{Spec: &tasksv1.TaskSpec{Title: "secret"}})).GetTask()
	other := asTenant(ctx, "globex")
	_, err := c.GetTask(other, &tasksv1.GetTaskRequest{TaskId: task.GetTaskId()})
	wantCode(t, err, codes.NotFound)
	_, err = c.CancelTask(other, &tasksv1.CancelTaskRequest{TaskId: task.GetTaskId()})
	wantCode(t, err, codes.NotFound)
	_, err = c.CreateTask(other, &tasksv1.CreateTaskRequest{ParentTaskId: task.GetTaskId(), Spec: &tasksv1.TaskSpec{}})
	wantCode(t, err, codes.NotFound)
	list := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(other, &tasksv1.ListTasksRequest{}))
	if len(list.GetTasks()) != 0 {
		t.Fatalf("other tenant lists %d tasks", len(list.GetTasks()))
	}
	if got := must[*tasksv1.PollTaskResponse](t)(c.PollTask(other, &tasksv1.PollTaskRequest{WorkerId: "w"})); got.GetTask() != nil {
		t.Fatal("other tenant's worker got the task")
	}
}

// Cancellation records intent first, propagates to active children and
// jobs, and sticks: no new child work is accepted.
func TestCancelPropagatesAndSticks(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).start().client
	root := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: "s", Spec: &tasksv1.TaskSpec{Title: "root"}})).GetTask()
	kid := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: root.GetTaskId(), Spec: &tasksv1.TaskSpec{Title: "kid"}})).GetTask()
	grandkid := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: kid.GetTaskId(), Spec: &tasksv1.TaskSpec{Title: "grandkid"}})).GetTask()
	job := must[*tasksv1.CreateJobResponse](t)(c.CreateJob(ctx, &tasksv1.CreateJobRequest{TaskId: root.GetTaskId(), Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}}})).GetJob()
	must[*tasksv1.CancelTaskResponse](t)(c.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: root.GetTaskId(), Reason: "stop all"}))
	testkit.Eventually(t, "cancellation reaches the grandchild and the job", func() bool {
		g := getTask(t, c, grandkid.GetTaskId(), 0).GetTask()
		j := getJob(t, c, job.GetJobId(), 0)
		return g.GetStatus() == tasksv1.TaskStatus_TASK_STATUS_CANCELLED && j.GetStatus() == tasksv1.JobStatus_JOB_STATUS_CANCELLED
	})
	_, err := c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: root.GetTaskId(), Spec: &tasksv1.TaskSpec{}})
	assertPrecondition(t, err, "ILLEGAL_TRANSITION")
	_, err = c.CreateJob(ctx, &tasksv1.CreateJobRequest{TaskId: root.GetTaskId(), Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "y"}}})
	wantCode(t, err, codes.FailedPrecondition)
}

func TestGraphCycleAndValidation(t *testing.T) {
	ctx := context.Background()
	c := newEnv(t).start().client
	a := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{Spec: &tasksv1.TaskSpec{}})).GetTask()
	b := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{BlockedBy: []string{a.GetTaskId()}, Spec: &tasksv1.TaskSpec{}})).GetTask()
	cc := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{BlockedBy: []string{b.GetTaskId()}, Spec: &tasksv1.TaskSpec{}})).GetTask()
	_, err := c.LinkTasks(ctx, &tasksv1.LinkTasksRequest{TaskId: a.GetTaskId(), Relation: tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY, TargetId: cc.GetTaskId()})
	assertPrecondition(t, err, "DEPENDENCY_CYCLE")
	// Same edge, stated from the other side.
	_, err = c.LinkTasks(ctx, &tasksv1.LinkTasksRequest{TaskId: cc.GetTaskId(), Relation: tasksv1.EdgeRelation_EDGE_RELATION_BLOCKS, TargetId: a.GetTaskId()})
	assertPrecondition(t, err, "DEPENDENCY_CYCLE")
	// Unlinking b's blocker queues it.
	un := must[*tasksv1.UnlinkTasksResponse](t)(c.UnlinkTasks(ctx, &tasksv1.UnlinkTasksRequest{TaskId: b.GetTaskId(), Relation: tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY, TargetId: a.GetTaskId()}))
	if s := getTask(t, c, b.GetTaskId(), un.GetResult().GetSequence()).GetTask().GetStatus(); s != tasksv1.TaskStatus_TASK_STATUS_QUEUED {
		t.Fatalf("b after unlink: %v", s)
	}
	_, err = c.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: "not.valid"})
	wantCode(t, err, codes.InvalidArgument)
	_, err = c.RetryTask(ctx, &tasksv1.RetryTaskRequest{TaskId: a.GetTaskId()})
	wantCode(t, err, codes.InvalidArgument) // the reason is required
}
