// Package jsonexport renders runtime events as the Agent Runtime spec's JSON
// (the Agent Runtime standard, "Event envelope", and its schema
// agentruntime-event, vendored in pkg/events/testdata):
// camelCase ids, RFC 3339 timestamps, sequence as a JSON integer and the
// typed payload as an object. With the Lime profile it also writes the
// profile's schema version and the objects the profile requires beside the
// payload (benchmark, reward, comparison, refs).
//
// The rendering is plain maps and slices so callers can add fields and
// encoding/json writes them with sorted keys: the same event always renders
// to the same bytes, which is what content hashes of exports rely on.
package jsonexport

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

// ProfileSchemaVersion is the Lime profile's schemaVersion constant.
const ProfileSchemaVersion = "lime-profile-0.4.0"

// Options select the rendering.
type Options struct {
	// Profile renders for the Lime profile schemas.
	Profile bool
}

// Object is a rendered JSON object.
type Object = map[string]any

// noSession is eventlog.NoSession: session-less facts carry no sessionId.
const noSession = "_"

// Reasons an event is not rendered in a format (Skip).
const (
	// SkipNoSession: the Lime profile requires sessionId on every event; a
	// tenant-level fact (limit.changed, tenant or workspace policy.changed,
	// a session-less task or job...) has none, and inventing one would
	// attach it to a session it does not belong to.
	SkipNoSession = "no_session"
	// SkipTypeNotInSchema: the spec's contract pages name the class but the
	// published schema's closed type enum does not, so no rendering of it
	// can validate.
	SkipTypeNotInSchema = "type_not_in_schema"
)

// Skip says why ev cannot be rendered as a document valid in the format,
// or "" when it can. Exporters list skipped events with the reason rather
// than drop them or render documents known to be invalid.
func Skip(ev *eventsv1.RuntimeEvent, opt Options) (reason, detail string) {
	if !conformance.SchemaEventType(ev.GetType()) {
		return SkipTypeNotInSchema, ev.GetType() + " is named by the spec's contract pages but not by the published event schema's type enum"
	}
	if opt.Profile && (ev.GetSessionId() == "" || ev.GetSessionId() == noSession) {
		return SkipNoSession, "the Lime profile requires sessionId; " + ev.GetType() + " is a tenant-level fact of no session"
	}
	return "", ""
}

// Event renders one envelope.
func Event(ev *eventsv1.RuntimeEvent, opt Options) Object {
	out := Object{
		"type":     ev.GetType(),
		"eventId":  ev.GetEventId(),
		"sequence": ev.GetSequence(),
	}
	if ts := ev.GetTimestamp(); ts != nil {
		out["timestamp"] = Time(ts.AsTime())
	}
	schema := ev.GetSchemaVersion()
	if opt.Profile {
		schema = ProfileSchemaVersion
	}
	putString(out, "schemaVersion", schema)
	putString(out, "runtimeId", ev.GetRuntimeId())
	putString(out, "tenantId", ev.GetTenantId())
	if s := ev.GetSessionId(); s != noSession {
		putString(out, "sessionId", s)
	}
	for _, id := range []struct{ name, value string }{
		{"threadId", ev.GetThreadId()}, {"turnId", ev.GetTurnId()}, {"taskId", ev.GetTaskId()},
		{"runId", ev.GetRunId()}, {"attemptId", ev.GetAttemptId()}, {"stepId", ev.GetStepId()},
		{"toolCallId", ev.GetToolCallId()}, {"actionId", ev.GetActionId()}, {"subagentId", ev.GetSubagentId()},
		{"processId", ev.GetProcessId()}, {"jobId", ev.GetJobId()}, {"jobItemId", ev.GetJobItemId()},
		{"channelId", ev.GetChannelId()}, {"evidenceId", ev.GetEvidenceId()}, {"artifactId", ev.GetArtifactId()},
		{"requestId", ev.GetRequestId()}, {"traceId", ev.GetTraceId()}, {"spanId", ev.GetSpanId()},
	} {
		putString(out, id.name, id.value)
	}
	refs := Object{}
	for k, v := range ev.GetRefs() {
		refs[CamelCase(k)] = v
	}
	out["refs"] = refs
	payload := Payload(ev)
	if opt.Profile {
		addProfilePayload(payload, ev)
	}
	out["payload"] = payload
	addProfileObjects(out, ev)
	return out
}

// addProfilePayload adds the fields the Lime profile's fixtures show for a
// class beside ours (docs/spec-conformance.md "Lime profile payloads"): a
// consumer written against the fixtures reads them, a consumer of the core
// format reads ours. Nothing of ours is removed or renamed.
func addProfilePayload(out Object, ev *eventsv1.RuntimeEvent) {
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TurnSubmitted:
		s := p.TurnSubmitted
		// The input is inline in this fact; inputRef names it by turn.
		putString(out, "inputRef", "input://"+ev.GetTurnId()+"/user")
		putString(out, "source", cmp.Or(s.GetMetadata()["source"], "api"))
		putString(out, "status", s.GetAdmission())
	case *eventsv1.RuntimeEvent_ActionRequired:
		a := p.ActionRequired
		c := a.GetContext()
		tool := cmp.Or(c["tool_name"], c["name"])
		if a.GetActionType() == "permission" && (c["target"] == "" || c["target"] == eventsv1.TargetKind_TARGET_KIND_TOOL.String()) && tool != "" {
			out["actionType"] = "tool_permission"
		}
		putString(out, "toolName", tool)
		out["decisionKind"] = decisionKind(a)
		scope := Object{}
		putString(scope, "path", c["path"])
		putString(scope, "command", c["command"])
		putString(scope, "impactScope", c["impact_scope"])
		out["scope"] = scope
	case *eventsv1.RuntimeEvent_TaskAttemptFailed:
		e := p.TaskAttemptFailed.GetError()
		out["retryable"] = e.GetRetryable()
		putString(out, "failureCategory", e.GetCategory())
		out["nextAttemptPolicy"] = "none"
		if e.GetRetryable() {
			out["nextAttemptPolicy"] = "manual_or_policy_retry"
		}
	case *eventsv1.RuntimeEvent_RoutingSingleCandidate:
		d := p.RoutingSingleCandidate.GetDecision()
		putString(out, "taskKind", d.GetTaskKind())
		out["candidateCount"] = d.GetCandidateCount()
		putString(out, "selectedModel", d.GetSelectedModelId())
		putString(out, "decisionSource", d.GetDecisionSource())
		gap := "none"
		if len(d.GetCapabilityGap()) > 0 {
			names := make([]string, len(d.GetCapabilityGap()))
			for i, c := range d.GetCapabilityGap() {
				names[i], _ = enumName(c.Descriptor(), c.Number()).(string)
			}
			gap = strings.Join(names, ",")
		}
		out["capabilityGap"] = gap
	case *eventsv1.RuntimeEvent_EvidenceChanged:
		c := p.EvidenceChanged
		putString(out, "packRef", c.GetPack().GetUri())
		// The replay case of the same scope (ExportReplay resolves it).
		if c.GetKind() == "replay" {
			putString(out, "replayRef", c.GetPack().GetUri())
		} else if c.GetScopeId() != "" {
			out["replayRef"] = "replay://" + ev.GetSessionId() + "/" + c.GetScopeId()
		}
		if _, ok := out["verificationOutcomes"]; !ok {
			out["verificationOutcomes"] = []any{}
		}
	}
}

// decisionKind is how a person answers an action: allow or deny, a
// value of a schema, or one of named choices.
func decisionKind(a *eventsv1.ActionRequired) string {
	if a.GetJsonSchema() != "" {
		return "input"
	}
	for _, d := range a.GetDecisions() {
		if !strings.HasPrefix(d, "allow") && d != "deny" && d != "reject" {
			return "choice"
		}
	}
	return "allow_or_deny"
}

// Payload renders the envelope's typed payload; an event without one has
// an empty object (the profile requires an object).
func Payload(ev *eventsv1.RuntimeEvent) Object {
	m := ev.ProtoReflect()
	oneof := m.Descriptor().Oneofs().ByName("payload")
	fd := m.WhichOneof(oneof)
	if fd == nil {
		return Object{}
	}
	return Message(m.Get(fd).Message())
}

// addProfileObjects writes the top-level objects the spec names for
// benchmark events, derived from their payloads.
func addProfileObjects(out Object, ev *eventsv1.RuntimeEvent) {
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_BenchmarkTrialStarted:
		out["benchmark"] = Spine(p.BenchmarkTrialStarted.GetBenchmark())
	case *eventsv1.RuntimeEvent_BenchmarkTrialCompleted:
		out["benchmark"] = Spine(p.BenchmarkTrialCompleted.GetBenchmark())
	case *eventsv1.RuntimeEvent_BenchmarkTrialFailed:
		out["benchmark"] = Spine(p.BenchmarkTrialFailed.GetBenchmark())
	case *eventsv1.RuntimeEvent_BenchmarkRewardRecorded:
		r := p.BenchmarkRewardRecorded
		out["benchmark"] = Spine(r.GetBenchmark())
		reward := Object{"value": Float(r.GetValue()), "criteria": strs(r.GetCriteria())}
		putString(reward, "ref", r.GetRewardRef())
		putString(reward, "detailsRef", r.GetDetailsRef())
		putString(reward, "failureCategory", r.GetFailureCategory())
		out["reward"] = reward
	case *eventsv1.RuntimeEvent_BenchmarkDatasetResolved:
		d := p.BenchmarkDatasetResolved
		b := Object{}
		putString(b, "datasetId", d.GetDatasetId())
		putString(b, "datasetVersion", d.GetDatasetVersion())
		putString(b, "datasetRef", d.GetDatasetRef())
		out["benchmark"] = b
	case *eventsv1.RuntimeEvent_BenchmarkConfigurationResolved:
		c := p.BenchmarkConfigurationResolved
		b := Object{}
		putString(b, "configurationId", c.GetConfigurationId())
		putString(b, "role", c.GetRole())
		putString(b, "singleChangedVariable", c.GetSingleChangedVariable())
		out["benchmark"] = b
	case *eventsv1.RuntimeEvent_BenchmarkComparisonCompleted:
		c := p.BenchmarkComparisonCompleted
		// A comparison belongs to no single trial: its benchmark object
		// names the trials and the configurations compared, the dataset
		// version they ran and the candidate's single changed variable.
		b := Object{
			"comparisonId":      c.GetComparisonId(),
			"baselineTrialIds":  strs(c.GetBaselineTrialIds()),
			"candidateTrialIds": strs(c.GetCandidateTrialIds()),
		}
		putString(b, "datasetId", c.GetDatasetId())
		putString(b, "datasetVersion", c.GetDatasetVersion())
		putString(b, "baselineConfigurationId", c.GetBaselineConfiguration().GetConfigurationId())
		putString(b, "candidateConfigurationId", c.GetCandidateConfiguration().GetConfigurationId())
		putString(b, "singleChangedVariable", c.GetCandidateConfiguration().GetSingleChangedVariable())
		out["benchmark"] = b
		// The spec's acceptance scenario: baseline/candidate configs,
		// aggregate deltas, evidence completeness of both sides and the P0
		// Agent QC regression count.
		cmp := Object{
			"baselineMeanReward":               Float(c.GetBaselineMeanReward()),
			"candidateMeanReward":              Float(c.GetCandidateMeanReward()),
			"meanRewardDelta":                  Float(c.GetMeanRewardDelta()),
			"baselineTimeoutRate":              Float(c.GetBaselineTimeoutRate()),
			"candidateTimeoutRate":             Float(c.GetCandidateTimeoutRate()),
			"timeoutRateDelta":                 Float(c.GetTimeoutRateDelta()),
			"evidenceCompletenessRate":         Float(c.GetEvidenceCompletenessRate()),
			"baselineEvidenceCompletenessRate": Float(c.GetBaselineEvidenceCompletenessRate()),
			"p0QcGateRegressionCount":          c.GetP0QcGateRegressionCount(),
			"changedProfiles":                  strs(c.GetChangedProfiles()),
		}
		if cfg := c.GetBaselineConfiguration(); cfg != nil {
			cmp["baselineConfiguration"] = Message(cfg.ProtoReflect())
		}
		if cfg := c.GetCandidateConfiguration(); cfg != nil {
			cmp["candidateConfiguration"] = Message(cfg.ProtoReflect())
		}
		putString(cmp, "decision", c.GetDecision())
		out["comparison"] = cmp
	}
}

// Spine renders a benchmark spine as the spec's `benchmark` object: the
// dataset's task id is its taskId.
func Spine(s *eventsv1.BenchmarkSpine) Object {
	out := Object{}
	putString(out, "datasetId", s.GetDatasetId())
	putString(out, "datasetVersion", s.GetDatasetVersion())
	putString(out, "datasetRef", s.GetDatasetRef())
	putString(out, "taskId", s.GetBenchmarkTaskId())
	putString(out, "trialId", s.GetTrialId())
	putString(out, "configurationId", s.GetConfigurationId())
	putString(out, "role", s.GetRole())
	putString(out, "harborJobRef", s.GetHarborJobRef())
	putString(out, "harborTrialRef", s.GetHarborTrialRef())
	putString(out, "singleChangedVariable", s.GetSingleChangedVariable())
	putString(out, "taskTomlRef", s.GetTaskTomlRef())
	return out
}

// Message renders a message with JSON (camelCase) field names. Unlike
// protojson, 64-bit integers are JSON numbers and enums are the lower-case
// value name without the enum's prefix ("ACTION_OUTCOME_RESOLVED" ->
// "resolved"), which is how the spec writes them. Unset fields are absent.
func Message(m protoreflect.Message) Object {
	out := Object{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		out[fd.JSONName()] = field(fd, v)
		return true
	})
	return out
}

func field(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch {
	case fd.IsList():
		l := v.List()
		items := make([]any, l.Len())
		for i := range items {
			items[i] = scalar(fd, l.Get(i))
		}
		return items
	case fd.IsMap():
		obj := Object{}
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			obj[k.String()] = scalar(fd.MapValue(), mv)
			return true
		})
		return obj
	}
	return scalar(fd, v)
}

func scalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return wellKnownOr(v.Message())
	case protoreflect.EnumKind:
		return enumName(fd.Enum(), v.Enum())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return Float(v.Float())
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	default:
		return v.Int()
	}
}

func wellKnownOr(m protoreflect.Message) any {
	switch x := m.Interface().(type) {
	case *timestamppb.Timestamp:
		return Time(x.AsTime())
	case *durationpb.Duration:
		return x.AsDuration().String()
	}
	if strings.HasPrefix(string(m.Descriptor().FullName()), "google.protobuf.") {
		// Struct, Value, Any and wrappers have a JSON form of their own.
		b, err := protojson.Marshal(m.Interface())
		if err == nil {
			return json.RawMessage(b)
		}
	}
	return Message(m)
}

func enumName(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) any {
	ev := ed.Values().ByNumber(n)
	if ev == nil {
		return int32(n)
	}
	name := string(ev.Name())
	return strings.ToLower(strings.TrimPrefix(name, upperSnake(string(ed.Name()))+"_"))
}

// upperSnake turns "ActionOutcome" into "ACTION_OUTCOME".
func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// CamelCase turns "output_ref" into "outputRef"; camelCase input is kept.
func CamelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// Time renders an instant as RFC 3339 in UTC.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Float is a JSON-safe float: JSON has no NaN or infinities, so those
// become strings rather than break the document.
func Float(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconvFloat(f)
	}
	return f
}

func strconvFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

func putString(o Object, key, value string) {
	if value != "" {
		o[key] = value
	}
}

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Marshal writes v as compact JSON with sorted object keys.
func Marshal(v any) ([]byte, error) { return json.Marshal(v) }
