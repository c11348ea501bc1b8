// Package api is the tasks service's transport: each handler is kit.Call
// (the caller from the credentials, the use case, grpcerr.Status for its
// error) around what the RPC translates between proto and the use case.
package api

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks/app"
)

// Handler implements tasksv1.TasksServiceServer.
type Handler struct {
	tasksv1.UnimplementedTasksServiceServer
	App *app.App
	// Held is the store of what workers hold (held.go).
	Held *held.Store
}

// written adapts a write use case whose answer is its write result alone.
func written[Req, Resp any](use func(context.Context, string, Req) (app.Result, error), answer func(*commonv1.WriteResult) Resp) func(context.Context, auth.Principal, Req) (Resp, error) {
	return func(ctx context.Context, p auth.Principal, req Req) (Resp, error) {
		res, err := use(ctx, p.Tenant, req)
		if err != nil {
			var none Resp
			return none, err
		}
		return answer(res.Write), nil
	}
}

func tsOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func (h *Handler) CreateTask(ctx context.Context, req *tasksv1.CreateTaskRequest) (*tasksv1.CreateTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.CreateTaskRequest) (*tasksv1.CreateTaskResponse, error) {
		res, t, err := h.App.CreateTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.CreateTaskResponse{Result: res.Write, Task: t}, nil
	})
}

func (h *Handler) UpdateTask(ctx context.Context, req *tasksv1.UpdateTaskRequest) (*tasksv1.UpdateTaskResponse, error) {
	return kit.Call(ctx, req, written(h.App.UpdateTask, func(w *commonv1.WriteResult) *tasksv1.UpdateTaskResponse {
		return &tasksv1.UpdateTaskResponse{Result: w}
	}))
}

func (h *Handler) StartTask(ctx context.Context, req *tasksv1.StartTaskRequest) (*tasksv1.StartTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.StartTaskRequest) (*tasksv1.StartTaskResponse, error) {
		st, err := h.App.StartTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.StartTaskResponse{Result: st.Result.Write, RunId: st.RunID, AttemptId: st.AttemptID, LeaseExpiresAt: tsOrNil(st.LeaseExpiresAt), LeaseToken: st.LeaseToken}, nil
	})
}

func (h *Handler) AppendTaskProgress(ctx context.Context, req *tasksv1.AppendTaskProgressRequest) (*tasksv1.AppendTaskProgressResponse, error) {
	return kit.Call(ctx, req, written(h.App.AppendTaskProgress, func(w *commonv1.WriteResult) *tasksv1.AppendTaskProgressResponse {
		return &tasksv1.AppendTaskProgressResponse{Result: w}
	}))
}

func (h *Handler) PauseTask(ctx context.Context, req *tasksv1.PauseTaskRequest) (*tasksv1.PauseTaskResponse, error) {
	return kit.Call(ctx, req, written(h.App.PauseTask, func(w *commonv1.WriteResult) *tasksv1.PauseTaskResponse { return &tasksv1.PauseTaskResponse{Result: w} }))
}

func (h *Handler) ResumeTask(ctx context.Context, req *tasksv1.ResumeTaskRequest) (*tasksv1.ResumeTaskResponse, error) {
	return kit.Call(ctx, req, written(h.App.ResumeTask, func(w *commonv1.WriteResult) *tasksv1.ResumeTaskResponse {
		return &tasksv1.ResumeTaskResponse{Result: w}
	}))
}

func (h *Handler) CancelTask(ctx context.Context, req *tasksv1.CancelTaskRequest) (*tasksv1.CancelTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.CancelTaskRequest) (*tasksv1.CancelTaskResponse, error) {
		res, st, err := h.App.CancelTask(ctx, p.Tenant, p.Subject, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.CancelTaskResponse{Result: res.Write, Status: st}, nil
	})
}

func (h *Handler) RetryTask(ctx context.Context, req *tasksv1.RetryTaskRequest) (*tasksv1.RetryTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.RetryTaskRequest) (*tasksv1.RetryTaskResponse, error) {
		st, err := h.App.RetryTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.RetryTaskResponse{Result: st.Result.Write, RunId: st.RunID}, nil
	})
}

func (h *Handler) CompleteTask(ctx context.Context, req *tasksv1.CompleteTaskRequest) (*tasksv1.CompleteTaskResponse, error) {
	return kit.Call(ctx, req, written(h.App.CompleteTask, func(w *commonv1.WriteResult) *tasksv1.CompleteTaskResponse {
		return &tasksv1.CompleteTaskResponse{Result: w}
	}))
}

func (h *Handler) FailTask(ctx context.Context, req *tasksv1.FailTaskRequest) (*tasksv1.FailTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.FailTaskRequest) (*tasksv1.FailTaskResponse, error) {
		res, st, err := h.App.FailTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.FailTaskResponse{Result: res.Write, Status: st}, nil
	})
}

func (h *Handler) DelegateTaskRun(ctx context.Context, req *tasksv1.DelegateTaskRunRequest) (*tasksv1.DelegateTaskRunResponse, error) {
	return kit.Call(ctx, req, written(h.App.DelegateTaskRun, func(w *commonv1.WriteResult) *tasksv1.DelegateTaskRunResponse {
		return &tasksv1.DelegateTaskRunResponse{Result: w}
	}))
}

func (h *Handler) ArchiveTask(ctx context.Context, req *tasksv1.ArchiveTaskRequest) (*tasksv1.ArchiveTaskResponse, error) {
	return kit.Call(ctx, req, written(h.App.ArchiveTask, func(w *commonv1.WriteResult) *tasksv1.ArchiveTaskResponse {
		return &tasksv1.ArchiveTaskResponse{Result: w}
	}))
}

func (h *Handler) ListTasks(ctx context.Context, req *tasksv1.ListTasksRequest) (*tasksv1.ListTasksResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.ListTasksRequest) (*tasksv1.ListTasksResponse, error) {
		ts, next, seq, err := h.App.ListTasks(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.ListTasksResponse{Tasks: ts, NextPageToken: next, Sequence: seq}, nil
	})
}

func (h *Handler) GetTask(ctx context.Context, req *tasksv1.GetTaskRequest) (*tasksv1.GetTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.GetTaskRequest) (*tasksv1.GetTaskResponse, error) {
		t, rev, seq, err := h.App.GetTask(ctx, p.Tenant, req.GetTaskId(), req.GetMinSequence())
		if err != nil {
			return nil, err
		}
		if err := checkTaskHeld(ctx, h.Held, p, t); err != nil {
			return nil, err
		}
		return &tasksv1.GetTaskResponse{Task: t, ReverseEdges: rev, Sequence: seq}, nil
	})
}

func (h *Handler) LinkTasks(ctx context.Context, req *tasksv1.LinkTasksRequest) (*tasksv1.LinkTasksResponse, error) {
	return kit.Call(ctx, req, written(h.App.LinkTasks, func(w *commonv1.WriteResult) *tasksv1.LinkTasksResponse { return &tasksv1.LinkTasksResponse{Result: w} }))
}

func (h *Handler) UnlinkTasks(ctx context.Context, req *tasksv1.UnlinkTasksRequest) (*tasksv1.UnlinkTasksResponse, error) {
	return kit.Call(ctx, req, written(h.App.UnlinkTasks, func(w *commonv1.WriteResult) *tasksv1.UnlinkTasksResponse {
		return &tasksv1.UnlinkTasksResponse{Result: w}
	}))
}

func (h *Handler) GetTaskSnapshot(ctx context.Context, req *tasksv1.GetTaskSnapshotRequest) (*tasksv1.GetTaskSnapshotResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.GetTaskSnapshotRequest) (*tasksv1.GetTaskSnapshotResponse, error) {
		return h.App.GetTaskSnapshot(ctx, p.Tenant, req)
	})
}

func (h *Handler) PollTask(ctx context.Context, req *tasksv1.PollTaskRequest) (*tasksv1.PollTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.PollTaskRequest) (*tasksv1.PollTaskResponse, error) {
		got, err := h.App.PollTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		if got.Task == nil {
			return &tasksv1.PollTaskResponse{}, nil
		}
		if err := holdPolledRun(ctx, h.Held, p, got.Task, got.RunID, got.LeaseExpiresAt); err != nil {
			return nil, err
		}
		return &tasksv1.PollTaskResponse{Task: got.Task, RunId: got.RunID, AttemptId: got.AttemptID, LeaseExpiresAt: tsOrNil(got.LeaseExpiresAt), LeaseToken: got.LeaseToken, Result: got.Result.Proto()}, nil
	})
}

func (h *Handler) HeartbeatTask(ctx context.Context, req *tasksv1.HeartbeatTaskRequest) (*tasksv1.HeartbeatTaskResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.HeartbeatTaskRequest) (*tasksv1.HeartbeatTaskResponse, error) {
		hb, err := h.App.HeartbeatTask(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		if err := h.Held.RenewRun(ctx, p, req.GetRunId(), time.Until(hb.ExpiresAt)); err != nil {
			return nil, err
		}
		return &tasksv1.HeartbeatTaskResponse{LeaseExpiresAt: tsOrNil(hb.ExpiresAt), CancelRequested: hb.CancelRequested, PauseRequested: hb.PauseRequested}, nil
	})
}

func (h *Handler) CreateJob(ctx context.Context, req *tasksv1.CreateJobRequest) (*tasksv1.CreateJobResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.CreateJobRequest) (*tasksv1.CreateJobResponse, error) {
		res, j, err := h.App.CreateJob(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.CreateJobResponse{Result: res.Write, Job: j}, nil
	})
}

func (h *Handler) GetJob(ctx context.Context, req *tasksv1.GetJobRequest) (*tasksv1.GetJobResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.GetJobRequest) (*tasksv1.GetJobResponse, error) {
		j, seq, err := h.App.GetJob(ctx, p.Tenant, req.GetJobId(), req.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &tasksv1.GetJobResponse{Job: j, Sequence: seq}, nil
	})
}

func (h *Handler) ListJobs(ctx context.Context, req *tasksv1.ListJobsRequest) (*tasksv1.ListJobsResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.ListJobsRequest) (*tasksv1.ListJobsResponse, error) {
		js, next, seq, err := h.App.ListJobs(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.ListJobsResponse{Jobs: js, NextPageToken: next, Sequence: seq}, nil
	})
}

func (h *Handler) CancelJob(ctx context.Context, req *tasksv1.CancelJobRequest) (*tasksv1.CancelJobResponse, error) {
	return kit.Call(ctx, req, written(h.App.CancelJob, func(w *commonv1.WriteResult) *tasksv1.CancelJobResponse { return &tasksv1.CancelJobResponse{Result: w} }))
}

func (h *Handler) RetryJobItem(ctx context.Context, req *tasksv1.RetryJobItemRequest) (*tasksv1.RetryJobItemResponse, error) {
	return kit.Call(ctx, req, written(h.App.RetryJobItem, func(w *commonv1.WriteResult) *tasksv1.RetryJobItemResponse {
		return &tasksv1.RetryJobItemResponse{Result: w}
	}))
}

func (h *Handler) StartJobItem(ctx context.Context, req *tasksv1.StartJobItemRequest) (*tasksv1.StartJobItemResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, p auth.Principal, req *tasksv1.StartJobItemRequest) (*tasksv1.StartJobItemResponse, error) {
		res, runID, attempt, err := h.App.StartJobItem(ctx, p.Tenant, req)
		if err != nil {
			return nil, err
		}
		return &tasksv1.StartJobItemResponse{Result: res.Write, RunId: runID, Attempt: attempt}, nil
	})
}

func (h *Handler) CompleteJobItem(ctx context.Context, req *tasksv1.CompleteJobItemRequest) (*tasksv1.CompleteJobItemResponse, error) {
	return kit.Call(ctx, req, written(h.App.CompleteJobItem, func(w *commonv1.WriteResult) *tasksv1.CompleteJobItemResponse {
		return &tasksv1.CompleteJobItemResponse{Result: w}
	}))
}

func (h *Handler) FailJobItem(ctx context.Context, req *tasksv1.FailJobItemRequest) (*tasksv1.FailJobItemResponse, error) {
	return kit.Call(ctx, req, written(h.App.FailJobItem, func(w *commonv1.WriteResult) *tasksv1.FailJobItemResponse {
		return &tasksv1.FailJobItemResponse{Result: w}
	}))
}

func (h *Handler) ReportJobItem(ctx context.Context, req *tasksv1.ReportJobItemRequest) (*tasksv1.ReportJobItemResponse, error) {
	return kit.Call(ctx, req, written(h.App.ReportJobItem, func(w *commonv1.WriteResult) *tasksv1.ReportJobItemResponse {
		return &tasksv1.ReportJobItemResponse{Result: w}
	}))
}
