package control_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// Claim order (docs/services/control.md, "Claim order"): priority first,
// then weighted fair share across fairness keys, then arrival.

// claimN claims n turns, in turn through each of hs (replicas), and
// answers the claimed turns in claim order; no turn is claimed twice.
func claimN(t *testing.T, ctx context.Context, n int, hs ...*harness) []string {
	t.Helper()
	var order []string
	seen := map[string]bool{}
	for i := range n {
		c := hs[i%len(hs)].claim(ctx, &controlv1.ClaimTurnRequest{WorkerId: fmt.Sprintf("w%d", i%3)})
		id := c.GetTurn().GetTurnId()
		if id == "" {
			t.Fatalf("claim %d found nothing", i+1)
		}
		if seen[id] {
			t.Fatalf("turn %s claimed twice", id)
		}
		seen[id] = true
		order = append(order, id)
	}
	return order
}

// noisyAndQuiet is 300 turns of one fairness key, spread over sessions
// (each on its own thread, so each is claimable), then 3 turns of each of
// five quiet keys (their sessions: the default key).
func noisyAndQuiet(sessions func(i int) string) []queued {
	var turns []queued
	for i := range 300 {
		turns = append(turns, queued{session: sessions(i), thread: fmt.Sprintf("noisy-%d", i), key: "user-noisy"})
	}
	for k := range 5 {
		for i := range 3 {
			turns = append(turns, queued{session: fmt.Sprintf("quiet-%d", k), thread: fmt.Sprintf("quiet-%d-%d", k, i)})
		}
	}
	return turns
}

// assertQuietFirst checks that every quiet turn (of its session's key)
// was among the first bound claims.
func assertQuietFirst(t *testing.T, order []string, byTurn map[string]queued, bound int) {
	t.Helper()
	testkit.Within(t, order, func(id string) bool { return byTurn[id].key == "" }, 15, bound)
}

// One user with 300 waiting turns does not delay five others with three
// each: round robin across keys serves them all within the first claims
// (6 keys, 3 rounds: 18; the bound leaves room for ties).
func TestClaimsShareTurnsFairlyAcrossKeys(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	byTurn := h.submitAll(ctx, noisyAndQuiet(func(i int) string { return fmt.Sprintf("noisy-%d", i%10) }))
	order := claimN(t, ctx, 40, h)
	assertQuietFirst(t, order, byTurn, 40)
	// A claimed turn reads how it is claimed, defaults applied: only the
	// noisy key's turns are left.
	tu := h.claim(ctx, &controlv1.ClaimTurnRequest{}).GetTurn()
	if tu.GetPriority() != 3 || tu.GetFairnessWeight() != 1 || tu.GetFairnessKey() != "user-noisy" {
		t.Fatalf("turn reads priority %d, key %q, weight %v; want 3, user-noisy, 1", tu.GetPriority(), tu.GetFairnessKey(), tu.GetFairnessWeight())
	}
}

// A key of weight 2 gets twice the claims of a key of weight 1 while both
// have turns waiting: 30 claims among 40 waiting turns of each are 20 and
// 10 (ties at equal virtual time may move one).
func TestClaimsFollowFairnessWeights(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	var turns []queued
	for i := range 40 {
		turns = append(turns,
			queued{session: "light", thread: fmt.Sprintf("light-%d", i), key: "light", weight: 1},
			queued{session: "heavy", thread: fmt.Sprintf("heavy-%d", i), key: "heavy", weight: 2})
	}
	byTurn := h.submitAll(ctx, turns)
	heavy := 0
	for _, id := range claimN(t, ctx, 30, h) {
		if byTurn[id].key == "heavy" {
			heavy++
		}
	}
	if heavy < 19 || heavy > 21 {
		t.Fatalf("weight 2 got %d of 30 claims, weight 1 got %d; want about 20 and 10", heavy, 30-heavy)
	}
}

// An urgent turn submitted behind 1,000 waiting turns of the default
// priority is the next one claimed; after it the others go on in order.
func TestAnUrgentTurnIsClaimedFirst(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	var turns []queued
	for i := range 1000 {
		turns = append(turns, queued{session: fmt.Sprintf("bulk-%d", i%20), thread: fmt.Sprintf("bulk-%d", i)})
	}
	h.submitAll(ctx, turns)
	urgent := h.submit(ctx, "urgent", "urgent", func(r *controlv1.SubmitTurnRequest) { r.Priority = 1; r.FairnessKey = "user-42" })
	if urgent.Turn.GetPriority() != 1 || urgent.Turn.GetFairnessKey() != "user-42" {
		t.Fatalf("submitted turn reads priority %d key %q", urgent.Turn.GetPriority(), urgent.Turn.GetFairnessKey())
	}
	h.waitFolded(ctx)
	if got := claimN(t, ctx, 2, h); got[0] != urgent.Turn.TurnId || got[1] == urgent.Turn.TurnId {
		t.Fatalf("claimed %v, want the urgent turn %s first", got, urgent.Turn.TurnId)
	}
}

// Bad classes are InvalidArgument naming the field; nothing is submitted.
func TestSubmitRefusesBadClasses(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	for _, tc := range []struct {
		field string
		mod   func(*controlv1.SubmitTurnRequest)
	}{
		{"priority", func(r *controlv1.SubmitTurnRequest) { r.Priority = 6 }},
		{"fairness_key", func(r *controlv1.SubmitTurnRequest) { r.FairnessKey = string(make([]byte, 65)) }},
		{"fairness_weight", func(r *controlv1.SubmitTurnRequest) { r.FairnessWeight = proto.Float32(0) }},
		{"fairness_weight", func(r *controlv1.SubmitTurnRequest) { r.FairnessWeight = proto.Float32(-2) }},
		{"fairness_weight", func(r *controlv1.SubmitTurnRequest) { r.FairnessWeight = proto.Float32(float32(math.Inf(1))) }},
	} {
		req := &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text("x")}
		tc.mod(req)
		_, err := h.client.SubmitTurn(ctx, req)
		assertCode(t, err, codes.InvalidArgument, tc.field)
	}
	if _, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1"}); err == nil {
		t.Fatal("a refused submit created its session")
	}
}

// On a log of three partitions with two replicas claiming in turn, the
// order is the same: the noisy key's sessions are in every partition, the
// quiet keys' wherever they fall, and an urgent turn in another partition
// than the waiting ones is claimed first. No turn is claimed twice.
func TestFairClaimsAcrossPartitionsAndReplicas(t *testing.T) {
	h := newPartitioned(t, func(h *harness) { h.leasesInRedis = true })
	r := h.replica()
	ctx := acme(t)
	sessions := []string{h.sessionIn("acme", 0, "noisy"), h.sessionIn("acme", 1, "noisy"), h.sessionIn("acme", 2, "noisy")}
	byTurn := h.submitAll(ctx, noisyAndQuiet(func(i int) string { return sessions[i%3] }))
	order := claimN(t, ctx, 40, h, r)
	assertQuietFirst(t, order, byTurn, 40)

	urgent := h.submit(ctx, h.sessionIn("acme", 1, "urgent"), "urgent", func(r *controlv1.SubmitTurnRequest) { r.Priority = 1 })
	h.waitFolded(ctx)
	if got := claimN(t, ctx, 1, r); got[0] != urgent.Turn.TurnId {
		t.Fatalf("claimed %s, want the urgent turn %s", got[0], urgent.Turn.TurnId)
	}
}
