package all_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

const (
	submitClients     = 8
	sessionsPerClient = 6                      // two in each of three partitions
	submitRound       = 10 * sessionsPerClient // turns of each client per b.N
)

// BenchmarkSubmitsAcrossPartitions: turns/s through control from 8
// concurrent clients, each submitting turns on six sessions of its own (two
// in each partition of a log of three) and reporting each completed (so
// queues stay short, as BenchmarkSubmitThroughput of services/control), on
// a log of P = 1 and P = 3 partitions in both shapes; beside raw
// synchronous JetStream publishes from as many clients on the same server
// in the same run, to P streams of the same storage, each publish to the
// stream of the session the client's turn would have gone to. Turns and
// publishes alternate by rounds, so load from outside the run weighs on
// both alike; after each round of turns, untimed, control's read model
// catches up. The report carries the turn's session and thread, as
// pkg/worker's and the Python worker's do; the turn-id-only runs report
// the turn alone, so control looks it up by id (on a partitioned log,
// waiting for every partition when the read model does not have it yet).
// In the serve shape it also counts NATS messages per turn.
// docs/scaling.md has the figures.
func BenchmarkSubmitsAcrossPartitions(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		for _, p := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/P%d", sh, p), func(b *testing.B) { benchSubmitsAcross(b, sh, p, true) })
		}
	}
	for _, p := range []int{1, 3} {
		b.Run(fmt.Sprintf("serve/P%d/turn-id-only", p), func(b *testing.B) { benchSubmitsAcross(b, serve, p, false) })
	}
}

func benchSubmitsAcross(b *testing.B, sh shape, partitions int, scoped bool) {
	const tenant = "acme" // the stack's anonymous tenant
	s := newStackOf(b, sh, partitions, control.Name)
	ctx := context.Background()
	c := controlv1.NewControlServiceClient(s.conn(b, control.Name))
	log := s.logs[control.Name]
	sessions := spreadSessions(tenant)
	js := rawStreams(b, s, partitions)
	payload := make([]byte, 200)
	turn := func(cl, i int) error {
		session := sessions[cl][i%sessionsPerClient]
		// Thread ids are unique in a tenant: one thread per session.
		resp, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: "th-" + session,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
		if err != nil {
			return err
		}
		done := &eventsv1.RuntimeEvent{Type: "turn.completed", TurnId: resp.GetTurn().GetTurnId(),
			Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done", StopReason: "end_turn"}}}
		if scoped {
			done.SessionId, done.ThreadId = session, "th-"+session
		}
		_, err = c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{done}})
		return err
	}
	publish := func(cl, i int) error {
		k := log.Subjects.PartitionOf(tenant, sessions[cl][i%sessionsPerClient])
		_, err := js.Publish(ctx, fmt.Sprintf("raw.p%d.%d", k, cl), payload)
		return err
	}
	// run does ops i = 0..n-1 of every client at once, each client on its
	// own goroutine.
	run := func(n int, op func(cl, i int) error) time.Duration {
		errs := make([]error, submitClients)
		var wg sync.WaitGroup
		t0 := time.Now()
		for cl := range submitClients {
			wg.Go(func() {
				for i := 0; i < n && errs[cl] == nil; i++ {
					errs[cl] = op(cl, i)
				}
			})
		}
		wg.Wait()
		took := time.Since(t0)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		return took
	}
	// settle waits until control's read model has applied every turn, so
	// a round's trailing projector work neither weighs on the raw round
	// nor escapes the count of the serve shape.
	settle := func() {
		if err := projector.CaughtUp(ctx, log, s.stores[control.Name], readmodel.Name, nil, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	// Untimed: every session's first turn, a publish to every stream.
	run(sessionsPerClient, turn)
	run(sessionsPerClient, publish)
	settle()
	b.ResetTimer()
	var took, rawTook time.Duration
	var natsIn, natsOut int64
	for range b.N {
		var in0, out0 int64
		if sh == serve {
			in0, out0 = s.nats.varz(b)
		}
		took += run(submitRound, turn)
		settle()
		if sh == serve {
			in1, out1 := s.nats.varz(b)
			natsIn, natsOut = natsIn+in1-in0, natsOut+out1-out0
		}
		rawTook += run(submitRound, publish)
	}
	b.StopTimer()
	// The turns went to every partition.
	for k, v := range log.Views() {
		if head, err := v.Head(ctx); err != nil || head == 0 {
			b.Fatalf("partition %d of %d: head %d, %v", k, partitions, head, err)
		}
	}
	n := float64(b.N * submitClients * submitRound)
	rate, raw := n/took.Seconds(), n/rawTook.Seconds()
	b.ReportMetric(rate, "turns/s")
	b.ReportMetric(raw, "raw-publishes/s")
	b.ReportMetric(rate/raw, "ratio")
	if sh == serve {
		// NATS messages into and out of nats-server per turn, the
		// projectors' included (BenchmarkRoundTrips counts the same).
		b.ReportMetric(float64(natsIn)/n, "nats-in/turn")
		b.ReportMetric(float64(natsOut)/n, "nats-out/turn")
	}
	b.ReportMetric(0, "ns/op")
}

// spreadSessions are each client's sessions of tenant, two in each
// partition of a log of three (so spread evenly at P = 3, and the same
// sessions at P = 1).
func spreadSessions(tenant string) [][]string {
	three := eventlog.Subjects{Partitions: 3}
	out := make([][]string, submitClients)
	for cl := range out {
		in := make([]int, 3)
		for n := 0; len(out[cl]) < sessionsPerClient; n++ {
			session := fmt.Sprintf("bench-%d-%d", cl, n)
			if k := three.PartitionOf(tenant, session); in[k] < sessionsPerClient/3 {
				in[k]++
				out[cl] = append(out[cl], session)
			}
		}
	}
	return out
}

// rawStreams makes streams RAW_0 ... RAW_<partitions-1> capturing
// raw.p<k>.>, of the log's storage (file), on the stack's server, and
// returns a JetStream client of its own connection.
func rawStreams(b *testing.B, s *stack, partitions int) jetstream.JetStream {
	var nc *nats.Conn
	if s.shape == dev {
		nc = natstest.Connect(b, s.embed)
	} else {
		var err error
		if nc, err = nats.Connect(s.nats.url); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	for k := range partitions {
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: fmt.Sprintf("RAW_%d", k),
			Subjects: []string{fmt.Sprintf("raw.p%d.>", k)}, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
	}
	return js
}
