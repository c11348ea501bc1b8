from agentruntime.common.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BenchmarkComparisonCompleted(_message.Message):
    __slots__ = ["baseline_configuration", "baseline_evidence_completeness_rate", "baseline_mean_reward", "baseline_timeout_rate", "baseline_trial_ids", "candidate_configuration", "candidate_mean_reward", "candidate_timeout_rate", "candidate_trial_ids", "changed_profiles", "comparison_id", "dataset_id", "dataset_version", "decision", "evidence_completeness_rate", "mean_reward_delta", "p0_qc_gate_regression_count", "timeout_rate_delta", "unrewarded_trial_ids"]
    BASELINE_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    BASELINE_EVIDENCE_COMPLETENESS_RATE_FIELD_NUMBER: _ClassVar[int]
    BASELINE_MEAN_REWARD_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TIMEOUT_RATE_FIELD_NUMBER: _ClassVar[int]
    BASELINE_TRIAL_IDS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_MEAN_REWARD_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_TIMEOUT_RATE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_TRIAL_IDS_FIELD_NUMBER: _ClassVar[int]
    CHANGED_PROFILES_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_COMPLETENESS_RATE_FIELD_NUMBER: _ClassVar[int]
    MEAN_REWARD_DELTA_FIELD_NUMBER: _ClassVar[int]
    P0_QC_GATE_REGRESSION_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_RATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    UNREWARDED_TRIAL_IDS_FIELD_NUMBER: _ClassVar[int]
    baseline_configuration: BenchmarkConfigurationResolved
    baseline_evidence_completeness_rate: float
    baseline_mean_reward: float
    baseline_timeout_rate: float
    baseline_trial_ids: _containers.RepeatedScalarFieldContainer[str]
    candidate_configuration: BenchmarkConfigurationResolved
    candidate_mean_reward: float
    candidate_timeout_rate: float
    candidate_trial_ids: _containers.RepeatedScalarFieldContainer[str]
    changed_profiles: _containers.RepeatedScalarFieldContainer[str]
    comparison_id: str
    dataset_id: str
    dataset_version: str
    decision: str
    evidence_completeness_rate: float
    mean_reward_delta: float
    p0_qc_gate_regression_count: int
    timeout_rate_delta: float
    unrewarded_trial_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, comparison_id: _Optional[str] = ..., baseline_trial_ids: _Optional[_Iterable[str]] = ..., candidate_trial_ids: _Optional[_Iterable[str]] = ..., baseline_mean_reward: _Optional[float] = ..., candidate_mean_reward: _Optional[float] = ..., mean_reward_delta: _Optional[float] = ..., baseline_timeout_rate: _Optional[float] = ..., candidate_timeout_rate: _Optional[float] = ..., timeout_rate_delta: _Optional[float] = ..., baseline_evidence_completeness_rate: _Optional[float] = ..., evidence_completeness_rate: _Optional[float] = ..., p0_qc_gate_regression_count: _Optional[int] = ..., decision: _Optional[str] = ..., unrewarded_trial_ids: _Optional[_Iterable[str]] = ..., baseline_configuration: _Optional[_Union[BenchmarkConfigurationResolved, _Mapping]] = ..., candidate_configuration: _Optional[_Union[BenchmarkConfigurationResolved, _Mapping]] = ..., changed_profiles: _Optional[_Iterable[str]] = ..., dataset_id: _Optional[str] = ..., dataset_version: _Optional[str] = ...) -> None: ...

class BenchmarkConfigurationResolved(_message.Message):
    __slots__ = ["agent_profile", "baseline_configuration_id", "configuration_id", "context_profile", "model_profile", "prompt_profile", "role", "routing_profile", "runtime_profile", "single_changed_variable", "tool_profile"]
    AGENT_PROFILE_FIELD_NUMBER: _ClassVar[int]
    BASELINE_CONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_PROFILE_FIELD_NUMBER: _ClassVar[int]
    MODEL_PROFILE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_PROFILE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_PROFILE_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SINGLE_CHANGED_VARIABLE_FIELD_NUMBER: _ClassVar[int]
    TOOL_PROFILE_FIELD_NUMBER: _ClassVar[int]
    agent_profile: str
    baseline_configuration_id: str
    configuration_id: str
    context_profile: str
    model_profile: str
    prompt_profile: str
    role: str
    routing_profile: str
    runtime_profile: str
    single_changed_variable: str
    tool_profile: str
    def __init__(self, configuration_id: _Optional[str] = ..., role: _Optional[str] = ..., runtime_profile: _Optional[str] = ..., agent_profile: _Optional[str] = ..., model_profile: _Optional[str] = ..., prompt_profile: _Optional[str] = ..., tool_profile: _Optional[str] = ..., context_profile: _Optional[str] = ..., routing_profile: _Optional[str] = ..., single_changed_variable: _Optional[str] = ..., baseline_configuration_id: _Optional[str] = ...) -> None: ...

class BenchmarkDatasetResolved(_message.Message):
    __slots__ = ["dataset_id", "dataset_ref", "dataset_version", "frozen_at", "harbor_local_path", "harbor_registry_ref", "selection_policy", "task_ids"]
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_REF_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    FROZEN_AT_FIELD_NUMBER: _ClassVar[int]
    HARBOR_LOCAL_PATH_FIELD_NUMBER: _ClassVar[int]
    HARBOR_REGISTRY_REF_FIELD_NUMBER: _ClassVar[int]
    SELECTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    dataset_id: str
    dataset_ref: str
    dataset_version: str
    frozen_at: _timestamp_pb2.Timestamp
    harbor_local_path: str
    harbor_registry_ref: str
    selection_policy: str
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, dataset_id: _Optional[str] = ..., dataset_version: _Optional[str] = ..., dataset_ref: _Optional[str] = ..., selection_policy: _Optional[str] = ..., frozen_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., harbor_local_path: _Optional[str] = ..., harbor_registry_ref: _Optional[str] = ..., task_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BenchmarkRewardRecorded(_message.Message):
    __slots__ = ["benchmark", "criteria", "details_ref", "failure_category", "reward_ref", "value", "verifier_status"]
    BENCHMARK_FIELD_NUMBER: _ClassVar[int]
    CRITERIA_FIELD_NUMBER: _ClassVar[int]
    DETAILS_REF_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    REWARD_REF_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERIFIER_STATUS_FIELD_NUMBER: _ClassVar[int]
    benchmark: BenchmarkSpine
    criteria: _containers.RepeatedScalarFieldContainer[str]
    details_ref: str
    failure_category: str
    reward_ref: str
    value: float
    verifier_status: str
    def __init__(self, benchmark: _Optional[_Union[BenchmarkSpine, _Mapping]] = ..., value: _Optional[float] = ..., reward_ref: _Optional[str] = ..., details_ref: _Optional[str] = ..., criteria: _Optional[_Iterable[str]] = ..., failure_category: _Optional[str] = ..., verifier_status: _Optional[str] = ...) -> None: ...

class BenchmarkSpine(_message.Message):
    __slots__ = ["benchmark_task_id", "configuration_id", "dataset_id", "dataset_ref", "dataset_version", "harbor_job_ref", "harbor_trial_ref", "role", "single_changed_variable", "task_toml_ref", "trial_id"]
    BENCHMARK_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIGURATION_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    DATASET_REF_FIELD_NUMBER: _ClassVar[int]
    DATASET_VERSION_FIELD_NUMBER: _ClassVar[int]
    HARBOR_JOB_REF_FIELD_NUMBER: _ClassVar[int]
    HARBOR_TRIAL_REF_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SINGLE_CHANGED_VARIABLE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOML_REF_FIELD_NUMBER: _ClassVar[int]
    TRIAL_ID_FIELD_NUMBER: _ClassVar[int]
    benchmark_task_id: str
    configuration_id: str
    dataset_id: str
    dataset_ref: str
    dataset_version: str
    harbor_job_ref: str
    harbor_trial_ref: str
    role: str
    single_changed_variable: str
    task_toml_ref: str
    trial_id: str
    def __init__(self, dataset_id: _Optional[str] = ..., dataset_version: _Optional[str] = ..., dataset_ref: _Optional[str] = ..., benchmark_task_id: _Optional[str] = ..., trial_id: _Optional[str] = ..., configuration_id: _Optional[str] = ..., role: _Optional[str] = ..., harbor_job_ref: _Optional[str] = ..., harbor_trial_ref: _Optional[str] = ..., single_changed_variable: _Optional[str] = ..., task_toml_ref: _Optional[str] = ...) -> None: ...

class BenchmarkTrialEnded(_message.Message):
    __slots__ = ["benchmark", "duration_ms", "failure_category", "message", "timed_out"]
    BENCHMARK_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    benchmark: BenchmarkSpine
    duration_ms: int
    failure_category: str
    message: str
    timed_out: bool
    def __init__(self, benchmark: _Optional[_Union[BenchmarkSpine, _Mapping]] = ..., failure_category: _Optional[str] = ..., message: _Optional[str] = ..., duration_ms: _Optional[int] = ..., timed_out: bool = ...) -> None: ...

class BenchmarkTrialStarted(_message.Message):
    __slots__ = ["attempt", "benchmark", "budget_tokens", "budget_usd", "sandbox_profile", "timeout_sec"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BENCHMARK_FIELD_NUMBER: _ClassVar[int]
    BUDGET_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_USD_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SEC_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    benchmark: BenchmarkSpine
    budget_tokens: int
    budget_usd: float
    sandbox_profile: str
    timeout_sec: int
    def __init__(self, benchmark: _Optional[_Union[BenchmarkSpine, _Mapping]] = ..., attempt: _Optional[int] = ..., sandbox_profile: _Optional[str] = ..., timeout_sec: _Optional[int] = ..., budget_usd: _Optional[float] = ..., budget_tokens: _Optional[int] = ...) -> None: ...

class EvidenceChanged(_message.Message):
    __slots__ = ["covers_sequence", "kind", "known_gaps", "pack", "scope_id", "scope_kind", "verification_outcomes"]
    COVERS_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    KNOWN_GAPS_FIELD_NUMBER: _ClassVar[int]
    PACK_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_KIND_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    covers_sequence: int
    kind: str
    known_gaps: _containers.RepeatedScalarFieldContainer[str]
    pack: _common_pb2.OutputRef
    scope_id: str
    scope_kind: str
    verification_outcomes: _containers.RepeatedCompositeFieldContainer[VerificationOutcome]
    def __init__(self, kind: _Optional[str] = ..., scope_kind: _Optional[str] = ..., scope_id: _Optional[str] = ..., pack: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., covers_sequence: _Optional[int] = ..., verification_outcomes: _Optional[_Iterable[_Union[VerificationOutcome, _Mapping]]] = ..., known_gaps: _Optional[_Iterable[str]] = ...) -> None: ...

class VerificationOutcome(_message.Message):
    __slots__ = ["name", "ref", "status"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    name: str
    ref: str
    status: str
    def __init__(self, name: _Optional[str] = ..., status: _Optional[str] = ..., ref: _Optional[str] = ...) -> None: ...
