from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BUDGET_SCOPE_SESSION: BudgetScope
BUDGET_SCOPE_TASK: BudgetScope
BUDGET_SCOPE_TENANT: BudgetScope
BUDGET_SCOPE_UNSPECIFIED: BudgetScope
CAPABILITY_REASONING: Capability
CAPABILITY_STRUCTURED_OUTPUT: Capability
CAPABILITY_TOOLS: Capability
CAPABILITY_UNSPECIFIED: Capability
CAPABILITY_VISION: Capability
CREDENTIAL_STATUS_INVALID: CredentialStatus
CREDENTIAL_STATUS_MISSING: CredentialStatus
CREDENTIAL_STATUS_PRESENT: CredentialStatus
CREDENTIAL_STATUS_UNSPECIFIED: CredentialStatus
DESCRIPTOR: _descriptor.FileDescriptor
EXCLUSION_REASON_BUDGET_EXCEEDED: ExclusionReason
EXCLUSION_REASON_CAPABILITY_GAP: ExclusionReason
EXCLUSION_REASON_CONTEXT_WINDOW: ExclusionReason
EXCLUSION_REASON_MISSING_CREDENTIALS: ExclusionReason
EXCLUSION_REASON_POLICY_DENIED: ExclusionReason
EXCLUSION_REASON_PRICE_MISSING: ExclusionReason
EXCLUSION_REASON_PROVIDER_FAILED: ExclusionReason
EXCLUSION_REASON_QUOTA_EXHAUSTED: ExclusionReason
EXCLUSION_REASON_RATE_LIMITED: ExclusionReason
EXCLUSION_REASON_REGION: ExclusionReason
EXCLUSION_REASON_UNSPECIFIED: ExclusionReason
EXCLUSION_REASON_USER_LOCK: ExclusionReason
FAILURE_CATEGORY_AUTHENTICATION: FailureCategory
FAILURE_CATEGORY_CONTENT_FILTERED: FailureCategory
FAILURE_CATEGORY_CONTEXT_LENGTH: FailureCategory
FAILURE_CATEGORY_NETWORK: FailureCategory
FAILURE_CATEGORY_OVERLOADED: FailureCategory
FAILURE_CATEGORY_RATE_LIMITED: FailureCategory
FAILURE_CATEGORY_SERVER_ERROR: FailureCategory
FAILURE_CATEGORY_TIMEOUT: FailureCategory
FAILURE_CATEGORY_UNSPECIFIED: FailureCategory
FALLBACK_POLICY_NEXT_CANDIDATE: FallbackPolicy
FALLBACK_POLICY_NONE: FallbackPolicy
FALLBACK_POLICY_SAME_PROVIDER: FallbackPolicy
FALLBACK_POLICY_UNSPECIFIED: FallbackPolicy
LATENCY_CLASS_FAST: LatencyClass
LATENCY_CLASS_SLOW: LatencyClass
LATENCY_CLASS_STANDARD: LatencyClass
LATENCY_CLASS_UNSPECIFIED: LatencyClass
ROUTING_MODE_AUTO: RoutingMode
ROUTING_MODE_FALLBACK: RoutingMode
ROUTING_MODE_REQUESTED: RoutingMode
ROUTING_MODE_SINGLE_CANDIDATE: RoutingMode
ROUTING_MODE_UNSPECIFIED: RoutingMode
ROUTING_MODE_USER_LOCKED: RoutingMode

class Budget(_message.Message):
    __slots__ = ["id", "limit_nanos", "scope", "target_id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    limit_nanos: int
    scope: BudgetScope
    target_id: str
    def __init__(self, id: _Optional[str] = ..., scope: _Optional[_Union[BudgetScope, str]] = ..., target_id: _Optional[str] = ..., limit_nanos: _Optional[int] = ...) -> None: ...

class BudgetState(_message.Message):
    __slots__ = ["budget_id", "limit_nanos", "scope", "spent_nanos", "target_id"]
    BUDGET_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_NANOS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SPENT_NANOS_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    budget_id: str
    limit_nanos: int
    scope: BudgetScope
    spent_nanos: int
    target_id: str
    def __init__(self, budget_id: _Optional[str] = ..., scope: _Optional[_Union[BudgetScope, str]] = ..., target_id: _Optional[str] = ..., limit_nanos: _Optional[int] = ..., spent_nanos: _Optional[int] = ...) -> None: ...

class Candidate(_message.Message):
    __slots__ = ["capabilities", "context_window", "estimated_cost_nanos", "latency_class", "model_id", "provider_id"]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_CLASS_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    context_window: int
    estimated_cost_nanos: int
    latency_class: LatencyClass
    model_id: str
    provider_id: str
    def __init__(self, provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., latency_class: _Optional[_Union[LatencyClass, str]] = ..., estimated_cost_nanos: _Optional[int] = ..., context_window: _Optional[int] = ...) -> None: ...

class CandidateSet(_message.Message):
    __slots__ = ["candidate_count", "candidates", "excluded", "hard_constraints", "preferences", "single_candidate"]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    HARD_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    PREFERENCES_FIELD_NUMBER: _ClassVar[int]
    SINGLE_CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    candidate_count: int
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    excluded: _containers.RepeatedCompositeFieldContainer[Exclusion]
    hard_constraints: _containers.RepeatedScalarFieldContainer[str]
    preferences: _containers.RepeatedScalarFieldContainer[str]
    single_candidate: bool
    def __init__(self, candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., excluded: _Optional[_Iterable[_Union[Exclusion, _Mapping]]] = ..., candidate_count: _Optional[int] = ..., single_candidate: bool = ..., hard_constraints: _Optional[_Iterable[str]] = ..., preferences: _Optional[_Iterable[str]] = ...) -> None: ...

class CostBreakdown(_message.Message):
    __slots__ = ["cached_input_nanos", "input_nanos", "output_nanos", "reasoning_nanos", "total_nanos"]
    CACHED_INPUT_NANOS_FIELD_NUMBER: _ClassVar[int]
    INPUT_NANOS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_NANOS_FIELD_NUMBER: _ClassVar[int]
    REASONING_NANOS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_NANOS_FIELD_NUMBER: _ClassVar[int]
    cached_input_nanos: int
    input_nanos: int
    output_nanos: int
    reasoning_nanos: int
    total_nanos: int
    def __init__(self, input_nanos: _Optional[int] = ..., output_nanos: _Optional[int] = ..., cached_input_nanos: _Optional[int] = ..., reasoning_nanos: _Optional[int] = ..., total_nanos: _Optional[int] = ...) -> None: ...

class CostEstimated(_message.Message):
    __slots__ = ["cost", "model_id", "provider_id", "usage"]
    COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    cost: CostBreakdown
    model_id: str
    provider_id: str
    usage: TokenUsage
    def __init__(self, provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., cost: _Optional[_Union[CostBreakdown, _Mapping]] = ...) -> None: ...

class CostRecorded(_message.Message):
    __slots__ = ["budgets", "cost", "model_id", "provider_id", "usage", "usage_id"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_ID_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetState]
    cost: CostBreakdown
    model_id: str
    provider_id: str
    usage: TokenUsage
    usage_id: str
    def __init__(self, usage_id: _Optional[str] = ..., provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., usage: _Optional[_Union[TokenUsage, _Mapping]] = ..., cost: _Optional[_Union[CostBreakdown, _Mapping]] = ..., budgets: _Optional[_Iterable[_Union[BudgetState, _Mapping]]] = ...) -> None: ...

class Exclusion(_message.Message):
    __slots__ = ["detail", "model_id", "provider_id", "reasons", "retry_after"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    detail: str
    model_id: str
    provider_id: str
    reasons: _containers.RepeatedScalarFieldContainer[ExclusionReason]
    retry_after: _duration_pb2.Duration
    def __init__(self, provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., reasons: _Optional[_Iterable[_Union[ExclusionReason, str]]] = ..., detail: _Optional[str] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class LimitChanged(_message.Message):
    __slots__ = ["budget_removed", "budget_set", "changed_by", "config_imported", "model_removed", "model_upserted", "provider_removed", "provider_upserted", "quota_removed", "quota_set", "rate_limit_removed", "rate_limit_set", "source"]
    BUDGET_REMOVED_FIELD_NUMBER: _ClassVar[int]
    BUDGET_SET_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_IMPORTED_FIELD_NUMBER: _ClassVar[int]
    MODEL_REMOVED_FIELD_NUMBER: _ClassVar[int]
    MODEL_UPSERTED_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_REMOVED_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_UPSERTED_FIELD_NUMBER: _ClassVar[int]
    QUOTA_REMOVED_FIELD_NUMBER: _ClassVar[int]
    QUOTA_SET_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_REMOVED_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_SET_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    budget_removed: str
    budget_set: Budget
    changed_by: str
    config_imported: Registry
    model_removed: str
    model_upserted: Model
    provider_removed: str
    provider_upserted: Provider
    quota_removed: str
    quota_set: Quota
    rate_limit_removed: str
    rate_limit_set: RateLimit
    source: str
    def __init__(self, source: _Optional[str] = ..., changed_by: _Optional[str] = ..., config_imported: _Optional[_Union[Registry, _Mapping]] = ..., provider_upserted: _Optional[_Union[Provider, _Mapping]] = ..., provider_removed: _Optional[str] = ..., model_upserted: _Optional[_Union[Model, _Mapping]] = ..., model_removed: _Optional[str] = ..., rate_limit_set: _Optional[_Union[RateLimit, _Mapping]] = ..., rate_limit_removed: _Optional[str] = ..., quota_set: _Optional[_Union[Quota, _Mapping]] = ..., quota_removed: _Optional[str] = ..., budget_set: _Optional[_Union[Budget, _Mapping]] = ..., budget_removed: _Optional[str] = ...) -> None: ...

class LimitState(_message.Message):
    __slots__ = ["dimension", "exhausted", "kind", "limit", "limit_id", "remaining", "retry_after"]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    EXHAUSTED_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_ID_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    dimension: str
    exhausted: bool
    kind: str
    limit: int
    limit_id: str
    remaining: int
    retry_after: _duration_pb2.Duration
    def __init__(self, kind: _Optional[str] = ..., limit_id: _Optional[str] = ..., dimension: _Optional[str] = ..., limit: _Optional[int] = ..., remaining: _Optional[int] = ..., exhausted: bool = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class LimitStateSnapshot(_message.Message):
    __slots__ = ["limits", "unknown"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[LimitState]
    unknown: bool
    def __init__(self, limits: _Optional[_Iterable[_Union[LimitState, _Mapping]]] = ..., unknown: bool = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ["capabilities", "context_window", "disabled", "id", "latency_class", "max_output_tokens", "prices", "provider_id", "region"]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LATENCY_CLASS_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PRICES_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    context_window: int
    disabled: bool
    id: str
    latency_class: LatencyClass
    max_output_tokens: int
    prices: ModelPrices
    provider_id: str
    region: str
    def __init__(self, id: _Optional[str] = ..., provider_id: _Optional[str] = ..., capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., context_window: _Optional[int] = ..., max_output_tokens: _Optional[int] = ..., prices: _Optional[_Union[ModelPrices, _Mapping]] = ..., latency_class: _Optional[_Union[LatencyClass, str]] = ..., region: _Optional[str] = ..., disabled: bool = ...) -> None: ...

class ModelPrices(_message.Message):
    __slots__ = ["cached_input_nanos_per_million", "input_nanos_per_million", "output_nanos_per_million", "reasoning_nanos_per_million"]
    CACHED_INPUT_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    INPUT_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    REASONING_NANOS_PER_MILLION_FIELD_NUMBER: _ClassVar[int]
    cached_input_nanos_per_million: int
    input_nanos_per_million: int
    output_nanos_per_million: int
    reasoning_nanos_per_million: int
    def __init__(self, input_nanos_per_million: _Optional[int] = ..., output_nanos_per_million: _Optional[int] = ..., cached_input_nanos_per_million: _Optional[int] = ..., reasoning_nanos_per_million: _Optional[int] = ...) -> None: ...

class Provider(_message.Message):
    __slots__ = ["api_key_env", "base_url", "credential_status", "display_name", "id", "kind", "regions"]
    API_KEY_ENV_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_STATUS_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REGIONS_FIELD_NUMBER: _ClassVar[int]
    api_key_env: str
    base_url: str
    credential_status: CredentialStatus
    display_name: str
    id: str
    kind: str
    regions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., display_name: _Optional[str] = ..., credential_status: _Optional[_Union[CredentialStatus, str]] = ..., regions: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ..., base_url: _Optional[str] = ..., api_key_env: _Optional[str] = ...) -> None: ...

class Quota(_message.Message):
    __slots__ = ["cost_nanos_per_day", "id", "low_thresholds", "tokens_per_day"]
    COST_NANOS_PER_DAY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LOW_THRESHOLDS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_DAY_FIELD_NUMBER: _ClassVar[int]
    cost_nanos_per_day: int
    id: str
    low_thresholds: _containers.RepeatedScalarFieldContainer[float]
    tokens_per_day: int
    def __init__(self, id: _Optional[str] = ..., tokens_per_day: _Optional[int] = ..., cost_nanos_per_day: _Optional[int] = ..., low_thresholds: _Optional[_Iterable[float]] = ...) -> None: ...

class QuotaBlocked(_message.Message):
    __slots__ = ["dimension", "limit", "quota_id", "resets_at", "used"]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUOTA_ID_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    dimension: str
    limit: int
    quota_id: str
    resets_at: _timestamp_pb2.Timestamp
    used: int
    def __init__(self, quota_id: _Optional[str] = ..., dimension: _Optional[str] = ..., used: _Optional[int] = ..., limit: _Optional[int] = ..., resets_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class QuotaLow(_message.Message):
    __slots__ = ["dimension", "limit", "quota_id", "resets_at", "threshold", "used"]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUOTA_ID_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    dimension: str
    limit: int
    quota_id: str
    resets_at: _timestamp_pb2.Timestamp
    threshold: float
    used: int
    def __init__(self, quota_id: _Optional[str] = ..., dimension: _Optional[str] = ..., used: _Optional[int] = ..., limit: _Optional[int] = ..., threshold: _Optional[float] = ..., resets_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ["id", "model_id", "provider_id", "requests_per_minute", "tokens_per_minute"]
    ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    id: str
    model_id: str
    provider_id: str
    requests_per_minute: int
    tokens_per_minute: int
    def __init__(self, id: _Optional[str] = ..., provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., requests_per_minute: _Optional[int] = ..., tokens_per_minute: _Optional[int] = ...) -> None: ...

class RateLimitHit(_message.Message):
    __slots__ = ["dimension", "limit_id", "limit_per_minute", "model_id", "provider_id", "requested", "retry_after"]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    dimension: str
    limit_id: str
    limit_per_minute: int
    model_id: str
    provider_id: str
    requested: int
    retry_after: _duration_pb2.Duration
    def __init__(self, limit_id: _Optional[str] = ..., provider_id: _Optional[str] = ..., model_id: _Optional[str] = ..., dimension: _Optional[str] = ..., limit_per_minute: _Optional[int] = ..., requested: _Optional[int] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Registry(_message.Message):
    __slots__ = ["budgets", "config_digest", "models", "providers", "quotas", "rate_limits"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_DIGEST_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[Budget]
    config_digest: str
    models: _containers.RepeatedCompositeFieldContainer[Model]
    providers: _containers.RepeatedCompositeFieldContainer[Provider]
    quotas: _containers.RepeatedCompositeFieldContainer[Quota]
    rate_limits: _containers.RepeatedCompositeFieldContainer[RateLimit]
    def __init__(self, providers: _Optional[_Iterable[_Union[Provider, _Mapping]]] = ..., models: _Optional[_Iterable[_Union[Model, _Mapping]]] = ..., rate_limits: _Optional[_Iterable[_Union[RateLimit, _Mapping]]] = ..., quotas: _Optional[_Iterable[_Union[Quota, _Mapping]]] = ..., budgets: _Optional[_Iterable[_Union[Budget, _Mapping]]] = ..., config_digest: _Optional[str] = ...) -> None: ...

class RoutingCandidatesResolved(_message.Message):
    __slots__ = ["candidate_set", "profile"]
    CANDIDATE_SET_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    candidate_set: CandidateSet
    profile: TaskProfile
    def __init__(self, candidate_set: _Optional[_Union[CandidateSet, _Mapping]] = ..., profile: _Optional[_Union[TaskProfile, _Mapping]] = ...) -> None: ...

class RoutingDecided(_message.Message):
    __slots__ = ["decision"]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    decision: RoutingDecision
    def __init__(self, decision: _Optional[_Union[RoutingDecision, _Mapping]] = ...) -> None: ...

class RoutingDecision(_message.Message):
    __slots__ = ["budgets", "candidate_count", "capability_gap", "decision_reason", "decision_source", "estimated_cost_nanos", "fallback_chain", "limit_state_snapshot", "requested_model_id", "requested_provider_id", "requires_user_override", "routing_mode", "selected_capabilities", "selected_model_id", "selected_provider_id", "task_kind"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_GAP_FIELD_NUMBER: _ClassVar[int]
    DECISION_REASON_FIELD_NUMBER: _ClassVar[int]
    DECISION_SOURCE_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_COST_NANOS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_CHAIN_FIELD_NUMBER: _ClassVar[int]
    LIMIT_STATE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_USER_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_MODE_FIELD_NUMBER: _ClassVar[int]
    SELECTED_CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    SELECTED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    SELECTED_PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_KIND_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetState]
    candidate_count: int
    capability_gap: _containers.RepeatedScalarFieldContainer[Capability]
    decision_reason: str
    decision_source: str
    estimated_cost_nanos: int
    fallback_chain: _containers.RepeatedScalarFieldContainer[str]
    limit_state_snapshot: LimitStateSnapshot
    requested_model_id: str
    requested_provider_id: str
    requires_user_override: bool
    routing_mode: RoutingMode
    selected_capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    selected_model_id: str
    selected_provider_id: str
    task_kind: str
    def __init__(self, routing_mode: _Optional[_Union[RoutingMode, str]] = ..., decision_source: _Optional[str] = ..., decision_reason: _Optional[str] = ..., requested_provider_id: _Optional[str] = ..., requested_model_id: _Optional[str] = ..., selected_provider_id: _Optional[str] = ..., selected_model_id: _Optional[str] = ..., candidate_count: _Optional[int] = ..., fallback_chain: _Optional[_Iterable[str]] = ..., capability_gap: _Optional[_Iterable[_Union[Capability, str]]] = ..., requires_user_override: bool = ..., limit_state_snapshot: _Optional[_Union[LimitStateSnapshot, _Mapping]] = ..., estimated_cost_nanos: _Optional[int] = ..., budgets: _Optional[_Iterable[_Union[BudgetState, _Mapping]]] = ..., selected_capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., task_kind: _Optional[str] = ...) -> None: ...

class RoutingFallbackApplied(_message.Message):
    __slots__ = ["decision", "failed_model_id", "failed_provider_id", "failure_category", "failure_detail", "fallback_count"]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    FAILED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    FAILURE_DETAIL_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_COUNT_FIELD_NUMBER: _ClassVar[int]
    decision: RoutingDecision
    failed_model_id: str
    failed_provider_id: str
    failure_category: FailureCategory
    failure_detail: str
    fallback_count: int
    def __init__(self, failed_provider_id: _Optional[str] = ..., failed_model_id: _Optional[str] = ..., failure_category: _Optional[_Union[FailureCategory, str]] = ..., failure_detail: _Optional[str] = ..., decision: _Optional[_Union[RoutingDecision, _Mapping]] = ..., fallback_count: _Optional[int] = ...) -> None: ...

class RoutingNotPossible(_message.Message):
    __slots__ = ["budgets", "capability_gap", "excluded", "failure_category", "limit_state_snapshot", "reason", "requested_model_id", "requested_provider_id", "requires_user_override", "stage"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_GAP_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_STATE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_USER_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[BudgetState]
    capability_gap: _containers.RepeatedScalarFieldContainer[Capability]
    excluded: _containers.RepeatedCompositeFieldContainer[Exclusion]
    failure_category: FailureCategory
    limit_state_snapshot: LimitStateSnapshot
    reason: str
    requested_model_id: str
    requested_provider_id: str
    requires_user_override: bool
    stage: str
    def __init__(self, stage: _Optional[str] = ..., reason: _Optional[str] = ..., excluded: _Optional[_Iterable[_Union[Exclusion, _Mapping]]] = ..., requested_provider_id: _Optional[str] = ..., requested_model_id: _Optional[str] = ..., capability_gap: _Optional[_Iterable[_Union[Capability, str]]] = ..., requires_user_override: bool = ..., limit_state_snapshot: _Optional[_Union[LimitStateSnapshot, _Mapping]] = ..., budgets: _Optional[_Iterable[_Union[BudgetState, _Mapping]]] = ..., failure_category: _Optional[_Union[FailureCategory, str]] = ...) -> None: ...

class RoutingSingleCandidate(_message.Message):
    __slots__ = ["decision"]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    decision: RoutingDecision
    def __init__(self, decision: _Optional[_Union[RoutingDecision, _Mapping]] = ...) -> None: ...

class TaskProfile(_message.Message):
    __slots__ = ["budget_class", "fallback_policy", "kind", "latency_target", "region", "required_capabilities", "settings_source", "source"]
    class SettingsSourceEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUDGET_CLASS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_POLICY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LATENCY_TARGET_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    budget_class: str
    fallback_policy: FallbackPolicy
    kind: str
    latency_target: LatencyClass
    region: str
    required_capabilities: _containers.RepeatedScalarFieldContainer[Capability]
    settings_source: _containers.ScalarMap[str, str]
    source: str
    def __init__(self, kind: _Optional[str] = ..., source: _Optional[str] = ..., required_capabilities: _Optional[_Iterable[_Union[Capability, str]]] = ..., latency_target: _Optional[_Union[LatencyClass, str]] = ..., budget_class: _Optional[str] = ..., fallback_policy: _Optional[_Union[FallbackPolicy, str]] = ..., settings_source: _Optional[_Mapping[str, str]] = ..., region: _Optional[str] = ...) -> None: ...

class TaskProfileResolved(_message.Message):
    __slots__ = ["profile"]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    profile: TaskProfile
    def __init__(self, profile: _Optional[_Union[TaskProfile, _Mapping]] = ...) -> None: ...

class TokenUsage(_message.Message):
    __slots__ = ["cached_input_tokens", "input_tokens", "output_tokens", "reasoning_tokens"]
    CACHED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    cached_input_tokens: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cached_input_tokens: _Optional[int] = ..., reasoning_tokens: _Optional[int] = ...) -> None: ...

class Capability(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LatencyClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class CredentialStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BudgetScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FallbackPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ExclusionReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RoutingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FailureCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
