package permission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
)

// A worker reports what it enforced: sandbox.applied with the call's ids,
// the normalized profile, how the network facet was enforced, the
// inherited variable names and the reporter; the summary shows it; another
// tenant sees nothing; a violation carries the step too.
func TestReportSandboxApplied(t *testing.T) {
	h := newHarness(t)
	c := h.client
	profile := &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, Cwd: "/ws/./sub",
		ReadRoots: []string{"/ws"}, WriteRoots: []string{"/ws/out/../out"}, Network: eventsv1.NetworkMode_NETWORK_MODE_FULL}
	req := &permissionv1.ReportSandboxAppliedRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", StepId: "step1", ToolCallId: "call1",
		Target: eventsv1.SandboxTarget_SANDBOX_TARGET_TOOL, Name: "shell", Profile: profile,
		NetworkEnforcement: eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNAVAILABLE, NetworkEnforcementReason: "unshare is not installed",
		EnvAllowlist: []string{"PATH", "HOME"}}
	res, err := c.ReportSandboxApplied(h.ctx, req)
	require.NoError(t, err)
	require.Len(t, res.GetWrite().GetEventIds(), 1)

	applied := ofType(h.history("s1"), "sandbox.applied")
	require.Len(t, applied, 1)
	ev := applied[0]
	assert.Equal(t, []string{"main", "turn1", "step1", "call1"}, []string{ev.GetThreadId(), ev.GetTurnId(), ev.GetStepId(), ev.GetToolCallId()})
	sa := ev.GetSandboxApplied()
	assert.Equal(t, eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNAVAILABLE, sa.GetNetworkEnforcement())
	assert.Equal(t, "unshare is not installed", sa.GetNetworkEnforcementReason())
	assert.Equal(t, "/ws/sub", sa.GetProfile().GetCwd())
	assert.Equal(t, []string{"/ws/out"}, sa.GetProfile().GetWriteRoots())
	assert.Equal(t, []string{"PATH", "HOME"}, sa.GetEnvAllowlist())
	assert.Equal(t, "alice", sa.GetAppliedBy())

	sum, err := c.GetPermissionSandboxSummary(h.ctx, &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: "s1", ThreadId: "main", MinSequence: res.GetWrite().GetSequence()})
	require.NoError(t, err)
	assert.Equal(t, commonv1.FactState_FACT_STATE_KNOWN, sum.GetSandboxState())
	assert.Equal(t, "/ws/sub", sum.GetSandboxProfile().GetCwd())
	other, err := c.GetPermissionSandboxSummary(h.as("t2"), &permissionv1.GetPermissionSandboxSummaryRequest{SessionId: "s1", ThreadId: "main", MinSequence: res.GetWrite().GetSequence()})
	require.NoError(t, err)
	assert.Equal(t, commonv1.FactState_FACT_STATE_UNKNOWN, other.GetSandboxState())

	// A process target is joined by its process id.
	_, err = c.ReportSandboxApplied(h.ctx, &permissionv1.ReportSandboxAppliedRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", ProcessId: "proc1",
		Target: eventsv1.SandboxTarget_SANDBOX_TARGET_PROCESS, Name: "sleep 10", Profile: profile,
		NetworkEnforcement: eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_ENFORCED, NetworkEnforcementReason: "own network namespace"})
	require.NoError(t, err)
	applied = ofType(h.history("s1"), "sandbox.applied")
	require.Len(t, applied, 2)
	assert.Equal(t, "proc1", applied[1].GetProcessId())

	// A violation names the step of the call it stopped.
	_, err = c.ReportSandboxViolation(h.ctx, &permissionv1.ReportSandboxViolationRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1",
		StepId: "step1", ToolCallId: "call1", Kind: eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ, Target: "/etc/passwd", Blocked: true})
	require.NoError(t, err)
	viol := ofType(h.history("s1"), "sandbox.violation")
	require.Len(t, viol, 1)
	assert.Equal(t, "step1", viol[0].GetStepId())

	// The caller's mistakes, each named.
	for _, tc := range []struct {
		name, field string
		mod         func(*permissionv1.ReportSandboxAppliedRequest)
	}{
		{"turn target", "target", func(r *permissionv1.ReportSandboxAppliedRequest) {
			r.Target = eventsv1.SandboxTarget_SANDBOX_TARGET_TURN
		}},
		{"no enforcement", "network_enforcement", func(r *permissionv1.ReportSandboxAppliedRequest) {
			r.NetworkEnforcement = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNSPECIFIED
		}},
		{"no reason", "network_enforcement_reason", func(r *permissionv1.ReportSandboxAppliedRequest) { r.NetworkEnforcementReason = "" }},
		{"no profile", "profile", func(r *permissionv1.ReportSandboxAppliedRequest) { r.Profile = nil }},
		{"relative root", "profile.read_roots", func(r *permissionv1.ReportSandboxAppliedRequest) {
			r.Profile = &eventsv1.SandboxProfile{ReadRoots: []string{"ws"}}
		}},
		{"tool without call id", "", func(r *permissionv1.ReportSandboxAppliedRequest) { r.ToolCallId = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &permissionv1.ReportSandboxAppliedRequest{SessionId: req.SessionId, ThreadId: req.ThreadId, TurnId: req.TurnId, StepId: req.StepId,
				ToolCallId: req.ToolCallId, Target: req.Target, Name: req.Name, Profile: req.Profile, NetworkEnforcement: req.NetworkEnforcement,
				NetworkEnforcementReason: req.NetworkEnforcementReason}
			tc.mod(bad)
			_, err := c.ReportSandboxApplied(h.ctx, bad)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			if tc.field == "" {
				return
			}
			assert.Contains(t, badFields(err), tc.field)
		})
	}
	assert.Len(t, ofType(h.history("s1"), "sandbox.applied"), 2, "a refused report writes nothing")
}

// A caller that says what it runs a tool call under (applied_if_allowed)
// needs no second call: a call that runs now as asked gets its
// sandbox.applied in the evaluation's own write, joined to the decision,
// and the answer carries it; a call that must wait for a person gets
// none (its host reports what it applies when it runs). A profile that
// cannot be recorded, or a target that is not a tool call, is the
// caller's mistake, named, and nothing is written.
func TestEvaluationRecordsTheCallersSandbox(t *testing.T) {
	h := newHarness(t)
	c := h.client
	enf := &permissionv1.SandboxEnforcement{Profile: &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY,
		Cwd: "/work/./src", ReadRoots: []string{"/work"}}, NetworkEnforcement: eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_NOT_APPLICABLE,
		NetworkEnforcementReason: "the tool opens no connections"}
	read := evalReq("read_file", eventsv1.Access_ACCESS_READ)
	read.Paths, read.Cwd, read.AppliedIfAllowed = []string{"/work/a"}, "/work", enf
	res, err := c.EvaluatePermission(h.ctx, read)
	require.NoError(t, err)
	require.Equal(t, eventsv1.Decision_DECISION_ALLOW, res.GetEvaluation().GetDecision())
	require.NotNil(t, res.GetSandboxApplied())
	assert.Equal(t, "/work/src", res.GetSandboxApplied().GetProfile().GetCwd())
	var mine []*eventsv1.RuntimeEvent
	for _, ev := range ofType(h.history(sess), "sandbox.applied") {
		if ev.GetSandboxApplied().GetAppliedBy() != "permission" {
			mine = append(mine, ev)
		}
	}
	require.Len(t, mine, 1)
	sa := mine[0].GetSandboxApplied()
	assert.Equal(t, res.GetEvaluation().GetEvaluationId(), sa.GetEvaluationId())
	assert.Equal(t, "alice", sa.GetAppliedBy())
	assert.Equal(t, []string{"step_1", "call_1"}, []string{mine[0].GetStepId(), mine[0].GetToolCallId()})
	assert.Contains(t, res.GetWrite().GetEventIds(), mine[0].GetEventId(), "recorded in the evaluation's write")

	// A call that must wait for a person: nothing recorded from it.
	m, err := c.SetPermissionMode(h.ctx, &permissionv1.SetPermissionModeRequest{Scope: sessionScope(sess), Mode: eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	require.NoError(t, err)
	exec := evalReq("shell", eventsv1.Access_ACCESS_EXECUTE)
	exec.ToolCallId, exec.Command, exec.MinSequence, exec.AppliedIfAllowed = "call_2", "npm install left-pad", m.GetWrite().GetSequence(), enf
	res, err = c.EvaluatePermission(h.ctx, exec)
	require.NoError(t, err)
	require.Equal(t, eventsv1.Decision_DECISION_ASK, res.GetEvaluation().GetDecision())
	assert.Nil(t, res.GetSandboxApplied())

	for _, tc := range []struct {
		name, field string
		mod         func(*permissionv1.EvaluatePermissionRequest)
	}{
		{"relative root", "applied_if_allowed.profile.read_roots", func(r *permissionv1.EvaluatePermissionRequest) {
			r.AppliedIfAllowed = &permissionv1.SandboxEnforcement{Profile: &eventsv1.SandboxProfile{ReadRoots: []string{"work"}},
				NetworkEnforcement: enf.NetworkEnforcement, NetworkEnforcementReason: enf.NetworkEnforcementReason}
		}},
		{"no tool call", "applied_if_allowed", func(r *permissionv1.EvaluatePermissionRequest) { r.ToolCallId = "" }},
		{"no reason", "applied_if_allowed.network_enforcement_reason", func(r *permissionv1.EvaluatePermissionRequest) {
			r.AppliedIfAllowed = &permissionv1.SandboxEnforcement{Profile: enf.Profile, NetworkEnforcement: enf.NetworkEnforcement}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := evalReq("read_file", eventsv1.Access_ACCESS_READ)
			bad.ToolCallId, bad.AppliedIfAllowed = "call_3", enf
			tc.mod(bad)
			_, err := c.EvaluatePermission(h.ctx, bad)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.Contains(t, badFields(err), tc.field)
		})
	}
	assert.Len(t, ofType(h.history(sess), "permission.evaluated"), 2, "a refused evaluation writes nothing")
}

// badFields are the fields an InvalidArgument names.
func badFields(err error) []string {
	var fields []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	return fields
}
