package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

// Webhooks are channels (spec: remote channels) whose transport is
// "webhook": a subscription is channel.connected, its deletion
// channel.disconnected, each delivery outcome channel.message. The spec's
// channel classes say what a push notification is; no new class is
// needed.

// WebhookTransport is the ChannelFact transport of a webhook's facts.
const WebhookTransport = "webhook"

// WebhookIDPrefix prefixes the ids the runtime mints for subscriptions.
const WebhookIDPrefix = "wh"

// Delivery outcomes.
const (
	DeliveryDelivered = "delivered"
	DeliveryRetrying  = "retrying"
	DeliveryFailed    = "failed"
	// DeliveryCancelled: the subscription was deleted before the event
	// was delivered.
	DeliveryCancelled = "cancelled"
)

// DefaultWebhookEventTypes are delivered when a subscription names none.
var DefaultWebhookEventTypes = []string{events.TypeActionRequired}

// A2APushEventTypes are the events an A2A push notification config
// delivers: those that change its task's state (pkg/a2a's fold of a turn).
var A2APushEventTypes = []string{events.TypeTurnStarted, events.TypeActionRequired, events.TypeActionResolved,
	events.TypeTurnCompleted, events.TypeTurnFailed, events.TypeQueueChanged}

// A2APushFormat is the delivery format of an A2A push notification
// config: the task as A2A's StreamResponse, not the Standard Webhooks
// envelope of the event.
const A2APushFormat = "a2a"

// A2ATokenHeader carries an A2A push notification config's token.
const A2ATokenHeader = "X-A2A-Notification-Token"

// MaxWebhooksPerTenant bounds a tenant's live subscriptions: each one is
// matched against every event of the tenant. A2A push notification
// configs are not counted: each is matched against its own task's events
// only, and bounded per task.
const MaxWebhooksPerTenant = 32

// MaxA2APushConfigsPerTask bounds the live A2A push notification configs
// of one task.
const MaxA2APushConfigsPerTask = 10

// DefaultA2APushRetention is how long after its task ended (or after it
// was made, when later) an A2A push notification config is kept: A2A
// clients read their configs after the task ends, and a delivery of the
// task's last state is retried for up to DefaultWebhookRetry.MaxAge, which
// the config must outlive (a deleted config's owed deliveries are
// cancelled).
const DefaultA2APushRetention = 25 * time.Hour

// WebhookFact returns the webhook payload of a channel fact of a webhook,
// nil for any other event.
func WebhookFact(ev *eventsv1.RuntimeEvent) *eventsv1.ChannelFact {
	var f *eventsv1.ChannelFact
	switch ev.GetType() {
	case events.TypeChannelConnected:
		f = ev.GetChannelConnected()
	case events.TypeChannelDisconnected:
		f = ev.GetChannelDisconnected()
	case events.TypeChannelMessage:
		f = ev.GetChannelMessage()
	default:
		return nil
	}
	if f.GetTransport() != WebhookTransport {
		return nil
	}
	return f
}

// WebhookCreated is the channel.connected of a new subscription.
func WebhookCreated(id, host string, sub *eventsv1.WebhookSubscription) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeChannelConnected, ChannelId: id,
		Payload: &eventsv1.RuntimeEvent_ChannelConnected{ChannelConnected: &eventsv1.ChannelFact{
			Transport: WebhookTransport, Peer: host, Reason: "webhook created", Webhook: sub}}}
}

// WebhookDeleted is the channel.disconnected that ends a subscription:
// deleted by its tenant (reason "webhook deleted") or collected by the
// runtime (the reason says why).
func WebhookDeleted(id, reason string) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeChannelDisconnected, ChannelId: id,
		Payload: &eventsv1.RuntimeEvent_ChannelDisconnected{ChannelDisconnected: &eventsv1.ChannelFact{
			Transport: WebhookTransport, Reason: reason}}}
}

// WebhookDeletedReason is the reason of a deletion by the tenant.
const WebhookDeletedReason = "webhook deleted"

// WebhookDelivery is the channel.message of one delivery attempt's
// outcome, on the delivered event's session, under an id derived from
// the delivery and the attempt: recording it again appends nothing twice.
func WebhookDelivery(webhookID, session string, f *eventsv1.WebhookDeliveryFact) *eventsv1.RuntimeEvent {
	return &eventsv1.RuntimeEvent{Type: events.TypeChannelMessage, ChannelId: webhookID, SessionId: session,
		EventId: ids.Derive(ids.Event, "webhook-delivery", f.GetDeliveryId(), strconv.FormatUint(uint64(f.GetAttempt()), 10), f.GetOutcome()),
		Payload: &eventsv1.RuntimeEvent_ChannelMessage{ChannelMessage: &eventsv1.ChannelFact{
			Transport: WebhookTransport, Reason: "webhook " + f.GetOutcome(), Delivery: f}}}
}

// DeliveryID is the webhook-id of an event's delivery to a subscription:
// the same for every attempt and after every restart, so a receiver can
// de-duplicate.
func DeliveryID(webhookID, eventID string) string {
	return ids.Derive("msg", webhookID, eventID)
}

// WebhookWants says whether subscription (its channel.connected) delivers
// ev: a type it names (action.required when none), a session it names
// (any when none), an event not older than the subscription, and never a
// webhook's own fact (a subscription to channel.message would otherwise
// feed on its own deliveries).
func WebhookWants(sub *eventsv1.RuntimeEvent, ev *eventsv1.RuntimeEvent) bool {
	if WebhookFact(ev) != nil || sub.GetTenantId() != ev.GetTenantId() {
		return false
	}
	s := sub.GetChannelConnected().GetWebhook()
	types := s.GetEventTypes()
	if len(types) == 0 {
		types = DefaultWebhookEventTypes
	}
	if !slices.Contains(types, ev.GetType()) {
		return false
	}
	if len(s.GetSessionIds()) > 0 && !slices.Contains(s.GetSessionIds(), ev.GetSessionId()) {
		return false
	}
	if a := s.GetA2APush(); a != nil && ev.GetTurnId() != a.GetTurnId() {
		return false
	}
	return !ev.GetTimestamp().AsTime().Before(sub.GetTimestamp().AsTime())
}

// CheckWebhookEventTypes refuses a type that is not an event class, or
// that is a channel class (a webhook's own facts are channel facts),
// naming the field.
func CheckWebhookEventTypes(types []string) error {
	for i, typ := range types {
		if _, ok := events.Lookup(typ); !ok {
			return invalid(fmt.Sprintf("event_types[%d]", i), "%q is not an event type", typ)
		}
	}
	return nil
}

// Retry policy of deliveries.
type WebhookRetry struct {
	// MaxAttempts bounds the attempts of one delivery.
	MaxAttempts int
	// MinBackoff is the wait after the first failed attempt; each further
	// failure doubles it, up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxAge bounds how long after its event a delivery is still tried.
	MaxAge time.Duration
}

// DefaultWebhookRetry: 8 attempts over about 20 minutes (5 s doubling to
// 10 min), none later than a day after the event.
var DefaultWebhookRetry = WebhookRetry{MaxAttempts: 8, MinBackoff: 5 * time.Second, MaxBackoff: 10 * time.Minute, MaxAge: 24 * time.Hour}

// Backoff is the wait after the attempt-th failed attempt (1-based):
// MinBackoff doubled per earlier failure, capped at MaxBackoff, of which
// a random half (jitter, from rand01 in [0,1)) is taken off, so receivers
// that failed together are not retried together.
func (r WebhookRetry) Backoff(attempt int, rand01 float64) time.Duration {
	d := r.MinBackoff
	for i := 1; i < attempt && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	return d - time.Duration(rand01*float64(d/2))
}

// DeliveryAttempt is what a delivery attempt ended with.
type DeliveryAttempt struct {
	// StatusCode is the receiver's HTTP status; 0 when none came (a
	// connection error, a timeout).
	StatusCode int
	Err        string
}

// Retryable says whether another attempt may succeed: a server error,
// 408 or 429, or no answer at all. Any other 4xx is the receiver refusing
// the delivery; it is not tried again.
func (a DeliveryAttempt) Retryable() bool {
	return a.StatusCode == 0 || a.StatusCode >= 500 || a.StatusCode == 408 || a.StatusCode == 429
}

// DecideDelivery is the fact that records the attempt-th attempt of a
// delivery: delivered on a 2xx; retrying, with when, while the attempt
// is retryable and neither the attempts nor the age (from the event's
// time) run out; failed otherwise.
func (r WebhookRetry) DecideDelivery(f *eventsv1.WebhookDeliveryFact, a DeliveryAttempt, now time.Time, rand01 float64) *eventsv1.WebhookDeliveryFact {
	out := &eventsv1.WebhookDeliveryFact{DeliveryId: f.GetDeliveryId(), EventId: f.GetEventId(), EventType: f.GetEventType(),
		EventSequence: f.GetEventSequence(), EventTime: f.GetEventTime(), Attempt: f.GetAttempt(),
		StatusCode: int32(a.StatusCode), Error: a.Err}
	if a.StatusCode >= 200 && a.StatusCode < 300 {
		out.Outcome = DeliveryDelivered
		return out
	}
	next := now.Add(r.Backoff(int(f.GetAttempt()), rand01))
	if !a.Retryable() || int(f.GetAttempt()) >= r.MaxAttempts || next.Sub(f.GetEventTime().AsTime()) > r.MaxAge {
		out.Outcome = DeliveryFailed
		return out
	}
	out.Outcome, out.NextAttemptAt = DeliveryRetrying, timestamppb.New(next)
	return out
}

// SignWebhook is the webhook-signature header of a delivery in the
// Standard Webhooks format: "v1," and the base64 HMAC-SHA256, keyed by
// the secret's bytes, of "<webhook-id>.<webhook-timestamp>.<body>".
func SignWebhook(secret []byte, deliveryID string, unix int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s.%d.", deliveryID, unix)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// WebhookSecretPrefix prefixes a secret as shown to its subscriber.
const WebhookSecretPrefix = "whsec_"

// FormatWebhookSecret is the secret as a subscriber is given it.
func FormatWebhookSecret(secret []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(secret)
}
