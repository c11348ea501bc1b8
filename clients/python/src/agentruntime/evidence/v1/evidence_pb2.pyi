from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.events.v1 import evidence_pb2 as _evidence_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FORMAT_CORE: Format
FORMAT_LIME_PROFILE: Format
FORMAT_UNSPECIFIED: Format
SCOPE_KIND_SESSION: ScopeKind
SCOPE_KIND_TASK: ScopeKind
SCOPE_KIND_THREAD: ScopeKind
SCOPE_KIND_TURN: ScopeKind
SCOPE_KIND_UNSPECIFIED: ScopeKind
SIGNAL_STATUS_EXPORTED: SignalStatus
SIGNAL_STATUS_MISSING_CORRELATION: SignalStatus
SIGNAL_STATUS_NOT_APPLICABLE: SignalStatus
SIGNAL_STATUS_UNSPECIFIED: SignalStatus
SIGNAL_STATUS_UNSUPPORTED: SignalStatus

class CompareBenchmarkRunsRequest(_message.Message):
    __slots__ = ["agent_qc_report_ref", "baseline", "baseline_configuration_id", "candidate", "candidate_configuration_id", "comparison_id", "decision", "p0_qc_gate_regression_count", "session_id"]
    AGENT_QC_REPORT_REF_FIELD_NUMBER: _ClassVar[int]
    BASELINE_CONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    BASELINE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_CONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    P0_QC_GATE_REGRESSION_COUNT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    agent_qc_report_ref: str
    baseline: _containers.RepeatedCompositeFieldContainer[TrialRef]
    baseline_configuration_id: str
    candidate: _containers.RepeatedCompositeFieldContainer[TrialRef]
    candidate_configuration_id: str
    comparison_id: str
    decision: str
    p0_qc_gate_regression_count: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., comparison_id: _Optional[str] = ..., baseline: _Optional[_Iterable[_Union[TrialRef, _Mapping]]] = ..., candidate: _Optional[_Iterable[_Union[TrialRef, _Mapping]]] = ..., p0_qc_gate_regression_count: _Optional[int] = ..., agent_qc_report_ref: _Optional[str] = ..., decision: _Optional[str] = ..., baseline_configuration_id: _Optional[str] = ..., candidate_configuration_id: _Optional[str] = ...) -> None: ...

class CompareBenchmarkRunsResponse(_message.Message):
    __slots__ = ["comparison", "write"]
    COMPARISON_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    comparison: _evidence_pb2.BenchmarkComparisonCompleted
    write: _common_pb2.WriteResult
    def __init__(self, comparison: _Optional[_Union[_evidence_pb2.BenchmarkComparisonCompleted, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class EndBenchmarkTrialRequest(_message.Message):
    __slots__ = ["failure_category", "message", "session_id", "timed_out", "trial_id"]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    TRIAL_ID_FIELD_NUMBER: _ClassVar[int]
    failure_category: str
    message: str
    session_id: str
    timed_out: bool
    trial_id: str
    def __init__(self, session_id: _Optional[str] = ..., trial_id: _Optional[str] = ..., failure_category: _Optional[str] = ..., message: _Optional[str] = ..., timed_out: bool = ...) -> None: ...

class EndBenchmarkTrialResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ExportBenchmarkTrialRequest(_message.Message):
    __slots__ = ["min_sequence", "refs", "session_id", "trial_id"]
    class RefsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRIAL_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    refs: _containers.ScalarMap[str, str]
    session_id: str
    trial_id: str
    def __init__(self, session_id: _Optional[str] = ..., trial_id: _Optional[str] = ..., min_sequence: _Optional[int] = ..., refs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ExportBenchmarkTrialResponse(_message.Message):
    __slots__ = ["content_sha256", "evidence_id", "pack", "trajectory", "write"]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_ID_FIELD_NUMBER: _ClassVar[int]
    PACK_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    content_sha256: str
    evidence_id: str
    pack: _common_pb2.OutputRef
    trajectory: _common_pb2.OutputRef
    write: _common_pb2.WriteResult
    def __init__(self, evidence_id: _Optional[str] = ..., pack: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., trajectory: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., content_sha256: _Optional[str] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ExportEventsRequest(_message.Message):
    __slots__ = ["format", "from_sequence", "limit", "min_sequence", "session_id", "tenant_facts"]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FACTS_FIELD_NUMBER: _ClassVar[int]
    format: Format
    from_sequence: int
    limit: int
    min_sequence: int
    session_id: str
    tenant_facts: bool
    def __init__(self, session_id: _Optional[str] = ..., format: _Optional[_Union[Format, str]] = ..., from_sequence: _Optional[int] = ..., limit: _Optional[int] = ..., min_sequence: _Optional[int] = ..., tenant_facts: bool = ...) -> None: ...

class ExportEventsResponse(_message.Message):
    __slots__ = ["events_json", "next_sequence", "skipped"]
    EVENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    events_json: _containers.RepeatedScalarFieldContainer[str]
    next_sequence: int
    skipped: _containers.RepeatedCompositeFieldContainer[SkippedEvent]
    def __init__(self, events_json: _Optional[_Iterable[str]] = ..., next_sequence: _Optional[int] = ..., skipped: _Optional[_Iterable[_Union[SkippedEvent, _Mapping]]] = ...) -> None: ...

class ExportEvidenceRequest(_message.Message):
    __slots__ = ["at_sequence", "min_sequence", "review_notes", "scope", "verification_outcomes"]
    AT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REVIEW_NOTES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    at_sequence: int
    min_sequence: int
    review_notes: _containers.RepeatedScalarFieldContainer[str]
    scope: Scope
    verification_outcomes: _containers.RepeatedCompositeFieldContainer[_evidence_pb2.VerificationOutcome]
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., at_sequence: _Optional[int] = ..., min_sequence: _Optional[int] = ..., verification_outcomes: _Optional[_Iterable[_Union[_evidence_pb2.VerificationOutcome, _Mapping]]] = ..., review_notes: _Optional[_Iterable[str]] = ...) -> None: ...

class ExportEvidenceResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ExportResult
    def __init__(self, result: _Optional[_Union[ExportResult, _Mapping]] = ...) -> None: ...

class ExportReplayRequest(_message.Message):
    __slots__ = ["at_sequence", "grader_instructions", "min_sequence", "scope"]
    AT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    GRADER_INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    at_sequence: int
    grader_instructions: str
    min_sequence: int
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., at_sequence: _Optional[int] = ..., min_sequence: _Optional[int] = ..., grader_instructions: _Optional[str] = ...) -> None: ...

class ExportReplayResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ExportResult
    def __init__(self, result: _Optional[_Union[ExportResult, _Mapping]] = ...) -> None: ...

class ExportResult(_message.Message):
    __slots__ = ["content_sha256", "covers_sequence", "evidence_id", "known_gaps", "pack", "signals", "write"]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    COVERS_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_ID_FIELD_NUMBER: _ClassVar[int]
    KNOWN_GAPS_FIELD_NUMBER: _ClassVar[int]
    PACK_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    content_sha256: str
    covers_sequence: int
    evidence_id: str
    known_gaps: _containers.RepeatedScalarFieldContainer[str]
    pack: _common_pb2.OutputRef
    signals: _containers.RepeatedCompositeFieldContainer[Signal]
    write: _common_pb2.WriteResult
    def __init__(self, evidence_id: _Optional[str] = ..., pack: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., content_sha256: _Optional[str] = ..., covers_sequence: _Optional[int] = ..., signals: _Optional[_Iterable[_Union[Signal, _Mapping]]] = ..., known_gaps: _Optional[_Iterable[str]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ExportReviewRequest(_message.Message):
    __slots__ = ["at_sequence", "min_sequence", "review_notes", "scope"]
    AT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REVIEW_NOTES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    at_sequence: int
    min_sequence: int
    review_notes: _containers.RepeatedScalarFieldContainer[str]
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., at_sequence: _Optional[int] = ..., min_sequence: _Optional[int] = ..., review_notes: _Optional[_Iterable[str]] = ...) -> None: ...

class ExportReviewResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: ExportResult
    def __init__(self, result: _Optional[_Union[ExportResult, _Mapping]] = ...) -> None: ...

class ExportSnapshotRequest(_message.Message):
    __slots__ = ["format", "min_sequence", "session_id"]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    format: Format
    min_sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., format: _Optional[_Union[Format, str]] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ExportSnapshotResponse(_message.Message):
    __slots__ = ["covers_sequence", "snapshot_json"]
    COVERS_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_JSON_FIELD_NUMBER: _ClassVar[int]
    covers_sequence: int
    snapshot_json: str
    def __init__(self, snapshot_json: _Optional[str] = ..., covers_sequence: _Optional[int] = ...) -> None: ...

class GetEvidenceSummaryRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetEvidenceSummaryResponse(_message.Message):
    __slots__ = ["event_count", "event_counts", "events_with_trace", "evidence_ids", "first_sequence", "last_sequence", "sequence", "signals", "trace_ids", "trial_ids"]
    class EventCountsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    EVENTS_WITH_TRACE_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNTS_FIELD_NUMBER: _ClassVar[int]
    EVENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_IDS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    TRACE_IDS_FIELD_NUMBER: _ClassVar[int]
    TRIAL_IDS_FIELD_NUMBER: _ClassVar[int]
    event_count: int
    event_counts: _containers.ScalarMap[str, int]
    events_with_trace: int
    evidence_ids: _containers.RepeatedScalarFieldContainer[str]
    first_sequence: int
    last_sequence: int
    sequence: int
    signals: _containers.RepeatedCompositeFieldContainer[Signal]
    trace_ids: _containers.RepeatedScalarFieldContainer[str]
    trial_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, sequence: _Optional[int] = ..., event_count: _Optional[int] = ..., event_counts: _Optional[_Mapping[str, int]] = ..., events_with_trace: _Optional[int] = ..., trace_ids: _Optional[_Iterable[str]] = ..., signals: _Optional[_Iterable[_Union[Signal, _Mapping]]] = ..., evidence_ids: _Optional[_Iterable[str]] = ..., trial_ids: _Optional[_Iterable[str]] = ..., first_sequence: _Optional[int] = ..., last_sequence: _Optional[int] = ...) -> None: ...

class RecordBenchmarkConfigurationRequest(_message.Message):
    __slots__ = ["configuration", "session_id"]
    CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    configuration: _evidence_pb2.BenchmarkConfigurationResolved
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., configuration: _Optional[_Union[_evidence_pb2.BenchmarkConfigurationResolved, _Mapping]] = ...) -> None: ...

class RecordBenchmarkConfigurationResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RecordBenchmarkDatasetRequest(_message.Message):
    __slots__ = ["dataset", "session_id"]
    DATASET_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    dataset: _evidence_pb2.BenchmarkDatasetResolved
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., dataset: _Optional[_Union[_evidence_pb2.BenchmarkDatasetResolved, _Mapping]] = ...) -> None: ...

class RecordBenchmarkDatasetResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RecordBenchmarkRewardRequest(_message.Message):
    __slots__ = ["criteria", "details_ref", "failure_category", "reward_ref", "session_id", "trial_id", "value", "verifier_status"]
    CRITERIA_FIELD_NUMBER: _ClassVar[int]
    DETAILS_REF_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    REWARD_REF_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRIAL_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_STATUS_FIELD_NUMBER: _ClassVar[int]
    criteria: _containers.RepeatedScalarFieldContainer[str]
    details_ref: str
    failure_category: str
    reward_ref: str
    session_id: str
    trial_id: str
    value: float
    verifier_status: str
    def __init__(self, session_id: _Optional[str] = ..., trial_id: _Optional[str] = ..., value: _Optional[float] = ..., reward_ref: _Optional[str] = ..., details_ref: _Optional[str] = ..., criteria: _Optional[_Iterable[str]] = ..., failure_category: _Optional[str] = ..., verifier_status: _Optional[str] = ...) -> None: ...

class RecordBenchmarkRewardResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class Scope(_message.Message):
    __slots__ = ["id", "kind", "session_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    kind: ScopeKind
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., kind: _Optional[_Union[ScopeKind, str]] = ..., id: _Optional[str] = ...) -> None: ...

class Signal(_message.Message):
    __slots__ = ["detail", "name", "status"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    detail: str
    name: str
    status: SignalStatus
    def __init__(self, name: _Optional[str] = ..., status: _Optional[_Union[SignalStatus, str]] = ..., detail: _Optional[str] = ...) -> None: ...

class SkippedEvent(_message.Message):
    __slots__ = ["detail", "event_id", "reason", "sequence", "type"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    detail: str
    event_id: str
    reason: str
    sequence: int
    type: str
    def __init__(self, sequence: _Optional[int] = ..., event_id: _Optional[str] = ..., type: _Optional[str] = ..., reason: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class StartBenchmarkTrialRequest(_message.Message):
    __slots__ = ["attempt", "benchmark", "budget_tokens", "budget_usd", "run_id", "sandbox_profile", "session_id", "task_id", "thread_id", "timeout_sec", "turn_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BENCHMARK_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_USD_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SEC_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    benchmark: _evidence_pb2.BenchmarkSpine
    budget_tokens: int
    budget_usd: float
    run_id: str
    sandbox_profile: str
    session_id: str
    task_id: str
    thread_id: str
    timeout_sec: int
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., benchmark: _Optional[_Union[_evidence_pb2.BenchmarkSpine, _Mapping]] = ..., attempt: _Optional[int] = ..., sandbox_profile: _Optional[str] = ..., timeout_sec: _Optional[int] = ..., budget_usd: _Optional[float] = ..., budget_tokens: _Optional[int] = ...) -> None: ...

class StartBenchmarkTrialResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class TrialRef(_message.Message):
    __slots__ = ["session_id", "trial_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRIAL_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    trial_id: str
    def __init__(self, session_id: _Optional[str] = ..., trial_id: _Optional[str] = ...) -> None: ...

class ScopeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Format(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SignalStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
