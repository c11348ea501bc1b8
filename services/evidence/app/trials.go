package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
	"github.com/agentruntime/agentruntime/services/evidence/readmodel"
)

func trialAggregate(tenant, session, trial string) eventlog.Aggregate {
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: trialKind, ID: trial}
}

// Trial loads a trial's read model; nil when it does not exist.
func (a *App) Trial(ctx context.Context, tenant, session, trial string) (*domain.Trial, error) {
	return trialIn(ctx, a.Store, tenant, session, trial)
}

// trialIn reads a trial from store: the read model, or the trial's
// aggregate as the writer holds it (command.State); nil when it does not
// exist there.
func trialIn(ctx context.Context, store projection.Store, tenant, session, trial string) (*domain.Trial, error) {
	raw, err := store.Get(ctx, readmodel.TrialKey(tenant, session, trial))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d readmodel.TrialDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return d.Trial()
}

// StartTrial records benchmark.trial.started; ev carries the scope ids and
// the payload.
func (a *App) StartTrial(ctx context.Context, tenant, session string, ev *eventsv1.RuntimeEvent) (*commonv1.WriteResult, error) {
	if err := domain.CheckSpine(ev.GetBenchmarkTrialStarted().GetBenchmark()); err != nil {
		return nil, err
	}
	trial := ev.GetBenchmarkTrialStarted().GetBenchmark().GetTrialId()
	ev = domain.TrialStartedEvent(ev)
	// A trial id is new: decide without loading it (a trial that exists
	// conflicts, or the refusal is checked on the log, and the start is
	// decided again on what is there).
	res, err := a.w.ExecuteNew(ctx, trialAggregate(tenant, session, trial), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		cur, err := trialIn(ctx, st, tenant, session, trial)
		if err != nil {
			return nil, err
		}
		return domain.StartTrial(cur, proto.Clone(ev).(*eventsv1.RuntimeEvent))
	})
	if err != nil {
		return nil, err
	}
	return res.Write(), nil
}

// EndTrial records benchmark.trial.completed or .failed: an empty or
// "none" failure category completes the trial.
func (a *App) EndTrial(ctx context.Context, tenant string, req *evidencev1.EndBenchmarkTrialRequest) (*commonv1.WriteResult, error) {
	session, trial := req.GetSessionId(), req.GetTrialId()
	res, err := a.w.Execute(ctx, trialAggregate(tenant, session, trial), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		cur, err := trialIn(ctx, st, tenant, session, trial)
		if err != nil {
			return nil, err
		}
		var dur uint64
		if cur != nil {
			if started, err := time.Parse(time.RFC3339Nano, cur.StartedAt); err == nil {
				dur = uint64(max(a.Now().Sub(started), 0) / time.Millisecond)
			}
		}
		return domain.EndTrial(cur, req.GetFailureCategory(), req.GetMessage(), req.GetTimedOut(), dur)
	})
	if err != nil {
		return nil, err
	}
	return res.Write(), nil
}

// RecordReward records benchmark.reward.recorded.
func (a *App) RecordReward(ctx context.Context, tenant string, req *evidencev1.RecordBenchmarkRewardRequest) (*commonv1.WriteResult, error) {
	session, trial := req.GetSessionId(), req.GetTrialId()
	r := &eventsv1.BenchmarkRewardRecorded{Value: req.GetValue(), RewardRef: req.GetRewardRef(), DetailsRef: req.GetDetailsRef(),
		Criteria: req.GetCriteria(), FailureCategory: req.GetFailureCategory(), VerifierStatus: req.GetVerifierStatus()}
	res, err := a.w.Execute(ctx, trialAggregate(tenant, session, trial), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		cur, err := trialIn(ctx, st, tenant, session, trial)
		if err != nil {
			return nil, err
		}
		return domain.RecordReward(cur, r)
	})
	if err != nil {
		return nil, err
	}
	return res.Write(), nil
}

// TrialExport answers ExportBenchmarkTrial.
type TrialExport struct {
	ExportResult
	Trajectory *commonv1.OutputRef
}

// ExportTrial writes the trajectory, the runtime transcript and the trial
// pack, and records evidence.changed (kind benchmark_trial).
func (a *App) ExportTrial(ctx context.Context, tenant, session, trial string, refs map[string]string, minSeq uint64) (*TrialExport, error) {
	// The export covers every fact of the trial in the log now (an end
	// just answered counts; trial commands do not wait for the read
	// model): the read model is waited for up to the trial's last event.
	st, err := a.w.Refresh(ctx, trialAggregate(tenant, session, trial))
	if err != nil {
		return nil, err
	}
	reached, err := a.reach(ctx, tenant, session, max(minSeq, st.Last))
	if err != nil {
		return nil, err
	}
	t, err := a.Trial(ctx, tenant, session, trial)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, domain.TrialNotFound(domain.ErrTrialNotFound)
	}
	m, err := a.fold(ctx, tenant, domain.Scope{Kind: domain.ScopeTurn, Session: session, ID: t.Turn, AlsoTask: t.Task}, reached)
	if err != nil {
		return nil, err
	}
	base := "evidence/" + tenant + "/" + session + "/trials/" + trial + "-" + fmt.Sprint(m.Covers())
	traj, fields := domain.Trajectory(t, m)
	body, err := jsonexport.Marshal(traj)
	if err != nil {
		return nil, err
	}
	trajRef, err := a.Log.PutObject(ctx, base+"-trajectory.json", "evidence", "application/json", body)
	if err != nil {
		return nil, err
	}
	transcript := make([]any, len(m.Events))
	for i, ev := range m.Events {
		transcript[i] = jsonexport.Event(ev, jsonexport.Options{})
	}
	body, err = jsonexport.Marshal(transcript)
	if err != nil {
		return nil, err
	}
	transcriptRef, err := a.Log.PutObject(ctx, base+"-transcript.json", "evidence", "application/json", body)
	if err != nil {
		return nil, err
	}
	pack, gaps := domain.TrialPack(t, m, domain.TrialPackInput{TrajectoryRef: trajRef.GetUri(), TranscriptRef: transcriptRef.GetUri(), Refs: refs, TrajectoryFields: fields})
	out := &TrialExport{Trajectory: trajRef, ExportResult: ExportResult{Covers: m.Covers(), KnownGaps: gaps}}
	changed := &eventsv1.EvidenceChanged{Kind: "benchmark_trial", ScopeKind: string(domain.ScopeTurn), ScopeId: trial, CoversSequence: m.Covers(), KnownGaps: gaps}
	if err := a.store(ctx, tenant, session, pack, changed, &eventsv1.RuntimeEvent{ThreadId: t.Thread, TurnId: t.Turn, TaskId: t.Task, RunId: t.Run}, &out.ExportResult); err != nil {
		return nil, err
	}
	return out, nil
}

// TrialRef names a trial.
type TrialRef struct{ Session, Trial string }

// Configuration reads a configuration's recorded fact from its definition
// aggregate in session (the log, not a read model: a configuration
// recorded just before the comparison counts); nil when it was never
// recorded there.
func (a *App) Configuration(ctx context.Context, tenant, session, id string) (*eventsv1.BenchmarkConfigurationResolved, error) {
	var out *eventsv1.BenchmarkConfigurationResolved
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "benchmark_definition", ID: domain.ConfigurationAggregateID(id)}
	_, err := a.Log.ReadAggregate(ctx, agg, 0, func(r *eventlog.Record) error {
		// The aggregate holds one event: the configuration, recorded once.
		if c := r.Event.GetBenchmarkConfigurationResolved(); c != nil && out == nil {
			out = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ComparisonConfigurations names the configurations a comparison is
// between, by id, as the request's fields do.
type ComparisonConfigurations struct{ Baseline, Candidate string }

// Compare loads the configurations and the trials, checks they pair
// (domain.CheckComparison) and records benchmark.comparison.completed on
// the comparison's own aggregate.
func (a *App) Compare(ctx context.Context, p auth.Principal, r *evidencev1.CompareBenchmarkRunsRequest) (*evidencev1.CompareBenchmarkRunsResponse, error) {
	tenant, session := p.Tenant, r.GetSessionId()
	in := domain.ComparisonInput{ID: r.GetComparisonId(), P0Regressions: r.GetP0QcGateRegressionCount(), Decision: r.GetDecision()}
	cfgs := ComparisonConfigurations{Baseline: r.GetBaselineConfigurationId(), Candidate: r.GetCandidateConfigurationId()}
	refs := func(in []*evidencev1.TrialRef) []TrialRef {
		out := make([]TrialRef, len(in))
		for i, t := range in {
			out[i] = TrialRef{Session: t.GetSessionId(), Trial: t.GetTrialId()}
		}
		return out
	}
	baseline, candidate, qcRef := refs(r.GetBaseline()), refs(r.GetCandidate()), r.GetAgentQcReportRef()
	for _, c := range []struct {
		field, id string
		into      **eventsv1.BenchmarkConfigurationResolved
	}{{"baseline_configuration_id", cfgs.Baseline, &in.BaselineConfiguration}, {"candidate_configuration_id", cfgs.Candidate, &in.CandidateConfiguration}} {
		cfg, err := a.Configuration(ctx, tenant, session, c.id)
		if err != nil {
			return nil, err
		}
		if cfg == nil {
			return nil, domain.ConfigurationNotFound(c.field, c.id)
		}
		*c.into = cfg
	}
	load := func(refs []TrialRef) ([]*domain.Trial, error) {
		var out []*domain.Trial
		for _, r := range refs {
			t, err := a.Trial(ctx, tenant, r.Session, r.Trial)
			if err != nil {
				return nil, err
			}
			if t == nil {
				return nil, domain.TrialNotFound(fmt.Errorf("%w: %s/%s", domain.ErrTrialNotFound, r.Session, r.Trial))
			}
			out = append(out, t)
		}
		return out, nil
	}
	// A comparison reads every trial fact appended before the call (an
	// export just made must count): wait for the projection to reach the
	// head of each partition holding one of the trials' sessions first.
	parts := map[*eventlog.Log]bool{}
	for _, r := range slices.Concat(baseline, candidate) {
		parts[a.Log.Of(tenant, r.Session)] = true
	}
	for part := range parts {
		if err := projector.CaughtUp(ctx, part, a.Store, readmodel.Name, nil, catchUp); err != nil {
			return nil, behind(err, "baseline")
		}
	}
	var err error
	if in.Baseline, err = load(baseline); err != nil {
		return nil, err
	}
	if in.Candidate, err = load(candidate); err != nil {
		return nil, err
	}
	cmp, err := domain.Compare(in)
	if err != nil {
		return nil, err
	}
	ev := domain.ComparisonCompleted(cmp, qcRef)
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "benchmark_comparison", ID: in.ID}
	res, err := a.w.ExecuteNew(ctx, agg, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		if st.Last != 0 {
			// A comparison is recorded once; a retried call answers with
			// the recorded sequence.
			return nil, nil
		}
		return []*eventsv1.RuntimeEvent{proto.Clone(ev).(*eventsv1.RuntimeEvent)}, nil
	})
	if err != nil {
		return nil, err
	}
	return &evidencev1.CompareBenchmarkRunsResponse{Comparison: cmp, Write: res.Write()}, nil
}

// RecordDefinition appends a dataset or configuration fact once: the same
// facts again answer with the recorded sequence (deduplicated), other facts
// under the same name are the definition's conflict error.
func (a *App) RecordDefinition(ctx context.Context, tenant, session string, d *domain.Definition) (*commonv1.WriteResult, error) {
	agg := eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "benchmark_definition", ID: d.AggregateID}
	appended, err := a.Log.Append(ctx, agg, eventlog.ExpectSequence(0), d.Event)
	if errors.Is(err, eventlog.ErrConflict) {
		// The aggregate holds one event and it is not this content's.
		return nil, d.Conflict
	}
	if err != nil {
		return nil, err
	}
	return command.Result{Appended: appended, Sequence: appended[0].Sequence}.Write(), nil
}
