package auth

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	authv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/auth/v1"
)

// Roles lists every role in the order the role matrix shows them.
var Roles = []string{RoleViewer, RoleOperator, RoleWorker, RoleAdmin}

// AccessOf returns the role declaration of a method (the
// agentruntime.auth.v1.access method option) and whether it has one. A
// declaration without a role counts as none.
func AccessOf(m protoreflect.MethodDescriptor) (*authv1.Access, bool) {
	opts := m.Options()
	if opts == nil || !proto.HasExtension(opts, authv1.E_Access) {
		return nil, false
	}
	a, ok := proto.GetExtension(opts, authv1.E_Access).(*authv1.Access)
	if !ok || a.GetMinRole() == authv1.Role_ROLE_UNSPECIFIED {
		return nil, false
	}
	return a, true
}

// RoleName is the credential spelling of a declared role ("operator").
func RoleName(r authv1.Role) string {
	switch r {
	case authv1.Role_ROLE_VIEWER:
		return RoleViewer
	case authv1.Role_ROLE_OPERATOR:
		return RoleOperator
	case authv1.Role_ROLE_WORKER:
		return RoleWorker
	case authv1.Role_ROLE_ADMIN:
		return RoleAdmin
	}
	return ""
}

// chain ranks the roles of the chain viewer < operator < admin; worker
// stands beside it.
var chain = map[string]int{RoleViewer: 1, RoleOperator: 2, RoleAdmin: 3}

// Permits reports whether a principal holding role may call a method
// declared with a. Admin may call everything; nil or undeclared access
// admits nobody.
func Permits(a *authv1.Access, role string) bool {
	if a.GetMinRole() == authv1.Role_ROLE_UNSPECIFIED {
		return false
	}
	if role == RoleAdmin {
		return true
	}
	min := RoleName(a.GetMinRole())
	if role == RoleWorker {
		return min == RoleWorker || a.GetAlsoWorker()
	}
	rank, inChain := chain[role]
	return inChain && min != RoleWorker && rank >= chain[min]
}

// AllowedRoles lists the roles a admits, in the order of Roles.
func AllowedRoles(a *authv1.Access) []string {
	var out []string
	for _, r := range Roles {
		if Permits(a, r) {
			out = append(out, r)
		}
	}
	return out
}

// Describe says in words who may call: "operator (or worker)".
func Describe(a *authv1.Access) string {
	min := RoleName(a.GetMinRole())
	if a.GetAlsoWorker() && min != RoleWorker && min != RoleAdmin {
		return min + " (or worker)"
	}
	return min
}

// Denial explains a refusal: the method needs what a declares and the
// caller holds role.
func Denial(method string, a *authv1.Access, role string) string {
	held := role
	if held == "" {
		held = "no role"
	}
	return fmt.Sprintf("%s needs role %s; the caller holds %s", strings.TrimPrefix(method, "/"), Describe(a), held)
}

// ReasonSelfApproval is the ErrorInfo reason of a refused self-approval.
const ReasonSelfApproval = "SELF_APPROVAL"

// SelfApproval reports whether p answering a decision that the principal
// (requesterSubject, requesterRole) asked for would be a self-approval:
// decisions come from people or policy, never from the worker that asked.
// A worker principal answers nothing; and the subject that asked as a
// worker cannot answer it under another role either. People answering
// their own questions (an operator's RequestAction) are not refused.
func SelfApproval(requesterSubject, requesterRole string, p Principal) bool {
	if p.Role == RoleWorker {
		return true
	}
	return requesterRole == RoleWorker && requesterSubject != "" && requesterSubject == p.Subject
}

// ReasonSessionNotHeld is the ErrorInfo reason of a worker's read of a
// session it does not hold.
const ReasonSessionNotHeld = "SESSION_NOT_HELD"

// HeldSessionReads are the methods a worker may call only on a session it
// holds (ScopedToHeldSessions): the services confine them with the shared
// store of holds (pkg/held; services/control/app/held.go,
// services/tasks/api/held.go, services/permission/api/held.go), and the
// role matrix marks their worker cell "held".
var HeldSessionReads = []string{
	"/agentruntime.tasks.v1.TasksService/GetTask",
	"/agentruntime.permission.v1.PermissionService/GetPermissionState",
	"/agentruntime.permission.v1.PermissionService/GetSandboxProfile",
	"/agentruntime.permission.v1.PermissionService/GetExecutionEnvironment",
	"/agentruntime.control.v1.ControlService/GetSession",
	"/agentruntime.control.v1.ControlService/GetThreadRead",
	"/agentruntime.control.v1.ControlService/ListSubagents",
	"/agentruntime.control.v1.ControlService/SubscribeEvents",
	"/agentruntime.control.v1.ControlService/GetTurnAttempts",
	"/agentruntime.control.v1.ControlService/ReadOutput",
}

// ScopedToHeldSessions reports whether p's reads of a session are confined
// to the sessions it holds work in: a worker does not browse the tenant
// (docs/security.md, "Workers read only the sessions they hold"). Every
// other role reads its whole tenant.
func ScopedToHeldSessions(p Principal) bool { return p.Role == RoleWorker }
