package control_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/webhooktest"
)

var testWebhookKey = bytes.Repeat([]byte{9}, 32)

func withWebhooks(h *harness) { h.webhooks = true }

// webhook subscribes rx to the tenant's action.required.
func (h *harness) webhook(ctx context.Context, rx *webhooktest.Receiver) *controlv1.CreateWebhookResponse {
	h.t.Helper()
	res, err := h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := rx.SetSecret(res.GetSecret()); err != nil {
		h.t.Fatal(err)
	}
	return res
}

// action opens an action on a new turn of the session's thread.
func (h *harness) action(ctx context.Context, session, thread, action string) {
	h.t.Helper()
	turn := h.submit(ctx, session, thread).GetTurn().GetTurnId()
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: session, ThreadId: thread, TurnId: turn,
		ActionId: action, ActionType: "input", Prompt: "Which branch?", Decisions: []string{"main", "dev"}}); err != nil {
		h.t.Fatal(err)
	}
}

// deliveryFacts are the delivery outcomes the log holds, in order per
// partition.
func (h *harness) deliveryFacts(ctx context.Context) []*eventsv1.WebhookDeliveryFact {
	h.t.Helper()
	var out []*eventsv1.WebhookDeliveryFact
	err := h.readLog(ctx, []string{h.log.Subjects.All()}, func(rec *eventlog.Record) error {
		if rec.Event.GetType() == events.TypeChannelMessage && rec.Event.GetChannelMessage().GetDelivery() != nil {
			out = append(out, rec.Event.GetChannelMessage().GetDelivery())
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// A delivery's retries survive a restart: the attempts made before it
// are facts, so the next process goes on from the next attempt, whether
// the read model survived (Redis) or is rebuilt from the log (dev).
func TestWebhookRetriesSurviveARestart(t *testing.T) {
	for _, memory := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebuilt from the log=%v", memory), func(t *testing.T) {
			h := newHarnessWith(t, func(h *harness) { h.webhooks, h.memory = true, memory })
			ctx := acme(t)
			rx := webhooktest.New(t)
			rx.SetFailFirst(1 << 30) // down until told otherwise
			h.webhook(ctx, rx)
			h.action(ctx, "s1", "th1", "act_1")
			testkit.Eventually(t, "two failed attempts recorded", func() bool { return len(h.deliveryFacts(ctx)) >= 2 })
			h.stop()
			before := h.deliveryFacts(ctx)
			last := before[len(before)-1]
			if last.GetOutcome() != "retrying" {
				t.Fatalf("last fact before the restart %v, want retrying", last)
			}
			rx.SetFailFirst(0)
			if memory {
				h.start(projection.NewMemory()) // rebuilt from the log
			} else {
				h.start(nil) // the same Redis read model
			}
			testkit.Eventually(t, "the delivery recorded as delivered", func() bool {
				fs := h.deliveryFacts(ctx)
				return fs[len(fs)-1].GetOutcome() == "delivered"
			})
			fs := h.deliveryFacts(ctx)
			done := fs[len(fs)-1]
			if done.GetAttempt() != last.GetAttempt()+1 || len(fs) != len(before)+1 {
				t.Fatalf("after %d facts ending at attempt %d, got %v: want one more fact, attempt %d", len(before), last.GetAttempt(), fs[len(before):], last.GetAttempt()+1)
			}
			if got := rx.Accepted(); len(got) != 1 || got[0].Accepted != 1 {
				t.Fatalf("accepted %+v, want one delivery accepted once", got)
			}
		})
	}
}

// A process that starts over a log with delivered events (a dev restart
// rebuilds its read model from zero) sends none of them again.
func TestARestartDoesNotResendWhatWasDelivered(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.webhooks, h.memory = true, true })
	ctx := acme(t)
	rx := webhooktest.New(t)
	h.webhook(ctx, rx)
	for i := range 3 {
		h.action(ctx, "s1", fmt.Sprintf("th%d", i), fmt.Sprintf("act_%d", i))
	}
	// Delivered and recorded (an answer not yet recorded when the process
	// stops may be sent again: at least once).
	testkit.Eventually(t, "three deliveries recorded", func() bool {
		return len(rx.Accepted()) == 3 && len(h.deliveryFacts(ctx)) == 3
	})
	h.restart(true)
	h.action(ctx, "s1", "th9", "act_after")
	testkit.Eventually(t, "the delivery after the restart", func() bool { return len(rx.Accepted()) == 4 })
	for _, d := range rx.Accepted() {
		if d.Attempts != 1 {
			t.Errorf("delivery %s of %v: %d attempts, want 1", d.ID, d.Data["actionId"], d.Attempts)
		}
	}
}

// With two replicas, each event is delivered by one: the lease of its
// partition elects the sender.
func TestOneReplicaDeliversEachEvent(t *testing.T) {
	first := newHarnessWith(t, func(h *harness) { h.webhooks, h.leasesInRedis = true, true })
	second := first.replica()
	ctx := acme(t)
	rx := webhooktest.New(t)
	first.webhook(ctx, rx)
	const n = 10
	for i := range n {
		h := []*harness{first, second}[i%2]
		h.action(ctx, fmt.Sprintf("s%d", i), fmt.Sprintf("th%d", i), fmt.Sprintf("act_%d", i))
	}
	testkit.Eventually(t, "every delivery recorded", func() bool { return len(first.deliveryFacts(ctx)) >= n })
	if got := rx.Accepted(); len(got) != n {
		t.Fatalf("%d deliveries accepted, want %d", len(got), n)
	}
	for _, d := range rx.Accepted() {
		if d.Attempts != 1 {
			t.Errorf("delivery %s: %d attempts, want 1 (sent by one replica)", d.ID, d.Attempts)
		}
	}
	if fs := first.deliveryFacts(ctx); len(fs) != n {
		t.Fatalf("%d delivery facts, want %d", len(fs), n)
	}
	// Each fact carries the runtime id of the replica that recorded it
	// (each replica opened its own log): one per partition.
	senders := map[int]map[string]bool{}
	err := first.readLog(ctx, []string{first.log.Subjects.All()}, func(rec *eventlog.Record) error {
		ev := rec.Event
		if ev.GetChannelMessage().GetDelivery() == nil {
			return nil
		}
		k := first.log.Subjects.PartitionOf(ev.GetTenantId(), ev.GetSessionId())
		if senders[k] == nil {
			senders[k] = map[string]bool{}
		}
		senders[k][ev.GetRuntimeId()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, ids := range senders {
		if len(ids) != 1 {
			t.Errorf("partition %d delivered by %d replicas (%v), want one", k, len(ids), ids)
		}
	}
}

// Tenants never see each other's webhooks: another tenant's list is
// empty, its delete of the id is NotFound, and its events are not
// delivered to the subscription.
func TestWebhooksAreTheTenantsOwn(t *testing.T) {
	h := newHarnessWith(t, withWebhooks)
	a, g := acme(t), globex(t)
	rx := webhooktest.New(t)
	wh := h.webhook(a, rx)
	list, err := h.client.ListWebhooks(g, &controlv1.ListWebhooksRequest{MinSequence: wh.GetSequence()})
	if err != nil || len(list.GetWebhooks()) != 0 {
		t.Fatalf("globex lists %v, %v; want none", list, err)
	}
	if _, err := h.client.DeleteWebhook(g, &controlv1.DeleteWebhookRequest{WebhookId: wh.GetWebhook().GetWebhookId()}); err == nil {
		t.Fatal("globex deleted acme's webhook")
	}
	h.action(g, "s1", "th1", "act_globex")
	h.action(a, "s1", "th1", "act_acme")
	testkit.Eventually(t, "acme's action delivered", func() bool { return len(rx.Accepted()) == 1 })
	if d := rx.Accepted()[0]; d.Data["actionId"] != "act_acme" || d.Data["tenantId"] != "acme" {
		t.Fatalf("delivered %v, want acme's action", d.Data)
	}
	for _, f := range h.deliveryFacts(a) {
		if f.GetEventId() == "" || f.GetOutcome() != "delivered" {
			t.Fatalf("delivery fact %v", f)
		}
	}
	if n := len(h.deliveryFacts(a)); n != 1 {
		t.Fatalf("%d delivery facts, want 1 (globex's action is not acme's to deliver)", n)
	}
}

// A delivery still owed when its webhook is deleted is cancelled, not
// attempted again: its last fact says so, and the receiver sees no
// attempt after it.
func TestDeletingAWebhookCancelsWhatItStillOwes(t *testing.T) {
	h := newHarnessWith(t, withWebhooks)
	ctx := acme(t)
	rx := webhooktest.New(t)
	rx.SetFailFirst(1 << 30)
	wh := h.webhook(ctx, rx)
	h.action(ctx, "s1", "th1", "act_1")
	testkit.Eventually(t, "a failed attempt recorded", func() bool { return len(h.deliveryFacts(ctx)) >= 1 })
	if _, err := h.client.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: wh.GetWebhook().GetWebhookId()}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the delivery cancelled", func() bool {
		fs := h.deliveryFacts(ctx)
		return fs[len(fs)-1].GetOutcome() == "cancelled"
	})
	fs := h.deliveryFacts(ctx)
	cancelled := fs[len(fs)-1]
	attempts := 0
	for _, f := range fs[:len(fs)-1] {
		if f.GetOutcome() != "retrying" {
			t.Fatalf("fact before the cancellation %v, want retrying", f)
		}
		attempts++
	}
	if cancelled.GetAttempt() != uint32(attempts) {
		t.Fatalf("cancelled after attempt %d, want %d (the last one made)", cancelled.GetAttempt(), attempts)
	}
	// What the receiver saw is what was recorded: no attempt after the
	// cancellation (a later one would have been recorded before it).
	got := 0
	rx.Each(func(d webhooktest.Delivery) { got += d.Attempts })
	if got != attempts {
		t.Fatalf("the receiver saw %d attempts, the log records %d", got, attempts)
	}
}

// A receiver that never answers holds up its own deliveries only: with
// more of them owed than the partition's attempts in flight, another
// subscription's delivery still goes out (each subscription has a few
// slots of its own).
func TestASlowReceiverDoesNotHoldUpOtherWebhooks(t *testing.T) {
	h := newHarnessOf(t, 1, func(h *harness) { h.webhooks, h.webhookAttemptTimeout = true, time.Hour })
	ctx := acme(t)
	release := make(chan struct{})
	var hung atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees the handlers Close waits for
	if _, err := h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: slow.URL, SessionIds: []string{"busy"}}); err != nil {
		t.Fatal(err)
	}
	rx := webhooktest.New(t)
	res, err := h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL, SessionIds: []string{"quiet"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.SetSecret(res.GetSecret()); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		h.action(ctx, "busy", fmt.Sprintf("th%d", i), fmt.Sprintf("act_busy_%d", i))
	}
	testkit.Eventually(t, "the slow receiver holding requests", func() bool { return hung.Load() >= 1 })
	h.action(ctx, "quiet", "th", "act_quiet")
	testkit.Eventually(t, "the other webhook's delivery", func() bool { return len(rx.Accepted()) == 1 })
	if n := hung.Load(); n > 4 {
		t.Fatalf("%d attempts held by the slow receiver, want at most 4 (its share)", n)
	}
}

// An A2A push notification config's deliveries survive a restart that
// rebuilds the read model from the log: the events before the start are
// matched against the configs of their own task as the log held them,
// so the config's task's events are delivered, another task's never.
func TestA2APushDeliveriesSurviveARebuild(t *testing.T) {
	h := newHarnessWith(t, func(h *harness) { h.webhooks, h.memory = true, true })
	ctx := acme(t)
	rx := webhooktest.New(t)
	rx.SetFailFirst(1 << 30) // down until told otherwise
	mine := h.submit(ctx, "s1", "th1").GetTurn().GetTurnId()
	other := h.submit(ctx, "s1", "th2").GetTurn().GetTurnId()
	cfg, err := h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL, A2APush: &controlv1.A2APush{TaskId: mine, ConfigId: "c1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.SetSecret(cfg.GetSecret()); err != nil {
		t.Fatal(err)
	}
	for _, tu := range []struct{ thread, turn, action string }{{"th1", mine, "act_mine"}, {"th2", other, "act_other"}} {
		if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: tu.thread, TurnId: tu.turn,
			ActionId: tu.action, ActionType: "input", Prompt: "Which branch?", Decisions: []string{"main", "dev"}}); err != nil {
			t.Fatal(err)
		}
	}
	owed := func() map[string]string { // event type -> its latest outcome, of the config's deliveries
		out := map[string]string{}
		for _, f := range h.deliveryFacts(ctx) {
			out[f.GetEventType()] = f.GetOutcome()
		}
		return out
	}
	testkit.Eventually(t, "the creation and the action tried", func() bool { return len(owed()) == 2 })
	h.stop()
	rx.SetFailFirst(0)
	h.start(projection.NewMemory()) // rebuilt from the log
	testkit.Eventually(t, "both delivered after the rebuild", func() bool {
		o := owed()
		return o[events.TypeChannelConnected] == "delivered" && o[events.TypeActionRequired] == "delivered"
	})
	var ids []string
	for _, f := range h.deliveryFacts(ctx) {
		ids = append(ids, f.GetEventId())
	}
	// The other task's action was never the config's.
	err = h.readLog(ctx, []string{h.log.Subjects.All()}, func(rec *eventlog.Record) error {
		if rec.Event.GetActionId() == "act_other" && rec.Event.GetType() == events.TypeActionRequired && slices.Contains(ids, rec.Event.GetEventId()) {
			t.Errorf("the other task's action.required was delivered to %s's config %s", mine, cfg.GetWebhook().GetWebhookId())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
