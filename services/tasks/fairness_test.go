package tasks_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// PollTask's order (docs/services/tasks.md, "Claim order"): priority
// first, then weighted fair share across fairness keys, then arrival.

// waiting is one task to create: its session and how it is handed out.
type waiting struct {
	session, key string
	priority     uint32
}

// createAll creates every task (8 at a time) and waits until the read
// model has queued them all, so polls choose among all of them.
func createAll(t *testing.T, ctx context.Context, c tasksv1.TasksServiceClient, store projection.Store, ws []waiting) map[string]waiting {
	t.Helper()
	byTask := make(map[string]waiting, len(ws))
	var mu sync.Mutex
	testkit.Parallel(8, ws, func(w waiting) {
		resp, err := c.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: w.session, Spec: &tasksv1.TaskSpec{Title: "work"}, Priority: w.priority, FairnessKey: w.key})
		if err != nil {
			t.Errorf("CreateTask: %v", err)
			return
		}
		mu.Lock()
		byTask[resp.Task.GetTaskId()] = w
		mu.Unlock()
	})
	if t.Failed() {
		t.FailNow()
	}
	waitTasksQueued(t, ctx, store, len(ws))
	return byTask
}

// waitTasksQueued waits until n tasks of tenant t1 are queued.
func waitTasksQueued(t *testing.T, ctx context.Context, store projection.Store, n int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d tasks queued", n), func() bool {
		got := int64(0)
		for p := uint32(1); p <= 5; p++ {
			c, err := store.Count(ctx, readmodel.TaskQueue.Index("t1", p))
			if err != nil {
				t.Fatal(err)
			}
			got += c
		}
		return got == int64(n)
	})
}

// pollN polls n tasks through each poll function in turn and answers the
// task ids in poll order; no task is handed out twice.
func pollN(t *testing.T, n int, polls ...func() (*tasksv1.Task, error)) []string {
	t.Helper()
	var order []string
	seen := map[string]bool{}
	for i := range n {
		task, err := polls[i%len(polls)]()
		if err != nil {
			t.Fatalf("poll %d: %v", i+1, err)
		}
		if task == nil {
			t.Fatalf("poll %d found nothing", i+1)
		}
		if seen[task.GetTaskId()] {
			t.Fatalf("task %s handed out twice", task.GetTaskId())
		}
		seen[task.GetTaskId()] = true
		order = append(order, task.GetTaskId())
	}
	return order
}

func grpcPoll(ctx context.Context, c tasksv1.TasksServiceClient) func() (*tasksv1.Task, error) {
	return func() (*tasksv1.Task, error) {
		resp, err := c.PollTask(ctx, &tasksv1.PollTaskRequest{WorkerId: "w1"})
		return resp.GetTask(), err
	}
}

// noisyAndQuietTasks: 300 tasks of one key, then 3 of each of five quiet
// keys (their sessions: the default key).
func noisyAndQuietTasks(sessions func(i int) string) []waiting {
	var ws []waiting
	for i := range 300 {
		ws = append(ws, waiting{session: sessions(i), key: "user-noisy"})
	}
	for k := range 5 {
		for range 3 {
			ws = append(ws, waiting{session: fmt.Sprintf("quiet-%d", k)})
		}
	}
	return ws
}

// assertQuietPolledFirst checks that every quiet task (of its session's
// key) was among the first bound polled.
func assertQuietPolledFirst(t *testing.T, order []string, byTask map[string]waiting, bound int) {
	t.Helper()
	testkit.Within(t, order, func(id string) bool { return byTask[id].key == "" }, 15, bound)
}

func TestPollSharesTasksFairlyAcrossKeys(t *testing.T) {
	p := newEnv(t).start()
	ctx := asTenant(context.Background(), "t1")
	byTask := createAll(t, ctx, p.client, tasks.StoreOf(p.svc), noisyAndQuietTasks(func(i int) string { return fmt.Sprint("noisy-", i%10) }))
	order := pollN(t, 40, grpcPoll(ctx, p.client))
	assertQuietPolledFirst(t, order, byTask, 40)
	got, err := p.client.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: order[len(order)-1]})
	if err != nil {
		t.Fatal(err)
	}
	if w := byTask[order[len(order)-1]]; got.Task.GetPriority() != 3 || got.Task.GetFairnessWeight() != 1 ||
		got.Task.GetFairnessKey() != map[bool]string{true: w.key, false: w.session}[w.key != ""] {
		t.Fatalf("task reads priority %d key %q weight %v; created %+v", got.Task.GetPriority(), got.Task.GetFairnessKey(), got.Task.GetFairnessWeight(), w)
	}
}

// An urgent task created behind 1,000 waiting tasks of the default
// priority is the next one polled.
func TestAnUrgentTaskIsPolledFirst(t *testing.T) {
	p := newEnv(t).start()
	ctx := asTenant(context.Background(), "t1")
	var ws []waiting
	for i := range 1000 {
		ws = append(ws, waiting{session: fmt.Sprint("bulk-", i%20)})
	}
	store := tasks.StoreOf(p.svc)
	createAll(t, ctx, p.client, store, ws)
	urgent, err := p.client.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: "urgent", Spec: &tasksv1.TaskSpec{Title: "now"}, Priority: 1, FairnessKey: "user-42"})
	if err != nil {
		t.Fatal(err)
	}
	if urgent.Task.GetPriority() != 1 || urgent.Task.GetFairnessKey() != "user-42" {
		t.Fatalf("created task reads priority %d key %q", urgent.Task.GetPriority(), urgent.Task.GetFairnessKey())
	}
	waitTasksQueued(t, ctx, store, 1001)
	if got := pollN(t, 2, grpcPoll(ctx, p.client)); got[0] != urgent.Task.GetTaskId() {
		t.Fatalf("polled %v, want the urgent task %s first", got, urgent.Task.GetTaskId())
	}
}

// Bad classes, on a task or a job item, are InvalidArgument naming the
// field.
func TestCreateRefusesBadClasses(t *testing.T) {
	p := newEnv(t).start()
	ctx := asTenant(context.Background(), "t1")
	for _, tc := range []struct {
		field string
		mod   func(*tasksv1.CreateTaskRequest)
	}{
		{"priority", func(r *tasksv1.CreateTaskRequest) { r.Priority = 9 }},
		{"fairness_key", func(r *tasksv1.CreateTaskRequest) { r.FairnessKey = string(make([]byte, 65)) }},
		{"fairness_weight", func(r *tasksv1.CreateTaskRequest) { r.FairnessWeight = proto.Float32(0) }},
		{"fairness_weight", func(r *tasksv1.CreateTaskRequest) { r.FairnessWeight = proto.Float32(float32(math.NaN())) }},
	} {
		req := &tasksv1.CreateTaskRequest{Spec: &tasksv1.TaskSpec{Title: "x"}}
		tc.mod(req)
		_, err := p.client.CreateTask(ctx, req)
		if st := wantCode(t, err, codes.InvalidArgument); !containsField(st, tc.field) {
			t.Fatalf("error %q does not name %s", st.Message(), tc.field)
		}
	}
	_, err := p.client.CreateJob(ctx, &tasksv1.CreateJobRequest{Spec: &tasksv1.JobSpec{Title: "j"},
		Items: []*tasksv1.JobItemInput{{InputRef: "a"}, {InputRef: "b", Priority: 7}}})
	if st := wantCode(t, err, codes.InvalidArgument); !containsField(st, "items[1].priority") {
		t.Fatalf("error %q does not name items[1].priority", st.Message())
	}
	job, err := p.client.CreateJob(ctx, &tasksv1.CreateJobRequest{SessionId: "s1", Spec: &tasksv1.JobSpec{Title: "j"},
		Items: []*tasksv1.JobItemInput{{InputRef: "a"}, {InputRef: "b", Priority: 1, FairnessKey: "user-7", FairnessWeight: proto.Float32(2)}}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := job.Job.GetItems()[0], job.Job.GetItems()[1]; a.GetPriority() != 3 || a.GetFairnessKey() != "s1" || a.GetFairnessWeight() != 1 ||
		b.GetPriority() != 1 || b.GetFairnessKey() != "user-7" || b.GetFairnessWeight() != 2 {
		t.Fatalf("job items read %v and %v", a, b)
	}
}

// containsField says whether the error's message or details name field.
func containsField(st *status.Status, field string) bool {
	return strings.Contains(prototext.Format(st.Proto()), field)
}

// On a log of three partitions, with a second replica on the same read
// model and Redis leases polling in turn with the first, the order is the
// same; an urgent task in another partition is polled first.
func TestFairPollsAcrossPartitionsAndReplicas(t *testing.T) {
	client := redistest.Client(t)
	e := newEnv(t)
	e.partitions, e.redis = 3, client
	p := e.start()
	store := tasks.StoreOf(p.svc)
	replica := tasks.NewWithOptions(kit.Deps{Log: p.log, Store: store, Redis: client}, tasks.Options{})
	ctx := asTenant(context.Background(), "t1")
	sessions := sessionsApart(t, p.log, "t1")
	byTask := createAll(t, ctx, p.client, store, noisyAndQuietTasks(func(i int) string { return sessions[i%3] }))
	replicaPoll := func() (*tasksv1.Task, error) {
		got, err := replica.App().PollTask(context.Background(), "t1", &tasksv1.PollTaskRequest{WorkerId: "w2"})
		return got.Task, err
	}
	order := pollN(t, 40, grpcPoll(ctx, p.client), replicaPoll)
	assertQuietPolledFirst(t, order, byTask, 40)

	urgent, err := p.client.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: sessions[1], Spec: &tasksv1.TaskSpec{Title: "now"}, Priority: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The urgent task queued (a count alone can be reached while it is
	// not, with a polled task's removal not folded yet).
	testkit.Eventually(t, "the urgent task queued at priority 1", func() bool {
		entries, err := store.Range(ctx, readmodel.TaskQueue.Index("t1", 1), projection.RangeQuery{})
		if err != nil {
			t.Fatal(err)
		}
		return len(entries) == 1 && entries[0].Member == urgent.Task.GetTaskId()
	})
	waitTasksQueued(t, ctx, store, 315-40+1)
	if got := pollN(t, 1, replicaPoll); got[0] != urgent.Task.GetTaskId() {
		t.Fatalf("polled %s, want the urgent task %s", got[0], urgent.Task.GetTaskId())
	}
}
