// Package readmodel builds the tasks service's read models from the log:
// task and job records (the fold of each aggregate's events, see
// domain.Apply) and the indexes listings, workers' polls, the sweeper and
// the dependency reactor read.
package readmodel

import (
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// Name of the records projection (its checkpoint key).
const Name = "tasks.records"

// FoldVersion is the records projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md). 2: tasks and job items hold their priority,
// fairness key and weight, and runnable tasks are in fair queues
// (pkg/fairshare) instead of one runnable index. 3: a task.delegated of
// kind "turn" folds into its attempt (carried_by, no longer leased).
const FoldVersion = 3

// Keys of documents and indexes. Every key but ActiveRuns is scoped by
// tenant, so no read can cross tenants.

func TaskKey(tenant, id string) string { return "task:" + tenant + ":" + id }
func JobKey(tenant, id string) string  { return "job:" + tenant + ":" + id }

// IdemKey records that a command with this idempotency key was applied to
// an aggregate.
func IdemKey(tenant, kind, id, key string) string {
	return "idem:" + tenant + ":" + kind + ":" + id + ":" + key
}

// Task indexes; members are task ids scored by CreatedScore (stable
// cursors: a task's score never changes), except Runnable.
func AllTasks(tenant string) string { return "tasks:" + tenant + ":all" }
func TasksBySession(tenant, s string) string {
	return "tasks:" + tenant + ":session:" + sessionToken(s)
}
func TasksByThread(tenant, t string) string { return "tasks:" + tenant + ":thread:" + t }
func TasksByParent(tenant, p string) string { return "tasks:" + tenant + ":parent:" + p }
func TasksByKind(tenant, k string) string   { return "tasks:" + tenant + ":kind:" + k }
func TasksByOwner(tenant, o string) string  { return "tasks:" + tenant + ":owner:" + o }
func TasksByStatus(tenant string, s tasksv1.TaskStatus) string {
	return "tasks:" + tenant + ":status:" + domain.StatusName(s)
}

// TaskQueue orders the tasks a worker may start now (blockers aside from
// backoff, which the poll checks): priority, then weighted fair share
// across fairness keys, then arrival (pkg/fairshare). PollTask reads its
// index per (tenant, priority), most urgent first.
var TaskQueue = fairshare.Queue{Name: "tasks"}

// ActiveRuns lists every task with an active run, across tenants, for the
// sweeper; members are ActiveMember(tenant, id).
const ActiveRuns = "tasks:active_runs"

func ActiveMember(tenant, id string) string { return tenant + "/" + id }

// SplitActive is the inverse of ActiveMember.
func SplitActive(m string) (tenant, id string) {
	tenant, id, _ = strings.Cut(m, "/")
	return tenant, id
}

// Reverse lists the edges stored on other tasks that point at target:
// members ReverseMember(relation, source).
func Reverse(tenant, target string) string { return "tasks:" + tenant + ":rev:" + target }

func ReverseMember(rel tasksv1.EdgeRelation, source string) string {
	return rel.String() + "/" + source
}

// SplitReverse is the inverse of ReverseMember.
func SplitReverse(m string) (tasksv1.EdgeRelation, string) {
	rel, src, _ := strings.Cut(m, "/")
	return tasksv1.EdgeRelation(tasksv1.EdgeRelation_value[rel]), src
}

// Job indexes, scored by CreatedScore.
func AllJobs(tenant string) string          { return "jobs:" + tenant + ":all" }
func JobsBySession(tenant, s string) string { return "jobs:" + tenant + ":session:" + sessionToken(s) }
func JobsByTask(tenant, t string) string    { return "jobs:" + tenant + ":task:" + t }
func JobsByStatus(tenant string, s tasksv1.JobStatus) string {
	return "jobs:" + tenant + ":status:" + enums.Word(s)
}

func sessionToken(s string) string {
	if s == "" {
		return "_"
	}
	return s
}

// CreatedScore scores a task or job in its indexes: its creation time in
// milliseconds. Not a sequence: on a log of several partitions, positions
// of different partitions say nothing of which came first (a task created
// later in a quieter partition has a lower position), while creation times
// do, across sessions and partitions. Equal scores (one millisecond) are
// ordered by id.
func CreatedScore(created *timestamppb.Timestamp) float64 {
	return float64(created.AsTime().UnixMilli())
}
