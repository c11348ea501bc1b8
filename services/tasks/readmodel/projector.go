package readmodel

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// Records is the projection of task and job aggregates.
type Records struct{ Subjects eventlog.Subjects }

func (Records) Name() string { return Name }

// FoldVersion is the projection's fold version (projection.Fold).
func (Records) FoldVersion() int { return FoldVersion }

// Filters: every task and job aggregate of every tenant.
func (r Records) Filters() []string {
	return []string{r.Subjects.Kind("*", "task"), r.Subjects.Kind("*", "job")}
}

// Project folds the event into its record and moves the record's index
// entries from where the old record had them to where the new one does.
func (r Records) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	tenant := ev.GetTenantId()
	var b projection.Batch
	if key := ev.GetRequestId(); key != "" {
		kind, id := "task", ev.GetTaskId()
		if ev.GetJobId() != "" && !isTaskType(ev.GetType()) {
			kind, id = "job", ev.GetJobId()
		}
		b.Puts = append(b.Puts, projection.KV{Key: IdemKey(tenant, kind, id, key), Value: fmt.Appendf(nil, "%d", ev.GetSequence())})
	}
	if isTaskType(ev.GetType()) {
		old, err := LoadTask(ctx, store, tenant, ev.GetTaskId())
		if err != nil && !errors.Is(err, projection.ErrNotFound) {
			return b, err
		}
		if old != nil && old.GetSessionId() != ev.GetSessionId() &&
			(ev.GetType() != domain.TypeTaskCreated || !createdFirst(ev.GetTaskCreated().GetTask(), old)) {
			return b, nil // another session's task of this id (createdFirst)
		}
		next := domain.Apply(old, ev)
		if next == nil {
			return b, nil // an event before its task.created: nothing to fold into
		}
		data, err := proto.Marshal(next)
		if err != nil {
			return b, err
		}
		b.Puts = append(b.Puts, projection.KV{Key: TaskKey(tenant, next.GetTaskId()), Value: data})
		diff(&b, taskIndexes(tenant, old), taskIndexes(tenant, next))
		return b, r.queueTask(ctx, store, &b, ev, old, next)
	}
	old, err := LoadJob(ctx, store, tenant, ev.GetJobId())
	if err != nil && !errors.Is(err, projection.ErrNotFound) {
		return b, err
	}
	if old != nil && old.GetSessionId() != ev.GetSessionId() &&
		(ev.GetType() != domain.TypeJobCreated || !createdFirst(ev.GetJobCreated().GetJob(), old)) {
		return b, nil // another session's job of this id (createdFirst)
	}
	next := domain.ApplyJob(old, ev)
	if next == nil {
		return b, nil
	}
	data, err := proto.Marshal(next)
	if err != nil {
		return b, err
	}
	b.Puts = append(b.Puts, projection.KV{Key: JobKey(tenant, next.GetJobId()), Value: data})
	diff(&b, jobIndexes(tenant, old), jobIndexes(tenant, next))
	return b, nil
}

// createdFirst says whether record a was created before record b, two
// records of one id: earlier creation time, then lower session.
//
// A task or job id is the tenant's, but two sessions can each create one
// (creates in two partitions, each before the other is folded). Its record
// is then one session's aggregate, the same on every replica whatever the
// order partitions are folded in: the one created first, folded from its
// own events only. Facts of the other session's aggregate leave it as it
// is, and that aggregate's create, when folded first, is replaced.
func createdFirst(a, b interface {
	GetCreatedAt() *timestamppb.Timestamp
	GetSessionId() string
}) bool {
	if c := a.GetCreatedAt().AsTime().Compare(b.GetCreatedAt().AsTime()); c != 0 {
		return c < 0
	}
	return a.GetSessionId() < b.GetSessionId()
}

func isTaskType(typ string) bool { return len(typ) > 5 && typ[:5] == "task." }

// LoadTask reads a task record.
func LoadTask(ctx context.Context, store projection.Store, tenant, id string) (*tasksv1.Task, error) {
	data, err := store.Get(ctx, TaskKey(tenant, id))
	if err != nil {
		return nil, err
	}
	t := &tasksv1.Task{}
	if err := proto.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", id, err)
	}
	return t, nil
}

// LoadJob reads a job record.
func LoadJob(ctx context.Context, store projection.Store, tenant, id string) (*tasksv1.Job, error) {
	data, err := store.Get(ctx, JobKey(tenant, id))
	if err != nil {
		return nil, err
	}
	j := &tasksv1.Job{}
	if err := proto.Unmarshal(data, j); err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	return j, nil
}

type entry struct {
	index, member string
	score         float64
}

func taskIndexes(tenant string, t *tasksv1.Task) []entry {
	if t == nil {
		return nil
	}
	id, score := t.GetTaskId(), CreatedScore(t.GetCreatedAt())
	out := []entry{
		{AllTasks(tenant), id, score},
		{TasksBySession(tenant, t.GetSessionId()), id, score},
		{TasksByStatus(tenant, t.GetStatus()), id, score},
	}
	if th := firstNonEmpty(t.GetThreadId(), t.GetSpec().GetScope().GetThreadId()); th != "" {
		out = append(out, entry{TasksByThread(tenant, th), id, score})
	}
	if t.GetParentTaskId() != "" {
		out = append(out, entry{TasksByParent(tenant, t.GetParentTaskId()), id, score})
	}
	if k := t.GetSpec().GetTaskKind(); k != "" {
		out = append(out, entry{TasksByKind(tenant, k), id, score})
	}
	if o := t.GetSpec().GetOwner(); o != "" {
		out = append(out, entry{TasksByOwner(tenant, o), id, score})
	}
	if t.GetCurrentRunId() != "" {
		out = append(out, entry{ActiveRuns, ActiveMember(tenant, id), score})
	}
	for _, e := range t.GetEdges() {
		if domain.IsTaskRelation(e.GetRelation()) && e.GetStatus() != tasksv1.EdgeStatus_EDGE_STATUS_REMOVED {
			out = append(out, entry{Reverse(tenant, e.GetTargetId()), ReverseMember(e.GetRelation(), id), score})
		}
	}
	return out
}

func jobIndexes(tenant string, j *tasksv1.Job) []entry {
	if j == nil {
		return nil
	}
	id, score := j.GetJobId(), CreatedScore(j.GetCreatedAt())
	out := []entry{
		{AllJobs(tenant), id, score},
		{JobsBySession(tenant, j.GetSessionId()), id, score},
		{JobsByStatus(tenant, j.GetStatus()), id, score},
	}
	if j.GetTaskId() != "" {
		out = append(out, entry{JobsByTask(tenant, j.GetTaskId()), id, score})
	}
	return out
}

// diff removes the entries the old record had and the new one does not,
// and adds (or re-scores) the new record's.
func diff(b *projection.Batch, old, next []entry) {
	keep := map[[2]string]float64{}
	for _, e := range next {
		keep[[2]string{e.index, e.member}] = e.score
	}
	had := map[[2]string]float64{}
	for _, e := range old {
		had[[2]string{e.index, e.member}] = e.score
		if _, ok := keep[[2]string{e.index, e.member}]; !ok {
			b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: e.index, Member: e.member})
		}
	}
	for _, e := range next {
		if s, ok := had[[2]string{e.index, e.member}]; !ok || s != e.score {
			b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: e.index, Member: e.member, Score: e.score})
		}
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// queueTask keeps a task's place in its tenant's fair queue (TaskQueue):
// task.created records its class and tag (and queues it when it is
// runnable at once); it is queued when it becomes runnable, taken out when
// it stops being runnable (a start, a run taking it, moves the queue's
// virtual time in the event's partition), forgotten when it ends.
func (r Records) queueTask(ctx context.Context, store projection.Store, b *projection.Batch, ev *eventsv1.RuntimeEvent, old, next *tasksv1.Task) error {
	tenant, id := ev.GetTenantId(), next.GetTaskId()
	k := r.Subjects.PartitionOf(tenant, firstNonEmpty(ev.GetSessionId(), eventlog.NoSession))
	was, is := old != nil && domain.Runnable(old), domain.Runnable(next)
	switch {
	case ev.GetType() == domain.TypeTaskCreated:
		// This create's task is the record (Project returned before for
		// another session's): its class and tag replace any other's.
		return TaskQueue.Record(ctx, store, b, tenant, id, domain.TaskClass(next), ev.GetTaskCreated().GetFairTag(), k, is, true)
	case is && !was:
		_, err := TaskQueue.Enqueue(ctx, store, b, tenant, id, domain.TaskClass(next))
		return err
	case domain.IsTerminal(next.GetStatus()) && (old == nil || !domain.IsTerminal(old.GetStatus())):
		return TaskQueue.Forget(ctx, store, b, tenant, id)
	case was && !is:
		return TaskQueue.Dequeue(ctx, store, b, tenant, id, next.GetCurrentRunId() != "", k)
	}
	return nil
}
