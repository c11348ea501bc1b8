package domain

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The Standard Webhooks specification's own example: its secret, id,
// timestamp and payload sign to this signature.
func TestSignWebhookMatchesTheSpecificationsExample(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", WebhookSecretPrefix))
	if err != nil {
		t.Fatal(err)
	}
	got := SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestBackoffDoublesUpToItsCapLessJitter(t *testing.T) {
	r := WebhookRetry{MinBackoff: time.Second, MaxBackoff: 10 * time.Second}
	for _, c := range []struct {
		attempt int
		rand    float64
		want    time.Duration
	}{
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{3, 0, 4 * time.Second},
		{4, 0, 8 * time.Second},
		{5, 0, 10 * time.Second},
		{30, 0, 10 * time.Second},
		{1, 0.5, 750 * time.Millisecond},
		{5, 0.999, 10*time.Second - time.Duration(0.999*float64(5*time.Second))},
	} {
		if got := r.Backoff(c.attempt, c.rand); got != c.want {
			t.Errorf("Backoff(%d, %v) = %s, want %s", c.attempt, c.rand, got, c.want)
		}
	}
}

func TestDecideDelivery(t *testing.T) {
	event := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := WebhookRetry{MaxAttempts: 3, MinBackoff: time.Second, MaxBackoff: time.Minute, MaxAge: time.Hour}
	for _, c := range []struct {
		name    string
		attempt uint32
		a       DeliveryAttempt
		now     time.Time
		want    string
	}{
		{"2xx", 1, DeliveryAttempt{StatusCode: 204}, event, DeliveryDelivered},
		{"503 retried", 1, DeliveryAttempt{StatusCode: 503}, event, DeliveryRetrying},
		{"no answer retried", 2, DeliveryAttempt{Err: "connection refused"}, event, DeliveryRetrying},
		{"429 retried", 1, DeliveryAttempt{StatusCode: 429}, event, DeliveryRetrying},
		{"408 retried", 1, DeliveryAttempt{StatusCode: 408}, event, DeliveryRetrying},
		{"4xx refused", 1, DeliveryAttempt{StatusCode: 400}, event, DeliveryFailed},
		{"redirect refused", 1, DeliveryAttempt{StatusCode: 302}, event, DeliveryFailed},
		{"attempts spent", 3, DeliveryAttempt{StatusCode: 500}, event, DeliveryFailed},
		{"too old for another", 1, DeliveryAttempt{StatusCode: 500}, event.Add(time.Hour), DeliveryFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &eventsv1.WebhookDeliveryFact{DeliveryId: "msg_1", EventId: "evt_1", Attempt: c.attempt, EventTime: timestamppb.New(event)}
			got := r.DecideDelivery(f, c.a, c.now, 0)
			if got.GetOutcome() != c.want || got.GetAttempt() != c.attempt || got.GetDeliveryId() != "msg_1" {
				t.Fatalf("%v, want outcome %s at attempt %d", got, c.want, c.attempt)
			}
			if (got.GetOutcome() == DeliveryRetrying) != (got.GetNextAttemptAt() != nil) {
				t.Fatalf("next attempt %v with outcome %s", got.GetNextAttemptAt(), got.GetOutcome())
			}
			if got.GetOutcome() == DeliveryRetrying && !got.GetNextAttemptAt().AsTime().After(c.now) {
				t.Fatalf("next attempt %v not after now %v", got.GetNextAttemptAt().AsTime(), c.now)
			}
		})
	}
}

func TestWebhookWants(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sub := func(types, sessions []string) *eventsv1.RuntimeEvent {
		ev := WebhookCreated("wh_1", "h", &eventsv1.WebhookSubscription{Url: "http://h/", EventTypes: types, SessionIds: sessions})
		ev.TenantId, ev.Timestamp = "acme", timestamppb.New(created)
		return ev
	}
	ev := func(tenant, typ, session string, at time.Time) *eventsv1.RuntimeEvent {
		return &eventsv1.RuntimeEvent{TenantId: tenant, Type: typ, SessionId: session, Timestamp: timestamppb.New(at)}
	}
	later := created.Add(time.Second)
	delivered := WebhookDelivery("wh_1", "s1", &eventsv1.WebhookDeliveryFact{DeliveryId: "msg_1", Outcome: DeliveryDelivered})
	delivered.TenantId, delivered.Timestamp = "acme", timestamppb.New(later)
	for _, c := range []struct {
		name string
		sub  *eventsv1.RuntimeEvent
		ev   *eventsv1.RuntimeEvent
		want bool
	}{
		{"action.required by default", sub(nil, nil), ev("acme", events.TypeActionRequired, "s1", later), true},
		{"not other types by default", sub(nil, nil), ev("acme", events.TypeTurnCompleted, "s1", later), false},
		{"a named type", sub([]string{events.TypeTurnCompleted}, nil), ev("acme", events.TypeTurnCompleted, "s1", later), true},
		{"a named session", sub(nil, []string{"s1"}), ev("acme", events.TypeActionRequired, "s1", later), true},
		{"another session", sub(nil, []string{"s1"}), ev("acme", events.TypeActionRequired, "s2", later), false},
		{"another tenant", sub(nil, nil), ev("globex", events.TypeActionRequired, "s1", later), false},
		{"older than the subscription", sub(nil, nil), ev("acme", events.TypeActionRequired, "s1", created.Add(-time.Second)), false},
		{"never its own deliveries", sub([]string{events.TypeChannelMessage}, nil), delivered, false},
	} {
		if got := WebhookWants(c.sub, c.ev); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDeliveryIDIsStableAndPerSubscription(t *testing.T) {
	first, again := DeliveryID("wh_1", "evt_1"), DeliveryID("wh_1", "evt_1")
	if first != again || !strings.HasPrefix(first, "msg_") {
		t.Fatalf("the same delivery's ids: %s, %s", first, again)
	}
	if DeliveryID("wh_1", "evt_1") == DeliveryID("wh_2", "evt_1") || DeliveryID("wh_1", "evt_1") == DeliveryID("wh_1", "evt_2") {
		t.Fatal("two deliveries share an id")
	}
	if err := CheckWebhookEventTypes([]string{events.TypeActionRequired, "nope"}); err == nil || !strings.Contains(err.Error(), "event_types[1]") {
		t.Fatalf("an unknown type: %v, want an error naming event_types[1]", err)
	}
}
