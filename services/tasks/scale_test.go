package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/app"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// appEnv runs the service in process and drives its app layer directly
// (no gRPC), for the scale tests.
func appEnv(t testing.TB, deps func(*kit.Deps)) (*tasks.Service, *eventlog.Log, *nats.Conn) {
	ns := natstest.Server(t)
	nc := natstest.Connect(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Partitions: natstest.Partitions(t)})
	if err != nil {
		t.Fatal(err)
	}
	d := kit.Deps{Log: log, Store: projection.NewMemory()}
	if deps != nil {
		deps(&d)
	}
	svc := tasks.NewWithOptions(d, tasks.Options{SweepInterval: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() { _ = svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return svc, log, nc
}

// A graph of 10,000 tasks with dependencies completes in dependency
// order, with no task started early. Task i is blocked by tasks (i-1)/2
// and (i-2)/2: two blockers each, fourteen levels deep. Workers poll and
// complete; the proof is read back from the log: every task's first
// attempt started after every blocker's completion.
func TestTenThousandTaskGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	n := graphSize
	svc, log, _ := appEnv(t, nil)
	a := svc.App()
	ctx := context.Background()
	id := func(i int) string { return fmt.Sprintf("g%05d", i) }
	blockers := func(i int) []string {
		switch i {
		case 0:
			return nil
		case 1:
			return []string{id(0)}
		}
		return []string{id((i - 1) / 2), id((i - 2) / 2)}
	}
	began := time.Now()
	// Create level by level (a task's blockers must exist), in parallel
	// within a level.
	for lo := 0; lo < n; lo = 2*lo + 1 {
		hi := min(2*lo+1, n)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := lo; i < hi; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				bl := blockers(i)
				if len(bl) == 2 && bl[0] == bl[1] {
					bl = bl[:1]
				}
				if _, _, err := a.CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{TaskId: id(i), SessionId: "graph", BlockedBy: bl, Spec: &tasksv1.TaskSpec{Title: id(i)}}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	created := time.Since(began)

	var mu sync.Mutex
	completed := 0
	done := map[string]bool{}
	// A graph that stops completing fails the test, saying which tasks were
	// left and where they stand, instead of hanging until the binary's
	// timeout.
	runCtx, stalled := context.WithCancel(ctx)
	defer stalled()
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		last, since := -1, time.Now()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			mu.Lock()
			now := completed
			mu.Unlock()
			if now != last {
				last, since = now, time.Now()
				continue
			}
			if time.Since(since) > 60*time.Second {
				t.Errorf("no task completed for a minute, %d of %d done; %s", now, n, graphLeft(ctx, a, n, id, &mu, done))
				stalled()
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				finished := completed == n
				mu.Unlock()
				if finished || runCtx.Err() != nil {
					return
				}
				got, err := a.PollTask(runCtx, "t1", &tasksv1.PollTaskRequest{WorkerId: fmt.Sprint("w", w), Wait: durpb(200 * time.Millisecond), LeaseTtl: durpb(time.Minute)})
				if runCtx.Err() != nil {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if got.Task == nil {
					continue
				}
				if _, err := a.CompleteTask(runCtx, "t1", &tasksv1.CompleteTaskRequest{TaskId: got.Task.GetTaskId(), RunId: got.RunID, LeaseToken: got.LeaseToken}); err != nil {
					if runCtx.Err() == nil {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				completed++
				done[got.Task.GetTaskId()] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stalled()
	<-watch
	ran := time.Since(began) - created
	if t.Failed() {
		t.FailNow()
	}

	// Read the facts back from the log.
	startedAt := map[string]uint64{}
	completedAt := map[string]uint64{}
	starts := map[string]int{}
	if _, err := log.Read(ctx, []string{log.Subjects.Session("t1", "graph")}, eventlog.FromStart, func(r *eventlog.Record) error {
		switch r.Event.GetType() {
		case domain.TypeAttemptStarted:
			starts[r.Event.GetTaskId()]++
			if _, ok := startedAt[r.Event.GetTaskId()]; !ok {
				startedAt[r.Event.GetTaskId()] = r.Event.GetSequence()
			}
		case domain.TypeTaskCompleted:
			completedAt[r.Event.GetTaskId()] = r.Event.GetSequence()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if completedAt[id(i)] == 0 || starts[id(i)] != 1 {
			t.Fatalf("%s: completed at %d, started %d times", id(i), completedAt[id(i)], starts[id(i)])
		}
		for _, b := range blockers(i) {
			if startedAt[id(i)] < completedAt[b] {
				t.Fatalf("%s started at %d before its blocker %s completed at %d", id(i), startedAt[id(i)], b, completedAt[b])
			}
		}
	}
	t.Logf("%d tasks: created in %v, run to completion in dependency order in %v", n, created.Round(time.Millisecond), ran.Round(time.Millisecond))
}

// graphLeft says which of the graph's tasks are not done, and for the
// first few, where the read model has them and their blockers.
func graphLeft(ctx context.Context, a *app.App, n int, id func(int) string, mu *sync.Mutex, done map[string]bool) string {
	mu.Lock()
	var left []string
	for i := range n {
		if !done[id(i)] {
			left = append(left, id(i))
		}
	}
	mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d left", len(left))
	for _, tid := range left[:min(len(left), 5)] {
		task, edges, seq, err := a.GetTask(ctx, "t1", tid, 0)
		if err != nil {
			fmt.Fprintf(&b, "; %s: %v", tid, err)
			continue
		}
		fmt.Fprintf(&b, "; %s at %d: %s", tid, seq, task.GetStatus())
		for _, e := range edges {
			fmt.Fprintf(&b, ", %s %s %s (%s)", e.GetSourceTaskId(), e.GetRelation(), e.GetTargetId(), e.GetStatus())
		}
	}
	return b.String()
}

// Many workers polling at once never get the same run, nor the same task
// twice, against real Redis leases and several service replicas sharing
// one log and one read model.
func TestConcurrentPollersRedis(t *testing.T) {
	client := redistest.Client(t)
	svc, log, _ := appEnv(t, func(d *kit.Deps) { d.Redis = client })
	// A second replica on the same log, read model and Redis.
	replica := tasks.NewWithOptions(kit.Deps{Log: log, Store: tasks.StoreOf(svc), Redis: client}, tasks.Options{})
	ctx := context.Background()
	const n, workers = 60, 24
	var last uint64
	for i := 0; i < n; i++ {
		res, _, err := svc.App().CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{Spec: &tasksv1.TaskSpec{Title: fmt.Sprint(i)}})
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, res.Write.GetSequence())
	}
	// Commands answer without waiting for the read model; the pollers,
	// which give up on an empty runnable index, start once it holds them.
	if _, _, _, err := svc.App().ListTasks(ctx, "t1", &tasksv1.ListTasksRequest{MinSequence: last}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	byTask := map[string][]string{}
	runs := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := svc.App()
			if w%2 == 1 {
				a = replica.App()
			}
			for {
				got, err := a.PollTask(ctx, "t1", &tasksv1.PollTaskRequest{WorkerId: fmt.Sprint("w", w), LeaseTtl: durpb(time.Minute)})
				if err != nil {
					t.Error(err)
					return
				}
				if got.Task == nil {
					return
				}
				mu.Lock()
				last = max(last, got.Write.GetSequence())
				byTask[got.Task.GetTaskId()] = append(byTask[got.Task.GetTaskId()], fmt.Sprint("w", w))
				if runs[got.RunID] {
					t.Errorf("run %s handed out twice", got.RunID)
				}
				runs[got.RunID] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(byTask) != n {
		t.Fatalf("%d of %d tasks handed out", len(byTask), n)
	}
	for id, ws := range byTask {
		if len(ws) != 1 {
			t.Errorf("task %s handed to %v", id, ws)
		}
		tk, _, _, err := svc.App().GetTask(ctx, "t1", id, last)
		if err != nil || len(tk.GetAttempts()) != 1 {
			t.Errorf("task %s attempts %v %v", id, tk.GetAttempts(), err)
		}
	}
}

func durpb(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
