package tasks_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/app"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// The tests of this file run the service on a log of three partitions
// (docs/adr/0013-partitions-of-the-log.md), with the tasks involved in
// sessions of different partitions (docs/partitions.md).

// partitioned is a service process on a log of three partitions.
func partitioned(t *testing.T) (*env, *process) {
	e := newEnv(t)
	e.partitions = 3
	return e, e.start()
}

// sessionsApart names one session per partition of log for tenant,
// session i in partition i.
func sessionsApart(t *testing.T, log *eventlog.Log, tenant string) []string {
	t.Helper()
	out := make([]string, log.Partitions())
	found := 0
	for i := 0; found < len(out) && i < 1000; i++ {
		s := fmt.Sprint("s", i)
		if k := log.Subjects.PartitionOf(tenant, s); out[k] == "" {
			out[k] = s
			found++
		}
	}
	if found < len(out) {
		t.Fatalf("no session found for every partition: %v", out)
	}
	return out
}

// retryUnavailable calls again while the answer is Unavailable ("the event
// log is unavailable; retry the request"), as a client does: 120 calls at
// once on a loaded machine can outwait the log's acknowledgement. A
// retried create whose first attempt landed after all answers
// AlreadyExists: the task is there, as the test wants.
func retryUnavailable(call func() error) error {
	for i := 0; ; i++ {
		err := call()
		if i > 0 && status.Code(err) == codes.AlreadyExists {
			return nil
		}
		if status.Code(err) != codes.Unavailable || i == 20 {
			return err
		}
	}
}

// Dependents are created blocked by running tasks of another partition
// while those complete: every dependent ends unblocked (XR-1).
func TestDependentsAcrossPartitionsAreUnblocked(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	blockers, dependents := sessions[0], sessions[1]
	const n = 60
	for i := range n {
		b := fmt.Sprint("blocker-", i)
		must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: b, SessionId: blockers, Spec: &tasksv1.TaskSpec{Title: b}}))
		must[*tasksv1.StartTaskResponse](t)(c.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: b, RunId: "run-" + b, Worker: worker}))
	}
	var wg sync.WaitGroup
	for i := range n {
		b, d := fmt.Sprint("blocker-", i), fmt.Sprint("dependent-", i)
		wg.Go(func() {
			if err := retryUnavailable(func() error {
				_, err := c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: b, RunId: "run-" + b})
				return err
			}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := retryUnavailable(func() error {
				_, err := c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: d, SessionId: dependents, BlockedBy: []string{b}, Spec: &tasksv1.TaskSpec{Title: d}})
				return err
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := range n {
		d := fmt.Sprint("dependent-", i)
		testkit.Eventually(t, d+" unblocked", func() bool {
			return getTask(t, c, d, 0).GetTask().GetStatus() == tasksv1.TaskStatus_TASK_STATUS_QUEUED
		})
	}
}

// Children (and jobs) are created in sessions of other partitions while
// their parent's cancellation is recorded: every child and job that was
// created ends cancelled, and every child is recorded on its parent
// (XR-2).
func TestCancellationReachesChildrenAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	parents, children, jobs := sessions[0], sessions[1], sessions[2]
	const n = 40
	for i := range n {
		id := fmt.Sprint("parent-", i)
		must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: parents, Spec: &tasksv1.TaskSpec{Title: id}}))
	}
	var mu sync.Mutex
	var kids, made []string
	var wg sync.WaitGroup
	refused := func(err error) bool { return status.Code(err) == codes.FailedPrecondition }
	for i := range n {
		parent, kid, job := fmt.Sprint("parent-", i), fmt.Sprint("child-", i), fmt.Sprint("job-", i)
		wg.Go(func() {
			if _, err := c.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: parent, Reason: "stop"}); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			_, err := c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: kid, SessionId: children, ParentTaskId: parent, Spec: &tasksv1.TaskSpec{Title: kid}})
			switch {
			case err == nil:
				mu.Lock()
				kids = append(kids, kid)
				mu.Unlock()
			case !refused(err):
				t.Error(err)
			}
		})
		wg.Go(func() {
			_, err := c.CreateJob(ctx, &tasksv1.CreateJobRequest{JobId: job, SessionId: jobs, TaskId: parent, Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}}})
			switch {
			case err == nil:
				mu.Lock()
				made = append(made, job)
				mu.Unlock()
			case !refused(err):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d of %d children and %d of %d jobs created before their parent's cancellation", len(kids), n, len(made), n)
	for _, kid := range kids {
		testkit.Eventually(t, kid+" cancelled", func() bool {
			return getTask(t, c, kid, 0).GetTask().GetStatus() == tasksv1.TaskStatus_TASK_STATUS_CANCELLED
		})
	}
	for _, job := range made {
		testkit.Eventually(t, job+" cancelled", func() bool {
			return getJob(t, c, job, 0).GetStatus() == tasksv1.JobStatus_JOB_STATUS_CANCELLED
		})
	}
}

// waits tells when a read waits for a checkpoint of the records.
type waits struct {
	projection.Store
	waiting chan string
}

func (w waits) WaitFor(ctx context.Context, name string, seq uint64) (uint64, error) {
	if strings.HasPrefix(name, "tasks.records") {
		select {
		case w.waiting <- name:
		default:
		}
	}
	return w.Store.WaitFor(ctx, name, seq)
}

// A worker's long poll is woken by a task made runnable in any
// partition, not by its nap (GS-4): the nap is an hour and the poll
// waits a minute here, so a poll that waited on one partition only would
// not answer before the test's deadline.
func TestPollWakesOnAnyPartition(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for k := range 3 {
		w := waits{waiting: make(chan string, 1)}
		e := newEnv(t)
		e.partitions = 3
		e.opts.PollNap = time.Hour
		e.wrap = func(s projection.Store) projection.Store { w.Store = s; return w }
		p := e.start()
		c := p.client
		// Warm: the poll's first look does not wait for a rebuild, and
		// the poll is the only reader that waits.
		must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{}))
		polled := make(chan *tasksv1.PollTaskResponse, 1)
		go func() {
			got, err := c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w", Wait: durationpb.New(time.Minute)})
			if err != nil && ctx.Err() == nil {
				t.Error(err)
			}
			polled <- got
		}()
		select {
		case <-w.waiting: // the poll found nothing and sleeps
		case <-time.After(20 * time.Second):
			t.Fatal("the poll never waited")
		}
		id := fmt.Sprint("polled-", k)
		session := sessionsApart(t, p.log, "t1")[k]
		must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: session, Spec: &tasksv1.TaskSpec{Title: id}}))
		select {
		case got := <-polled:
			if got.GetTask().GetTaskId() != id {
				t.Fatalf("partition %d: the poll answered %v, want %s", k, got.GetTask(), id)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("partition %d: a task became runnable and the poll slept on", k)
		}
		p.stop()
	}
}

// A job (or a child) whose create read its task before the task's
// cancellation and was appended after the cancellation's reaction had
// listed the task's jobs (children) is cancelled by its own reaction.
// The late creates are appended to the log as another replica's
// CreateJob (CreateTask) would have, the cancellation's reaction having
// finished first.
func TestLateJobAndChildOfACancelledTaskAreCancelled(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "parent", SessionId: sessions[0], Spec: &tasksv1.TaskSpec{Title: "parent"}}))
	before := getTask(t, c, "parent", 0).GetTask()
	cancelled := must[*tasksv1.CancelTaskResponse](t)(c.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: "parent", Reason: "stop"}))
	if _, err := projector.WaitFor(ctx, p.log, tasks.StoreOf(p.svc), app.ReactorName, cancelled.GetResult().GetSequence(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	job, err := domain.DecideCreateJob(nil, domain.CreateJob{JobID: "late-job", SessionID: sessions[1], TaskID: "parent", Spec: &tasksv1.JobSpec{},
		Items: []domain.JobItemInput{{ItemID: "x"}}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.log.AppendAtomic(ctx, eventlog.Aggregate{Tenant: "t1", Session: sessions[1], Kind: "job", ID: "late-job"}, eventlog.Any, job...); err != nil {
		t.Fatal(err)
	}
	child, err := domain.DecideCreate(nil, domain.Create{TaskID: "late-child", SessionID: sessions[2], Spec: &tasksv1.TaskSpec{Title: "late"}, Parent: before, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.log.AppendAtomic(ctx, eventlog.Aggregate{Tenant: "t1", Session: sessions[2], Kind: "task", ID: "late-child"}, eventlog.Any, child...); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the late job and child cancelled", func() bool {
		return getJob(t, c, "late-job", 0).GetStatus() == tasksv1.JobStatus_JOB_STATUS_CANCELLED &&
			getTask(t, c, "late-child", 0).GetTask().GetStatus() == tasksv1.TaskStatus_TASK_STATUS_CANCELLED
	})
}

// A tenant's tasks, created in sessions of three partitions, are listed
// page by page while more are created (GS-8): every task created before a
// page was asked for is listed once. The sessions are uneven, so one
// partition's positions run far ahead of the others': a cursor that was a
// position would pass over the tasks created later in the quieter
// partitions.
func TestListingAcrossPartitionsPagesEveryTaskOnce(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	n := 0
	var created []string
	last := map[string]uint64{}
	create := func(session string) *tasksv1.CreateTaskResponse {
		// Ids in creation order: tasks created in one millisecond are
		// ordered by id.
		id := fmt.Sprintf("t%05d", n)
		n++
		res := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: session, Spec: &tasksv1.TaskSpec{Title: id}}))
		created = append(created, id)
		last[session] = res.GetResult().GetSequence()
		return res
	}
	for i := range 36 {
		switch {
		case i%12 == 0:
			create(sessions[1])
		case i%12 == 1:
			create(sessions[2])
		default:
			create(sessions[0])
		}
	}
	// Every task so far is in the read model: each partition caught up
	// to its session's last write.
	for _, s := range sessions {
		must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{PageSize: 1, MinSequence: last[s]}))
	}
	listed := map[string]int{}
	token := ""
	for pages := 0; ; pages++ {
		if pages > 200 {
			t.Fatal("the listing does not end")
		}
		page := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{PageSize: 3, PageToken: token}))
		for _, tk := range page.GetTasks() {
			listed[tk.GetTaskId()]++
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
		// One more task, in a quiet partition, before the next page.
		res := create(sessions[1+pages%2])
		getTask(t, c, res.GetTask().GetTaskId(), res.GetResult().GetSequence())
	}
	for id, k := range listed {
		if k != 1 {
			t.Errorf("%s listed %d times", id, k)
		}
	}
	for _, id := range created {
		if listed[id] == 0 {
			t.Errorf("%s created before the listing ended and never listed", id)
		}
	}
	t.Logf("%d tasks created, %d listed", len(created), len(listed))
}

// Tasks created in one millisecond share their score: a page that ends
// among them is followed by the rest of them, each once, also when their
// ids are too long for a page token and share its prefix.
func TestListingPagesThroughTasksOfOneMillisecond(t *testing.T) {
	e := newEnv(t)
	e.partitions = 3
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e.opts.Now = func() time.Time { return at }
	p := e.start()
	c := p.client
	for tenant, prefix := range map[string]string{"t1": "same-", "t2": strings.Repeat("long", 25) + "-"} {
		ctx := asTenant(context.Background(), tenant)
		sessions := sessionsApart(t, p.log, tenant)
		last := map[string]uint64{}
		var want []string
		for i := range 10 {
			s, id := sessions[i%3], fmt.Sprint(prefix, i)
			res := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: s, Spec: &tasksv1.TaskSpec{}}))
			last[s] = res.GetResult().GetSequence()
			want = append(want, id)
		}
		for _, s := range sessions {
			must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{PageSize: 1, MinSequence: last[s]}))
		}
		var ids []string
		token := ""
		for range 10 {
			page := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{PageSize: 3, PageToken: token}))
			for _, tk := range page.GetTasks() {
				ids = append(ids, tk.GetTaskId())
			}
			if token = page.GetNextPageToken(); token == "" {
				break
			}
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("listed %v, want %v", ids, want)
		}
	}
	_, err := c.ListTasks(context.Background(), &tasksv1.ListTasksRequest{PageToken: "17"})
	wantCode(t, err, codes.InvalidArgument)
}

// A thread is of a session (LU-4): a task (or a job's item) naming one
// needs a session, or the control plane would fold the task's facts, of
// the session-less partition, into a thread of another partition.
func TestThreadNeedsASession(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	wantField := func(err error) {
		t.Helper()
		st := wantCode(t, err, codes.InvalidArgument)
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				for _, v := range br.GetFieldViolations() {
					if v.GetField() == "thread_id" {
						return
					}
				}
			}
		}
		t.Fatalf("no violation of thread_id in %v", err)
	}
	_, err := c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "loose", ThreadId: "th1", Spec: &tasksv1.TaskSpec{}})
	wantField(err)
	loose := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "loose", Spec: &tasksv1.TaskSpec{}}))
	_, err = c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: loose.GetTask().GetTaskId(), ThreadId: "th1", Spec: &tasksv1.TaskSpec{}})
	wantField(err)
	// In a session, or in the session of its parent: the thread is taken
	// as the session's.
	must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "bound", SessionId: "s1", ThreadId: "th1", Spec: &tasksv1.TaskSpec{}}))
	kid := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{ParentTaskId: "bound", ThreadId: "th2", Spec: &tasksv1.TaskSpec{}})).GetTask()
	if kid.GetSessionId() != "s1" || kid.GetThreadId() != "th2" {
		t.Fatalf("child in session %q thread %q, want s1 th2", kid.GetSessionId(), kid.GetThreadId())
	}
	job := must[*tasksv1.CreateJobResponse](t)(c.CreateJob(ctx, &tasksv1.CreateJobRequest{Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}}})).GetJob()
	_, err = c.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job.GetJobId(), ItemId: "x", ThreadId: "th1"})
	wantField(err)
	must[*tasksv1.StartJobItemResponse](t)(c.StartJobItem(ctx, &tasksv1.StartJobItemRequest{JobId: job.GetJobId(), ItemId: "x"}))
}

// One task id created in two sessions of different partitions (creates
// that each passed before the other was folded, appended here as two
// replicas would have): the record is the earlier create's, folded from
// its own session's facts only, whichever partition is folded first
// (LU-5).
func TestTaskIdOfTwoSessionsKeepsTheFirst(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	first, second := sessions[0], sessions[1]
	at := time.Now().Truncate(time.Millisecond)
	create := func(id, session, title string, now time.Time) (*tasksv1.Task, uint64) {
		evs, err := domain.DecideCreate(nil, domain.Create{TaskID: id, SessionID: session, Spec: &tasksv1.TaskSpec{Title: title}, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		ap, err := p.log.AppendAtomic(ctx, eventlog.Aggregate{Tenant: "t1", Session: session, Kind: "task", ID: id}, eventlog.Any, evs...)
		if err != nil {
			t.Fatal(err)
		}
		var tk *tasksv1.Task
		for i, ev := range evs {
			ev.Sequence = ap[i].Sequence
			tk = domain.Apply(tk, ev)
		}
		return tk, ap[len(ap)-1].Sequence
	}
	update := func(tk *tasksv1.Task, session, title string) uint64 {
		evs, err := domain.DecideUpdate(tk, &tasksv1.TaskSpec{Title: title}, []string{"title"}, at.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ap, err := p.log.AppendAtomic(ctx, eventlog.Aggregate{Tenant: "t1", Session: session, Kind: "task", ID: tk.GetTaskId()}, eventlog.ExpectSequence(tk.GetVersion()), evs...)
		if err != nil {
			t.Fatal(err)
		}
		return ap[len(ap)-1].Sequence
	}
	check := func(id string, seqs ...uint64) {
		t.Helper()
		var tk *tasksv1.Task
		for _, seq := range seqs {
			tk = getTask(t, c, id, seq).GetTask() // each partition caught up
		}
		if tk.GetSessionId() != first || tk.GetSpec().GetTitle() != "first" {
			t.Fatalf("%s: session %q title %q, want the first create's (%s, \"first\")", id, tk.GetSessionId(), tk.GetSpec().GetTitle(), first)
		}
		for _, s := range sessions[:2] {
			listed := false
			for _, tk := range must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{SessionId: s})).GetTasks() {
				listed = listed || tk.GetTaskId() == id
			}
			if listed != (s == first) {
				t.Fatalf("%s listed in session %s: %v", id, s, listed)
			}
		}
	}
	// The first create folded first, then the second session's create and
	// a fact of it.
	_, a := create("dup-1", first, "first", at)
	getTask(t, c, "dup-1", a)
	late, b := create("dup-1", second, "second", at.Add(time.Second))
	check("dup-1", b, update(late, second, "second again"))
	// The second create folded first, then the first create, then a fact
	// of the second session.
	late, b = create("dup-2", second, "second", at.Add(time.Second))
	getTask(t, c, "dup-2", b)
	_, a = create("dup-2", first, "first", at)
	check("dup-2", a, update(late, second, "second again"))
}

// After a restart the read model rebuilds every partition: a listing
// waits until it holds every task in the log, and a task looked up by id
// is found whatever partition it is in (GS-7). A tenant-wide read answers
// the checkpoint of its min_sequence's partition, or 0 without one.
func TestRestartRebuildsEveryPartition(t *testing.T) {
	ctx := context.Background()
	e, p := partitioned(t)
	sessions := append(sessionsApart(t, p.log, "t1"), "")
	var ids []string
	writes := map[string]uint64{}
	for i := range 12 {
		s := sessions[i%len(sessions)]
		res := must[*tasksv1.CreateTaskResponse](t)(p.client.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: s, Spec: &tasksv1.TaskSpec{Title: fmt.Sprint(i)}}))
		ids = append(ids, res.GetTask().GetTaskId())
		writes[s] = res.GetResult().GetSequence()
	}
	p.stop()
	p = e.start()
	c := p.client
	list := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{PageSize: 100}))
	if len(list.GetTasks()) != len(ids) {
		t.Fatalf("listed %d tasks after the restart, want %d", len(list.GetTasks()), len(ids))
	}
	if list.GetSequence() != 0 {
		t.Fatalf("a listing without min_sequence answered sequence %d, want 0", list.GetSequence())
	}
	p.stop()
	p = e.start()
	c = p.client
	for _, id := range ids {
		getTask(t, c, id, 0)
	}
	for s, seq := range writes {
		got := must[*tasksv1.ListTasksResponse](t)(c.ListTasks(ctx, &tasksv1.ListTasksRequest{MinSequence: seq})).GetSequence()
		if got < seq || p.log.PartitionOfPosition(got) != p.log.PartitionOfPosition(seq) {
			t.Fatalf("session %q: a listing at min_sequence %d answered %d, want a checkpoint of its partition", s, seq, got)
		}
	}
}

// A read of one task or job with no token answers the position its
// session's partition has reached: at least its creation, in that
// partition (a token to subscribe to the session after).
func TestReadsOfATaskAnswerTheirSessionsPosition(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	for _, session := range append(sessionsApart(t, p.log, "t1"), "") {
		created := must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: session, Spec: &tasksv1.TaskSpec{Title: "read me"}}))
		pos := created.GetResult().GetSequence()
		if _, err := c.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: created.GetTask().GetTaskId(), MinSequence: pos}); err != nil {
			t.Fatal(err)
		}
		got := must[*tasksv1.GetTaskResponse](t)(c.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: created.GetTask().GetTaskId()}))
		if got.GetSequence() < pos || p.log.PartitionOfPosition(got.GetSequence()) != p.log.PartitionOfPosition(pos) {
			t.Fatalf("session %q: GetTask answers %d, want its partition's position, at least %d", session, got.GetSequence(), pos)
		}
		job := must[*tasksv1.CreateJobResponse](t)(c.CreateJob(ctx, &tasksv1.CreateJobRequest{SessionId: session, Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}}}))
		jpos := job.GetResult().GetSequence()
		if _, err := c.GetJob(ctx, &tasksv1.GetJobRequest{JobId: job.GetJob().GetJobId(), MinSequence: jpos}); err != nil {
			t.Fatal(err)
		}
		gotJob := must[*tasksv1.GetJobResponse](t)(c.GetJob(ctx, &tasksv1.GetJobRequest{JobId: job.GetJob().GetJobId()}))
		if gotJob.GetSequence() < jpos || p.log.PartitionOfPosition(gotJob.GetSequence()) != p.log.PartitionOfPosition(jpos) {
			t.Fatalf("session %q: GetJob answers %d, want its partition's position, at least %d", session, gotJob.GetSequence(), jpos)
		}
	}
}

// A task whose creation read its two blockers as queued, appended after
// both completed (the race XR-1 names: the blockers' own reactions did
// not list it yet), learns both outcomes from its creation's reaction:
// the two updates, one per blocker, are two facts, not one dropped as the
// other's duplicate, and the task becomes runnable.
func TestADependentCreatedAsItsBlockersEndLearnsEachOutcome(t *testing.T) {
	ctx := context.Background()
	_, p := partitioned(t)
	c := p.client
	sessions := sessionsApart(t, p.log, "t1")
	blockers := map[string]domain.S{}
	for i, id := range []string{"x", "y"} {
		must[*tasksv1.CreateTaskResponse](t)(c.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: id, SessionId: sessions[i], Spec: &tasksv1.TaskSpec{Title: id}}))
		blockers[id] = domain.BlockerStatus(getTask(t, c, id, 0).GetTask())
	}
	var last uint64
	for range 2 {
		poll := must[*tasksv1.PollTaskResponse](t)(c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w", Wait: durationpb.New(10 * time.Second), LeaseTtl: durationpb.New(time.Minute)}))
		done := must[*tasksv1.CompleteTaskResponse](t)(c.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: poll.GetTask().GetTaskId(), RunId: poll.GetRunId(), LeaseToken: poll.GetLeaseToken()}))
		last = max(last, done.GetResult().GetSequence())
	}
	if _, err := projector.WaitFor(ctx, p.log, tasks.StoreOf(p.svc), app.ReactorName, last, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	evs, err := domain.DecideCreate(nil, domain.Create{TaskID: "d", SessionID: sessions[2], BlockedBy: []string{"x", "y"}, Blockers: blockers,
		Spec: &tasksv1.TaskSpec{Title: "d"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.log.AppendAtomic(ctx, eventlog.Aggregate{Tenant: "t1", Session: sessions[2], Kind: "task", ID: "d"}, eventlog.Any, evs...); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "d runnable, both its edges satisfied", func() bool {
		d := getTask(t, c, "d", 0).GetTask()
		for _, e := range d.GetEdges() {
			if e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_SATISFIED {
				return false
			}
		}
		return d.GetStatus() == tasksv1.TaskStatus_TASK_STATUS_QUEUED
	})
}
