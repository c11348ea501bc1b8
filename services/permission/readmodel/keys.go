// Package readmodel holds the permission service's read model: policy
// levels, hooks, permission requests, summaries and execution
// environments, folded from the service's own aggregates, and the keys the
// app layer reads them by.
package readmodel

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/services/permission/domain"
)

// Aggregate kinds of the service. Every fact the service writes lands on
// one of them, and the projection follows exactly these.
const (
	KindTenantPolicy    = "perm_tenant"
	KindWorkspacePolicy = "perm_workspace"
	KindSessionPolicy   = "perm_session"
	KindThreadPolicy    = "perm_thread"
	KindEvaluation      = "perm_eval"
	KindApproval        = "perm_approval"
	KindHookRun         = "perm_hooks"
	KindReport          = "perm_report"
	KindEnvironment     = "perm_env"
)

var allKinds = []string{KindTenantPolicy, KindWorkspacePolicy, KindSessionPolicy, KindThreadPolicy, KindEvaluation, KindApproval, KindHookRun, KindReport, KindEnvironment}

// tenantPolicyID is the id of the one tenant policy aggregate.
const tenantPolicyID = "policy"

// Scope is where a policy lives.
type Scope struct {
	Level       eventsv1.PolicyLevel
	WorkspaceID string
	SessionID   string
	ThreadID    string
}

// ID is the scope's own id (what policy.changed records as scope_id).
func (s Scope) ID() string {
	switch s.Level {
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		return s.WorkspaceID
	case eventsv1.PolicyLevel_POLICY_LEVEL_SESSION:
		return s.SessionID
	case eventsv1.PolicyLevel_POLICY_LEVEL_THREAD:
		return s.ThreadID
	}
	return ""
}

func (s Scope) Aggregate(tenant string) eventlog.Aggregate {
	switch s.Level {
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: KindWorkspacePolicy, ID: s.WorkspaceID}
	case eventsv1.PolicyLevel_POLICY_LEVEL_SESSION:
		return eventlog.Aggregate{Tenant: tenant, Session: s.SessionID, Kind: KindSessionPolicy, ID: s.SessionID}
	case eventsv1.PolicyLevel_POLICY_LEVEL_THREAD:
		return eventlog.Aggregate{Tenant: tenant, Session: s.SessionID, Kind: KindThreadPolicy, ID: s.ThreadID}
	}
	return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: KindTenantPolicy, ID: tenantPolicyID}
}

// Read-model keys. Every key starts with the tenant, so no read can reach
// another tenant's documents.
func LevelKey(tenant string, s Scope) string {
	switch s.Level {
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		return fmt.Sprintf("permission:%s:level:workspace:%s", tenant, s.WorkspaceID)
	case eventsv1.PolicyLevel_POLICY_LEVEL_SESSION:
		return fmt.Sprintf("permission:%s:level:session:%s", tenant, s.SessionID)
	case eventsv1.PolicyLevel_POLICY_LEVEL_THREAD:
		return fmt.Sprintf("permission:%s:level:thread:%s:%s", tenant, s.SessionID, s.ThreadID)
	}
	return fmt.Sprintf("permission:%s:level:tenant", tenant)
}

func HooksKey(tenant string) string { return fmt.Sprintf("permission:%s:hooks", tenant) }

func ApprovalKey(tenant, actionID string) string {
	return fmt.Sprintf("permission:%s:approval:%s", tenant, actionID)
}

func EvaluationKey(tenant, evaluationID string) string {
	return fmt.Sprintf("permission:%s:evaluation:%s", tenant, evaluationID)
}

func SummaryKey(tenant, session, thread string) string {
	if thread == "" {
		return fmt.Sprintf("permission:%s:summary:%s", tenant, session)
	}
	return fmt.Sprintf("permission:%s:summary:%s:%s", tenant, session, thread)
}

func EnvironmentKey(tenant, session, turn string) string {
	return fmt.Sprintf("permission:%s:environment:%s:%s", tenant, session, turn)
}

// LevelFromState is a policy level as the domain decides on it.
func LevelFromState(s *permissionv1.LevelState) *domain.Level {
	return &domain.Level{Level: s.GetScope().GetLevel(), Mode: s.GetMode(), Interactive: s.GetInteractive(), ModeSet: s.GetModeSet(),
		Rules: s.GetRules(), Sandbox: s.GetSandbox()}
}

// LevelFromHooks is the tenant level of the registered hooks.
func LevelFromHooks(h *permissionv1.ListHooksResponse) *domain.Level {
	return &domain.Level{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT, Hooks: h.GetHooks()}
}

// StateFromLevel is a policy level as the read model keeps it.
func StateFromLevel(l *domain.Level, s Scope) *permissionv1.LevelState {
	return &permissionv1.LevelState{
		Scope: &permissionv1.PolicyScope{Level: s.Level, WorkspaceId: s.WorkspaceID, SessionId: s.SessionID, ThreadId: s.ThreadID},
		Mode:  l.Mode, Interactive: l.Interactive, ModeSet: l.ModeSet, Rules: l.Rules, Sandbox: l.Sandbox,
	}
}
