package all_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/control"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
	"github.com/agentruntime/agentruntime/services/tasks"
	tasksreadmodel "github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

const reportBatch = 100

func deltas(turn string) []*eventsv1.RuntimeEvent {
	evs := make([]*eventsv1.RuntimeEvent, reportBatch)
	for i := range evs {
		evs[i] = &eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, EventId: ids.New(ids.Event),
			Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "a token or two of a model's output"}}}
	}
	return evs
}

// runningTurn submits a turn on its own thread and reports it started.
func runningTurn(b testing.TB, ctx context.Context, c controlv1.ControlServiceClient, thread string) string {
	b.Helper()
	resp, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: thread,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
	if err != nil {
		b.Fatal(err)
	}
	turn := resp.GetTurn().GetTurnId()
	if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.started", TurnId: turn,
		Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}}}}}); err != nil {
		b.Fatal(err)
	}
	return turn
}

// rawDelta is a model.delta envelope as the log stores it, marshalled once.
func rawDelta(b testing.TB) []byte {
	ev := deltas("turn_01JCX3Q8Z5V1T2N7R4W9K6M0PA")[0]
	ev.TenantId, ev.SessionId, ev.ThreadId, ev.RuntimeId, ev.SchemaVersion = "acme", "s1", "thread_1", "rt_bench", "agentruntime-0.1.0"
	data, err := proto.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// rawJetStream is a connection of its own to the stack's NATS server and
// the stream RAW (subjects raw.>) the raw side publishes to, which no
// projector reads.
func rawJetStream(b *testing.B, s *stack) jetstream.JetStream {
	nc := s.natsConn(b)
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Duplicates: 10 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	return js
}

// BenchmarkIngest: ReportEvents of 100 model deltas from 1 and 4 clients
// (each on its own running turn), next to raw JetStream async publishes of
// 100 envelopes of the same size awaited together, from as many clients,
// on the same server in the same run (into a stream of their own, so no
// projector reads them).
func BenchmarkIngest(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients%d", sh, clients), func(b *testing.B) { benchIngest(b, sh, clients) })
		}
	}
}

func benchIngest(b *testing.B, sh shape, clients int) {
	s := newStack(b, sh, control.Name)
	ctx := context.Background()
	c := controlv1.NewControlServiceClient(s.conn(b, control.Name))
	turns := make([]string, clients)
	for i := range turns {
		turns[i] = runningTurn(b, ctx, c, fmt.Sprintf("th%d", i))
	}
	raws := make([]jetstream.JetStream, clients)
	for i := range raws {
		raws[i] = rawJetStream(b, s)
	}
	data := rawDelta(b)
	parallel := func(op func(c int) error) time.Duration {
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, clients)
		for i := 0; i < clients; i++ {
			wg.Go(func() { errs[i] = op(i) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	var took, rawTook time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took += parallel(func(i int) error {
			_, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: deltas(turns[i])})
			return err
		})
		rawTook += parallel(func(i int) error {
			fs := make([]jetstream.PubAckFuture, reportBatch)
			for j := range fs {
				var err error
				msg := &nats.Msg{Subject: fmt.Sprintf("raw.%d", i), Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{ids.New(ids.Event)}}}
				if fs[j], err = raws[i].PublishMsgAsync(msg); err != nil {
					return err
				}
			}
			for _, f := range fs {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return err
				}
			}
			return nil
		})
	}
	b.StopTimer()
	n := float64(b.N * clients * reportBatch)
	rate, raw := n/took.Seconds(), n/rawTook.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(raw, "raw-async-events/s")
	b.ReportMetric(rate/raw, "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkIngestOne: ReportEvents of one model delta on a claimed turn
// (fenced: run id and lease token), one call in flight, next to a bare
// gRPC call that runs one awaited JetStream publish of the same envelope
// (bareGRPC), interleaved in the same run: the p50 ratio says what a
// one-fact report costs beyond the round trip and the publish it cannot
// do without.
func BenchmarkIngestOne(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		b.Run(string(sh), func(b *testing.B) {
			s := newStack(b, sh, control.Name)
			ctx := context.Background()
			c := controlv1.NewControlServiceClient(s.conn(b, control.Name))
			if _, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th-one",
				Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}}); err != nil {
				b.Fatal(err)
			}
			claim, err := c.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", SessionId: "s1", Wait: durationpb.New(10 * time.Second),
				LeaseTtl: durationpb.New(time.Hour)})
			if err != nil || claim.GetRunId() == "" {
				b.Fatalf("claim: %v %v", claim, err)
			}
			js := rawJetStream(b, s)
			data := rawDelta(b)
			bare := bareGRPC(b, func(ctx context.Context) error {
				_, err := js.PublishMsg(ctx, &nats.Msg{Subject: "raw.one", Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{ids.New(ids.Event)}}})
				return err
			})
			report := func() error {
				ev := deltas(claim.GetTurn().GetTurnId())[0]
				// As a worker sends it: where the turn lives rides along.
				ev.SessionId, ev.ThreadId, ev.RunId = "s1", "th-one", claim.GetRunId()
				_, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{ev}, RunId: claim.GetRunId(), LeaseToken: claim.GetLeaseToken()})
				return err
			}
			lat, bareLat := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := report(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				t0 = time.Now()
				if err := bare(); err != nil {
					b.Fatal(err)
				}
				bareLat = append(bareLat, time.Since(t0))
			}
			b.StopTimer()
			p50, bareP50 := median(lat), median(bareLat)
			b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(bareP50.Microseconds()), "raw-grpc-publish-p50-µs")
			b.ReportMetric(float64(p50)/float64(bareP50), "p50-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkRoundTrips counts what one operation costs the servers in the
// serve shape (nats-server /varz, Redis INFO commandstats), with every
// background projector of the services involved running: SubmitTurn,
// ReportEvents of 100 model deltas, and a task's lifecycle (create, start,
// complete). The counts are taken after the read models have caught up, so
// projector work is included.
func BenchmarkRoundTrips(b *testing.B) {
	s := newStack(b, serve, control.Name, tasks.Name)
	ctx := context.Background()
	c := controlv1.NewControlServiceClient(s.conn(b, control.Name))
	tc := tasksv1.NewTasksServiceClient(s.conn(b, tasks.Name))
	turn := runningTurn(b, ctx, c, "th-report")
	// settle waits until the read models have applied everything, so the
	// count includes the projectors' work: control's reads the whole log;
	// tasks' is waited for after task operations (its last event is then a
	// task's).
	var lastTask uint64
	settle := func(tasksToo bool) {
		head, err := s.logs[control.Name].Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		s.waitFor(b, control.Name, controlreadmodel.Name, head)
		if tasksToo {
			s.waitFor(b, tasks.Name, tasksreadmodel.Name, lastTask)
		}
	}
	ops := []struct {
		name   string
		events float64
		op     func(i int)
	}{
		{"submit_turn", 0, func(i int) {
			if _, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: fmt.Sprintf("th-submit-%d-%d", b.N, i),
				Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}}); err != nil {
				b.Fatal(err)
			}
		}},
		{"report_events_100", reportBatch, func(int) {
			if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: deltas(turn)}); err != nil {
				b.Fatal(err)
			}
		}},
		{"task_lifecycle", 0, func(int) {
			cr, err := tc.CreateTask(ctx, &tasksv1.CreateTaskRequest{SessionId: "s1", Spec: &tasksv1.TaskSpec{Title: "bench"}})
			if err != nil {
				b.Fatal(err)
			}
			id := cr.GetTask().GetTaskId()
			st, err := tc.StartTask(ctx, &tasksv1.StartTaskRequest{TaskId: id, Worker: &tasksv1.WorkerRef{WorkerId: "w"}})
			if err != nil {
				b.Fatal(err)
			}
			done, err := tc.CompleteTask(ctx, &tasksv1.CompleteTaskRequest{TaskId: id, RunId: st.GetRunId()})
			if err != nil {
				b.Fatal(err)
			}
			lastTask = done.GetResult().GetSequence()
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			settle(o.name == "task_lifecycle")
			got := s.count(b, b.N, func(i int) {
				o.op(i)
				if i == b.N-1 {
					settle(o.name == "task_lifecycle")
				}
			})
			got.report(b, "")
			if o.events > 0 {
				b.ReportMetric(got.redis/o.events, "redis-cmds/event")
				b.ReportMetric(got.natsIn/o.events, "nats-in/event")
			}
			b.ReportMetric(0, "ns/op")
			b.Logf("%s per op: %s", o.name, got)
		})
	}
}
