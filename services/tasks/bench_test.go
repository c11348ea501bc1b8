package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks"
	"github.com/agentruntime/agentruntime/services/tasks/app"
)

// lifecycleEnv runs the service in one of the shapes it is deployed in
// and answers its app, a connection to the same NATS and the stream's
// replica count:
//
//   - dev: JetStream embedded in the process, the read model in memory;
//   - serve: nats-server as its own process (R1), the read model and the
//     worker leases in Redis (redis-server as its own process);
//   - serve-r3: serve on a 3-node nats-server cluster, the log at R3 (how
//     production runs it).
func lifecycleEnv(b *testing.B, shape string) (*app.App, *nats.Conn, int) {
	if shape == "dev" {
		svc, _, nc := appEnv(b, nil)
		return svc.App(), nc, 1
	}
	url, replicas := "", 1
	if shape == "serve" {
		url = natsserver.Start(b).URL
	} else {
		url, replicas = natsserver.StartCluster(b, 3).URLs(), 3
	}
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	ctx, cancel := context.WithCancel(context.Background())
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Replicas: replicas})
	if err != nil {
		b.Fatal(err)
	}
	rc := redistest.Client(b)
	svc := tasks.NewWithOptions(kit.Deps{Log: log, Store: projection.NewRedis(rc, "agentruntime:tasks:"+ids.New("ns")), Redis: rc},
		tasks.Options{SweepInterval: 100 * time.Millisecond})
	done := make(chan struct{})
	go func() { _ = svc.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return svc.App(), nc, replicas
}

// BenchmarkTaskLifecycle measures create -> start -> complete through the
// app layer (the writer's decisions and appends, the projector, reactor
// and sweeper running beside them), interleaved on the same server with
// raw JetStream appends of the same number of events to a stream of the
// same replication (a lifecycle appends six: created, queued,
// attempt.started, started, attempt.completed, completed). It reports
// lifecycles/s, raw appends/s and the ratio of the events/s the lifecycle
// achieves to the raw append rate.
func BenchmarkTaskLifecycle(b *testing.B) {
	for _, shape := range []string{"dev", "serve", "serve-r3"} {
		a, nc, replicas := lifecycleEnv(b, shape)
		ctx := context.Background()
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Replicas: replicas}); err != nil {
			b.Fatal(err)
		}
		data, err := proto.Marshal(&eventsv1.RuntimeEvent{Type: "task.created", EventId: "evt_01JCX3Q8Z5V1T2N7R4W9K6M0PA", TenantId: "t1", TaskId: "task_01JCX3Q8Z5V1T2N7R4W9K6M0PA",
			Payload: &eventsv1.RuntimeEvent_TaskCreated{TaskCreated: &eventsv1.TaskCreated{Task: &tasksv1.Task{TaskId: "task_01JCX3Q8Z5V1T2N7R4W9K6M0PA", Spec: &tasksv1.TaskSpec{Title: "bench"}}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(shape, func(b *testing.B) {
			const eventsPerLifecycle = 6
			var life, raw time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				_, task, err := a.CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{SessionId: "bench", Spec: &tasksv1.TaskSpec{Title: "bench"}})
				if err != nil {
					b.Fatal(err)
				}
				st, err := a.StartTask(ctx, "t1", &tasksv1.StartTaskRequest{TaskId: task.GetTaskId(), Worker: &tasksv1.WorkerRef{WorkerId: "w"}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.CompleteTask(ctx, "t1", &tasksv1.CompleteTaskRequest{TaskId: task.GetTaskId(), RunId: st.RunID}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				for j := 0; j < eventsPerLifecycle; j++ {
					if _, err := js.Publish(ctx, "raw.t1", data); err != nil {
						b.Fatal(err)
					}
				}
				life += t1.Sub(t0)
				raw += time.Since(t1)
			}
			lifeRate := float64(b.N) / life.Seconds()
			rawRate := float64(b.N*eventsPerLifecycle) / raw.Seconds()
			b.ReportMetric(lifeRate, "lifecycles/s")
			b.ReportMetric(rawRate, "raw-appends/s")
			b.ReportMetric(lifeRate*eventsPerLifecycle/rawRate, "ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkDelegatedRunSettles measures a task run handed to its turn,
// in the dev shape: create, start, the turn's submission (a control fact
// appended to the log as control appends it), DelegateTaskRun, the turn's
// end, and the wait until the settler has reacted to that end (the run's
// completion is then in the log): the turn-ends projection and the
// settler's reaction on top of the lifecycle. Interleaved with raw
// JetStream appends of as many events as the run writes (nine: created,
// queued, attempt.started, started, turn.submitted, delegated,
// turn.completed, attempt.completed, completed). Reports runs/s, raw
// appends/s and the ratio of the run's events/s to the raw rate.
func BenchmarkDelegatedRunSettles(b *testing.B) {
	var store projection.Store
	svc, log, nc := appEnv(b, func(d *kit.Deps) { store = d.Store })
	a := svc.App()
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}}); err != nil {
		b.Fatal(err)
	}
	data, err := proto.Marshal(&eventsv1.RuntimeEvent{Type: "task.created", EventId: "evt_01JCX3Q8Z5V1T2N7R4W9K6M0PA", TenantId: "t1", TaskId: "task_01JCX3Q8Z5V1T2N7R4W9K6M0PA",
		Payload: &eventsv1.RuntimeEvent_TaskCreated{TaskCreated: &eventsv1.TaskCreated{Task: &tasksv1.Task{TaskId: "task_01JCX3Q8Z5V1T2N7R4W9K6M0PA", Spec: &tasksv1.TaskSpec{Title: "bench"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	thread := eventlog.Aggregate{Tenant: "t1", Session: "bench", Kind: "thread", ID: "th"}
	turnFact := func(turn string, ev *eventsv1.RuntimeEvent) uint64 {
		ev.TenantId, ev.SessionId, ev.ThreadId, ev.TurnId = "t1", "bench", "th", turn
		app, err := log.Append(ctx, thread, eventlog.Any, ev)
		if err != nil {
			b.Fatal(err)
		}
		return app[0].Sequence
	}
	const eventsPerRun = 9
	var runs, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		_, task, err := a.CreateTask(ctx, "t1", &tasksv1.CreateTaskRequest{SessionId: "bench", Spec: &tasksv1.TaskSpec{Title: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		st, err := a.StartTask(ctx, "t1", &tasksv1.StartTaskRequest{TaskId: task.GetTaskId(), Worker: &tasksv1.WorkerRef{WorkerId: "w"}})
		if err != nil {
			b.Fatal(err)
		}
		turn := ids.New("turn")
		turnFact(turn, &eventsv1.RuntimeEvent{Type: events.TypeTurnSubmitted, Payload: &eventsv1.RuntimeEvent_TurnSubmitted{
			TurnSubmitted: &eventsv1.TurnSubmitted{Metadata: map[string]string{"task_id": task.GetTaskId(), "task_run_id": st.RunID}}}})
		if _, err := a.DelegateTaskRun(ctx, "t1", &tasksv1.DelegateTaskRunRequest{TaskId: task.GetTaskId(), RunId: st.RunID,
			SessionId: "bench", ThreadId: "th", TurnId: turn}); err != nil {
			b.Fatal(err)
		}
		ended := turnFact(turn, &eventsv1.RuntimeEvent{Type: events.TypeTurnCompleted, Payload: &eventsv1.RuntimeEvent_TurnCompleted{
			TurnCompleted: &eventsv1.TurnCompleted{Summary: "done"}}})
		if _, err := projector.WaitFor(ctx, log, store, app.SettlerName, ended, 10*time.Second); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for j := 0; j < eventsPerRun; j++ {
			if _, err := js.Publish(ctx, "raw.t1", data); err != nil {
				b.Fatal(err)
			}
		}
		runs += t1.Sub(t0)
		raw += time.Since(t1)
	}
	runRate := float64(b.N) / runs.Seconds()
	rawRate := float64(b.N*eventsPerRun) / raw.Seconds()
	b.ReportMetric(runRate, "runs/s")
	b.ReportMetric(rawRate, "raw-appends/s")
	b.ReportMetric(runRate*eventsPerRun/rawRate, "ratio")
	b.ReportMetric(0, "ns/op")
}
