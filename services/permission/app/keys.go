// Package app holds the permission service's use cases: the domain's
// decisions joined to the event log (appends with optimistic concurrency)
// and to the service's read model (the projection in this package).
package app

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Aggregate kinds of the service. Every fact the service writes lands on
// one of them, and the projection follows exactly these.
const (
	kindTenantPolicy    = "perm_tenant"
	kindWorkspacePolicy = "perm_workspace"
	kindSessionPolicy   = "perm_session"
	kindThreadPolicy    = "perm_thread"
	kindEvaluation      = "perm_eval"
	kindApproval        = "perm_approval"
	kindHookRun         = "perm_hooks"
	kindReport          = "perm_report"
	kindEnvironment     = "perm_env"
)

var allKinds = []string{kindTenantPolicy, kindWorkspacePolicy, kindSessionPolicy, kindThreadPolicy, kindEvaluation, kindApproval, kindHookRun, kindReport, kindEnvironment}

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

func (s Scope) aggregate(tenant string) eventlog.Aggregate {
	switch s.Level {
	case eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE:
		return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: kindWorkspacePolicy, ID: s.WorkspaceID}
	case eventsv1.PolicyLevel_POLICY_LEVEL_SESSION:
		return eventlog.Aggregate{Tenant: tenant, Session: s.SessionID, Kind: kindSessionPolicy, ID: s.SessionID}
	case eventsv1.PolicyLevel_POLICY_LEVEL_THREAD:
		return eventlog.Aggregate{Tenant: tenant, Session: s.SessionID, Kind: kindThreadPolicy, ID: s.ThreadID}
	}
	return eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: kindTenantPolicy, ID: tenantPolicyID}
}

// Read-model keys. Every key starts with the tenant, so no read can reach
// another tenant's documents.
func levelKey(tenant string, s Scope) string {
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

func hooksKey(tenant string) string { return fmt.Sprintf("permission:%s:hooks", tenant) }

func approvalKey(tenant, actionID string) string {
	return fmt.Sprintf("permission:%s:approval:%s", tenant, actionID)
}

func evaluationKey(tenant, evaluationID string) string {
	return fmt.Sprintf("permission:%s:evaluation:%s", tenant, evaluationID)
}

func summaryKey(tenant, session, thread string) string {
	if thread == "" {
		return fmt.Sprintf("permission:%s:summary:%s", tenant, session)
	}
	return fmt.Sprintf("permission:%s:summary:%s:%s", tenant, session, thread)
}

func environmentKey(tenant, session, turn string) string {
	return fmt.Sprintf("permission:%s:environment:%s:%s", tenant, session, turn)
}
