package security

import (
	"context"
	"fmt"
	"os"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// authFileWith is authFile with more YAML after the keys (a tenants
// section).
func authFileWith(t *testing.T, extra string) string {
	t.Helper()
	path := authFile(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Tenant acme, held by the auth file to 20 events a second, floods the
// shared log with submits to fresh sessions through the real binary. It is
// refused ResourceExhausted with a RetryInfo and an ErrorInfo naming the
// limit, and the refused submit lands nothing; acme still reads. Tenant
// globex's submit lands meanwhile; acme's retry lands once it has waited.
func TestAFloodingTenantIsRefusedWhileAnotherTenantsSubmitLands(t *testing.T) {
	control, _, as := runtimeWithAuthFile(t, authFileWith(t, "tenants:\n  - {tenant: acme, append_events_per_second: 20}\n"))
	acme, globex := as(acmeOperator), as(globexOperator)
	submit := func(ctx context.Context, session string) (*controlv1.SubmitTurnResponse, error) {
		return control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: "th-" + session, TurnId: "turn-" + session, Input: text("flood")})
	}
	var refused error
	var refusedSession string
	var firstSeq uint64
	for i := range 200 {
		session := fmt.Sprint("flood-", i)
		resp, err := submit(acme, session)
		if err != nil {
			refused, refusedSession = err, session
			break
		}
		if i == 0 {
			firstSeq = resp.GetSequence()
		}
	}
	if refused == nil {
		t.Fatal("200 submits of a tenant held to 20 events a second all landed")
	}
	st := status.Convert(refused)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("the flood was answered %v, want ResourceExhausted", refused)
	}
	var retry *errdetails.RetryInfo
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.ErrorInfo:
			info = d
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
		t.Fatalf("refusal %v carries no retry delay", st.Details())
	}
	if info.GetReason() != "APPEND_EVENTS_RATE" || info.GetMetadata()["limit"] != "append_events_per_second" || info.GetMetadata()["rate"] != "20" {
		t.Fatalf("refusal's ErrorInfo %v, want the limit named", info)
	}

	// A tenant over its quota still reads: only commands are refused.
	if _, err := control.GetSession(acme, &controlv1.GetSessionRequest{SessionId: "flood-0", MinSequence: firstSeq}); err != nil {
		t.Fatalf("acme's read while refused its commands: %v", err)
	}

	other, err := submit(globex, "globex-s1")
	if err != nil {
		t.Fatalf("globex's submit during acme's flood: %v", err)
	}
	if other.GetTurn().GetTurnId() != "turn-globex-s1" {
		t.Fatalf("globex's submit answered %v", other)
	}

	// Retried as RetryInfo says, the refused submit lands; before it, the
	// session it names did not exist.
	var landed *controlv1.SubmitTurnResponse
	testkit.Eventually(t, "acme's refused submit lands on retry", func() bool {
		landed, err = submit(acme, refusedSession)
		if status.Code(err) != codes.ResourceExhausted && err != nil {
			t.Fatalf("retry: %v", err)
		}
		return err == nil
	})
	if landed.GetDeduplicated() {
		t.Fatal("the retry was taken for a duplicate: the refused submit had landed")
	}
}

// Tenant acme, held by the auth file to 2 open streams, opens a third
// subscription through the real binary: ResourceExhausted
// STREAMS_PER_TENANT with a RetryInfo. Tenant globex subscribes meanwhile;
// once acme closes one, its next subscription is served.
func TestATenantHoldsABoundedNumberOfSubscriptions(t *testing.T) {
	control, _, as := runtimeWithAuthFile(t, authFileWith(t, "tenants:\n  - {tenant: acme, max_streams: 2}\n"))
	acme, globex := as(acmeOperator), as(globexOperator)
	if _, err := control.SubmitTurn(acme, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("hi")}); err != nil {
		t.Fatal(err)
	}
	// open subscribes to the session from the start and answers how to
	// close it and the first item's error (nil: served).
	open := func(ctx context.Context, session string) (context.CancelFunc, error) {
		ctx, cancel := context.WithCancel(ctx)
		stream, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
		if err == nil {
			_, err = stream.Recv()
		}
		return cancel, err
	}
	close1, err := open(acme, "s1")
	if err != nil {
		t.Fatal(err)
	}
	close2, err := open(acme, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer close2()
	close3, err := open(acme, "s1")
	defer close3()
	st := status.Convert(err)
	var retry, named bool
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() > 0
		case *errdetails.ErrorInfo:
			named = d.GetReason() == "STREAMS_PER_TENANT" && d.GetMetadata()["max"] == "2"
		}
	}
	if st.Code() != codes.ResourceExhausted || !retry || !named {
		t.Fatalf("acme's third subscription: %v %v, want ResourceExhausted STREAMS_PER_TENANT with a retry delay", err, st.Details())
	}
	if _, err := control.SubmitTurn(globex, &controlv1.SubmitTurnRequest{SessionId: "g1", ThreadId: "gth1", Input: text("hi")}); err != nil {
		t.Fatal(err)
	}
	if closeG, err := open(globex, "g1"); err != nil {
		t.Fatalf("globex's subscription while acme holds its bound: %v", err)
	} else {
		defer closeG()
	}
	close1()
	testkit.Eventually(t, "acme's subscription served once it closed one", func() bool {
		c, err := open(acme, "s1")
		if err != nil {
			c()
			return false
		}
		t.Cleanup(c)
		return true
	})
}
