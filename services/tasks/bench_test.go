package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

// BenchmarkTaskLifecycle measures create -> start -> complete through the
// app layer (the write path with its read-your-writes waits, the
// projector and the reactor running), interleaved on the same server with
// raw JetStream appends of the same number of events (a lifecycle appends
// six: created, queued, attempt.started, started, attempt.completed,
// completed). It reports lifecycles/s, raw appends/s and the ratio of the
// events/s the lifecycle achieves to the raw append rate.
func BenchmarkTaskLifecycle(b *testing.B) {
	svc, _, nc := appEnv(b, nil)
	a := svc.App()
	ctx := context.Background()
	// The raw side appends on the same server, to its own stream.
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
	const eventsPerLifecycle = 6
	var life, raw time.Duration
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
}
