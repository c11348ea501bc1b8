package permission_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// sessionApart is a session of tenant t1 whose partition is not the one of
// t1's session-less facts (its tenant and workspace policy levels).
func sessionApart(t *testing.T, log *eventlog.Log) string {
	t.Helper()
	for i := range 100 {
		s := fmt.Sprintf("s%d", i)
		if log.Subjects.PartitionOf("t1", s) != log.Subjects.PartitionOf("t1", eventlog.NoSession) {
			return s
		}
	}
	t.Fatal("no session of t1 outside the partition of its session-less facts")
	return ""
}

// On a log of 3 partitions a tenant policy (session-less) decides the
// evaluations of a session in another partition, whose positions are not
// ordered with the policy's. A replica decides on its own policy write at
// once, even with a token of the session's partition that is past the
// write's position while its read model of the policy's partition is
// behind (a's never moves: its projector folds the session's partition
// only); another replica given the write's token decides on it, and keeps
// deciding on it without a token although its writer holds the level as
// it wrote it before (b's entry is v1, its read model has v2). Both
// compare a held level with the checkpoint of the level's own partition.
func TestTenantPolicyDecidesASessionOfAnotherPartition(t *testing.T) {
	ns := natstest.Server(t)
	b := startReplicaOf(t, ns, 3, true)
	session := sessionApart(t, b.log)
	k := b.log.Subjects.PartitionOf("t1", session)
	a := startReplicaRunning(t, ns, 3, func(ctx context.Context, _ *permission.Service, log *eventlog.Log, store projection.Store) error {
		return projector.Run(ctx, log.Partition(k), store, readmodel.New(log.Subjects), nil)
	})
	putRules := func(h *harness, id string) uint64 {
		t.Helper()
		res, err := h.client.PutRules(h.ctx, &permissionv1.PutRulesRequest{Scope: tenantLevel,
			Rules: []*eventsv1.PermissionRule{{RuleId: id, Effect: eventsv1.RuleEffect_RULE_EFFECT_DENY, Tool: "shell", Commands: []string{"git push"}}}})
		require.NoError(t, err)
		return res.GetWrite().GetSequence()
	}
	push := func(h *harness, minSequence uint64, why string) uint64 {
		t.Helper()
		res, err := h.client.EvaluatePermission(h.ctx, &permissionv1.EvaluatePermissionRequest{SessionId: session, ThreadId: "main", TurnId: "turn1",
			Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "git push origin main",
			MinSequence: minSequence})
		require.NoError(t, err)
		require.Equal(t, []string{"v2"}, res.GetEvaluation().GetRuleRefs(), "%s (min_sequence %d): decided on another policy", why, minSequence)
		return res.GetWrite().GetSequence()
	}

	putRules(b, "v1")
	v2 := putRules(a, "v2")
	require.NotEqual(t, k, b.log.PartitionOfPosition(v2))

	// a: its own write, with the session's tokens until one is past v2.
	token := uint64(0)
	for i := 0; token <= v2; i++ {
		require.Less(t, i, 100, "the session's partition never passed v2's position")
		token = push(a, token, "a, on its own write")
	}
	push(a, token, "a, with a token of the session's partition past v2's position")

	// b: with v2's token, then without one.
	push(b, v2, "b, with the write's token")
	push(b, 0, "b, after its read model has the write")
}
