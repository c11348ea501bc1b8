package all_test

import (
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/quota"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/services/all/alltest"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
)

// A tenant's parked turns are bounded (quota.Limits.ParkedTurns): with a
// bound of one, a second park is refused ResourceExhausted
// PARKED_TURNS_PER_TENANT with RetryInfo and records nothing (its run keeps
// the turn), and once the first has ended the second parks.
func TestParkedTurnsAreBoundedPerTenant(t *testing.T) {
	st := alltest.Start(t, alltest.Options{Quota: quota.New(quota.Config{Default: quota.Limits{ParkedTurns: 1}})})
	ctx := testkit.Context(t)
	c := st.Control
	type claimed struct{ turn, run, token string }
	next := func() claimed {
		t.Helper()
		got, err := c.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "w1", Wait: durationpb.New(10 * time.Second), LeaseTtl: durationpb.New(time.Minute)})
		if err != nil || got.GetTurn() == nil {
			t.Fatalf("claim: %v, %v", got, err)
		}
		return claimed{got.GetTurn().GetTurnId(), got.GetRunId(), got.GetLeaseToken()}
	}
	claim := func(thread string) claimed {
		t.Helper()
		if _, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: thread,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "wait"}}}}); err != nil {
			t.Fatal(err)
		}
		return next()
	}
	park := func(cl claimed) error {
		stored, err := c.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: cl.turn, ToolCallId: "checkpoint:" + cl.run,
			MediaType: "application/json", Content: []byte(`{"version":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ReportEvents(ctx, &controlv1.ReportEventsRequest{RunId: cl.run, LeaseToken: cl.token, Events: []*eventsv1.RuntimeEvent{{
			Type: "run.status", SessionId: "s1", TurnId: cl.turn, RunId: cl.run,
			Payload: &eventsv1.RuntimeEvent_RunStatus{RunStatus: &eventsv1.RunStatus{Phase: "parked", Title: "handed back",
				Checkpoints: []string{stored.GetOutput().GetUri()}, Metadata: map[string]string{"reason": "wait", "action_ids": "act_" + cl.turn}}}}}})
		return err
	}
	first := claim("th-1")
	if err := park(first); err != nil {
		t.Fatal(err)
	}
	// The cap counts the parks control's claims read model holds (a burst
	// may pass it by what that has not folded yet): wait for this one.
	testkit.EventuallyWithin(t, 10*time.Second, func() string { return "the claims read model never held the first park" }, func() bool {
		n, err := st.Stores["control"].Count(ctx, controlreadmodel.ParkedIndex("t1"))
		return err == nil && n == 1
	})
	second := claim("th-2")
	var refused error
	testkit.EventuallyWithin(t, 10*time.Second, func() string { return "the second park was accepted with one turn parked" }, func() bool {
		refused = park(second)
		if refused == nil {
			t.Fatal("the second park was accepted with one turn parked (bound 1)")
		}
		return status.Code(refused) == codes.ResourceExhausted
	})
	s := status.Convert(refused)
	var reason string
	var retry bool
	for _, d := range s.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() > 0
		}
	}
	if reason != quota.ReasonParkedTurns || !retry {
		t.Fatalf("refusal %v: reason %q, retry info %v", s, reason, retry)
	}
	// The refused run still holds its turn: it reports on.
	if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{RunId: second.run, LeaseToken: second.token, Events: []*eventsv1.RuntimeEvent{{
		Type: "model.delta", SessionId: "s1", TurnId: second.turn, RunId: second.run,
		Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: "still here"}}}}}); err != nil {
		t.Fatalf("the refused run lost its turn: %v", err)
	}
	// The first ends (an interrupt ends a parked turn at once): it is no
	// longer parked, and the second parks.
	if _, err := c.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th-1", TurnId: first.turn}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 10*time.Second, func() string { return "the second park was refused after the first was resumed" }, func() bool {
		return park(second) == nil
	})
}
