package all_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// BenchmarkA2APushDelivery opens b.N actions on 16 tasks, each with an
// A2A push notification config, against the in-process stack, and
// reports deliveries per second end to end. Each delivery reads its
// turn's events from the log and folds them (a2a.PushBody): beside it,
// "read-ms" is one such read of a session's events from JetStream
// (Log.Read), the building block an A2A delivery adds to a webhook's,
// measured in the same run (BenchmarkWebhookDelivery is the plain
// webhook's rate).
func BenchmarkA2APushDelivery(b *testing.B) {
	st := webhookStack(b)
	ctx := testkit.Context(b)
	rx := newPushReceiver(b)
	const tasks = 16
	turns := make([]string, tasks)
	for i := range tasks {
		sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: fmt.Sprintf("s%d", i), ThreadId: fmt.Sprintf("th%d", i),
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go"}}}})
		if err != nil {
			b.Fatal(err)
		}
		turns[i] = sub.GetTurn().GetTurnId()
		if _, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + "/push",
			A2APush: &controlv1.A2APush{TaskId: turns[i], Token: "tok"}}); err != nil {
			b.Fatal(err)
		}
	}
	testkit.Eventually(b, "the creations delivered", func() bool { return len(rx.requests("/push")) == tasks })
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		k := i % tasks
		if _, err := st.Control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: fmt.Sprintf("s%d", k), ThreadId: fmt.Sprintf("th%d", k),
			TurnId: turns[k], ActionId: fmt.Sprintf("act_%d", i), ActionType: "input", Prompt: "?", Decisions: []string{"a"}}); err != nil {
			b.Fatal(err)
		}
	}
	testkit.Eventually(b, "every action delivered", func() bool { return len(rx.requests("/push")) == tasks+b.N })
	took := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took.Seconds(), "deliveries/s")

	// The building block: one read of a session's events, as a delivery
	// makes it.
	const reads = 20
	t0 := time.Now()
	for range reads {
		if _, err := st.Log.Read(ctx, []string{st.Log.Subjects.Session("t1", "s0")}, eventlog.FromSequence(1), func(*eventlog.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(t0).Microseconds())/1000/reads, "read-ms")
}
