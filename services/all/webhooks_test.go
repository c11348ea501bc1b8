package all_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/webhooktest"
	"github.com/agentruntime/agentruntime/services/all/alltest"
	"github.com/agentruntime/agentruntime/services/kit"
)

// webhookKey is a test key (32 bytes).
var webhookKey = bytes.Repeat([]byte{7}, 32)

func webhookStack(t testing.TB) *alltest.Stack {
	return alltest.Start(t, alltest.Options{HookAllowHosts: []string{"127.0.0.1"}, WebhookKey: webhookKey,
		WebhookRetry: kit.WebhookRetry{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}})
}

// requireAction opens an action on a fresh turn of the session.
func requireAction(t *testing.T, st *alltest.Stack, session, thread, action string) {
	t.Helper()
	ctx := testkit.Context(t)
	sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: thread,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go on"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: session, ThreadId: thread, TurnId: sub.GetTurn().GetTurnId(),
		ActionId: action, ActionType: "input", Prompt: "Which branch?", Decisions: []string{"main", "dev"}}); err != nil {
		t.Fatal(err)
	}
}

func actionIDs(ds []webhooktest.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprint(d.Data["actionId"]))
	}
	slices.Sort(out)
	return out
}

// TestWebhookDeliversEachActionOnceSignedAfterTheReceiversFailures is the
// issue's acceptance: a receiver that answers the first two attempts of
// each delivery with 503 gets action.required once per action (by
// webhook-id), each with a signature it verifies from the Standard
// Webhooks specification; the outcomes are facts the list shows; the
// secret is in no event of the log.
func TestWebhookDeliversEachActionOnceSignedAfterTheReceiversFailures(t *testing.T) {
	st := webhookStack(t)
	ctx := testkit.Context(t)
	rx := webhooktest.New(t)
	rx.FailFirst = 2
	created, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL, Description: "pager"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.SetSecret(created.GetSecret()); err != nil {
		t.Fatal(err)
	}
	requireAction(t, st, "s1", "th1", "act_one")
	requireAction(t, st, "s2", "th2", "act_two")

	var list *controlv1.ListWebhooksResponse
	testkit.EventuallyWithin(t, testkit.Deadline, func() string {
		return fmt.Sprintf("both deliveries not recorded as ended: listed %v (%v); the receiver accepted %d, refused %v", list, err, len(rx.Accepted()), rx.Rejected())
	}, func() bool {
		list, err = st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{})
		wh := list.GetWebhooks()
		return err == nil && len(wh) == 1 && wh[0].GetDelivered()+wh[0].GetFailed() == 2
	})
	if r := rx.Rejected(); len(r) > 0 {
		t.Fatalf("receiver refused deliveries: %v", r)
	}
	got := rx.Accepted()
	if ids := actionIDs(got); !slices.Equal(ids, []string{"act_one", "act_two"}) {
		t.Fatalf("accepted deliveries of actions %v, want act_one and act_two once each", ids)
	}
	for _, d := range got {
		if d.Type != "action.required" || d.Accepted != 1 || d.Attempts != 3 {
			t.Errorf("delivery %s: type %s, %d attempts, %d accepted; want action.required, 3 attempts (two 503s), accepted once", d.ID, d.Type, d.Attempts, d.Accepted)
		}
	}
	wh := list.GetWebhooks()[0]
	if wh.GetWebhookId() != created.GetWebhook().GetWebhookId() || wh.GetUrl() != rx.URL || wh.GetFailed() != 0 {
		t.Fatalf("listed %v", wh)
	}
	for _, d := range wh.GetRecentDeliveries() {
		if d.GetOutcome() != "delivered" || d.GetAttempts() != 3 || d.GetStatusCode() != 204 {
			t.Errorf("recent delivery %v, want delivered at the third attempt", d)
		}
	}
	// Each failed attempt is a fact too: two retrying, one delivered, per
	// delivery, on the delivered event's session.
	outcomes := map[string]int{}
	secretText := []byte(created.GetSecret()[len("whsec_"):])
	secret, err := base64.StdEncoding.DecodeString(string(secretText))
	if err != nil || len(secret) < 24 {
		t.Fatalf("secret %q: %v, want whsec_ and at least 24 bytes in base64", created.GetSecret(), err)
	}
	for _, v := range st.Log.Views() {
		_, err = v.Read(ctx, []string{v.Subjects.All()}, eventlog.FromStart, func(rec *eventlog.Record) error {
			raw, _ := proto.Marshal(rec.Event)
			if bytes.Contains(raw, secret) || bytes.Contains(raw, secretText) {
				t.Errorf("event %s (%s) carries the webhook secret", rec.Event.GetEventId(), rec.Event.GetType())
			}
			if d := rec.Event.GetChannelMessage().GetDelivery(); d != nil {
				outcomes[d.GetOutcome()]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if outcomes["retrying"] != 4 || outcomes["delivered"] != 2 {
		t.Fatalf("delivery facts %v, want 4 retrying and 2 delivered", outcomes)
	}
}

// TestWebhookTargetsAreRestrictedByTheHookAllowlist: a URL whose host the
// allowlist does not name is refused at creation, naming the field.
func TestWebhookTargetsAreRestrictedByTheHookAllowlist(t *testing.T) {
	st := webhookStack(t)
	ctx := testkit.Context(t)
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data", // cloud metadata
		"http://localhost:6379/",                  // a name the list does not hold
		"http://10.0.0.1/hook",
		"file:///etc/passwd",
		"http://user:pw@127.0.0.1/hook",
	} {
		_, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: u})
		if s := status.Convert(err); s.Code() != codes.InvalidArgument || !violates(s, "url") {
			t.Errorf("CreateWebhook(%s): %v, want InvalidArgument on url", u, err)
		}
	}
	_, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: "http://127.0.0.1:1/x", EventTypes: []string{"action.required", "no.such"}})
	if s := status.Convert(err); s.Code() != codes.InvalidArgument || !violates(s, "event_types[1]") {
		t.Errorf("unknown event type: %v, want InvalidArgument on event_types[1]", err)
	}
}

// TestADeletedWebhookStopsDelivering: after DeleteWebhook, events go to
// the subscriptions that remain and never to the deleted one.
func TestADeletedWebhookStopsDelivering(t *testing.T) {
	st := webhookStack(t)
	ctx := testkit.Context(t)
	gone, kept := webhooktest.New(t), webhooktest.New(t)
	mk := func(rx *webhooktest.Receiver) *controlv1.CreateWebhookResponse {
		res, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL})
		if err != nil {
			t.Fatal(err)
		}
		if err := rx.SetSecret(res.GetSecret()); err != nil {
			t.Fatal(err)
		}
		return res
	}
	g, _ := mk(gone), mk(kept)
	requireAction(t, st, "s1", "th1", "act_before")
	testkit.Eventually(t, "both receivers get the first action", func() bool {
		return len(gone.Accepted()) == 1 && len(kept.Accepted()) == 1
	})
	del, err := st.Control.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: g.GetWebhook().GetWebhookId()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Control.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: g.GetWebhook().GetWebhookId()}); status.Code(err) != codes.NotFound {
		t.Fatalf("deleting it again: %v, want NotFound", err)
	}
	list, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{MinSequence: del.GetSequence()})
	if err != nil || len(list.GetWebhooks()) != 1 {
		t.Fatalf("list after delete: %v, %v", list, err)
	}
	requireAction(t, st, "s1", "th1b", "act_after")
	testkit.Eventually(t, "the kept receiver gets the second action", func() bool { return len(kept.Accepted()) == 2 })
	if ids := actionIDs(gone.Accepted()); !slices.Equal(ids, []string{"act_before"}) {
		t.Fatalf("the deleted webhook's receiver got %v, want act_before only", ids)
	}
}
