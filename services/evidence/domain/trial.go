package domain

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/jsonexport"
)

// Trial states.
const (
	TrialNone      = ""
	TrialStarted   = "started"
	TrialCompleted = "completed"
	TrialFailed    = "failed"
)

// Trial is a benchmark trial's read model.
type Trial struct {
	Spine                       *eventsv1.BenchmarkSpine
	Started                     *eventsv1.BenchmarkTrialStarted
	Reward                      *eventsv1.BenchmarkRewardRecorded
	Session, Thread, Turn, Task string
	Run, TraceID                string
	Status, FailureCategory     string
	TimedOut                    bool
	StartedAt, EndedAt          string
	DurationMs                  uint64
	Exported                    bool
	ExportGaps                  int
	StartSequence, LastSequence uint64
}

// Causes of trial commands' refusals (errors.Is finds them in the
// pkg/fault errors the commands return).
var (
	ErrTrialNotFound = errors.New("trial not found")
	ErrTrialExists   = errors.New("trial already started with other facts")
	ErrTrialEnded    = errors.New("trial already ended with another outcome")
	ErrRewarded      = errors.New("trial already has another reward")
	ErrTrialNotEnded = errors.New("trial has not ended")
)

// StartTrial decides benchmark.trial.started. Starting the same trial with
// the same facts again appends nothing (a retried command).
func StartTrial(cur *Trial, ev *eventsv1.RuntimeEvent) ([]*eventsv1.RuntimeEvent, error) {
	if cur != nil && cur.Status != TrialNone {
		if cur.Thread == ev.GetThreadId() && cur.Turn == ev.GetTurnId() && cur.Task == ev.GetTaskId() &&
			cur.Run == ev.GetRunId() && proto.Equal(cur.Started, ev.GetBenchmarkTrialStarted()) {
			return nil, nil
		}
		return nil, refused(ReasonTrialExists, "benchmark.trial_id", fmt.Errorf("%w: %s is %s", ErrTrialExists, cur.Spine.GetTrialId(), cur.Status))
	}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// EndTrial decides benchmark.trial.completed or .failed: an empty or
// "none" failure category completes it.
func EndTrial(cur *Trial, failureCategory, message string, timedOut bool, durationMs uint64) ([]*eventsv1.RuntimeEvent, error) {
	if cur == nil || cur.Status == TrialNone {
		return nil, TrialNotFound(ErrTrialNotFound)
	}
	typ, status := events.TypeBenchmarkTrialCompleted, TrialCompleted
	if failureCategory == "" {
		failureCategory = "none"
	}
	if failureCategory != "none" || timedOut {
		typ, status = events.TypeBenchmarkTrialFailed, TrialFailed
	}
	if cur.Status != TrialStarted {
		if cur.Status == status && cur.FailureCategory == failureCategory && cur.TimedOut == timedOut {
			return nil, nil
		}
		return nil, refused(ReasonTrialEnded, "trial_id", fmt.Errorf("%w: it %s (%s)", ErrTrialEnded, cur.Status, cur.FailureCategory))
	}
	payload := &eventsv1.BenchmarkTrialEnded{Benchmark: cur.Spine, FailureCategory: failureCategory, Message: message, TimedOut: timedOut, DurationMs: durationMs}
	ev := cur.envelope(typ)
	if status == TrialCompleted {
		ev.Payload = &eventsv1.RuntimeEvent_BenchmarkTrialCompleted{BenchmarkTrialCompleted: payload}
	} else {
		ev.Payload = &eventsv1.RuntimeEvent_BenchmarkTrialFailed{BenchmarkTrialFailed: payload}
	}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

// RecordReward decides benchmark.reward.recorded. A reward is the
// verifier's fact: the same reward again is a no-op, a different one is
// refused (a re-scored trial is a new trial).
func RecordReward(cur *Trial, r *eventsv1.BenchmarkRewardRecorded) ([]*eventsv1.RuntimeEvent, error) {
	if cur == nil || cur.Status == TrialNone {
		return nil, TrialNotFound(ErrTrialNotFound)
	}
	r = proto.Clone(r).(*eventsv1.BenchmarkRewardRecorded)
	r.Benchmark = cur.Spine
	if cur.Reward != nil {
		if proto.Equal(cur.Reward, r) {
			return nil, nil
		}
		return nil, refused(ReasonRewardRecorded, "trial_id", ErrRewarded)
	}
	ev := cur.envelope(events.TypeBenchmarkRewardRecorded)
	ev.Payload = &eventsv1.RuntimeEvent_BenchmarkRewardRecorded{BenchmarkRewardRecorded: r}
	for k, v := range map[string]string{"rewardRef": r.GetRewardRef(), "rewardDetailsRef": r.GetDetailsRef()} {
		if v != "" {
			ev.Refs[k] = v
		}
	}
	return []*eventsv1.RuntimeEvent{ev}, nil
}

func (t *Trial) envelope(typ string) *eventsv1.RuntimeEvent {
	refs := map[string]string{}
	if r := t.Spine.GetHarborTrialRef(); r != "" {
		refs["harborTrialRef"] = r
	}
	return &eventsv1.RuntimeEvent{Type: typ, ThreadId: t.Thread, TurnId: t.Turn, TaskId: t.Task, RunId: t.Run, Refs: refs}
}

// ApplyTrial folds a benchmark event into a trial's read model.
func ApplyTrial(cur *Trial, ev *eventsv1.RuntimeEvent) *Trial {
	if cur == nil {
		cur = &Trial{}
	}
	cur.LastSequence = ev.GetSequence()
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_BenchmarkTrialStarted:
		cur.Spine, cur.Started = p.BenchmarkTrialStarted.GetBenchmark(), p.BenchmarkTrialStarted
		cur.Session, cur.Thread, cur.Turn, cur.Task, cur.Run = ev.GetSessionId(), ev.GetThreadId(), ev.GetTurnId(), ev.GetTaskId(), ev.GetRunId()
		cur.TraceID, cur.Status, cur.StartedAt, cur.StartSequence = ev.GetTraceId(), TrialStarted, ts(ev), ev.GetSequence()
	case *eventsv1.RuntimeEvent_BenchmarkTrialCompleted:
		cur.Status, cur.EndedAt, cur.FailureCategory = TrialCompleted, ts(ev), p.BenchmarkTrialCompleted.GetFailureCategory()
		cur.DurationMs = p.BenchmarkTrialCompleted.GetDurationMs()
	case *eventsv1.RuntimeEvent_BenchmarkTrialFailed:
		cur.Status, cur.EndedAt, cur.FailureCategory = TrialFailed, ts(ev), p.BenchmarkTrialFailed.GetFailureCategory()
		cur.TimedOut, cur.DurationMs = p.BenchmarkTrialFailed.GetTimedOut(), p.BenchmarkTrialFailed.GetDurationMs()
	case *eventsv1.RuntimeEvent_BenchmarkRewardRecorded:
		cur.Reward = p.BenchmarkRewardRecorded
	case *eventsv1.RuntimeEvent_EvidenceChanged:
		cur.Exported = true
		cur.ExportGaps = len(p.EvidenceChanged.GetKnownGaps())
	}
	return cur
}

// EvidenceComplete: the trial ended, has a reward and a trial pack with no
// known gap. The comparison's completeness rate counts these.
func (t *Trial) EvidenceComplete() bool {
	return (t.Status == TrialCompleted || t.Status == TrialFailed) && t.Reward != nil && t.Exported && t.ExportGaps == 0
}

// TrialPackInput is what the exporter adds to a trial pack.
type TrialPackInput struct {
	TrajectoryRef, TranscriptRef string
	// Refs the runner owns, by the pack's ref names.
	Refs map[string]string
	// TrajectoryFields says which ATIF required fields the trajectory has.
	TrajectoryFields map[string]bool
}

// TrialPack builds the benchmark trial pack in the shape of the Lime
// fixture benchmark-trial-pack.json: spine, runtime correlation, refs,
// metrics, decision inputs (never a verdict), trajectory and reward.
func TrialPack(t *Trial, m *Model, in TrialPackInput) (Object, []string) {
	spine := jsonexport.Spine(t.Spine)
	if t.Spine.GetRole() == "" {
		delete(spine, "role")
	}
	corr := Object{"sessionId": t.Session, "threadId": t.Thread, "turnId": t.Turn, "taskId": t.Task, "runId": t.Run}
	if m.RuntimeID != "" {
		corr["runtimeId"] = m.RuntimeID
	}
	var gaps []string
	traces := sortedKeys(m.TraceIDs)
	switch {
	case t.TraceID != "":
		corr["traceId"] = t.TraceID
	case len(traces) == 1:
		corr["traceId"] = traces[0]
	default:
		corr["traceId"] = MissingCorrelation
		gaps = append(gaps, "telemetry: the trial's events carry no single trace id; not joined by timestamp")
	}
	refs := Object{"trajectoryRef": in.TrajectoryRef, "runtimeTranscriptRef": in.TranscriptRef}
	if t.Reward != nil {
		if r := t.Reward.GetRewardRef(); r != "" {
			refs["rewardRef"] = r
		}
		if r := t.Reward.GetDetailsRef(); r != "" {
			refs["rewardDetailsRef"] = r
		}
	}
	for _, k := range sortedKeys(in.Refs) {
		refs[k] = in.Refs[k]
	}
	for _, need := range []string{"rewardDetailsRef", "artifactManifestRef"} {
		if _, ok := refs[need]; !ok {
			gaps = append(gaps, need+": not provided")
		}
	}
	metrics := Object{
		"timeout": t.TimedOut, "deniedSideEffectCount": m.DeniedSideEffects, "tokens": m.Tokens,
		"costUsd": float64(m.CostNanos) / 1e9, "artifactCount": m.Artifacts, "evidenceComplete": len(gaps) == 0 && t.Reward != nil,
	}
	// An ended trial has a duration, 0 when it took under a millisecond; a
	// running one has none yet.
	if t.DurationMs > 0 || t.EndedAt != "" {
		metrics["durationMs"] = t.DurationMs
	}
	failure := t.FailureCategory
	reward := Object{"status": "missing"}
	if t.Reward != nil {
		metrics["reward"] = jsonexport.Float(t.Reward.GetValue())
		reward = Object{"value": jsonexport.Float(t.Reward.GetValue()), "criteria": strs(t.Reward.GetCriteria())}
		for k, v := range map[string]string{"ref": t.Reward.GetRewardRef(), "detailsRef": t.Reward.GetDetailsRef(), "failureCategory": t.Reward.GetFailureCategory()} {
			if v != "" {
				reward[k] = v
			}
		}
		if failure == "" {
			failure = t.Reward.GetFailureCategory()
		}
	} else {
		gaps = append(gaps, "reward: no reward recorded")
	}
	if failure == "" {
		failure = "unknown"
	}
	fields := Object{}
	for k, v := range in.TrajectoryFields {
		fields[k] = v
	}
	_, manifest := refs["artifactManifestRef"]
	sort.Strings(gaps)
	pack := Object{
		"schemaVersion":      jsonexport.ProfileSchemaVersion,
		"benchmark":          spine,
		"runtimeCorrelation": corr,
		"refs":               refs,
		"metrics":            metrics,
		"decisionInputs": Object{
			"failureCategory": failure, "artifactManifestPresent": manifest,
			"trajectoryAtifCompatible": true, "trialStatus": t.Status,
		},
		"trajectory": Object{"schema": ATIFSchema + "-compatible", "ref": in.TrajectoryRef, "exportStatus": "exported", "requiredFieldStatus": fields},
		"reward":     reward,
		"knownGaps":  strs(gaps),
	}
	return pack, gaps
}

// ComparisonInput is the caller's side of a comparison: the recorded
// configurations and the trials of each side.
type ComparisonInput struct {
	ID                                            string
	BaselineConfiguration, CandidateConfiguration *eventsv1.BenchmarkConfigurationResolved
	Baseline, Candidate                           []*Trial
	P0Regressions                                 uint32
	Decision                                      string
}

// Causes of comparison refusals.
var (
	ErrConfigurationNotFound = errors.New("benchmark configuration not recorded")
	ErrNotCandidateOf        = errors.New("the candidate configuration does not name the baseline as its baseline")
	ErrTrialConfiguration    = errors.New("trial ran another configuration")
	ErrDatasetMismatch       = errors.New("trials ran different dataset versions")
	ErrSameConfiguration     = errors.New("baseline and candidate are the same configuration")
)

// profileNames are the configuration's profiles in the spec's order
// (benchmark-instrumentation "Event families").
var profileNames = []string{"runtime", "agent", "model", "prompt", "tool", "context", "routing"}

// CheckComparison refuses a comparison whose sides do not pair: the
// candidate must name the baseline as its baseline_configuration_id (a
// candidate is compared with the baseline it changed one variable of), each
// side's trials must have started with that side's configuration id, and
// every trial must have run the same dataset version (the Agent Runtime
// standard, Benchmark instrumentation, "Anti-patterns": a candidate on
// another dataset makes the A/B comparison invalid). Trial subjects are the
// request's field paths, e.g. "candidate[1]".
func CheckComparison(in ComparisonInput) error {
	base, cand := in.BaselineConfiguration, in.CandidateConfiguration
	if base == nil || cand == nil {
		return errors.New("comparison: both configurations are required")
	}
	if base.GetConfigurationId() == cand.GetConfigurationId() {
		return fault.Invalid("candidate_configuration_id", "%v: %s", ErrSameConfiguration, cand.GetConfigurationId())
	}
	if cand.GetBaselineConfigurationId() != base.GetConfigurationId() {
		named := cand.GetBaselineConfigurationId()
		if named == "" {
			named = "none"
		}
		return refused(ReasonNotCandidateOf, "candidate_configuration_id",
			fmt.Errorf("%w: %s names baseline %s, not %s", ErrNotCandidateOf, cand.GetConfigurationId(), named, base.GetConfigurationId()))
	}
	var first *eventsv1.BenchmarkSpine
	for _, side := range []struct {
		name   string
		cfg    string
		trials []*Trial
	}{{"baseline", base.GetConfigurationId(), in.Baseline}, {"candidate", cand.GetConfigurationId(), in.Candidate}} {
		for i, t := range side.trials {
			sp := t.Spine
			subject := fmt.Sprintf("%s[%d]", side.name, i)
			if sp.GetConfigurationId() != side.cfg {
				return refused(ReasonTrialConfiguration, subject, fmt.Errorf("%w: %s trial %s ran configuration %s, not the %s %s",
					ErrTrialConfiguration, side.name, sp.GetTrialId(), sp.GetConfigurationId(), side.name, side.cfg))
			}
			if first == nil {
				first = sp
				continue
			}
			if sp.GetDatasetId() != first.GetDatasetId() || sp.GetDatasetVersion() != first.GetDatasetVersion() {
				return refused(ReasonDatasetMismatch, subject, fmt.Errorf("%w: trial %s ran %s version %q, trial %s ran %s version %q",
					ErrDatasetMismatch, sp.GetTrialId(), sp.GetDatasetId(), sp.GetDatasetVersion(), first.GetTrialId(), first.GetDatasetId(), first.GetDatasetVersion()))
			}
		}
	}
	return nil
}

// ChangedProfiles names the profiles whose recorded values differ between
// two configurations, in the spec's order.
func ChangedProfiles(a, b *eventsv1.BenchmarkConfigurationResolved) []string {
	profiles := func(c *eventsv1.BenchmarkConfigurationResolved) []string {
		return []string{c.GetRuntimeProfile(), c.GetAgentProfile(), c.GetModelProfile(), c.GetPromptProfile(),
			c.GetToolProfile(), c.GetContextProfile(), c.GetRoutingProfile()}
	}
	pa, pb := profiles(a), profiles(b)
	var out []string
	for i, name := range profileNames {
		if pa[i] != pb[i] {
			out = append(out, name)
		}
	}
	return out
}

// Compare checks the comparison (CheckComparison) and computes the
// baseline and candidate aggregates and deltas, carrying both
// configurations. The decision is copied from the input: the runtime
// records, Agent QC decides.
func Compare(in ComparisonInput) (*eventsv1.BenchmarkComparisonCompleted, error) {
	if err := CheckComparison(in); err != nil {
		return nil, err
	}
	out := &eventsv1.BenchmarkComparisonCompleted{ComparisonId: in.ID, P0QcGateRegressionCount: in.P0Regressions, Decision: in.Decision,
		BaselineConfiguration:  proto.Clone(in.BaselineConfiguration).(*eventsv1.BenchmarkConfigurationResolved),
		CandidateConfiguration: proto.Clone(in.CandidateConfiguration).(*eventsv1.BenchmarkConfigurationResolved),
		ChangedProfiles:        ChangedProfiles(in.BaselineConfiguration, in.CandidateConfiguration)}
	for _, side := range [][]*Trial{in.Baseline, in.Candidate} {
		if len(side) > 0 {
			out.DatasetId, out.DatasetVersion = side[0].Spine.GetDatasetId(), side[0].Spine.GetDatasetVersion()
			break
		}
	}
	agg := func(trials []*Trial, ids *[]string) (mean, timeouts, complete float64) {
		var sum float64
		var rewarded, ended, done int
		for _, t := range trials {
			*ids = append(*ids, t.Spine.GetTrialId())
			if t.Reward != nil {
				sum += t.Reward.GetValue()
				rewarded++
			} else {
				out.UnrewardedTrialIds = append(out.UnrewardedTrialIds, t.Spine.GetTrialId())
			}
			if t.Status == TrialCompleted || t.Status == TrialFailed {
				ended++
				if t.TimedOut {
					timeouts++
				}
			}
			if t.EvidenceComplete() {
				done++
			}
		}
		if rewarded > 0 {
			mean = sum / float64(rewarded)
		}
		if ended > 0 {
			timeouts /= float64(ended)
		}
		if len(trials) > 0 {
			complete = float64(done) / float64(len(trials))
		}
		return mean, timeouts, complete
	}
	out.BaselineMeanReward, out.BaselineTimeoutRate, out.BaselineEvidenceCompletenessRate = agg(in.Baseline, &out.BaselineTrialIds)
	out.CandidateMeanReward, out.CandidateTimeoutRate, out.EvidenceCompletenessRate = agg(in.Candidate, &out.CandidateTrialIds)
	out.MeanRewardDelta = out.CandidateMeanReward - out.BaselineMeanReward
	out.TimeoutRateDelta = out.CandidateTimeoutRate - out.BaselineTimeoutRate
	return out, nil
}

// ATIFSchema is the trajectory format the exporter writes.
const ATIFSchema = "ATIF-v1.4"

// Trajectory converts a trial's events into an ATIF-compatible trajectory
// (the Agent Runtime standard, Benchmark instrumentation, "ATIF trajectory
// export"): user input, agent steps with messages, reasoning, tool calls and
// observations, and metrics. Every step keeps the runtime ids needed for
// failure attribution.
func Trajectory(t *Trial, m *Model) (Object, map[string]bool) {
	var steps []any
	var cur Object
	var text, reasoning strings.Builder
	modelName := ""
	var totalIn, totalOut, totalCached int64
	flush := func() {
		if cur == nil {
			return
		}
		if text.Len() > 0 {
			cur["message"] = text.String()
		}
		if reasoning.Len() > 0 {
			cur["reasoning_content"] = reasoning.String()
		}
		steps = append(steps, cur)
		cur = nil
		text.Reset()
		reasoning.Reset()
	}
	agent := func(ev *eventsv1.RuntimeEvent) Object {
		if cur == nil {
			cur = Object{"source": "agent", "timestamp": ts(ev), "tool_calls": []any{}, "observation": Object{"results": []any{}},
				"extra": Object{"turn_id": ev.GetTurnId(), "first_sequence": ev.GetSequence()}}
		}
		return cur
	}
	calls := map[string]Object{}
	for _, ev := range m.Events {
		switch p := ev.GetPayload().(type) {
		case *eventsv1.RuntimeEvent_TurnSubmitted:
			flush()
			var parts []string
			for _, in := range p.TurnSubmitted.GetInput() {
				switch {
				case in.GetText() != "":
					parts = append(parts, in.GetText())
				case in.GetJson() != "":
					parts = append(parts, in.GetJson())
				case in.GetRef() != "":
					parts = append(parts, "["+in.GetRef()+"]")
				}
			}
			steps = append(steps, Object{"source": "user", "timestamp": ts(ev), "message": strings.Join(parts, "\n"),
				"extra": Object{"turn_id": ev.GetTurnId(), "sequence": ev.GetSequence(), "options": stringMap(p.TurnSubmitted.GetOptions())}})
		case *eventsv1.RuntimeEvent_ModelRequested:
			flush()
			a := agent(ev)
			a["model_name"] = p.ModelRequested.GetModel()
			modelName = p.ModelRequested.GetModel()
		case *eventsv1.RuntimeEvent_ModelDelta:
			agent(ev)
			text.WriteString(p.ModelDelta.GetText())
		case *eventsv1.RuntimeEvent_ReasoningDelta:
			agent(ev)
			reasoning.WriteString(p.ReasoningDelta.GetText())
		case *eventsv1.RuntimeEvent_ReasoningSummary:
			agent(ev)
			reasoning.WriteString(p.ReasoningSummary.GetText())
		case *eventsv1.RuntimeEvent_ModelCompleted:
			a := agent(ev)
			u := p.ModelCompleted.GetUsage()
			a["metrics"] = Object{"prompt_tokens": u.GetInputTokens(), "completion_tokens": u.GetOutputTokens(), "cached_tokens": u.GetCachedInputTokens()}
			totalIn, totalOut, totalCached = totalIn+u.GetInputTokens(), totalOut+u.GetOutputTokens(), totalCached+u.GetCachedInputTokens()
		case *eventsv1.RuntimeEvent_ToolStarted:
			a := agent(ev)
			call := Object{"tool_call_id": ev.GetToolCallId(), "function_name": p.ToolStarted.GetToolName(), "arguments": Object{}, "extra": Object{"step_id": ev.GetStepId()}}
			calls[ev.GetToolCallId()] = call
			a["tool_calls"] = append(a["tool_calls"].([]any), call)
		case *eventsv1.RuntimeEvent_ToolArgs:
			if call := calls[ev.GetToolCallId()]; call != nil {
				call["arguments"] = Object{"json": p.ToolArgs.GetSafeArgsJson()}
			}
		case *eventsv1.RuntimeEvent_ToolResult:
			a := agent(ev)
			res := Object{"source_call_id": ev.GetToolCallId(), "content": p.ToolResult.GetPreview()}
			if p.ToolResult.GetIsError() {
				res["is_error"] = true
			}
			if o := p.ToolResult.GetOutput(); o != nil {
				res["ref"] = o.GetUri()
			}
			obs := a["observation"].(Object)
			obs["results"] = append(obs["results"].([]any), res)
		case *eventsv1.RuntimeEvent_ToolFailed:
			a := agent(ev)
			obs := a["observation"].(Object)
			obs["results"] = append(obs["results"].([]any), Object{"source_call_id": ev.GetToolCallId(), "content": p.ToolFailed.GetMessage(), "is_error": true, "error_category": p.ToolFailed.GetCategory()})
		case *eventsv1.RuntimeEvent_ActionResolved:
			a := agent(ev)
			obs := a["observation"].(Object)
			obs["results"] = append(obs["results"].([]any), Object{"source_call_id": ev.GetActionId(), "content": "action " + p.ActionResolved.GetDecision(),
				"extra": jsonexport.Message(p.ActionResolved.ProtoReflect())})
		case *eventsv1.RuntimeEvent_TurnCompleted, *eventsv1.RuntimeEvent_TurnFailed:
			flush()
		}
	}
	flush()
	for i, s := range steps {
		s.(Object)["step_id"] = i + 1
	}
	if steps == nil {
		steps = []any{}
	}
	traj := Object{
		"schema_version": ATIFSchema,
		"session_id":     t.Session,
		"agent":          Object{"name": "agentruntime", "version": "0.1.0", "model_name": modelName},
		"steps":          steps,
		"final_metrics":  Object{"total_prompt_tokens": totalIn, "total_completion_tokens": totalOut, "total_cached_tokens": totalCached, "total_steps": len(steps)},
		"extra": Object{"runtime_correlation": Object{"session_id": t.Session, "thread_id": t.Thread, "turn_id": t.Turn, "task_id": t.Task, "run_id": t.Run},
			"trial_id": t.Spine.GetTrialId(), "failure_category": t.FailureCategory},
	}
	fields := map[string]bool{
		"schema_version": true, "session_id": t.Session != "", "agent": true, "steps[].step_id": true,
		"steps[].tool_calls": len(calls) > 0, "steps[].observation": len(steps) > 0, "final_metrics": true,
	}
	return traj, fields
}

func stringMap(m map[string]string) Object {
	out := Object{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
