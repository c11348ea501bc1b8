package all_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/webhooktest"
)

// BenchmarkWebhookDelivery opens b.N actions, one per thread, against the
// in-process stack (dev's shape) with one subscription whose receiver
// verifies every signature, and reports how long from each
// action.required's timestamp to its delivery arriving (p50, p99) and
// deliveries per second end to end.
func BenchmarkWebhookDelivery(b *testing.B) {
	st := webhookStack(b)
	ctx := testkit.Context(b)
	rx := webhooktest.New(b)
	created, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL})
	if err != nil {
		b.Fatal(err)
	}
	if err := rx.SetSecret(created.GetSecret()); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	rx.OnAccept = func(d webhooktest.Delivery) {
		mu.Lock()
		arrived[fmt.Sprint(d.Data["actionId"])] = time.Now()
		mu.Unlock()
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		thread := fmt.Sprintf("th%d", i)
		sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: fmt.Sprintf("s%d", i%8), ThreadId: thread,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go"}}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: fmt.Sprintf("s%d", i%8), ThreadId: thread,
			TurnId: sub.GetTurn().GetTurnId(), ActionId: fmt.Sprintf("act_%d", i), ActionType: "input", Prompt: "?", Decisions: []string{"a"}}); err != nil {
			b.Fatal(err)
		}
	}
	testkit.Eventually(b, "every action delivered", func() bool { return len(rx.Accepted()) == b.N })
	took := time.Since(start)
	b.StopTimer()
	// Latency: from the action's fact (its timestamp) to its arrival.
	var lat []time.Duration
	for _, d := range rx.Accepted() {
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d.Data["timestamp"]))
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		lat = append(lat, arrived[fmt.Sprint(d.Data["actionId"])].Sub(at))
		mu.Unlock()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(b.N)/took.Seconds(), "deliveries/s")
	if r := rx.Rejected(); len(r) > 0 {
		b.Fatalf("refused: %v", r)
	}
}
