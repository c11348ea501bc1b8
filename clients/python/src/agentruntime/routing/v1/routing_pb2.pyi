from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.events.v1 import routing_pb2 as _routing_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApplyFallbackRequest(_message.Message):
    __slots__ = ["failed_model_id", "failure_category", "failure_detail", "scope"]
    FAILED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    FAILURE_DETAIL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    failed_model_id: str
    failure_category: _routing_pb2.FailureCategory
    failure_detail: str
    scope: TurnScope
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., failed_model_id: _Optional[str] = ..., failure_category: _Optional[_Union[_routing_pb2.FailureCategory, str]] = ..., failure_detail: _Optional[str] = ...) -> None: ...

class ApplyFallbackResponse(_message.Message):
    __slots__ = ["fallback", "not_possible", "write"]
    FALLBACK_FIELD_NUMBER: _ClassVar[int]
    NOT_POSSIBLE_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    fallback: _routing_pb2.RoutingFallbackApplied
    not_possible: _routing_pb2.RoutingNotPossible
    write: _common_pb2.WriteResult
    def __init__(self, fallback: _Optional[_Union[_routing_pb2.RoutingFallbackApplied, _Mapping]] = ..., not_possible: _Optional[_Union[_routing_pb2.RoutingNotPossible, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class CheckLimitsRequest(_message.Message):
    __slots__ = ["model_id", "requests", "tokens"]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    requests: int
    tokens: int
    def __init__(self, model_id: _Optional[str] = ..., requests: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class CheckLimitsResponse(_message.Message):
    __slots__ = ["allowed", "limits", "retry_after"]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    limits: _routing_pb2.LimitStateSnapshot
    retry_after: _duration_pb2.Duration
    def __init__(self, allowed: bool = ..., limits: _Optional[_Union[_routing_pb2.LimitStateSnapshot, _Mapping]] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ConsumeLimitsRequest(_message.Message):
    __slots__ = ["model_id", "requests", "scope", "tokens"]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    requests: int
    scope: TurnScope
    tokens: int
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., model_id: _Optional[str] = ..., requests: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class ConsumeLimitsResponse(_message.Message):
    __slots__ = ["limits", "write"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    limits: _routing_pb2.LimitStateSnapshot
    write: _common_pb2.WriteResult
    def __init__(self, limits: _Optional[_Union[_routing_pb2.LimitStateSnapshot, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class CostState(_message.Message):
    __slots__ = ["last_estimated_nanos", "recorded_calls", "recorded_nanos", "recorded_usage", "state"]
    LAST_ESTIMATED_NANOS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_CALLS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_NANOS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_USAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    last_estimated_nanos: int
    recorded_calls: int
    recorded_nanos: int
    recorded_usage: _routing_pb2.TokenUsage
    state: _common_pb2.FactState
    def __init__(self, state: _Optional[_Union[_common_pb2.FactState, str]] = ..., last_estimated_nanos: _Optional[int] = ..., recorded_nanos: _Optional[int] = ..., recorded_usage: _Optional[_Union[_routing_pb2.TokenUsage, _Mapping]] = ..., recorded_calls: _Optional[int] = ...) -> None: ...

class DecideRouteRequest(_message.Message):
    __slots__ = ["route", "scope"]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    route: RouteRequest
    scope: TurnScope
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., route: _Optional[_Union[RouteRequest, _Mapping]] = ...) -> None: ...

class DecideRouteResponse(_message.Message):
    __slots__ = ["candidate_set", "decision", "not_possible", "write"]
    CANDIDATE_SET_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    NOT_POSSIBLE_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    candidate_set: _routing_pb2.CandidateSet
    decision: _routing_pb2.RoutingDecision
    not_possible: _routing_pb2.RoutingNotPossible
    write: _common_pb2.WriteResult
    def __init__(self, candidate_set: _Optional[_Union[_routing_pb2.CandidateSet, _Mapping]] = ..., decision: _Optional[_Union[_routing_pb2.RoutingDecision, _Mapping]] = ..., not_possible: _Optional[_Union[_routing_pb2.RoutingNotPossible, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class EstimateCostRequest(_message.Message):
    __slots__ = ["model_id", "scope", "usage"]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    scope: TurnScope
    usage: Usage
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., model_id: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class EstimateCostResponse(_message.Message):
    __slots__ = ["estimate", "write"]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    estimate: _routing_pb2.CostEstimated
    write: _common_pb2.WriteResult
    def __init__(self, estimate: _Optional[_Union[_routing_pb2.CostEstimated, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class GetBudgetsRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id", "task_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    task_id: str
    def __init__(self, session_id: _Optional[str] = ..., task_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetBudgetsResponse(_message.Message):
    __slots__ = ["budgets", "sequence"]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[_routing_pb2.BudgetState]
    sequence: int
    def __init__(self, budgets: _Optional[_Iterable[_Union[_routing_pb2.BudgetState, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetModelRegistryRequest(_message.Message):
    __slots__ = ["min_sequence"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    def __init__(self, min_sequence: _Optional[int] = ...) -> None: ...

class GetModelRegistryResponse(_message.Message):
    __slots__ = ["registry", "sequence"]
    REGISTRY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    registry: _routing_pb2.Registry
    sequence: int
    def __init__(self, registry: _Optional[_Union[_routing_pb2.Registry, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetRoutingLimitSummaryRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id", "thread_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetRoutingLimitSummaryResponse(_message.Message):
    __slots__ = ["sequence", "threads"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    threads: _containers.RepeatedCompositeFieldContainer[RoutingLimitSummary]
    def __init__(self, sequence: _Optional[int] = ..., threads: _Optional[_Iterable[_Union[RoutingLimitSummary, _Mapping]]] = ...) -> None: ...

class LimitConfigChange(_message.Message):
    __slots__ = ["remove_budget", "remove_quota", "remove_rate_limit", "set_budget", "set_quota", "set_rate_limit"]
    REMOVE_BUDGET_FIELD_NUMBER: _ClassVar[int]
    REMOVE_QUOTA_FIELD_NUMBER: _ClassVar[int]
    REMOVE_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SET_BUDGET_FIELD_NUMBER: _ClassVar[int]
    SET_QUOTA_FIELD_NUMBER: _ClassVar[int]
    SET_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    remove_budget: str
    remove_quota: str
    remove_rate_limit: str
    set_budget: _routing_pb2.Budget
    set_quota: _routing_pb2.Quota
    set_rate_limit: _routing_pb2.RateLimit
    def __init__(self, set_rate_limit: _Optional[_Union[_routing_pb2.RateLimit, _Mapping]] = ..., remove_rate_limit: _Optional[str] = ..., set_quota: _Optional[_Union[_routing_pb2.Quota, _Mapping]] = ..., remove_quota: _Optional[str] = ..., set_budget: _Optional[_Union[_routing_pb2.Budget, _Mapping]] = ..., remove_budget: _Optional[str] = ...) -> None: ...

class ModelRegistryChange(_message.Message):
    __slots__ = ["remove_model", "remove_provider", "upsert_model", "upsert_provider"]
    REMOVE_MODEL_FIELD_NUMBER: _ClassVar[int]
    REMOVE_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    UPSERT_MODEL_FIELD_NUMBER: _ClassVar[int]
    UPSERT_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    remove_model: str
    remove_provider: str
    upsert_model: _routing_pb2.Model
    upsert_provider: _routing_pb2.Provider
    def __init__(self, upsert_provider: _Optional[_Union[_routing_pb2.Provider, _Mapping]] = ..., remove_provider: _Optional[str] = ..., upsert_model: _Optional[_Union[_routing_pb2.Model, _Mapping]] = ..., remove_model: _Optional[str] = ...) -> None: ...

class ProfileScope(_message.Message):
    __slots__ = ["run_id", "session_id", "task_id", "thread_id", "turn_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    session_id: str
    task_id: str
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., task_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class RecordCostRequest(_message.Message):
    __slots__ = ["model_id", "scope", "usage", "usage_id"]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_ID_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    scope: TurnScope
    usage: Usage
    usage_id: str
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., usage_id: _Optional[str] = ..., model_id: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ...) -> None: ...

class RecordCostResponse(_message.Message):
    __slots__ = ["limits", "recorded", "write"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RECORDED_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    limits: _routing_pb2.LimitStateSnapshot
    recorded: _routing_pb2.CostRecorded
    write: _common_pb2.WriteResult
    def __init__(self, recorded: _Optional[_Union[_routing_pb2.CostRecorded, _Mapping]] = ..., limits: _Optional[_Union[_routing_pb2.LimitStateSnapshot, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ResolveCandidatesRequest(_message.Message):
    __slots__ = ["route", "scope"]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    route: RouteRequest
    scope: TurnScope
    def __init__(self, scope: _Optional[_Union[TurnScope, _Mapping]] = ..., route: _Optional[_Union[RouteRequest, _Mapping]] = ...) -> None: ...

class ResolveCandidatesResponse(_message.Message):
    __slots__ = ["candidate_set", "write"]
    CANDIDATE_SET_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    candidate_set: _routing_pb2.CandidateSet
    write: _common_pb2.WriteResult
    def __init__(self, candidate_set: _Optional[_Union[_routing_pb2.CandidateSet, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ResolveTaskProfileRequest(_message.Message):
    __slots__ = ["budget_class", "fallback_policy", "kind", "latency_target", "region", "required_capabilities", "scope", "source"]
    BUDGET_CLASS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_POLICY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LATENCY_TARGET_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    budget_class: str
    fallback_policy: _routing_pb2.FallbackPolicy
    kind: str
    latency_target: _routing_pb2.LatencyClass
    region: str
    required_capabilities: _containers.RepeatedScalarFieldContainer[_routing_pb2.Capability]
    scope: ProfileScope
    source: str
    def __init__(self, scope: _Optional[_Union[ProfileScope, _Mapping]] = ..., kind: _Optional[str] = ..., source: _Optional[str] = ..., required_capabilities: _Optional[_Iterable[_Union[_routing_pb2.Capability, str]]] = ..., latency_target: _Optional[_Union[_routing_pb2.LatencyClass, str]] = ..., budget_class: _Optional[str] = ..., fallback_policy: _Optional[_Union[_routing_pb2.FallbackPolicy, str]] = ..., region: _Optional[str] = ...) -> None: ...

class ResolveTaskProfileResponse(_message.Message):
    __slots__ = ["profile", "write"]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    profile: _routing_pb2.TaskProfile
    write: _common_pb2.WriteResult
    def __init__(self, profile: _Optional[_Union[_routing_pb2.TaskProfile, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RouteRequest(_message.Message):
    __slots__ = ["estimated_input_tokens", "estimated_output_tokens", "profile", "requested_model_id", "requested_provider_id", "user_lock"]
    ESTIMATED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    USER_LOCK_FIELD_NUMBER: _ClassVar[int]
    estimated_input_tokens: int
    estimated_output_tokens: int
    profile: _routing_pb2.TaskProfile
    requested_model_id: str
    requested_provider_id: str
    user_lock: bool
    def __init__(self, profile: _Optional[_Union[_routing_pb2.TaskProfile, _Mapping]] = ..., requested_provider_id: _Optional[str] = ..., requested_model_id: _Optional[str] = ..., user_lock: bool = ..., estimated_input_tokens: _Optional[int] = ..., estimated_output_tokens: _Optional[int] = ...) -> None: ...

class RoutingLimitSummary(_message.Message):
    __slots__ = ["candidate_count", "cost", "decision", "failed_model_ids", "fallback_count", "last_fallback", "last_quota_blocked", "last_quota_low", "last_rate_limit_hit", "last_sequence", "not_possible", "quota_state", "rate_limit_state", "routing_state", "session_id", "single_candidate", "task_profile", "thread_id", "turn_id"]
    CANDIDATE_COUNT_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    FAILED_MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    LAST_QUOTA_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    LAST_QUOTA_LOW_FIELD_NUMBER: _ClassVar[int]
    LAST_RATE_LIMIT_HIT_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    NOT_POSSIBLE_FIELD_NUMBER: _ClassVar[int]
    QUOTA_STATE_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_STATE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_STATE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SINGLE_CANDIDATE_FIELD_NUMBER: _ClassVar[int]
    TASK_PROFILE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    candidate_count: int
    cost: CostState
    decision: _routing_pb2.RoutingDecision
    failed_model_ids: _containers.RepeatedScalarFieldContainer[str]
    fallback_count: int
    last_fallback: _routing_pb2.RoutingFallbackApplied
    last_quota_blocked: _routing_pb2.QuotaBlocked
    last_quota_low: _routing_pb2.QuotaLow
    last_rate_limit_hit: _routing_pb2.RateLimitHit
    last_sequence: int
    not_possible: _routing_pb2.RoutingNotPossible
    quota_state: _common_pb2.FactState
    rate_limit_state: _common_pb2.FactState
    routing_state: _common_pb2.FactState
    session_id: str
    single_candidate: bool
    task_profile: _routing_pb2.TaskProfile
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., routing_state: _Optional[_Union[_common_pb2.FactState, str]] = ..., task_profile: _Optional[_Union[_routing_pb2.TaskProfile, _Mapping]] = ..., candidate_count: _Optional[int] = ..., single_candidate: bool = ..., decision: _Optional[_Union[_routing_pb2.RoutingDecision, _Mapping]] = ..., not_possible: _Optional[_Union[_routing_pb2.RoutingNotPossible, _Mapping]] = ..., fallback_count: _Optional[int] = ..., last_fallback: _Optional[_Union[_routing_pb2.RoutingFallbackApplied, _Mapping]] = ..., cost: _Optional[_Union[CostState, _Mapping]] = ..., quota_state: _Optional[_Union[_common_pb2.FactState, str]] = ..., last_quota_low: _Optional[_Union[_routing_pb2.QuotaLow, _Mapping]] = ..., last_quota_blocked: _Optional[_Union[_routing_pb2.QuotaBlocked, _Mapping]] = ..., rate_limit_state: _Optional[_Union[_common_pb2.FactState, str]] = ..., last_rate_limit_hit: _Optional[_Union[_routing_pb2.RateLimitHit, _Mapping]] = ..., last_sequence: _Optional[int] = ..., failed_model_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TurnScope(_message.Message):
    __slots__ = ["run_id", "session_id", "task_id", "thread_id", "turn_id"]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    session_id: str
    task_id: str
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., task_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class UpdateLimitConfigRequest(_message.Message):
    __slots__ = ["changes"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[LimitConfigChange]
    def __init__(self, changes: _Optional[_Iterable[_Union[LimitConfigChange, _Mapping]]] = ...) -> None: ...

class UpdateLimitConfigResponse(_message.Message):
    __slots__ = ["registry", "write"]
    REGISTRY_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    registry: _routing_pb2.Registry
    write: _common_pb2.WriteResult
    def __init__(self, registry: _Optional[_Union[_routing_pb2.Registry, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class UpdateModelRegistryRequest(_message.Message):
    __slots__ = ["changes"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[ModelRegistryChange]
    def __init__(self, changes: _Optional[_Iterable[_Union[ModelRegistryChange, _Mapping]]] = ...) -> None: ...

class UpdateModelRegistryResponse(_message.Message):
    __slots__ = ["registry", "write"]
    REGISTRY_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    registry: _routing_pb2.Registry
    write: _common_pb2.WriteResult
    def __init__(self, registry: _Optional[_Union[_routing_pb2.Registry, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class Usage(_message.Message):
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
