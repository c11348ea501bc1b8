from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.tasks.v1 import types_pb2 as _types_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AppendTaskProgressRequest(_message.Message):
    __slots__ = ["artifacts", "checkpoint_refs", "evidence_refs", "idempotency_key", "lease_token", "progress", "reason", "run_id", "run_state", "task_id"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedScalarFieldContainer[str]
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    idempotency_key: str
    lease_token: str
    progress: _types_pb2.Progress
    reason: str
    run_id: str
    run_state: _types_pb2.TaskStatus
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., progress: _Optional[_Union[_types_pb2.Progress, _Mapping]] = ..., artifacts: _Optional[_Iterable[str]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., run_state: _Optional[_Union[_types_pb2.TaskStatus, str]] = ..., reason: _Optional[str] = ..., lease_token: _Optional[str] = ...) -> None: ...

class AppendTaskProgressResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ArchiveTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ArchiveTaskResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class BlockedTask(_message.Message):
    __slots__ = ["blockers", "required_action_ids", "status_reason", "task_id"]
    BLOCKERS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_ACTION_IDS_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    blockers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Edge]
    required_action_ids: _containers.RepeatedScalarFieldContainer[str]
    status_reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., blockers: _Optional[_Iterable[_Union[_types_pb2.Edge, _Mapping]]] = ..., status_reason: _Optional[str] = ..., required_action_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ["idempotency_key", "job_id", "reason"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ["force", "idempotency_key", "no_propagation", "reason", "task_id"]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    NO_PROPAGATION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    force: bool
    idempotency_key: str
    no_propagation: bool
    reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ..., no_propagation: bool = ..., force: bool = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = ["result", "status"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    status: _types_pb2.TaskStatus
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., status: _Optional[_Union[_types_pb2.TaskStatus, str]] = ...) -> None: ...

class CompleteJobItemRequest(_message.Message):
    __slots__ = ["idempotency_key", "item_id", "job_id", "output_ref", "run_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REF_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    item_id: str
    job_id: str
    output_ref: _common_pb2.OutputRef
    run_id: str
    def __init__(self, job_id: _Optional[str] = ..., item_id: _Optional[str] = ..., run_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., output_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ...) -> None: ...

class CompleteJobItemResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class CompleteTaskRequest(_message.Message):
    __slots__ = ["artifacts", "checkpoint_refs", "evidence_refs", "idempotency_key", "lease_token", "native_status", "output_refs", "run_id", "summary", "task_id"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedScalarFieldContainer[str]
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    idempotency_key: str
    lease_token: str
    native_status: str
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    run_id: str
    summary: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., summary: _Optional[str] = ..., artifacts: _Optional[_Iterable[str]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., native_status: _Optional[str] = ..., lease_token: _Optional[str] = ...) -> None: ...

class CompleteTaskResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class CreateJobRequest(_message.Message):
    __slots__ = ["idempotency_key", "items", "job_id", "session_id", "spec", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    items: _containers.RepeatedCompositeFieldContainer[JobItemInput]
    job_id: str
    session_id: str
    spec: _types_pb2.JobSpec
    task_id: str
    def __init__(self, job_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., session_id: _Optional[str] = ..., task_id: _Optional[str] = ..., spec: _Optional[_Union[_types_pb2.JobSpec, _Mapping]] = ..., items: _Optional[_Iterable[_Union[JobItemInput, _Mapping]]] = ...) -> None: ...

class CreateJobResponse(_message.Message):
    __slots__ = ["job", "result"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    job: _types_pb2.Job
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ...) -> None: ...

class CreateTaskRequest(_message.Message):
    __slots__ = ["blocked_by", "draft", "fairness_key", "fairness_weight", "idempotency_key", "parent_task_id", "priority", "session_id", "spec", "task_id", "thread_id", "turn_id"]
    BLOCKED_BY_FIELD_NUMBER: _ClassVar[int]
    DRAFT_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    PARENT_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    blocked_by: _containers.RepeatedScalarFieldContainer[str]
    draft: bool
    fairness_key: str
    fairness_weight: float
    idempotency_key: str
    parent_task_id: str
    priority: int
    session_id: str
    spec: _types_pb2.TaskSpec
    task_id: str
    thread_id: str
    turn_id: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., parent_task_id: _Optional[str] = ..., spec: _Optional[_Union[_types_pb2.TaskSpec, _Mapping]] = ..., blocked_by: _Optional[_Iterable[str]] = ..., draft: bool = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class CreateTaskResponse(_message.Message):
    __slots__ = ["result", "task"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    task: _types_pb2.Task
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., task: _Optional[_Union[_types_pb2.Task, _Mapping]] = ...) -> None: ...

class DelegateTaskRunRequest(_message.Message):
    __slots__ = ["idempotency_key", "lease_token", "run_id", "session_id", "task_id", "thread_id", "turn_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    lease_token: str
    run_id: str
    session_id: str
    task_id: str
    thread_id: str
    turn_id: str
    def __init__(self, task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class DelegateTaskRunResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class FailJobItemRequest(_message.Message):
    __slots__ = ["error", "idempotency_key", "item_id", "job_id", "run_id"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    error: _types_pb2.TaskError
    idempotency_key: str
    item_id: str
    job_id: str
    run_id: str
    def __init__(self, job_id: _Optional[str] = ..., item_id: _Optional[str] = ..., run_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., error: _Optional[_Union[_types_pb2.TaskError, _Mapping]] = ...) -> None: ...

class FailJobItemResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class FailTaskRequest(_message.Message):
    __slots__ = ["checkpoint_refs", "error", "idempotency_key", "lease_token", "no_retry", "output_refs", "run_id", "task_id"]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NO_RETRY_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    error: _types_pb2.TaskError
    idempotency_key: str
    lease_token: str
    no_retry: bool
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    run_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., error: _Optional[_Union[_types_pb2.TaskError, _Mapping]] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., no_retry: bool = ..., lease_token: _Optional[str] = ...) -> None: ...

class FailTaskResponse(_message.Message):
    __slots__ = ["result", "status"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    status: _types_pb2.TaskStatus
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., status: _Optional[_Union[_types_pb2.TaskStatus, str]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ["job_id", "min_sequence"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    min_sequence: int
    def __init__(self, job_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ["job", "sequence"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    job: _types_pb2.Job
    sequence: int
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ["min_sequence", "task_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ["reverse_edges", "sequence", "task"]
    REVERSE_EDGES_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    reverse_edges: _containers.RepeatedCompositeFieldContainer[_types_pb2.Edge]
    sequence: int
    task: _types_pb2.Task
    def __init__(self, task: _Optional[_Union[_types_pb2.Task, _Mapping]] = ..., reverse_edges: _Optional[_Iterable[_Union[_types_pb2.Edge, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetTaskSnapshotRequest(_message.Message):
    __slots__ = ["max_tasks", "min_sequence", "session_id"]
    MAX_TASKS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    max_tasks: int
    min_sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., min_sequence: _Optional[int] = ..., max_tasks: _Optional[int] = ...) -> None: ...

class GetTaskSnapshotResponse(_message.Message):
    __slots__ = ["attempts", "blocked_tasks", "delivery_state", "sequence", "task_graph", "task_summary", "tasks", "truncated"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_TASKS_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TASK_GRAPH_FIELD_NUMBER: _ClassVar[int]
    TASK_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[_types_pb2.Attempt]
    blocked_tasks: _containers.RepeatedCompositeFieldContainer[BlockedTask]
    delivery_state: _containers.RepeatedCompositeFieldContainer[TaskDelivery]
    sequence: int
    task_graph: _containers.RepeatedCompositeFieldContainer[_types_pb2.Edge]
    task_summary: TaskSummary
    tasks: _containers.RepeatedCompositeFieldContainer[_types_pb2.Task]
    truncated: bool
    def __init__(self, task_summary: _Optional[_Union[TaskSummary, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[_types_pb2.Task, _Mapping]]] = ..., task_graph: _Optional[_Iterable[_Union[_types_pb2.Edge, _Mapping]]] = ..., attempts: _Optional[_Iterable[_Union[_types_pb2.Attempt, _Mapping]]] = ..., blocked_tasks: _Optional[_Iterable[_Union[BlockedTask, _Mapping]]] = ..., delivery_state: _Optional[_Iterable[_Union[TaskDelivery, _Mapping]]] = ..., sequence: _Optional[int] = ..., truncated: bool = ...) -> None: ...

class HeartbeatTaskRequest(_message.Message):
    __slots__ = ["lease_token", "lease_ttl", "run_id", "task_id"]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    lease_token: str
    lease_ttl: _duration_pb2.Duration
    run_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., run_id: _Optional[str] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_token: _Optional[str] = ...) -> None: ...

class HeartbeatTaskResponse(_message.Message):
    __slots__ = ["cancel_requested", "lease_expires_at", "pause_requested"]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    PAUSE_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: bool
    lease_expires_at: _timestamp_pb2.Timestamp
    pause_requested: bool
    def __init__(self, lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., cancel_requested: bool = ..., pause_requested: bool = ...) -> None: ...

class JobItemInput(_message.Message):
    __slots__ = ["fairness_key", "fairness_weight", "input_ref", "item_id", "priority"]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    fairness_key: str
    fairness_weight: float
    input_ref: str
    item_id: str
    priority: int
    def __init__(self, item_id: _Optional[str] = ..., input_ref: _Optional[str] = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class LinkTasksRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "relation", "target_id", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    relation: _types_pb2.EdgeRelation
    target_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., relation: _Optional[_Union[_types_pb2.EdgeRelation, str]] = ..., target_id: _Optional[str] = ..., reason: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class LinkTasksResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ["min_sequence", "page_size", "page_token", "session_id", "status", "task_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    page_size: int
    page_token: str
    session_id: str
    status: _types_pb2.JobStatus
    task_id: str
    def __init__(self, session_id: _Optional[str] = ..., task_id: _Optional[str] = ..., status: _Optional[_Union[_types_pb2.JobStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ["jobs", "next_page_token", "sequence"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Job]
    next_page_token: str
    sequence: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["min_sequence", "owner", "page_size", "page_token", "parent_task_id", "session_id", "status", "task_kind", "thread_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARENT_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TASK_KIND_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    owner: str
    page_size: int
    page_token: str
    parent_task_id: str
    session_id: str
    status: _types_pb2.TaskStatus
    task_kind: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., status: _Optional[_Union[_types_pb2.TaskStatus, str]] = ..., parent_task_id: _Optional[str] = ..., task_kind: _Optional[str] = ..., owner: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["next_page_token", "sequence", "tasks"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sequence: int
    tasks: _containers.RepeatedCompositeFieldContainer[_types_pb2.Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[_types_pb2.Task, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class PauseTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class PauseTaskResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class PollTaskRequest(_message.Message):
    __slots__ = ["lease_ttl", "task_kinds", "wait", "worker_id"]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    TASK_KINDS_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lease_ttl: _duration_pb2.Duration
    task_kinds: _containers.RepeatedScalarFieldContainer[str]
    wait: _duration_pb2.Duration
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., task_kinds: _Optional[_Iterable[str]] = ..., wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PollTaskResponse(_message.Message):
    __slots__ = ["attempt_id", "lease_expires_at", "lease_token", "result", "run_id", "task"]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    attempt_id: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_token: str
    result: _common_pb2.WriteResult
    run_id: str
    task: _types_pb2.Task
    def __init__(self, task: _Optional[_Union[_types_pb2.Task, _Mapping]] = ..., run_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., lease_token: _Optional[str] = ...) -> None: ...

class ReportJobItemRequest(_message.Message):
    __slots__ = ["idempotency_key", "item_id", "job_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    item_id: str
    job_id: str
    def __init__(self, job_id: _Optional[str] = ..., item_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class ReportJobItemResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ResumeTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ResumeTaskResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RetryJobItemRequest(_message.Message):
    __slots__ = ["idempotency_key", "item_id", "job_id", "reason"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    item_id: str
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., item_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RetryJobItemResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RetryTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "run_id", "task_id", "worker"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    run_id: str
    task_id: str
    worker: _types_pb2.WorkerRef
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ..., worker: _Optional[_Union[_types_pb2.WorkerRef, _Mapping]] = ..., run_id: _Optional[str] = ...) -> None: ...

class RetryTaskResponse(_message.Message):
    __slots__ = ["result", "run_id"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    run_id: str
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., run_id: _Optional[str] = ...) -> None: ...

class StartJobItemRequest(_message.Message):
    __slots__ = ["idempotency_key", "item_id", "job_id", "run_id", "thread_id", "worker_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    item_id: str
    job_id: str
    run_id: str
    thread_id: str
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., item_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., run_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., worker_id: _Optional[str] = ...) -> None: ...

class StartJobItemResponse(_message.Message):
    __slots__ = ["attempt", "result", "run_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    result: _common_pb2.WriteResult
    run_id: str
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., run_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class StartTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "input_refs", "lease_ttl", "run_id", "task_id", "worker"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    input_refs: _containers.RepeatedScalarFieldContainer[str]
    lease_ttl: _duration_pb2.Duration
    run_id: str
    task_id: str
    worker: _types_pb2.WorkerRef
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., run_id: _Optional[str] = ..., worker: _Optional[_Union[_types_pb2.WorkerRef, _Mapping]] = ..., input_refs: _Optional[_Iterable[str]] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class StartTaskResponse(_message.Message):
    __slots__ = ["attempt_id", "lease_expires_at", "lease_token", "result", "run_id"]
    ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    attempt_id: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_token: str
    result: _common_pb2.WriteResult
    run_id: str
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., run_id: _Optional[str] = ..., attempt_id: _Optional[str] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., lease_token: _Optional[str] = ...) -> None: ...

class TaskDelivery(_message.Message):
    __slots__ = ["delivery_state", "task_id"]
    DELIVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    delivery_state: _types_pb2.DeliveryState
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., delivery_state: _Optional[_Union[_types_pb2.DeliveryState, str]] = ...) -> None: ...

class TaskSummary(_message.Message):
    __slots__ = ["active", "blocked", "failed", "lost", "recent_terminal_task_ids", "terminal", "waiting"]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    RECENT_TERMINAL_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    active: int
    blocked: int
    failed: int
    lost: int
    recent_terminal_task_ids: _containers.RepeatedScalarFieldContainer[str]
    terminal: int
    waiting: int
    def __init__(self, active: _Optional[int] = ..., terminal: _Optional[int] = ..., failed: _Optional[int] = ..., lost: _Optional[int] = ..., waiting: _Optional[int] = ..., blocked: _Optional[int] = ..., recent_terminal_task_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class UnlinkTasksRequest(_message.Message):
    __slots__ = ["idempotency_key", "reason", "relation", "target_id", "task_id"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    reason: str
    relation: _types_pb2.EdgeRelation
    target_id: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., relation: _Optional[_Union[_types_pb2.EdgeRelation, str]] = ..., target_id: _Optional[str] = ..., reason: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class UnlinkTasksResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class UpdateTaskRequest(_message.Message):
    __slots__ = ["idempotency_key", "spec", "submit", "task_id", "update_fields"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    spec: _types_pb2.TaskSpec
    submit: bool
    task_id: str
    update_fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, task_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., spec: _Optional[_Union[_types_pb2.TaskSpec, _Mapping]] = ..., update_fields: _Optional[_Iterable[str]] = ..., submit: bool = ...) -> None: ...

class UpdateTaskResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.WriteResult
    def __init__(self, result: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...
