package security

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
	"github.com/agentruntime/agentruntime/pkg/testkit/webhooktest"
)

// Webhooks through the real binary with roles on, as an attacker in
// another tenant or with a lesser role would try them: acme's operator
// subscribes with the CLI; globex's operator cannot see, delete or feed
// acme's subscription, and its actions never reach acme's receiver; acme's
// worker (which a model drives) cannot subscribe anything; no one can
// point a webhook at a host outside the allowlist (dev's: loopback).
func TestWebhooksAreTheTenantsOwnAndStayInsideTheAllowlist(t *testing.T) {
	dev := binproc.Start(t, bin, nil, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--console=false", "--auth", authFile(t))
	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	control := controlv1.NewControlServiceClient(conn)
	base := testkit.Context(t)
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	operator, worker, gOperator := as(acmeOperator), as(acmeWorker), as(globexOperator)

	rx := webhooktest.New(t)
	created := regexp.MustCompile(`(?m)^webhook (\S+) .*\nsecret\s+(whsec_\S+)`)
	out, err := exec.Command(bin, "webhooks", "create", "--addr", dev.Addr, "--api-key", acmeOperator, "--description", "pager", rx.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("webhooks create: %v\n%s", err, out)
	}
	m := created.FindStringSubmatch(string(out))
	if m == nil || !strings.HasPrefix(m[1], "wh_") {
		t.Fatalf("webhooks create printed %q, want the id and the secret", out)
	}
	id := m[1]
	// Under an id of the operator's: the same create run again (its
	// answer lost, say) answers the same webhook and secret.
	var named []string
	for range 2 {
		out, err := exec.Command(bin, "webhooks", "create", "--addr", dev.Addr, "--api-key", acmeOperator, "--id", "pager-2", "--events", "turn.completed", rx.URL).CombinedOutput()
		if err != nil {
			t.Fatalf("webhooks create --id: %v\n%s", err, out)
		}
		if m := created.FindStringSubmatch(string(out)); m != nil && m[1] == "pager-2" {
			named = append(named, m[2])
		}
	}
	if len(named) != 2 || named[0] != named[1] {
		t.Fatalf("webhooks create --id pager-2, twice, printed the secrets %v, want one secret twice", named)
	}
	if out, err := exec.Command(bin, "webhooks", "delete", "--addr", dev.Addr, "--api-key", acmeOperator, "pager-2").CombinedOutput(); err != nil {
		t.Fatalf("webhooks delete pager-2: %v\n%s", err, out)
	}
	if err := rx.SetSecret(m[2]); err != nil {
		t.Fatal(err)
	}

	// Another tenant sees nothing of it and cannot end it.
	if list, err := control.ListWebhooks(gOperator, &controlv1.ListWebhooksRequest{}); err != nil || len(list.GetWebhooks()) != 0 {
		t.Fatalf("globex lists %v, %v; want nothing", list, err)
	}
	if _, err := control.DeleteWebhook(gOperator, &controlv1.DeleteWebhookRequest{WebhookId: id}); status.Code(err) != codes.NotFound {
		t.Fatalf("globex deleting acme's webhook: %v, want NotFound", err)
	}
	// A worker cannot subscribe: a webhook sends the tenant's facts out.
	if _, err := control.CreateWebhook(worker, &controlv1.CreateWebhookRequest{Url: rx.URL}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("acme's worker creating a webhook: %v, want PermissionDenied", err)
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://10.0.0.7:8500/v1/kv", "http://[fd00::1]/", "http://metadata.google.internal/"} {
		_, err := control.CreateWebhook(operator, &controlv1.CreateWebhookRequest{Url: u})
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !namesField(st, "url") {
			t.Errorf("webhook to %s: %v, want InvalidArgument on url", u, err)
		}
	}

	// globex's action first, then acme's: only acme's is delivered.
	open := func(ctx context.Context, session string) {
		t.Helper()
		sub, err := control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: "th1", Input: text("go")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: session, ThreadId: "th1", TurnId: sub.GetTurn().GetTurnId(),
			ActionId: "act_" + session, ActionType: "input", Prompt: "Which?", Decisions: []string{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	open(gOperator, "gs1")
	open(operator, "as1")
	testkit.Eventually(t, "acme's action delivered", func() bool { return len(rx.Accepted()) >= 1 })
	var list *controlv1.ListWebhooksResponse
	testkit.Eventually(t, "the delivery recorded", func() bool {
		list, err = control.ListWebhooks(operator, &controlv1.ListWebhooksRequest{})
		return err == nil && len(list.GetWebhooks()) == 1 && list.GetWebhooks()[0].GetDelivered() == 1
	})
	got := rx.Accepted()
	if len(got) != 1 || got[0].Data["tenantId"] != "acme" || got[0].Data["actionId"] != "act_as1" {
		t.Fatalf("acme's receiver got %+v, want acme's action only", got)
	}
	if strings.Contains(list.String(), "whsec_") || strings.Contains(list.String(), m[2][len("whsec_"):]) {
		t.Fatal("the list shows the secret")
	}
	// The CLI lists it too, with its delivery.
	ls, err := exec.Command(bin, "webhooks", "ls", "--addr", dev.Addr, "--api-key", acmeOperator).CombinedOutput()
	if err != nil || !strings.Contains(string(ls), id) || !strings.Contains(string(ls), "delivered action.required") {
		t.Fatalf("webhooks ls: %v\n%s", err, ls)
	}
	if out, err := exec.Command(bin, "webhooks", "delete", "--addr", dev.Addr, "--api-key", acmeOperator, id).CombinedOutput(); err != nil {
		t.Fatalf("webhooks delete: %v\n%s", err, out)
	}
}
