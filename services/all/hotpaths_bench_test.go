package all_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/control"
)

// BenchmarkHotPaths: the single-node hot paths against what they are built
// of, interleaved in one loop so both sides see the same machine, in the
// dev and serve shapes (docs/performance.md, "Hot paths"):
//
//   - submit: SubmitTurn to an existing idle thread (one event) answered, against a
//     bare gRPC round trip to the same server (a health Check through the
//     same interceptors) plus a raw JetStream publish with the expected
//     subject sequence;
//   - report1: ReportEvents of one model.delta until a SubscribeEvents
//     subscriber of the session receives it, against a raw publish until an
//     ordered consumer of its subject receives it.
//
// Each reports p50 of both sides in µs and their ratio (goal: 2x or less).
func BenchmarkHotPaths(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		b.Run(string(sh)+"/submit", func(b *testing.B) { benchSubmitPath(b, sh) })
		b.Run(string(sh)+"/submit_new_thread", func(b *testing.B) { benchSubmitNewThread(b, sh) })
		b.Run(string(sh)+"/report1", func(b *testing.B) { benchReportPath(b, sh) })
	}
}

func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

func reportP50s(b *testing.B, got, raw []time.Duration) {
	g, r := p50(got), p50(raw)
	b.ReportMetric(float64(g.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(g)/float64(r), "p50-ratio")
	b.ReportMetric(0, "ns/op")
}

// submitBench measures SubmitTurn answered beside a bare gRPC call plus
// an exp-seq publish, interleaved; each iteration's request comes from
// next, and between (when set) runs outside the measured interval first.
type submitBench struct {
	next    func(i int) *controlv1.SubmitTurnRequest
	between func(c controlv1.ControlServiceClient)
	// answered sees each answer (outside the measured interval).
	answered func(*controlv1.SubmitTurnResponse)
}

func (sb submitBench) run(b *testing.B, s *stack, c controlv1.ControlServiceClient, health healthpb.HealthClient) {
	ctx := context.Background()
	js := rawJetStream(b, s)
	payload := make([]byte, 256)
	var last uint64
	got, raw := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if sb.between != nil {
			b.StopTimer()
			sb.between(c)
			b.StartTimer()
		}
		req := sb.next(i)
		t0 := time.Now()
		resp, err := c.SubmitTurn(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		got = append(got, time.Since(t0))
		if sb.answered != nil {
			sb.answered(resp)
		}
		t0 = time.Now()
		if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		ack, err := js.Publish(ctx, "raw.submit", payload, jetstream.WithExpectLastSequencePerSubject(last))
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Sequence
		raw = append(raw, time.Since(t0))
	}
	b.StopTimer()
	reportP50s(b, got, raw)
}

func benchSubmitPath(b *testing.B, sh shape) {
	s := newStack(b, sh, control.Name)
	ctx := context.Background()
	conn := s.conn(b, control.Name)
	c := controlv1.NewControlServiceClient(conn)
	input := []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}
	// The session and thread exist; each submit finds the thread idle (its
	// previous turn is completed outside the measured interval), as a
	// conversation's next turn does.
	active := runningTurn(b, ctx, c, "th-submit")
	submitBench{
		next: func(int) *controlv1.SubmitTurnRequest {
			return &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th-submit", Input: input}
		},
		between: func(c controlv1.ControlServiceClient) {
			if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.completed", TurnId: active,
				Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{}}}}}); err != nil {
				b.Fatal(err)
			}
		},
		answered: func(resp *controlv1.SubmitTurnResponse) { active = resp.GetTurn().GetTurnId() },
	}.run(b, s, c, healthpb.NewHealthClient(conn))
}

// benchSubmitNewThread: the first turn of a conversation, a thread new
// to a session that holds 50 threads at most (a new session every 50).
func benchSubmitNewThread(b *testing.B, sh shape) {
	s := newStack(b, sh, control.Name)
	conn := s.conn(b, control.Name)
	input := []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}
	submitBench{
		next: func(i int) *controlv1.SubmitTurnRequest {
			return &controlv1.SubmitTurnRequest{SessionId: fmt.Sprintf("s-%d-%d", b.N, i/50), ThreadId: fmt.Sprintf("th-%d-%d", b.N, i), Input: input}
		},
	}.run(b, s, controlv1.NewControlServiceClient(conn), healthpb.NewHealthClient(conn))
}

func benchReportPath(b *testing.B, sh shape) {
	s := newStack(b, sh, control.Name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := controlv1.NewControlServiceClient(s.conn(b, control.Name))
	turn := runningTurn(b, ctx, c, "th-report1")
	sub, err := c.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		b.Fatal(err)
	}
	// From the session's start: the first delta reaches it however long
	// the subscription takes to attach.
	next := func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if m.GetEvent() != nil {
				return
			}
		}
	}
	report := func() {
		ev := &eventsv1.RuntimeEvent{Type: "model.delta", TurnId: turn, EventId: ids.New(ids.Event),
			Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "a token or two of a model's output"}}}
		if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{ev}}); err != nil {
			b.Fatal(err)
		}
	}
	report()
	next()
	js := rawJetStream(b, s)
	cons, err := js.OrderedConsumer(ctx, "RAW", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"raw.report"}, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	data := rawDelta(b)
	got, raw := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		report()
		next()
		got = append(got, time.Since(t0))
		t0 = time.Now()
		if _, err := js.Publish(ctx, "raw.report", data); err != nil {
			b.Fatal(err)
		}
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(t0))
	}
	b.StopTimer()
	reportP50s(b, got, raw)
}
