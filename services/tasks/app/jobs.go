package app

import (
	"context"
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// CreateJob creates a job with its items. A job working for a task is
// refused once the task's cancellation was requested (no new child work),
// and is recorded on the task (task.delegated, by the reactor).
func (a *App) CreateJob(ctx context.Context, tenant string, req *tasksv1.CreateJobRequest) (Result, *tasksv1.Job, error) {
	id := req.GetJobId()
	if id == "" && req.GetIdempotencyKey() != "" {
		id = ids.Job + "_" + derivedID(tenant, "create_job", req.GetIdempotencyKey())[len(ids.Event)+1:][:32]
	}
	if id == "" {
		id = ids.New(ids.Job)
	}
	sessionID := req.GetSessionId()
	if req.GetTaskId() != "" {
		// The task as the log holds it now: its cancellation intent must
		// be seen.
		t, err := a.current(ctx, tenant, req.GetTaskId())
		if err != nil {
			return Result{}, nil, err
		}
		if t.GetCancelRequested() || domain.IsTerminal(t.GetStatus()) {
			_, err := domain.DecideCreate(nil, domain.Create{TaskID: id, Spec: &tasksv1.TaskSpec{}, Parent: t, Now: a.now()})
			return Result{}, nil, err
		}
		if sessionID == "" {
			sessionID = t.GetSessionId()
		}
	}
	items := make([]domain.JobItemInput, len(req.GetItems()))
	for i, it := range req.GetItems() {
		if err := fairshare.Validate(fmt.Sprintf("items[%d].", i), it.GetPriority(), it.GetFairnessKey(), it.FairnessWeight); err != nil {
			return Result{}, nil, err
		}
		items[i] = domain.JobItemInput{ItemID: it.GetItemId(), InputRef: it.GetInputRef(),
			Class: fairshare.Resolve(it.GetPriority(), it.GetFairnessKey(), it.GetFairnessWeight(), sessionID)}
		if items[i].ItemID == "" {
			items[i].ItemID = ids.New(ids.JobItem)
		}
	}
	agg, exec, err := a.createOn(ctx, tenant, "job", id, jobAgg(tenant, &tasksv1.Job{JobId: id, SessionId: sessionID}),
		req.GetJobId() != "" || req.GetIdempotencyKey() != "")
	if err != nil {
		return Result{}, nil, err
	}
	res, err := exec(ctx, agg, func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		existing, err := jobIn(ctx, st, tenant, id)
		if fault.Is(err, fault.KindNotFound) {
			existing, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		evs, err := domain.DecideCreateJob(existing, domain.CreateJob{
			JobID: id, SessionID: sessionID, TaskID: req.GetTaskId(), IdempotencyKey: req.GetIdempotencyKey(),
			Spec: req.GetSpec(), Items: items, Now: a.now(),
		})
		if err == nil && len(evs) > 0 {
			stampIDs(evs, agg.String(), req.GetIdempotencyKey())
		}
		return evs, err
	})
	if err != nil {
		return res, nil, err
	}
	j, err := res.job(ctx, tenant, id)
	return res, j, err
}

func (a *App) CancelJob(ctx context.Context, tenant string, req *tasksv1.CancelJobRequest) (Result, error) {
	return a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideCancelJob(j, req.GetReason(), a.now())
	})
}

func (a *App) RetryJobItem(ctx context.Context, tenant string, req *tasksv1.RetryJobItemRequest) (Result, error) {
	return a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideRetryItem(j, req.GetItemId(), req.GetReason(), a.now())
	})
}

// StartJobItem starts an attempt of a pending item; the run id is
// generated when not given.
func (a *App) StartJobItem(ctx context.Context, tenant string, req *tasksv1.StartJobItemRequest) (Result, string, uint32, error) {
	runID := req.GetRunId()
	if runID == "" {
		runID = ids.New(ids.Run)
	}
	res, err := a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		if req.GetThreadId() != "" && j.GetSessionId() == "" {
			return nil, errThreadWithoutSession
		}
		return domain.DecideStartItem(j, req.GetItemId(), runID, req.GetThreadId(), req.GetWorkerId(), a.now())
	})
	if err != nil {
		return res, "", 0, err
	}
	j, err := res.job(ctx, tenant, req.GetJobId())
	if err != nil {
		return res, "", 0, err
	}
	return res, runID, domain.Item(j, req.GetItemId()).GetAttempts(), nil
}

func (a *App) CompleteJobItem(ctx context.Context, tenant string, req *tasksv1.CompleteJobItemRequest) (Result, error) {
	return a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideCompleteItem(j, req.GetItemId(), req.GetRunId(), req.GetOutputRef(), a.now())
	})
}

func (a *App) FailJobItem(ctx context.Context, tenant string, req *tasksv1.FailJobItemRequest) (Result, error) {
	return a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideFailItem(j, req.GetItemId(), req.GetRunId(), req.GetError(), a.now())
	})
}

func (a *App) ReportJobItem(ctx context.Context, tenant string, req *tasksv1.ReportJobItemRequest) (Result, error) {
	return a.onJob(ctx, tenant, req.GetJobId(), req.GetIdempotencyKey(), func(_ context.Context, j *tasksv1.Job) ([]*eventsv1.RuntimeEvent, error) {
		return domain.DecideReportItem(j, req.GetItemId(), a.now())
	})
}
