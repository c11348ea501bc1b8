package domain

import (
	"strconv"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestBudgetStates(t *testing.T) {
	reg := &eventsv1.Registry{Budgets: []*eventsv1.Budget{
		{Id: "tenant", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TENANT, LimitNanos: 1000},
		{Id: "every-session", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION, LimitNanos: 100},
		{Id: "s1-only", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_SESSION, TargetId: "s1", LimitNanos: 50},
		{Id: "every-task", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TASK, LimitNanos: 30},
		{Id: "k1-only", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TASK, TargetId: "k1", LimitNanos: 10},
		{Id: "unscoped", LimitNanos: 1},
	}}
	spent := Spent{Tenant: 500, Session: 40, Task: 7}
	for _, c := range []struct {
		name          string
		session, task string
		want          string // "id:target:limit:spent" joined
	}{
		{"tenant only", "", "", "tenant::1000:500"},
		{"a session with a targeted budget", "s1", "", "tenant::1000:500 every-session:s1:100:40 s1-only:s1:50:40"},
		{"another session", "s2", "", "tenant::1000:500 every-session:s2:100:40"},
		{"a task with a targeted budget", "", "k1", "tenant::1000:500 every-task:k1:30:7 k1-only:k1:10:7"},
		{"both", "s2", "k2", "tenant::1000:500 every-session:s2:100:40 every-task:k2:30:7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spent
			s.SessionID, s.TaskID = c.session, c.task
			if got := budgetString(BudgetStates(reg, s)); got != c.want {
				t.Fatalf("states %q, want %q", got, c.want)
			}
		})
	}
	if got := BudgetStates(&eventsv1.Registry{}, spent); len(got) != 0 {
		t.Fatalf("no budgets: %v", got)
	}
}

func TestAddSpentCopies(t *testing.T) {
	before := []*eventsv1.BudgetState{{BudgetId: "a", Scope: eventsv1.BudgetScope_BUDGET_SCOPE_TASK, TargetId: "k", LimitNanos: 10, SpentNanos: 3}}
	after := AddSpent(before, 4)
	if before[0].GetSpentNanos() != 3 || budgetString(after) != "a:k:10:7" || after[0].GetScope() != eventsv1.BudgetScope_BUDGET_SCOPE_TASK {
		t.Fatalf("before %v, after %v", before, after)
	}
}

func budgetString(states []*eventsv1.BudgetState) string {
	out := ""
	for i, s := range states {
		if i > 0 {
			out += " "
		}
		out += s.GetBudgetId() + ":" + s.GetTargetId() + ":" + strconv.FormatInt(s.GetLimitNanos(), 10) + ":" + strconv.FormatInt(s.GetSpentNanos(), 10)
	}
	return out
}
