package permission_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/permission"
)

// A hook registered while its host was allowed is not called by a service
// whose --hook-allow-hosts no longer allows it: the run fails as a
// handler error naming the host, and a guarding hook's failure leaves
// the decision unavailable (the action does not run).
// A service restricted to other hosts refuses to register it at all.
func TestAHookOnAHostNoLongerAllowedIsNotCalled(t *testing.T) {
	h := newHarness(t) // no restriction: registers any host
	var calls atomic.Int32
	target := startHookServer(t, func(context.Context, *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
		calls.Add(1)
		return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE}, nil
	})
	hook := &eventsv1.Hook{HookId: "guard", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}}
	reg, err := h.client.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: hook})
	require.NoError(t, err)

	narrowed := startReplicaConfigured(t, h.nats, h.log.Partitions(), func(ctx context.Context, svc *permission.Service, _ *eventlog.Log, _ projection.Store) error {
		return svc.Run(ctx)
	},
		kit.Config{RestrictHookHosts: true, HookAllowHosts: []string{"hooks.internal"}})
	_, err = narrowed.client.RegisterHook(h.ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{HookId: "again", Point: hook.Point, Handler: hook.Handler}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hook.grpc_target")

	req := evalReq("fs.write", eventsv1.Access_ACCESS_WRITE)
	req.Paths, req.MinSequence = []string{"notes.txt"}, reg.GetWrite().GetSequence()
	res, err := narrowed.client.EvaluatePermission(h.ctx, req)
	require.NoError(t, err)
	assert.Equal(t, int32(0), calls.Load(), "the hook was called")
	assert.Equal(t, eventsv1.Decision_DECISION_UNAVAILABLE, res.GetEvaluation().GetDecision(), "a guarding hook that failed: the action must not run")
	var failed *eventsv1.HookFailed
	for _, e := range h.history(sess) {
		if e.GetType() == "hook.failed" {
			failed = e.GetHookFailed()
		}
	}
	require.NotNil(t, failed, "no hook.failed")
	assert.Equal(t, eventsv1.HookFailureCategory_HOOK_FAILURE_CATEGORY_HANDLER_ERROR, failed.GetCategory())
	assert.True(t, strings.Contains(failed.GetError(), "not allowed for hooks"), failed.GetError())
}
