package tasks

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/services/tasks/app"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
)

// Handlers are thin: the server kit has authenticated the caller and
// validated the request; each takes the tenant from the credentials, calls
// the use case and maps its error in one place (toStatus).

func principal(ctx context.Context) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Principal{}, status.Error(codes.Unauthenticated, "no credentials")
	}
	return p, nil
}

// toStatus is the service's one mapping from errors to gRPC statuses.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var (
		pe *domain.PreconditionError
		ie *domain.InvalidError
		nf *domain.NotFoundError
		ce *domain.ConflictError
	)
	switch {
	case errors.As(err, &pe):
		return grpcerr.FailedPrecondition(pe.Reason, pe.Subject, pe.Description, pe.Metadata)
	case errors.As(err, &ie):
		return grpcerr.InvalidField(ie.Field, "%s", ie.Description)
	case errors.As(err, &nf):
		return grpcerr.NotFound(nf.Kind, nf.ID)
	case errors.As(err, &ce):
		return grpcerr.AlreadyExists(ce.Kind, ce.ID, ce.Description)
	}
	if st := grpcerr.Infrastructure(err); st != nil {
		return st
	}
	return status.Error(codes.Unavailable, "tasks: a dependency failed; retry the request")
}

func write(r app.Result) *commonv1.WriteResult {
	return &commonv1.WriteResult{Sequence: r.Sequence, EventIds: r.EventIDs, Deduplicated: r.Deduplicated}
}

func tsOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func (s *Service) CreateTask(ctx context.Context, req *tasksv1.CreateTaskRequest) (*tasksv1.CreateTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, t, err := s.app.CreateTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CreateTaskResponse{Result: write(res), Task: t}, nil
}

func (s *Service) UpdateTask(ctx context.Context, req *tasksv1.UpdateTaskRequest) (*tasksv1.UpdateTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.UpdateTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.UpdateTaskResponse{Result: write(res)}, nil
}

func (s *Service) StartTask(ctx context.Context, req *tasksv1.StartTaskRequest) (*tasksv1.StartTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.app.StartTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.StartTaskResponse{Result: write(st.Result), RunId: st.RunID, AttemptId: st.AttemptID, LeaseExpiresAt: tsOrNil(st.LeaseExpiresAt)}, nil
}

func (s *Service) AppendTaskProgress(ctx context.Context, req *tasksv1.AppendTaskProgressRequest) (*tasksv1.AppendTaskProgressResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.AppendTaskProgress(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.AppendTaskProgressResponse{Result: write(res)}, nil
}

func (s *Service) PauseTask(ctx context.Context, req *tasksv1.PauseTaskRequest) (*tasksv1.PauseTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.PauseTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.PauseTaskResponse{Result: write(res)}, nil
}

func (s *Service) ResumeTask(ctx context.Context, req *tasksv1.ResumeTaskRequest) (*tasksv1.ResumeTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.ResumeTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.ResumeTaskResponse{Result: write(res)}, nil
}

func (s *Service) CancelTask(ctx context.Context, req *tasksv1.CancelTaskRequest) (*tasksv1.CancelTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, st, err := s.app.CancelTask(ctx, p.Tenant, p.Subject, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CancelTaskResponse{Result: write(res), Status: st}, nil
}

func (s *Service) RetryTask(ctx context.Context, req *tasksv1.RetryTaskRequest) (*tasksv1.RetryTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.app.RetryTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.RetryTaskResponse{Result: write(st.Result), RunId: st.RunID}, nil
}

func (s *Service) CompleteTask(ctx context.Context, req *tasksv1.CompleteTaskRequest) (*tasksv1.CompleteTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.CompleteTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CompleteTaskResponse{Result: write(res)}, nil
}

func (s *Service) FailTask(ctx context.Context, req *tasksv1.FailTaskRequest) (*tasksv1.FailTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, st, err := s.app.FailTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.FailTaskResponse{Result: write(res), Status: st}, nil
}

func (s *Service) ArchiveTask(ctx context.Context, req *tasksv1.ArchiveTaskRequest) (*tasksv1.ArchiveTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.ArchiveTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.ArchiveTaskResponse{Result: write(res)}, nil
}

func (s *Service) ListTasks(ctx context.Context, req *tasksv1.ListTasksRequest) (*tasksv1.ListTasksResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	ts, next, seq, err := s.app.ListTasks(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.ListTasksResponse{Tasks: ts, NextPageToken: next, Sequence: seq}, nil
}

func (s *Service) GetTask(ctx context.Context, req *tasksv1.GetTaskRequest) (*tasksv1.GetTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, rev, seq, err := s.app.GetTask(ctx, p.Tenant, req.GetTaskId(), req.GetMinSequence())
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.GetTaskResponse{Task: t, ReverseEdges: rev, Sequence: seq}, nil
}

func (s *Service) LinkTasks(ctx context.Context, req *tasksv1.LinkTasksRequest) (*tasksv1.LinkTasksResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.LinkTasks(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.LinkTasksResponse{Result: write(res)}, nil
}

func (s *Service) UnlinkTasks(ctx context.Context, req *tasksv1.UnlinkTasksRequest) (*tasksv1.UnlinkTasksResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.UnlinkTasks(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.UnlinkTasksResponse{Result: write(res)}, nil
}

func (s *Service) GetTaskSnapshot(ctx context.Context, req *tasksv1.GetTaskSnapshotRequest) (*tasksv1.GetTaskSnapshotResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	out, err := s.app.GetTaskSnapshot(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return out, nil
}

func (s *Service) PollTask(ctx context.Context, req *tasksv1.PollTaskRequest) (*tasksv1.PollTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	got, err := s.app.PollTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	if got.Task == nil {
		return &tasksv1.PollTaskResponse{}, nil
	}
	return &tasksv1.PollTaskResponse{Task: got.Task, RunId: got.RunID, AttemptId: got.AttemptID, LeaseExpiresAt: tsOrNil(got.LeaseExpiresAt), Result: write(got.Result)}, nil
}

func (s *Service) HeartbeatTask(ctx context.Context, req *tasksv1.HeartbeatTaskRequest) (*tasksv1.HeartbeatTaskResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	hb, err := s.app.HeartbeatTask(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.HeartbeatTaskResponse{LeaseExpiresAt: tsOrNil(hb.ExpiresAt), CancelRequested: hb.CancelRequested, PauseRequested: hb.PauseRequested}, nil
}

func (s *Service) CreateJob(ctx context.Context, req *tasksv1.CreateJobRequest) (*tasksv1.CreateJobResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, j, err := s.app.CreateJob(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CreateJobResponse{Result: write(res), Job: j}, nil
}

func (s *Service) GetJob(ctx context.Context, req *tasksv1.GetJobRequest) (*tasksv1.GetJobResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	j, seq, err := s.app.GetJob(ctx, p.Tenant, req.GetJobId(), req.GetMinSequence())
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.GetJobResponse{Job: j, Sequence: seq}, nil
}

func (s *Service) ListJobs(ctx context.Context, req *tasksv1.ListJobsRequest) (*tasksv1.ListJobsResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	js, next, seq, err := s.app.ListJobs(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.ListJobsResponse{Jobs: js, NextPageToken: next, Sequence: seq}, nil
}

func (s *Service) CancelJob(ctx context.Context, req *tasksv1.CancelJobRequest) (*tasksv1.CancelJobResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.CancelJob(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CancelJobResponse{Result: write(res)}, nil
}

func (s *Service) RetryJobItem(ctx context.Context, req *tasksv1.RetryJobItemRequest) (*tasksv1.RetryJobItemResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.RetryJobItem(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.RetryJobItemResponse{Result: write(res)}, nil
}

func (s *Service) StartJobItem(ctx context.Context, req *tasksv1.StartJobItemRequest) (*tasksv1.StartJobItemResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, runID, attempt, err := s.app.StartJobItem(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.StartJobItemResponse{Result: write(res), RunId: runID, Attempt: attempt}, nil
}

func (s *Service) CompleteJobItem(ctx context.Context, req *tasksv1.CompleteJobItemRequest) (*tasksv1.CompleteJobItemResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.CompleteJobItem(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.CompleteJobItemResponse{Result: write(res)}, nil
}

func (s *Service) FailJobItem(ctx context.Context, req *tasksv1.FailJobItemRequest) (*tasksv1.FailJobItemResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.FailJobItem(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.FailJobItemResponse{Result: write(res)}, nil
}

func (s *Service) ReportJobItem(ctx context.Context, req *tasksv1.ReportJobItemRequest) (*tasksv1.ReportJobItemResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.app.ReportJobItem(ctx, p.Tenant, req)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tasksv1.ReportJobItemResponse{Result: write(res)}, nil
}
