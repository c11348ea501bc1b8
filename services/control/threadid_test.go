package control_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Thread ids are unique per tenant: a submit to another session with a
// thread id already used is AlreadyExists, naming the thread.
func TestThreadIDOfAnotherSessionIsAlreadyExists(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	first := h.submit(ctx, "s1", "shared")
	h.threadRead(ctx, "s1", "shared", first.GetSequence())
	_, err := h.client.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s2", ThreadId: "shared", Input: text("hello")})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(status.Convert(err).Message(), "thread shared belongs to another session") {
		t.Fatalf("SubmitTurn to s2 with s1's thread id: %v", err)
	}
}
