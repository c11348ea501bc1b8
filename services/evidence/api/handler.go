// Package api is the evidence service's transport: proto in, use case,
// proto out. Every handler is kit.Call (the caller from the credentials,
// the use case, grpcerr.Status for its error).
package api

import (
	"context"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	ev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/services/evidence/app"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Handler implements ev1.EvidenceServiceServer.
type Handler struct {
	ev1.UnimplementedEvidenceServiceServer
	App *app.App
}

func scope(s *ev1.Scope) (domain.Scope, error) {
	out := domain.Scope{Session: s.GetSessionId(), ID: s.GetId()}
	switch s.GetKind() {
	case ev1.ScopeKind_SCOPE_KIND_SESSION:
		out.Kind, out.ID = domain.ScopeSession, ""
	case ev1.ScopeKind_SCOPE_KIND_THREAD:
		out.Kind = domain.ScopeThread
	case ev1.ScopeKind_SCOPE_KIND_TURN:
		out.Kind = domain.ScopeTurn
	case ev1.ScopeKind_SCOPE_KIND_TASK:
		out.Kind = domain.ScopeTask
	}
	if out.Kind != domain.ScopeSession && out.ID == "" {
		return out, fault.Invalid("scope.id", "a %s scope needs the %s id", out.Kind, out.Kind)
	}
	return out, nil
}

func result(r *app.ExportResult) *ev1.ExportResult {
	out := &ev1.ExportResult{EvidenceId: r.EvidenceID, Pack: r.Pack, ContentSha256: r.ContentSHA256, CoversSequence: r.Covers, KnownGaps: r.KnownGaps, Write: r.Write}
	for _, s := range r.Signals {
		out.Signals = append(out.Signals, &ev1.Signal{Name: s.Name, Status: signalStatus(s.Status), Detail: s.Detail})
	}
	return out
}

func (h *Handler) export(ctx context.Context, p auth.Principal, s *ev1.Scope, r app.ExportRequest) (*ev1.ExportResult, error) {
	sc, err := scope(s)
	if err != nil {
		return nil, err
	}
	r.Tenant, r.Scope = p.Tenant, sc
	res, err := h.App.Export(ctx, r)
	if err != nil {
		return nil, err
	}
	return result(res), nil
}

// ExportEvidence implements ev1.EvidenceServiceServer.
func (h *Handler) ExportEvidence(ctx context.Context, r *ev1.ExportEvidenceRequest) (*ev1.ExportEvidenceResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportEvidenceRequest) (*ev1.ExportEvidenceResponse, error) {
		res, err := h.export(ctx, p, r.GetScope(), app.ExportRequest{Kind: "evidence", AtSequence: r.GetAtSequence(), MinSeq: r.GetMinSequence(),
			Evidence: domain.EvidenceInput{VerificationOutcomes: r.GetVerificationOutcomes(), ReviewNotes: r.GetReviewNotes()}})
		if err != nil {
			return nil, err
		}
		return &ev1.ExportEvidenceResponse{Result: res}, nil
	})
}

// ExportReplay implements ev1.EvidenceServiceServer.
func (h *Handler) ExportReplay(ctx context.Context, r *ev1.ExportReplayRequest) (*ev1.ExportReplayResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportReplayRequest) (*ev1.ExportReplayResponse, error) {
		res, err := h.export(ctx, p, r.GetScope(), app.ExportRequest{Kind: "replay", AtSequence: r.GetAtSequence(), MinSeq: r.GetMinSequence(), Grader: r.GetGraderInstructions()})
		if err != nil {
			return nil, err
		}
		return &ev1.ExportReplayResponse{Result: res}, nil
	})
}

// ExportReview implements ev1.EvidenceServiceServer.
func (h *Handler) ExportReview(ctx context.Context, r *ev1.ExportReviewRequest) (*ev1.ExportReviewResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportReviewRequest) (*ev1.ExportReviewResponse, error) {
		res, err := h.export(ctx, p, r.GetScope(), app.ExportRequest{Kind: "review", AtSequence: r.GetAtSequence(), MinSeq: r.GetMinSequence(),
			Evidence: domain.EvidenceInput{ReviewNotes: r.GetReviewNotes()}})
		if err != nil {
			return nil, err
		}
		return &ev1.ExportReviewResponse{Result: res}, nil
	})
}

// GetEvidenceSummary implements ev1.EvidenceServiceServer.
func (h *Handler) GetEvidenceSummary(ctx context.Context, r *ev1.GetEvidenceSummaryRequest) (*ev1.GetEvidenceSummaryResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.GetEvidenceSummaryRequest) (*ev1.GetEvidenceSummaryResponse, error) {
		s, err := h.App.Summary(ctx, p.Tenant, r.GetSessionId(), r.GetMinSequence())
		if err != nil {
			return nil, err
		}
		out := &ev1.GetEvidenceSummaryResponse{Sequence: s.Reached, EventCount: s.Summary.Count, EventCounts: s.Summary.Counts,
			EventsWithTrace: s.Summary.WithTrace, TraceIds: s.TraceIDs, EvidenceIds: s.Evidence, TrialIds: s.Trials,
			FirstSequence: s.Summary.First, LastSequence: s.Summary.Last}
		for _, sig := range s.Signals {
			out.Signals = append(out.Signals, &ev1.Signal{Name: sig.Name, Status: signalStatus(sig.Status), Detail: sig.Detail})
		}
		return out, nil
	})
}

// StartBenchmarkTrial implements ev1.EvidenceServiceServer.
func (h *Handler) StartBenchmarkTrial(ctx context.Context, r *ev1.StartBenchmarkTrialRequest) (*ev1.StartBenchmarkTrialResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.StartBenchmarkTrialRequest) (*ev1.StartBenchmarkTrialResponse, error) {
		ev := &eventsv1.RuntimeEvent{ThreadId: r.GetThreadId(), TurnId: r.GetTurnId(), TaskId: r.GetTaskId(), RunId: r.GetRunId(),
			Payload: &eventsv1.RuntimeEvent_BenchmarkTrialStarted{BenchmarkTrialStarted: &eventsv1.BenchmarkTrialStarted{
				Benchmark: r.GetBenchmark(), Attempt: r.GetAttempt(), SandboxProfile: r.GetSandboxProfile(), TimeoutSec: r.GetTimeoutSec(),
				BudgetUsd: r.GetBudgetUsd(), BudgetTokens: r.GetBudgetTokens()}}}
		w, err := h.App.StartTrial(ctx, p.Tenant, r.GetSessionId(), ev)
		if err != nil {
			return nil, err
		}
		return &ev1.StartBenchmarkTrialResponse{Write: w}, nil
	})
}

// RecordBenchmarkDataset implements ev1.EvidenceServiceServer.
func (h *Handler) RecordBenchmarkDataset(ctx context.Context, r *ev1.RecordBenchmarkDatasetRequest) (*ev1.RecordBenchmarkDatasetResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.RecordBenchmarkDatasetRequest) (*ev1.RecordBenchmarkDatasetResponse, error) {
		d, err := domain.DatasetResolved(p.Tenant, r.GetSessionId(), r.GetDataset())
		if err != nil {
			return nil, err
		}
		w, err := h.App.RecordDefinition(ctx, p.Tenant, r.GetSessionId(), d)
		if err != nil {
			return nil, err
		}
		return &ev1.RecordBenchmarkDatasetResponse{Write: w}, nil
	})
}

// RecordBenchmarkConfiguration implements ev1.EvidenceServiceServer.
func (h *Handler) RecordBenchmarkConfiguration(ctx context.Context, r *ev1.RecordBenchmarkConfigurationRequest) (*ev1.RecordBenchmarkConfigurationResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.RecordBenchmarkConfigurationRequest) (*ev1.RecordBenchmarkConfigurationResponse, error) {
		c, err := domain.ConfigurationResolved(p.Tenant, r.GetSessionId(), r.GetConfiguration())
		if err != nil {
			return nil, err
		}
		w, err := h.App.RecordDefinition(ctx, p.Tenant, r.GetSessionId(), c)
		if err != nil {
			return nil, err
		}
		return &ev1.RecordBenchmarkConfigurationResponse{Write: w}, nil
	})
}

// EndBenchmarkTrial implements ev1.EvidenceServiceServer.
func (h *Handler) EndBenchmarkTrial(ctx context.Context, r *ev1.EndBenchmarkTrialRequest) (*ev1.EndBenchmarkTrialResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.EndBenchmarkTrialRequest) (*ev1.EndBenchmarkTrialResponse, error) {
		w, err := h.App.EndTrial(ctx, p.Tenant, r)
		if err != nil {
			return nil, err
		}
		return &ev1.EndBenchmarkTrialResponse{Write: w}, nil
	})
}

// RecordBenchmarkReward implements ev1.EvidenceServiceServer.
func (h *Handler) RecordBenchmarkReward(ctx context.Context, r *ev1.RecordBenchmarkRewardRequest) (*ev1.RecordBenchmarkRewardResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.RecordBenchmarkRewardRequest) (*ev1.RecordBenchmarkRewardResponse, error) {
		w, err := h.App.RecordReward(ctx, p.Tenant, r)
		if err != nil {
			return nil, err
		}
		return &ev1.RecordBenchmarkRewardResponse{Write: w}, nil
	})
}

// ExportBenchmarkTrial implements ev1.EvidenceServiceServer.
func (h *Handler) ExportBenchmarkTrial(ctx context.Context, r *ev1.ExportBenchmarkTrialRequest) (*ev1.ExportBenchmarkTrialResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportBenchmarkTrialRequest) (*ev1.ExportBenchmarkTrialResponse, error) {
		res, err := h.App.ExportTrial(ctx, p.Tenant, r.GetSessionId(), r.GetTrialId(), r.GetRefs(), r.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &ev1.ExportBenchmarkTrialResponse{EvidenceId: res.EvidenceID, Pack: res.Pack, Trajectory: res.Trajectory, ContentSha256: res.ContentSHA256, Write: res.Write}, nil
	})
}

// CompareBenchmarkRuns implements ev1.EvidenceServiceServer.
func (h *Handler) CompareBenchmarkRuns(ctx context.Context, r *ev1.CompareBenchmarkRunsRequest) (*ev1.CompareBenchmarkRunsResponse, error) {
	return kit.Call(ctx, r, h.App.Compare)
}

// ExportEvents implements ev1.EvidenceServiceServer.
func (h *Handler) ExportEvents(ctx context.Context, r *ev1.ExportEventsRequest) (*ev1.ExportEventsResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportEventsRequest) (*ev1.ExportEventsResponse, error) {
		session := r.GetSessionId()
		if r.GetTenantFacts() {
			session = eventlog.NoSession
		}
		page, err := h.App.Events(ctx, p.Tenant, app.EventsQuery{Session: session, Profile: r.GetFormat() == ev1.Format_FORMAT_LIME_PROFILE,
			From: r.GetFromSequence(), Limit: int(r.GetLimit()), MinSeq: r.GetMinSequence()})
		if err != nil {
			return nil, err
		}
		out := &ev1.ExportEventsResponse{EventsJson: page.JSON, NextSequence: page.Next}
		for _, s := range page.Skipped {
			out.Skipped = append(out.Skipped, &ev1.SkippedEvent{Sequence: s.Sequence, EventId: s.EventID, Type: s.Type, Reason: s.Reason, Detail: s.Detail})
		}
		return out, nil
	})
}

// ExportSnapshot implements ev1.EvidenceServiceServer.
func (h *Handler) ExportSnapshot(ctx context.Context, r *ev1.ExportSnapshotRequest) (*ev1.ExportSnapshotResponse, error) {
	return kit.Call(ctx, r, func(ctx context.Context, p auth.Principal, r *ev1.ExportSnapshotRequest) (*ev1.ExportSnapshotResponse, error) {
		body, covers, err := h.App.Snapshot(ctx, p.Tenant, r.GetSessionId(), r.GetFormat() == ev1.Format_FORMAT_LIME_PROFILE, r.GetMinSequence())
		if err != nil {
			return nil, err
		}
		return &ev1.ExportSnapshotResponse{SnapshotJson: string(body), CoversSequence: covers}, nil
	})
}

// signalStatus is the API's enum for a signal status the pack's JSON names
// with the spec's word (domain.Exported, ...).
func signalStatus(word string) ev1.SignalStatus {
	st, _ := enums.Parse[ev1.SignalStatus](word)
	return st
}
