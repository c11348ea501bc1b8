package domain

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

const (
	JobPending   = tasksv1.JobStatus_JOB_STATUS_PENDING
	JobRunning   = tasksv1.JobStatus_JOB_STATUS_RUNNING
	JobCompleted = tasksv1.JobStatus_JOB_STATUS_COMPLETED
	JobFailed    = tasksv1.JobStatus_JOB_STATUS_FAILED
	JobCancelled = tasksv1.JobStatus_JOB_STATUS_CANCELLED

	ItemPending   = tasksv1.JobItemStatus_JOB_ITEM_STATUS_PENDING
	ItemRunning   = tasksv1.JobItemStatus_JOB_ITEM_STATUS_RUNNING
	ItemCompleted = tasksv1.JobItemStatus_JOB_ITEM_STATUS_COMPLETED
	ItemFailed    = tasksv1.JobItemStatus_JOB_ITEM_STATUS_FAILED
	ItemReported  = tasksv1.JobItemStatus_JOB_ITEM_STATUS_REPORTED
)

// JobItemInput is one item of a new job.
type JobItemInput struct {
	ItemID, InputRef string
	// Class is the item's claim order (defaults applied).
	Class fairshare.Class
}

// CreateJob is the create_job command.
type CreateJob struct {
	JobID, SessionID, TaskID, IdempotencyKey string
	Spec                                     *tasksv1.JobSpec
	Items                                    []JobItemInput
	Now                                      time.Time
}

// DecideCreateJob returns job.created; a repeated create with an
// idempotency key answers with nothing.
func DecideCreateJob(existing *tasksv1.Job, c CreateJob) ([]*eventsv1.RuntimeEvent, error) {
	if existing != nil {
		if c.IdempotencyKey != "" {
			return nil, nil
		}
		return nil, fault.AlreadyExists("job", c.JobID, "a job with this id exists")
	}
	ts := timestamppb.New(c.Now)
	j := &tasksv1.Job{JobId: c.JobID, TaskId: c.TaskID, SessionId: c.SessionID, Spec: c.Spec, Status: JobPending, CreatedAt: ts, UpdatedAt: ts}
	seen := map[string]bool{}
	for i, it := range c.Items {
		if seen[it.ItemID] {
			return nil, fault.Invalid(fmt.Sprintf("items[%d].item_id", i), "%s", fmt.Sprintf("item id %q is used twice", it.ItemID))
		}
		seen[it.ItemID] = true
		j.Items = append(j.Items, &tasksv1.JobItem{ItemId: it.ItemID, InputRef: it.InputRef, Status: ItemPending, Retryable: true, UpdatedAt: ts,
			Priority: it.Class.Priority, FairnessKey: it.Class.Key, FairnessWeight: it.Class.Weight})
	}
	j.Counts = Counts(j)
	ev := jobEvent(j, TypeJobCreated, c.Now)
	ev.RequestId = c.IdempotencyKey
	ev.Payload = &eventsv1.RuntimeEvent_JobCreated{JobCreated: &eventsv1.JobCreated{Job: j, IdempotencyKey: c.IdempotencyKey}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// Counts are computed from the items, never trusted from a payload.
func Counts(j *tasksv1.Job) *tasksv1.JobCounts {
	c := &tasksv1.JobCounts{Total: uint32(len(j.GetItems()))}
	for _, it := range j.GetItems() {
		switch it.GetStatus() {
		case ItemPending:
			c.Pending++
		case ItemRunning:
			c.Running++
		case ItemCompleted:
			c.Completed++
		case ItemFailed:
			c.Failed++
		case ItemReported:
			c.Reported++
		}
	}
	return c
}

// Item returns a job's item, nil when it has none by that id.
func Item(j *tasksv1.Job, id string) *tasksv1.JobItem {
	for _, it := range j.GetItems() {
		if it.GetItemId() == id {
			return it
		}
	}
	return nil
}

func jobEnded(j *tasksv1.Job) bool {
	s := j.GetStatus()
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

func itemName(s tasksv1.JobItemStatus) string {
	return map[tasksv1.JobItemStatus]string{ItemPending: "pending", ItemRunning: "running", ItemCompleted: "completed", ItemFailed: "failed", ItemReported: "reported"}[s]
}

func jobStatusName(s tasksv1.JobStatus) string {
	return map[tasksv1.JobStatus]string{JobPending: "pending", JobRunning: "running", JobCompleted: "completed", JobFailed: "failed", JobCancelled: "cancelled"}[s]
}

func itemIllegal(j *tasksv1.Job, it *tasksv1.JobItem, cmd, needs string) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonIllegalItemState,
		Subject:  "job/" + j.GetJobId() + "/item/" + it.GetItemId(),
		Message:  fmt.Sprintf("item %s is %s; %s needs %s", it.GetItemId(), itemName(it.GetStatus()), cmd, needs),
		Metadata: map[string]string{"item_status": itemName(it.GetStatus()), "command": cmd, "allowed": needs},
	}
}

func jobEndedError(j *tasksv1.Job, cmd string) error {
	return &fault.Error{Kind: fault.KindPrecondition,
		Reason:   ReasonJobEnded,
		Subject:  "job/" + j.GetJobId(),
		Message:  fmt.Sprintf("job is %s; %s needs a pending or running job", jobStatusName(j.GetStatus()), cmd),
		Metadata: map[string]string{"job_status": jobStatusName(j.GetStatus()), "command": cmd},
	}
}

func itemEvent(j *tasksv1.Job, typ, itemID, runID string, now time.Time) *eventsv1.RuntimeEvent {
	ev := jobEvent(j, typ, now)
	ev.JobItemId, ev.RunId = itemID, runID
	return ev
}

func lookupItem(j *tasksv1.Job, id string) (*tasksv1.JobItem, error) {
	it := Item(j, id)
	if it == nil {
		return nil, fault.NotFound("job item", id)
	}
	return it, nil
}

// DecideStartItem starts an attempt of a pending item (job.item.started,
// and job.started for the job's first).
func DecideStartItem(j *tasksv1.Job, itemID, runID, threadID, workerID string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	it, err := lookupItem(j, itemID)
	if err != nil {
		return nil, err
	}
	if jobEnded(j) {
		return nil, jobEndedError(j, "start item")
	}
	if it.GetStatus() == ItemRunning && it.GetCurrentRunId() == runID {
		return nil, nil
	}
	if it.GetStatus() != ItemPending {
		return nil, itemIllegal(j, it, "start item", "pending")
	}
	var evs []*eventsv1.RuntimeEvent
	if j.GetStatus() == JobPending {
		started := jobEvent(j, TypeJobStarted, now)
		started.Payload = &eventsv1.RuntimeEvent_JobStarted{JobStarted: &eventsv1.JobStarted{}}
		evs = append(evs, started)
	}
	ev := itemEvent(j, TypeJobItemStarted, itemID, runID, now)
	ev.ThreadId = threadID
	ev.Payload = &eventsv1.RuntimeEvent_JobItemStarted{JobItemStarted: &eventsv1.JobItemStarted{ThreadId: threadID, Attempt: it.GetAttempts() + 1, WorkerId: workerID}}
	return append(evs, ev), nil
}

// DecideCompleteItem records an item's output once. Completing it again
// with the same run appends nothing; with another run it is refused, so a
// retried item never duplicates its output. A job cancelled while the item
// ran still records the fact.
func DecideCompleteItem(j *tasksv1.Job, itemID, runID string, out *commonv1.OutputRef, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	it, err := lookupItem(j, itemID)
	if err != nil {
		return nil, err
	}
	switch {
	case (it.GetStatus() == ItemCompleted || it.GetStatus() == ItemReported) && it.GetCurrentRunId() == runID:
		return nil, nil
	case it.GetStatus() == ItemCompleted || it.GetStatus() == ItemReported:
		return nil, &fault.Error{Kind: fault.KindPrecondition,
			Reason: ReasonItemAlreadyCompleted, Subject: "job/" + j.GetJobId() + "/item/" + itemID,
			Message:  fmt.Sprintf("item %s already completed by run %s; its output is recorded once", itemID, it.GetCurrentRunId()),
			Metadata: map[string]string{"run_id": it.GetCurrentRunId()},
		}
	case it.GetStatus() != ItemRunning || it.GetCurrentRunId() != runID:
		return nil, itemIllegal(j, it, "complete item", "running under run "+runID)
	}
	ev := itemEvent(j, TypeJobItemCompleted, itemID, runID, now)
	ev.Payload = &eventsv1.RuntimeEvent_JobItemCompleted{JobItemCompleted: &eventsv1.JobItemCompleted{OutputRef: out}}
	return settle(j, now, ev), nil
}

// DecideFailItem records a failed item attempt with its error and
// retryability (the reporter's flag, bounded by max_item_attempts).
func DecideFailItem(j *tasksv1.Job, itemID, runID string, e *tasksv1.TaskError, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	it, err := lookupItem(j, itemID)
	if err != nil {
		return nil, err
	}
	if it.GetStatus() == ItemFailed && it.GetCurrentRunId() == runID {
		return nil, nil
	}
	if it.GetStatus() != ItemRunning || it.GetCurrentRunId() != runID {
		return nil, itemIllegal(j, it, "fail item", "running under run "+runID)
	}
	retryable := e.GetRetryable()
	if limit := j.GetSpec().GetMaxItemAttempts(); limit > 0 && it.GetAttempts() >= limit {
		retryable = false
	}
	ev := itemEvent(j, TypeJobItemFailed, itemID, runID, now)
	ev.Payload = &eventsv1.RuntimeEvent_JobItemFailed{JobItemFailed: &eventsv1.JobItemFailed{Error: e, Retryable: retryable}}
	return settle(j, now, ev), nil
}

// settle appends job.progress after an item event and, once no item is
// pending or running, job.completed or job.failed. A cancelled job stays
// cancelled.
func settle(j *tasksv1.Job, now time.Time, ev *eventsv1.RuntimeEvent) []*eventsv1.RuntimeEvent {
	ev.Sequence = 0
	next := ApplyJob(j, ev)
	c := next.GetCounts()
	progress := jobEvent(j, TypeJobProgress, now)
	progress.Payload = &eventsv1.RuntimeEvent_JobProgress{JobProgress: &eventsv1.JobProgressed{Counts: c, Status: next.GetStatus()}}
	evs := []*eventsv1.RuntimeEvent{ev, progress}
	if jobEnded(next) || c.GetPending()+c.GetRunning() > 0 {
		return evs
	}
	if c.GetFailed() > 0 {
		end := jobEvent(j, TypeJobFailed, now)
		end.Payload = &eventsv1.RuntimeEvent_JobFailed{JobFailed: &eventsv1.JobEnded{Counts: c, Reason: fmt.Sprintf("%d of %d items failed", c.GetFailed(), c.GetTotal())}}
		return append(evs, end)
	}
	end := jobEvent(j, TypeJobCompleted, now)
	end.Payload = &eventsv1.RuntimeEvent_JobCompleted{JobCompleted: &eventsv1.JobEnded{Counts: c}}
	return append(evs, end)
}

// DecideRetryItem requeues one failed item: only that item runs again,
// completed items are untouched, and a failed job reopens.
func DecideRetryItem(j *tasksv1.Job, itemID, reason string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	it, err := lookupItem(j, itemID)
	if err != nil {
		return nil, err
	}
	if j.GetStatus() == JobCancelled {
		return nil, jobEndedError(j, "retry item")
	}
	if it.GetStatus() != ItemFailed {
		return nil, itemIllegal(j, it, "retry item", "failed")
	}
	if !it.GetRetryable() {
		return nil, &fault.Error{Kind: fault.KindPrecondition,
			Reason: ReasonItemNotRetryable, Subject: "job/" + j.GetJobId() + "/item/" + itemID,
			Message:  fmt.Sprintf("item %s is not retryable (attempts %d, last error %q)", itemID, it.GetAttempts(), it.GetLastError().GetMessage()),
			Metadata: map[string]string{"attempts": fmt.Sprint(it.GetAttempts())},
		}
	}
	next := proto.Clone(j).(*tasksv1.Job)
	Item(next, itemID).Status = ItemPending
	ev := jobEvent(j, TypeJobProgress, now)
	ev.JobItemId = itemID
	ev.Payload = &eventsv1.RuntimeEvent_JobProgress{JobProgress: &eventsv1.JobProgressed{Counts: Counts(next), Status: JobRunning, RequeuedItemIds: []string{itemID}, Reason: reason}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// DecideReportItem marks a completed item's output reported back.
func DecideReportItem(j *tasksv1.Job, itemID string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	it, err := lookupItem(j, itemID)
	if err != nil {
		return nil, err
	}
	if it.GetStatus() == ItemReported {
		return nil, nil
	}
	if it.GetStatus() != ItemCompleted {
		return nil, itemIllegal(j, it, "report item", "completed")
	}
	next := proto.Clone(j).(*tasksv1.Job)
	Item(next, itemID).Status = ItemReported
	ev := jobEvent(j, TypeJobProgress, now)
	ev.JobItemId = itemID
	ev.Payload = &eventsv1.RuntimeEvent_JobProgress{JobProgress: &eventsv1.JobProgressed{Counts: Counts(next), Status: j.GetStatus(), ReportedItemIds: []string{itemID}}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// DecideCancelJob cancels a pending or running job. Completed items stay
// completed; items that had not completed are marked cancelled and will
// not start.
func DecideCancelJob(j *tasksv1.Job, reason string, now time.Time) ([]*eventsv1.RuntimeEvent, error) {
	if j.GetStatus() == JobCancelled {
		return nil, nil
	}
	if jobEnded(j) {
		return nil, jobEndedError(j, "cancel")
	}
	ev := jobEvent(j, TypeJobCancelled, now)
	ev.Payload = &eventsv1.RuntimeEvent_JobCancelled{JobCancelled: &eventsv1.JobEnded{Counts: Counts(j), Reason: reason}}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// ApplyJob folds one of a job's events into its record (j is not
// modified).
func ApplyJob(j *tasksv1.Job, ev *eventsv1.RuntimeEvent) *tasksv1.Job {
	if ev.GetType() == TypeJobCreated {
		next := proto.Clone(ev.GetJobCreated().GetJob()).(*tasksv1.Job)
		next.CreatedSequence, next.Version = ev.GetSequence(), ev.GetSequence()
		next.Counts = Counts(next)
		for _, it := range next.Items {
			// Items created before classes were recorded read the defaults.
			c := fairshare.Resolve(it.GetPriority(), it.GetFairnessKey(), it.GetFairnessWeight(), next.GetSessionId())
			it.Priority, it.FairnessKey, it.FairnessWeight = c.Priority, c.Key, c.Weight
		}
		return next
	}
	if j == nil {
		return nil
	}
	next := proto.Clone(j).(*tasksv1.Job)
	ts := ev.GetTimestamp()
	next.UpdatedAt, next.Version = ts, ev.GetSequence()
	it := Item(next, ev.GetJobItemId())
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_JobStarted:
		next.Status = JobRunning
	case *eventsv1.RuntimeEvent_JobItemStarted:
		if it != nil {
			it.Status, it.Attempts, it.CurrentRunId, it.UpdatedAt = ItemRunning, p.JobItemStarted.GetAttempt(), ev.GetRunId(), ts
			if th := p.JobItemStarted.GetThreadId(); th != "" {
				it.AssignedThreadId = th
				next.AssignedThreadIds = appendUnique(next.AssignedThreadIds, th)
			}
		}
		next.ItemCursor = firstPending(next)
	case *eventsv1.RuntimeEvent_JobItemCompleted:
		if it != nil {
			// last_error stays: the item's history keeps why earlier attempts failed.
			it.Status, it.UpdatedAt = ItemCompleted, ts
			it.OutputRef = p.JobItemCompleted.GetOutputRef()
		}
	case *eventsv1.RuntimeEvent_JobItemFailed:
		if it != nil {
			it.Status, it.UpdatedAt = ItemFailed, ts
			it.LastError, it.Retryable = p.JobItemFailed.GetError(), p.JobItemFailed.GetRetryable()
		}
	case *eventsv1.RuntimeEvent_JobProgress:
		for _, id := range p.JobProgress.GetRequeuedItemIds() {
			if x := Item(next, id); x != nil {
				x.Status, x.UpdatedAt = ItemPending, ts
			}
		}
		for _, id := range p.JobProgress.GetReportedItemIds() {
			if x := Item(next, id); x != nil {
				x.Status, x.UpdatedAt = ItemReported, ts
			}
		}
		if len(p.JobProgress.GetRequeuedItemIds()) > 0 {
			next.Status, next.EndedAt, next.StatusReason = JobRunning, nil, p.JobProgress.GetReason()
		}
		next.ItemCursor = firstPending(next)
	case *eventsv1.RuntimeEvent_JobCompleted:
		next.Status, next.EndedAt = JobCompleted, ts
	case *eventsv1.RuntimeEvent_JobFailed:
		next.Status, next.EndedAt, next.StatusReason = JobFailed, ts, p.JobFailed.GetReason()
	case *eventsv1.RuntimeEvent_JobCancelled:
		next.Status, next.EndedAt, next.StatusReason = JobCancelled, ts, p.JobCancelled.GetReason()
		for _, x := range next.Items {
			if x.GetStatus() == ItemPending || x.GetStatus() == ItemRunning || x.GetStatus() == ItemFailed {
				x.Cancelled = true
			}
		}
	}
	next.Counts = Counts(next)
	return next
}

func firstPending(j *tasksv1.Job) uint32 {
	for i, it := range j.GetItems() {
		if it.GetStatus() == ItemPending {
			return uint32(i)
		}
	}
	return uint32(len(j.GetItems()))
}
