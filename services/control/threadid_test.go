package control_test

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Thread ids are unique per tenant, not per session: a submit to another
// session with a thread id already used is AlreadyExists, naming the
// thread (message and ResourceInfo), whatever the create policy.
func TestThreadIDOfAnotherSessionIsAlreadyExists(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	first := h.submit(ctx, "s1", "shared")
	h.threadRead(ctx, "s1", "shared", first.GetSequence())
	for _, policy := range []controlv1.CreatePolicy{controlv1.CreatePolicy_CREATE_POLICY_UNSPECIFIED, controlv1.CreatePolicy_CREATE_POLICY_REQUIRE_EXISTING} {
		_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s2", ThreadId: "shared", Input: text("hello"), CreatePolicy: policy})
		st := status.Convert(err)
		if st.Code() != codes.AlreadyExists || !strings.Contains(st.Message(), "thread shared belongs to another session") {
			t.Fatalf("SubmitTurn to s2 with s1's thread id (%s): %v", policy, err)
		}
		var info *errdetails.ResourceInfo
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.ResourceInfo); ok {
				info = ri
			}
		}
		if info.GetResourceType() != "thread" || info.GetResourceName() != "shared" {
			t.Fatalf("ResourceInfo of the refusal (%s): %v", policy, info)
		}
	}
}
