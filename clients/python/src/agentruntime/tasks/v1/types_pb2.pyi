from agentruntime.common.v1 import common_pb2 as _common_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DELIVERY_STATE_DELIVERED: DeliveryState
DELIVERY_STATE_FAILED: DeliveryState
DELIVERY_STATE_NOT_APPLICABLE: DeliveryState
DELIVERY_STATE_PARENT_MISSING: DeliveryState
DELIVERY_STATE_PENDING: DeliveryState
DELIVERY_STATE_QUEUED: DeliveryState
DELIVERY_STATE_UNSPECIFIED: DeliveryState
DESCRIPTOR: _descriptor.FileDescriptor
EDGE_RELATION_ASSIGNED_THREAD: EdgeRelation
EDGE_RELATION_BLOCKED_BY: EdgeRelation
EDGE_RELATION_BLOCKS: EdgeRelation
EDGE_RELATION_CHILD: EdgeRelation
EDGE_RELATION_CONSUMED_ARTIFACT: EdgeRelation
EDGE_RELATION_EVIDENCE: EdgeRelation
EDGE_RELATION_PARENT: EdgeRelation
EDGE_RELATION_PRODUCED_ARTIFACT: EdgeRelation
EDGE_RELATION_SOURCE_ATTEMPT: EdgeRelation
EDGE_RELATION_SOURCE_TASK: EdgeRelation
EDGE_RELATION_SPAWNED_SUBAGENT: EdgeRelation
EDGE_RELATION_UNSPECIFIED: EdgeRelation
EDGE_STATUS_ACTIVE: EdgeStatus
EDGE_STATUS_FAILED: EdgeStatus
EDGE_STATUS_REMOVED: EdgeStatus
EDGE_STATUS_SATISFIED: EdgeStatus
EDGE_STATUS_UNSPECIFIED: EdgeStatus
JOB_ITEM_STATUS_COMPLETED: JobItemStatus
JOB_ITEM_STATUS_FAILED: JobItemStatus
JOB_ITEM_STATUS_PENDING: JobItemStatus
JOB_ITEM_STATUS_REPORTED: JobItemStatus
JOB_ITEM_STATUS_RUNNING: JobItemStatus
JOB_ITEM_STATUS_UNSPECIFIED: JobItemStatus
JOB_STATUS_CANCELLED: JobStatus
JOB_STATUS_COMPLETED: JobStatus
JOB_STATUS_FAILED: JobStatus
JOB_STATUS_PENDING: JobStatus
JOB_STATUS_RUNNING: JobStatus
JOB_STATUS_UNSPECIFIED: JobStatus
RUN_STATUS_CANCELLED: RunStatus
RUN_STATUS_COMPLETED: RunStatus
RUN_STATUS_FAILED: RunStatus
RUN_STATUS_LOST: RunStatus
RUN_STATUS_RUNNING: RunStatus
RUN_STATUS_TIMED_OUT: RunStatus
RUN_STATUS_UNSPECIFIED: RunStatus
TASK_STATUS_ACCEPTED: TaskStatus
TASK_STATUS_ARCHIVED: TaskStatus
TASK_STATUS_BLOCKED: TaskStatus
TASK_STATUS_CANCELLED: TaskStatus
TASK_STATUS_CANCELLING: TaskStatus
TASK_STATUS_COMPLETED: TaskStatus
TASK_STATUS_DRAFT: TaskStatus
TASK_STATUS_FAILED: TaskStatus
TASK_STATUS_LOST: TaskStatus
TASK_STATUS_PAUSED: TaskStatus
TASK_STATUS_PREPARING: TaskStatus
TASK_STATUS_QUEUED: TaskStatus
TASK_STATUS_RETRYING: TaskStatus
TASK_STATUS_RUNNING: TaskStatus
TASK_STATUS_STALE: TaskStatus
TASK_STATUS_TIMED_OUT: TaskStatus
TASK_STATUS_UNKNOWN: TaskStatus
TASK_STATUS_UNSPECIFIED: TaskStatus
TASK_STATUS_WAITING_INPUT: TaskStatus
TASK_STATUS_WAITING_PERMISSION: TaskStatus
TASK_STATUS_WAITING_RESOURCE: TaskStatus
VISIBILITY_BACKGROUND: Visibility
VISIBILITY_FOREGROUND: Visibility
VISIBILITY_HIDDEN: Visibility
VISIBILITY_INTERNAL: Visibility
VISIBILITY_UNSPECIFIED: Visibility

class Acceptance(_message.Message):
    __slots__ = ["criteria", "refs", "required_artifacts", "required_evidence"]
    CRITERIA_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    criteria: str
    refs: _containers.RepeatedScalarFieldContainer[str]
    required_artifacts: _containers.RepeatedScalarFieldContainer[str]
    required_evidence: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, criteria: _Optional[str] = ..., required_artifacts: _Optional[_Iterable[str]] = ..., required_evidence: _Optional[_Iterable[str]] = ..., refs: _Optional[_Iterable[str]] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ["attempt_id", "carried_by", "checkpoint_refs", "completion_summary", "ended_at", "error", "input_refs", "last_activity_at", "leased", "ordinal", "output_refs", "reason", "run_id", "started_at", "status", "worker"]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CARRIED_BY_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_AT_FIELD_NUMBER: _ClassVar[int]
    LEASED_FIELD_NUMBER: _ClassVar[int]
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    attempt_id: str
    carried_by: RunTurn
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    completion_summary: str
    ended_at: _timestamp_pb2.Timestamp
    error: TaskError
    input_refs: _containers.RepeatedScalarFieldContainer[str]
    last_activity_at: _timestamp_pb2.Timestamp
    leased: bool
    ordinal: int
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    reason: str
    run_id: str
    started_at: _timestamp_pb2.Timestamp
    status: RunStatus
    worker: WorkerRef
    def __init__(self, run_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., ordinal: _Optional[int] = ..., status: _Optional[_Union[RunStatus, str]] = ..., worker: _Optional[_Union[WorkerRef, _Mapping]] = ..., input_refs: _Optional[_Iterable[str]] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[_Union[TaskError, _Mapping]] = ..., completion_summary: _Optional[str] = ..., reason: _Optional[str] = ..., leased: bool = ..., last_activity_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., carried_by: _Optional[_Union[RunTurn, _Mapping]] = ...) -> None: ...

class Constraints(_message.Message):
    __slots__ = ["allowed_tools", "extra", "max_cost_usd", "max_duration", "max_output_bytes", "model", "network", "permission_mode", "sandbox_profile"]
    class ExtraEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ALLOWED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    MAX_COST_USD_FIELD_NUMBER: _ClassVar[int]
    MAX_DURATION_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_MODE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    allowed_tools: _containers.RepeatedScalarFieldContainer[str]
    extra: _containers.ScalarMap[str, str]
    max_cost_usd: float
    max_duration: _duration_pb2.Duration
    max_output_bytes: int
    model: str
    network: str
    permission_mode: str
    sandbox_profile: str
    def __init__(self, permission_mode: _Optional[str] = ..., sandbox_profile: _Optional[str] = ..., network: _Optional[str] = ..., model: _Optional[str] = ..., allowed_tools: _Optional[_Iterable[str]] = ..., max_cost_usd: _Optional[float] = ..., max_duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_output_bytes: _Optional[int] = ..., extra: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Edge(_message.Message):
    __slots__ = ["created_at", "reason", "relation", "source_task_id", "status", "target_id", "updated_at"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    reason: str
    relation: EdgeRelation
    source_task_id: str
    status: EdgeStatus
    target_id: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, relation: _Optional[_Union[EdgeRelation, str]] = ..., target_id: _Optional[str] = ..., status: _Optional[_Union[EdgeStatus, str]] = ..., reason: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., source_task_id: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["assigned_thread_ids", "counts", "created_at", "created_sequence", "ended_at", "item_cursor", "items", "job_id", "session_id", "spec", "status", "status_reason", "task_id", "updated_at", "version"]
    ASSIGNED_THREAD_IDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ITEM_CURSOR_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    assigned_thread_ids: _containers.RepeatedScalarFieldContainer[str]
    counts: JobCounts
    created_at: _timestamp_pb2.Timestamp
    created_sequence: int
    ended_at: _timestamp_pb2.Timestamp
    item_cursor: int
    items: _containers.RepeatedCompositeFieldContainer[JobItem]
    job_id: str
    session_id: str
    spec: JobSpec
    status: JobStatus
    status_reason: str
    task_id: str
    updated_at: _timestamp_pb2.Timestamp
    version: int
    def __init__(self, job_id: _Optional[str] = ..., task_id: _Optional[str] = ..., session_id: _Optional[str] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., status: _Optional[_Union[JobStatus, str]] = ..., items: _Optional[_Iterable[_Union[JobItem, _Mapping]]] = ..., counts: _Optional[_Union[JobCounts, _Mapping]] = ..., item_cursor: _Optional[int] = ..., assigned_thread_ids: _Optional[_Iterable[str]] = ..., status_reason: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., version: _Optional[int] = ..., created_sequence: _Optional[int] = ...) -> None: ...

class JobCounts(_message.Message):
    __slots__ = ["completed", "failed", "pending", "reported", "running", "total"]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    REPORTED_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    completed: int
    failed: int
    pending: int
    reported: int
    running: int
    total: int
    def __init__(self, total: _Optional[int] = ..., pending: _Optional[int] = ..., running: _Optional[int] = ..., completed: _Optional[int] = ..., failed: _Optional[int] = ..., reported: _Optional[int] = ...) -> None: ...

class JobItem(_message.Message):
    __slots__ = ["assigned_thread_id", "attempts", "cancelled", "current_run_id", "fairness_key", "fairness_weight", "input_ref", "item_id", "last_error", "output_ref", "priority", "retryable", "status", "updated_at"]
    ASSIGNED_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    CURRENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REF_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    assigned_thread_id: str
    attempts: int
    cancelled: bool
    current_run_id: str
    fairness_key: str
    fairness_weight: float
    input_ref: str
    item_id: str
    last_error: TaskError
    output_ref: _common_pb2.OutputRef
    priority: int
    retryable: bool
    status: JobItemStatus
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, item_id: _Optional[str] = ..., status: _Optional[_Union[JobItemStatus, str]] = ..., input_ref: _Optional[str] = ..., attempts: _Optional[int] = ..., last_error: _Optional[_Union[TaskError, _Mapping]] = ..., retryable: bool = ..., assigned_thread_id: _Optional[str] = ..., current_run_id: _Optional[str] = ..., output_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., cancelled: bool = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ["input_refs", "instruction_ref", "max_item_attempts", "max_runtime", "output_schema_ref", "title"]
    INPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_REF_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEM_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_REF_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    input_refs: _containers.RepeatedScalarFieldContainer[str]
    instruction_ref: str
    max_item_attempts: int
    max_runtime: _duration_pb2.Duration
    output_schema_ref: str
    title: str
    def __init__(self, title: _Optional[str] = ..., instruction_ref: _Optional[str] = ..., input_refs: _Optional[_Iterable[str]] = ..., output_schema_ref: _Optional[str] = ..., max_runtime: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_item_attempts: _Optional[int] = ...) -> None: ...

class PeerTask(_message.Message):
    __slots__ = ["agent_card_ref", "delivery_mechanism", "native_protocol", "native_status", "remote_agent_ref", "remote_artifact_refs", "remote_context_id", "remote_status", "remote_task_id"]
    AGENT_CARD_REF_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_MECHANISM_FIELD_NUMBER: _ClassVar[int]
    NATIVE_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_AGENT_REF_FIELD_NUMBER: _ClassVar[int]
    REMOTE_ARTIFACT_REFS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    REMOTE_STATUS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    agent_card_ref: str
    delivery_mechanism: str
    native_protocol: str
    native_status: str
    remote_agent_ref: str
    remote_artifact_refs: _containers.RepeatedScalarFieldContainer[str]
    remote_context_id: str
    remote_status: str
    remote_task_id: str
    def __init__(self, native_protocol: _Optional[str] = ..., remote_task_id: _Optional[str] = ..., remote_context_id: _Optional[str] = ..., remote_agent_ref: _Optional[str] = ..., agent_card_ref: _Optional[str] = ..., delivery_mechanism: _Optional[str] = ..., remote_status: _Optional[str] = ..., native_status: _Optional[str] = ..., remote_artifact_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ["counters", "current_step", "delivery_state", "output_offsets", "output_refs", "percent", "phase", "summary", "validation_state"]
    class CountersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class OutputOffsetsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_STEP_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    VALIDATION_STATE_FIELD_NUMBER: _ClassVar[int]
    counters: _containers.ScalarMap[str, int]
    current_step: str
    delivery_state: DeliveryState
    output_offsets: _containers.ScalarMap[str, int]
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    percent: float
    phase: str
    summary: str
    validation_state: str
    def __init__(self, phase: _Optional[str] = ..., current_step: _Optional[str] = ..., summary: _Optional[str] = ..., percent: _Optional[float] = ..., counters: _Optional[_Mapping[str, int]] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., output_offsets: _Optional[_Mapping[str, int]] = ..., delivery_state: _Optional[_Union[DeliveryState, str]] = ..., validation_state: _Optional[str] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ["backoff_multiplier", "initial_backoff", "max_attempts", "max_backoff", "non_retryable_categories"]
    BACKOFF_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    INITIAL_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKOFF_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    backoff_multiplier: float
    initial_backoff: _duration_pb2.Duration
    max_attempts: int
    max_backoff: _duration_pb2.Duration
    non_retryable_categories: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_attempts: _Optional[int] = ..., initial_backoff: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_backoff: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., backoff_multiplier: _Optional[float] = ..., non_retryable_categories: _Optional[_Iterable[str]] = ...) -> None: ...

class RunTurn(_message.Message):
    __slots__ = ["session_id", "thread_id", "turn_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class Scope(_message.Message):
    __slots__ = ["account", "environment", "host", "project", "thread_id", "workspace"]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PROJECT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    account: str
    environment: str
    host: str
    project: str
    thread_id: str
    workspace: str
    def __init__(self, workspace: _Optional[str] = ..., project: _Optional[str] = ..., thread_id: _Optional[str] = ..., account: _Optional[str] = ..., environment: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["artifacts", "attempts", "cancel_requested", "created_at", "created_sequence", "current_run_id", "edges", "ended_at", "evidence_refs", "fairness_key", "fairness_weight", "last_error", "native_status", "not_before", "parent_task_id", "paused_from", "priority", "progress", "root_task_id", "session_id", "spec", "started_at", "status", "status_reason", "task_id", "thread_id", "turn_id", "updated_at", "version"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CURRENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    PARENT_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FROM_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    ROOT_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedScalarFieldContainer[str]
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    cancel_requested: bool
    created_at: _timestamp_pb2.Timestamp
    created_sequence: int
    current_run_id: str
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    ended_at: _timestamp_pb2.Timestamp
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    fairness_key: str
    fairness_weight: float
    last_error: TaskError
    native_status: str
    not_before: _timestamp_pb2.Timestamp
    parent_task_id: str
    paused_from: TaskStatus
    priority: int
    progress: Progress
    root_task_id: str
    session_id: str
    spec: TaskSpec
    started_at: _timestamp_pb2.Timestamp
    status: TaskStatus
    status_reason: str
    task_id: str
    thread_id: str
    turn_id: str
    updated_at: _timestamp_pb2.Timestamp
    version: int
    def __init__(self, task_id: _Optional[str] = ..., parent_task_id: _Optional[str] = ..., root_task_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., spec: _Optional[_Union[TaskSpec, _Mapping]] = ..., status: _Optional[_Union[TaskStatus, str]] = ..., native_status: _Optional[str] = ..., progress: _Optional[_Union[Progress, _Mapping]] = ..., current_run_id: _Optional[str] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ..., artifacts: _Optional[_Iterable[str]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., last_error: _Optional[_Union[TaskError, _Mapping]] = ..., status_reason: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., cancel_requested: bool = ..., paused_from: _Optional[_Union[TaskStatus, str]] = ..., not_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., version: _Optional[int] = ..., created_sequence: _Optional[int] = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class TaskError(_message.Message):
    __slots__ = ["category", "code", "message", "retryable"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    category: str
    code: str
    message: str
    retryable: bool
    def __init__(self, category: _Optional[str] = ..., code: _Optional[str] = ..., message: _Optional[str] = ..., retryable: bool = ...) -> None: ...

class TaskProfile(_message.Message):
    __slots__ = ["budget", "capability", "continuity", "fallback", "latency", "profile_id"]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    CAPABILITY_FIELD_NUMBER: _ClassVar[int]
    CONTINUITY_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_FIELD_NUMBER: _ClassVar[int]
    LATENCY_FIELD_NUMBER: _ClassVar[int]
    PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    budget: str
    capability: str
    continuity: str
    fallback: str
    latency: str
    profile_id: str
    def __init__(self, profile_id: _Optional[str] = ..., capability: _Optional[str] = ..., latency: _Optional[str] = ..., budget: _Optional[str] = ..., fallback: _Optional[str] = ..., continuity: _Optional[str] = ...) -> None: ...

class TaskSpec(_message.Message):
    __slots__ = ["acceptance", "assignee", "constraints", "labels", "native_status", "objective", "owner", "peer", "priority", "requested_by", "retry_policy", "scope", "task_family", "task_kind", "task_profile", "timeout_policy", "title", "visibility"]
    class LabelsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACCEPTANCE_FIELD_NUMBER: _ClassVar[int]
    ASSIGNEE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TASK_FAMILY_FIELD_NUMBER: _ClassVar[int]
    TASK_KIND_FIELD_NUMBER: _ClassVar[int]
    TASK_PROFILE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_POLICY_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_FIELD_NUMBER: _ClassVar[int]
    acceptance: Acceptance
    assignee: str
    constraints: Constraints
    labels: _containers.ScalarMap[str, str]
    native_status: str
    objective: str
    owner: str
    peer: PeerTask
    priority: int
    requested_by: str
    retry_policy: RetryPolicy
    scope: Scope
    task_family: str
    task_kind: str
    task_profile: TaskProfile
    timeout_policy: TimeoutPolicy
    title: str
    visibility: Visibility
    def __init__(self, title: _Optional[str] = ..., objective: _Optional[str] = ..., task_kind: _Optional[str] = ..., task_family: _Optional[str] = ..., visibility: _Optional[_Union[Visibility, str]] = ..., priority: _Optional[int] = ..., requested_by: _Optional[str] = ..., owner: _Optional[str] = ..., assignee: _Optional[str] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ..., constraints: _Optional[_Union[Constraints, _Mapping]] = ..., task_profile: _Optional[_Union[TaskProfile, _Mapping]] = ..., acceptance: _Optional[_Union[Acceptance, _Mapping]] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., timeout_policy: _Optional[_Union[TimeoutPolicy, _Mapping]] = ..., peer: _Optional[_Union[PeerTask, _Mapping]] = ..., native_status: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TimeoutPolicy(_message.Message):
    __slots__ = ["inactivity_timeout", "run_timeout"]
    INACTIVITY_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    inactivity_timeout: _duration_pb2.Duration
    run_timeout: _duration_pb2.Duration
    def __init__(self, run_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., inactivity_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WorkerRef(_message.Message):
    __slots__ = ["job_id", "job_item_id", "kind", "thread_id", "worker_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    job_item_id: str
    kind: str
    thread_id: str
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., kind: _Optional[str] = ..., thread_id: _Optional[str] = ..., job_id: _Optional[str] = ..., job_item_id: _Optional[str] = ...) -> None: ...

class TaskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Visibility(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DeliveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EdgeRelation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EdgeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class JobStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class JobItemStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
