package domain

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func timestamp(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// Spent is the cumulative recorded cost of the scopes a call belongs to.
type Spent struct {
	Tenant, Session, Task int64
	SessionID, TaskID     string
}

// BudgetStates are the budgets that apply to a call in session/task, with
// what has been spent against each. A budget for one target wins over the
// every-session (or every-task) budget of the same scope only in that both
// apply: each is checked on its own.
func BudgetStates(r *eventsv1.Registry, s Spent) []*eventsv1.BudgetState {
	var out []*eventsv1.BudgetState
	for _, b := range r.GetBudgets() {
		st := &eventsv1.BudgetState{BudgetId: b.GetId(), Scope: b.GetScope(), LimitNanos: b.GetLimitNanos()}
		switch b.GetScope() {
		case eventsv1.BudgetScope_BUDGET_SCOPE_TENANT:
			st.SpentNanos = s.Tenant
		case eventsv1.BudgetScope_BUDGET_SCOPE_SESSION:
			if s.SessionID == "" || (b.GetTargetId() != "" && b.GetTargetId() != s.SessionID) {
				continue
			}
			st.TargetId, st.SpentNanos = s.SessionID, s.Session
		case eventsv1.BudgetScope_BUDGET_SCOPE_TASK:
			if s.TaskID == "" || (b.GetTargetId() != "" && b.GetTargetId() != s.TaskID) {
				continue
			}
			st.TargetId, st.SpentNanos = s.TaskID, s.Task
		default:
			continue
		}
		out = append(out, st)
	}
	return out
}

// AddSpent returns the budget states after a cost.
func AddSpent(states []*eventsv1.BudgetState, nanos int64) []*eventsv1.BudgetState {
	out := make([]*eventsv1.BudgetState, len(states))
	for i, s := range states {
		out[i] = &eventsv1.BudgetState{BudgetId: s.GetBudgetId(), Scope: s.GetScope(), TargetId: s.GetTargetId(), LimitNanos: s.GetLimitNanos(), SpentNanos: s.GetSpentNanos() + nanos}
	}
	return out
}
