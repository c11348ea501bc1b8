package app

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/adapters/webhooks"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// Delivery runs from the log (docs/services/control.md, "Webhooks"): the
// webhooks projection (readmodel.Webhooks) turns each event a subscription
// wants into an owed delivery, and each recorded outcome moves it on
// (retrying: due later) or ends it. The owed deliveries are a projection
// of the log, so they survive restarts: an outcome recorded is never
// attempted again, one not recorded is (at least once). The sender below
// works through what is due, per partition of the log, on the one replica
// that holds that partition's lease.

// webhookLeaseTTL is how long a replica holds a partition's deliveries
// without renewing; another takes over after it.
const webhookLeaseTTL = 10 * time.Second

// Run delivers until ctx ends: for each partition, wait for its lease,
// then deliver what is due while the lease holds.
func (w *Webhooks) Run(ctx context.Context) error {
	perPartition{Leases: w.Leases, Key: w.LeaseScope + "webhooks", TTL: webhookLeaseTTL, Logger: w.Logger, Work: w.deliverWhileHeld}.
		run(ctx, w.App.Log, ids.New("deliverer"))
	return nil
}

// deliverWhileHeld delivers the partition's due deliveries until the
// lease is lost or ctx ends.
func (w *Webhooks) deliverWhileHeld(ctx context.Context, k int, view *eventlog.Log) {
	// What another holder recorded must be folded before anything is
	// attempted again: otherwise a handover re-sends what was delivered.
	for ctx.Err() == nil {
		err := projector.CaughtUp(ctx, view, w.App.Store, readmodel.WebhooksName, nil, ReadTimeout)
		if err == nil {
			break
		}
		w.Logger.WarnContext(ctx, "webhook outbox not caught up", "partition", k, "error", err)
	}
	var (
		mu       sync.Mutex
		inflight = map[string]uint32{} // delivery -> attempt made or being made
		running  = map[string]bool{}
		perHook  = map[string]int{} // "<tenant>|<webhook>" -> attempts running
		wg       sync.WaitGroup
	)
	defer wg.Wait()
	wg.Go(func() { w.collectWhileHeld(ctx, k) })
	// The loop looks at the outbox again when an attempt ends (a slot is
	// free), when the projection moves in this partition (a delivery may
	// be owed), or after Poll (a retry may be due).
	wake := make(chan struct{}, 1)
	checkpoint := projector.CheckpointName(readmodel.WebhooksName, w.App.Log.Partitions(), k)
	for {
		cp, err := w.App.Store.Checkpoint(ctx, checkpoint)
		if err != nil && ctx.Err() == nil {
			w.Logger.WarnContext(ctx, "webhook outbox", "error", err)
		}
		due, err := readmodel.DueOutbox(ctx, w.App.Store, k, w.Now().UnixMilli(), 1024)
		if err != nil && ctx.Err() == nil {
			w.Logger.WarnContext(ctx, "webhook outbox", "error", err)
		}
		seen := map[string]bool{}
		for _, e := range due {
			tenant, _, id, ok := readmodel.ParseOutboxMember(e.Member)
			if !ok {
				continue
			}
			seen[id] = true
			mu.Lock()
			busy, made, n := running[id], inflight[id], len(running)
			mu.Unlock()
			if busy || n >= w.Concurrency {
				continue
			}
			owed, ok, err := readmodel.LoadOwed(ctx, w.App.Store, tenant, id)
			if err != nil || !ok || made > owed.Attempts {
				continue // the outcome of attempt `made` is not folded yet
			}
			hook := owed.Tenant + "|" + owed.Webhook
			mu.Lock()
			if perHook[hook] >= w.PerWebhook {
				mu.Unlock()
				continue
			}
			running[id], inflight[id] = true, owed.Attempts+1
			perHook[hook]++
			mu.Unlock()
			wg.Go(func() {
				recorded := w.attempt(ctx, owed)
				mu.Lock()
				delete(running, id)
				if perHook[hook]--; perHook[hook] == 0 {
					delete(perHook, hook)
				}
				if !recorded {
					delete(inflight, id) // nothing to wait for: try again at the next poll
				}
				mu.Unlock()
				select {
				case wake <- struct{}{}:
				default:
				}
			})
		}
		// Forget attempts whose outcome the outbox reflects.
		mu.Lock()
		for id := range inflight {
			if !seen[id] && !running[id] {
				delete(inflight, id)
			}
		}
		mu.Unlock()
		if !w.nap(ctx, wake, checkpoint, cp) {
			return
		}
	}
}

// nap waits until an attempt ends, the webhooks projection applies past
// cp, or Poll passes; false when ctx ended.
func (w *Webhooks) nap(ctx context.Context, wake <-chan struct{}, checkpoint string, cp uint64) bool {
	wctx, cancel := context.WithTimeout(ctx, w.Poll)
	defer cancel()
	moved := make(chan struct{})
	go func() {
		_, _ = w.App.Store.WaitFor(wctx, checkpoint, cp+1)
		close(moved)
	}()
	select {
	case <-wake:
	case <-moved:
	}
	cancel()
	<-moved
	return ctx.Err() == nil
}

// attempt makes the next attempt of an owed delivery and records its
// outcome; false when it recorded nothing (the log or the store failed),
// so the next poll tries again.
func (w *Webhooks) attempt(ctx context.Context, owed readmodel.Owed) bool {
	ev := &eventsv1.RuntimeEvent{}
	f := &eventsv1.WebhookDeliveryFact{DeliveryId: owed.Delivery, Attempt: owed.Attempts + 1}
	now := w.Now()
	var out *eventsv1.WebhookDeliveryFact
	if err := proto.Unmarshal(owed.Event, ev); err != nil {
		out = proto.Clone(f).(*eventsv1.WebhookDeliveryFact)
		out.Attempt, out.Outcome, out.Error = owed.Attempts, domain.DeliveryFailed, "the owed event does not decode: "+err.Error()
		return w.record(ctx, owed, out)
	}
	f.EventId, f.EventType, f.EventSequence, f.EventTime = ev.GetEventId(), ev.GetType(), ev.GetSequence(), ev.GetTimestamp()
	sub, err := w.subscription(ctx, owed.Tenant, owed.Webhook)
	switch {
	case err != nil:
		w.Logger.WarnContext(ctx, "webhook subscription", "webhook", owed.Webhook, "error", err)
		return false
	case sub == nil:
		out = proto.Clone(f).(*eventsv1.WebhookDeliveryFact)
		out.Attempt, out.Outcome, out.Error = owed.Attempts, domain.DeliveryCancelled, "the webhook was deleted"
	case now.Sub(ev.GetTimestamp().AsTime()) > w.Retry.MaxAge:
		out = proto.Clone(f).(*eventsv1.WebhookDeliveryFact)
		out.Attempt, out.Outcome, out.Error = owed.Attempts, domain.DeliveryFailed, "expired: the event is older than the delivery window"
	default:
		a := w.send(ctx, owed, sub, ev, now)
		if a.StatusCode == 0 && ctx.Err() != nil {
			// Cut short by this process stopping, not the receiver's
			// doing: the next holder makes the attempt again.
			return false
		}
		out = w.Retry.DecideDelivery(f, a, w.Now(), rand.Float64())
	}
	return w.record(ctx, owed, out)
}

// record appends an attempt's outcome, retrying a failed append a few
// times (the same event id: the log keeps one). An outcome the receiver
// gave is recorded even while the process stops (for a few seconds), so
// a graceful restart does not send it again.
func (w *Webhooks) record(ctx context.Context, owed readmodel.Owed, out *eventsv1.WebhookDeliveryFact) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rec := domain.WebhookDelivery(owed.Webhook, owed.Session, out)
	for i := range 5 {
		_, err := w.App.Log.Append(ctx, webhookAgg(owed.Tenant, owed.Session, owed.Webhook), eventlog.Any, rec)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.Logger.WarnContext(ctx, "recording a webhook delivery", "delivery", owed.Delivery, "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Duration(i+1) * 200 * time.Millisecond):
		}
	}
	return false
}

func (w *Webhooks) send(ctx context.Context, owed readmodel.Owed, sub *eventsv1.RuntimeEvent, ev *eventsv1.RuntimeEvent, now time.Time) domain.DeliveryAttempt {
	s := sub.GetChannelConnected().GetWebhook()
	if w.Sealer == nil {
		return domain.DeliveryAttempt{Err: "this runtime has no webhook key"}
	}
	secret, err := w.Sealer.Open(owed.Tenant, owed.Webhook, s.GetKeyId(), s.GetSealedSecret())
	if err != nil {
		return domain.DeliveryAttempt{Err: err.Error()}
	}
	d := webhooks.Delivery{URL: s.GetUrl(), DeliveryID: owed.Delivery, Secret: secret, At: now}
	if s.GetA2APush() != nil {
		if err := w.a2aDelivery(ctx, owed.Tenant, sub, &d); err != nil {
			return domain.DeliveryAttempt{Err: err.Error()}
		}
		return w.Sender.Send(ctx, d)
	}
	if d.Body, err = webhookBody(ev); err != nil {
		return domain.DeliveryAttempt{Err: err.Error()}
	}
	return w.Sender.Send(ctx, d)
}

// a2aDelivery makes d an A2A push notification: the task as its events
// in the log fold it now (not as the delivered event left it: a late
// retry tells the receiver where the task is), with the config's token
// and credentials.
func (w *Webhooks) a2aDelivery(ctx context.Context, tenant string, sub *eventsv1.RuntimeEvent, d *webhooks.Delivery) error {
	if w.TaskPush == nil {
		return errors.New("this runtime makes no A2A push notifications (no task fold)")
	}
	a := sub.GetChannelConnected().GetWebhook().GetA2APush()
	var evs []*eventsv1.RuntimeEvent
	_, err := w.App.Log.Read(ctx, []string{w.App.Log.Subjects.Session(tenant, a.GetSessionId())}, eventlog.FromSequence(max(a.GetTurnSequence(), 1)),
		func(r *eventlog.Record) error {
			if r.Event.GetTurnId() == a.GetTurnId() {
				evs = append(evs, r.Event)
			}
			return nil
		})
	if err != nil {
		return err
	}
	if d.Body, err = w.TaskPush(a.GetTurnId(), a.GetSessionId(), a.GetThreadId(), evs); err != nil {
		return err
	}
	auth, err := w.openA2AAuth(tenant, sub)
	if err != nil {
		return err
	}
	d.ContentType, d.Headers = "application/a2a+json", map[string]string{}
	if auth.Token != "" {
		d.Headers[domain.A2ATokenHeader] = auth.Token
	}
	if auth.Credentials != "" {
		d.Headers["Authorization"] = a.GetAuthScheme() + " " + auth.Credentials
	}
	return nil
}

// subscription is the tenant's live subscription id, nil once deleted,
// as the log says now (the subscription's own subject, caught up): the
// read model's list is folded by the tenant's session-less partition,
// which may trail this one's, and another replica may have deleted it.
func (w *Webhooks) subscription(ctx context.Context, tenant, id string) (*eventsv1.RuntimeEvent, error) {
	st, err := w.App.w.Refresh(ctx, webhookAgg(tenant, "", id))
	if err != nil {
		return nil, err
	}
	ev, live, _, err := readmodel.Subscription(ctx, st, tenant, id)
	if err != nil || !live {
		return nil, err
	}
	return ev, nil
}

// webhookBody is a delivery's payload in the Standard Webhooks shape:
// {"type", "timestamp", "data"}, data the event as the spec's JSON.
func webhookBody(ev *eventsv1.RuntimeEvent) ([]byte, error) {
	data, err := protojson.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errors.New("empty event")
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{ev.GetType(), ev.GetTimestamp().AsTime().UTC().Format(time.RFC3339Nano), data})
}
