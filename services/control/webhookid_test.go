package control_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/webhooktest"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// refusedAs fails unless err has code and a ResourceInfo naming a webhook
// id, and its message says want.
func refusedAs(t *testing.T, err error, code codes.Code, id, want string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || !strings.Contains(st.Message(), want) {
		t.Fatalf("got %v, want %s saying %q", err, code, want)
	}
	if code != codes.AlreadyExists {
		return
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.ResourceInfo); ok && ri.GetResourceType() == "webhook" && ri.GetResourceName() == id {
			return
		}
	}
	t.Fatalf("%v names no webhook %s in its ResourceInfo", err, id)
}

// A webhook created under a caller-chosen id is safe to retry: a create
// whose answer was lost, sent again, answers the same webhook with the
// same secret and makes no second one (one delivery per event, signed
// with that secret), even with the tenant at its bound. Another
// caller, another definition under the id, or the id of a deleted
// webhook, is AlreadyExists; the id is the tenant's own; an A2A push
// config cannot take one.
func TestACreateUnderItsOwnIDIsSafeToRetry(t *testing.T) {
	h := newHarnessWith(t, withWebhooks)
	ctx := acme(t)
	rx := webhooktest.New(t)
	req := &controlv1.CreateWebhookRequest{WebhookId: "build-bot", Url: rx.URL, EventTypes: []string{"action.required"}, Description: "the build bot"}
	first, err := h.client.CreateWebhook(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := rx.SetSecret(first.GetSecret()); err != nil {
		t.Fatal(err)
	}
	// Fill the tenant's bound with others (of an event this test makes
	// none of): the retry still answers.
	for i := range domain.MaxWebhooksPerTenant - 1 {
		if _, err := h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + fmt.Sprintf("/other%d", i), EventTypes: []string{"turn.completed"}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + "/one-too-many"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a webhook past the bound: %v, want ResourceExhausted", err)
	}
	again, err := h.client.CreateWebhook(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	w1, w2 := first.GetWebhook(), again.GetWebhook()
	if w2.GetWebhookId() != "build-bot" || w1.GetWebhookId() != "build-bot" || again.GetSecret() != first.GetSecret() || w2.GetSequence() != w1.GetSequence() {
		t.Fatalf("the retry answered %v (secret %t the same), want the first call's %v", w2, again.GetSecret() == first.GetSecret(), w1)
	}
	list, err := h.client.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{MinSequence: again.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetWebhooks()); n != domain.MaxWebhooksPerTenant {
		t.Fatalf("the tenant has %d webhooks, want %d", n, domain.MaxWebhooksPerTenant)
	}
	// One event, one delivery to the build bot (its URL alone), signed
	// with the one secret.
	h.action(ctx, "s1", "th1", "act_1")
	testkit.Eventually(t, "the action delivered", func() bool { return len(rx.Accepted()) >= 1 })
	if got := rx.Accepted(); len(got) != 1 || got[0].Data["actionId"] != "act_1" {
		t.Fatalf("delivered %v, want act_1 once", got)
	}
	// Another caller of the tenant, an operator too, is not shown the
	// secret.
	_, err = h.client.CreateWebhook(as(t, keyAcmeOperator), req)
	refusedAs(t, err, codes.AlreadyExists, "build-bot", "webhook build-bot was made by another caller")
	// Another definition under the id.
	other := &controlv1.CreateWebhookRequest{WebhookId: "build-bot", Url: rx.URL + "/elsewhere", EventTypes: req.GetEventTypes(), Description: req.GetDescription()}
	_, err = h.client.CreateWebhook(ctx, other)
	refusedAs(t, err, codes.AlreadyExists, "build-bot", "webhook build-bot exists with another definition")
	// Another tenant's id space is its own.
	g, err := h.client.CreateWebhook(globex(t), req)
	if err != nil || g.GetWebhook().GetWebhookId() != "build-bot" || g.GetSecret() == first.GetSecret() {
		t.Fatalf("globex's build-bot: %v, %v (want its own, with its own secret)", g, err)
	}
	// A deleted webhook's id is not made again.
	if _, err := h.client.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: "build-bot"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.client.CreateWebhook(ctx, req)
	refusedAs(t, err, codes.AlreadyExists, "build-bot", "webhook build-bot was deleted")
	// An A2A push config is named by its config id.
	_, err = h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{WebhookId: "cfg", Url: rx.URL, A2APush: &controlv1.A2APush{TaskId: "turn_x"}})
	refusedAs(t, err, codes.InvalidArgument, "", "webhook_id")
	_, err = h.client.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{WebhookId: "no.dots", Url: rx.URL})
	refusedAs(t, err, codes.InvalidArgument, "", "webhook_id")
}
