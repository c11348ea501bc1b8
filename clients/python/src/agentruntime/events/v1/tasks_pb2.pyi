from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.tasks.v1 import types_pb2 as _types_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobCreated(_message.Message):
    __slots__ = ["idempotency_key", "job"]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    idempotency_key: str
    job: _types_pb2.Job
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class JobEnded(_message.Message):
    __slots__ = ["counts", "reason"]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    counts: _types_pb2.JobCounts
    reason: str
    def __init__(self, counts: _Optional[_Union[_types_pb2.JobCounts, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class JobItemCompleted(_message.Message):
    __slots__ = ["output_ref"]
    OUTPUT_REF_FIELD_NUMBER: _ClassVar[int]
    output_ref: _common_pb2.OutputRef
    def __init__(self, output_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ...) -> None: ...

class JobItemFailed(_message.Message):
    __slots__ = ["error", "retryable"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    error: _types_pb2.TaskError
    retryable: bool
    def __init__(self, error: _Optional[_Union[_types_pb2.TaskError, _Mapping]] = ..., retryable: bool = ...) -> None: ...

class JobItemStarted(_message.Message):
    __slots__ = ["attempt", "thread_id", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    thread_id: str
    worker_id: str
    def __init__(self, thread_id: _Optional[str] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ...) -> None: ...

class JobProgressed(_message.Message):
    __slots__ = ["counts", "reason", "reported_item_ids", "requeued_item_ids", "status"]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REPORTED_ITEM_IDS_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_ITEM_IDS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    counts: _types_pb2.JobCounts
    reason: str
    reported_item_ids: _containers.RepeatedScalarFieldContainer[str]
    requeued_item_ids: _containers.RepeatedScalarFieldContainer[str]
    status: _types_pb2.JobStatus
    def __init__(self, counts: _Optional[_Union[_types_pb2.JobCounts, _Mapping]] = ..., status: _Optional[_Union[_types_pb2.JobStatus, str]] = ..., requeued_item_ids: _Optional[_Iterable[str]] = ..., reported_item_ids: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class JobStarted(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class TaskAttemptCompleted(_message.Message):
    __slots__ = ["checkpoint_refs", "output_refs", "summary"]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    summary: str
    def __init__(self, summary: _Optional[str] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskAttemptFailed(_message.Message):
    __slots__ = ["carried_by", "checkpoint_refs", "error", "output_refs", "status"]
    CARRIED_BY_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_REFS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    carried_by: _types_pb2.RunTurn
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    error: _types_pb2.TaskError
    output_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    status: _types_pb2.RunStatus
    def __init__(self, status: _Optional[_Union[_types_pb2.RunStatus, str]] = ..., error: _Optional[_Union[_types_pb2.TaskError, _Mapping]] = ..., output_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., carried_by: _Optional[_Union[_types_pb2.RunTurn, _Mapping]] = ...) -> None: ...

class TaskAttemptStarted(_message.Message):
    __slots__ = ["attempt"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    attempt: _types_pb2.Attempt
    def __init__(self, attempt: _Optional[_Union[_types_pb2.Attempt, _Mapping]] = ..., **kwargs) -> None: ...

class TaskCancelRequested(_message.Message):
    __slots__ = ["carried_by", "propagate", "reason", "requested_by", "to"]
    CARRIED_BY_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    PROPAGATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    carried_by: _types_pb2.RunTurn
    propagate: bool
    reason: str
    requested_by: str
    to: _types_pb2.TaskStatus
    def __init__(self, to: _Optional[_Union[_types_pb2.TaskStatus, str]] = ..., reason: _Optional[str] = ..., requested_by: _Optional[str] = ..., propagate: bool = ..., carried_by: _Optional[_Union[_types_pb2.RunTurn, _Mapping]] = ..., **kwargs) -> None: ...

class TaskCompleted(_message.Message):
    __slots__ = ["artifacts", "evidence_refs", "native_status", "summary"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedScalarFieldContainer[str]
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    native_status: str
    summary: str
    def __init__(self, summary: _Optional[str] = ..., artifacts: _Optional[_Iterable[str]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., native_status: _Optional[str] = ..., **kwargs) -> None: ...

class TaskCreated(_message.Message):
    __slots__ = ["fair_tag", "idempotency_key", "task"]
    FAIR_TAG_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    fair_tag: float
    idempotency_key: str
    task: _types_pb2.Task
    def __init__(self, task: _Optional[_Union[_types_pb2.Task, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., fair_tag: _Optional[float] = ...) -> None: ...

class TaskDelegated(_message.Message):
    __slots__ = ["reason", "relation", "target_id", "target_kind", "turn"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_KIND_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    reason: str
    relation: _types_pb2.EdgeRelation
    target_id: str
    target_kind: str
    turn: _types_pb2.RunTurn
    def __init__(self, relation: _Optional[_Union[_types_pb2.EdgeRelation, str]] = ..., target_id: _Optional[str] = ..., target_kind: _Optional[str] = ..., reason: _Optional[str] = ..., turn: _Optional[_Union[_types_pb2.RunTurn, _Mapping]] = ...) -> None: ...

class TaskDependencyUpdated(_message.Message):
    __slots__ = ["edge", "status_reason", "to"]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    STATUS_REASON_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    edge: _types_pb2.Edge
    status_reason: str
    to: _types_pb2.TaskStatus
    def __init__(self, edge: _Optional[_Union[_types_pb2.Edge, _Mapping]] = ..., to: _Optional[_Union[_types_pb2.TaskStatus, str]] = ..., status_reason: _Optional[str] = ...) -> None: ...

class TaskProgressed(_message.Message):
    __slots__ = ["artifacts", "checkpoint_refs", "evidence_refs", "progress", "to"]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_REFS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    artifacts: _containers.RepeatedScalarFieldContainer[str]
    checkpoint_refs: _containers.RepeatedScalarFieldContainer[str]
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    progress: _types_pb2.Progress
    to: _types_pb2.TaskStatus
    def __init__(self, progress: _Optional[_Union[_types_pb2.Progress, _Mapping]] = ..., artifacts: _Optional[_Iterable[str]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., checkpoint_refs: _Optional[_Iterable[str]] = ..., to: _Optional[_Union[_types_pb2.TaskStatus, str]] = ...) -> None: ...

class TaskTransition(_message.Message):
    __slots__ = ["error", "native_status", "not_before", "reason", "to"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    NATIVE_STATUS_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    error: _types_pb2.TaskError
    native_status: str
    not_before: _timestamp_pb2.Timestamp
    reason: str
    to: _types_pb2.TaskStatus
    def __init__(self, to: _Optional[_Union[_types_pb2.TaskStatus, str]] = ..., reason: _Optional[str] = ..., native_status: _Optional[str] = ..., error: _Optional[_Union[_types_pb2.TaskError, _Mapping]] = ..., not_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., **kwargs) -> None: ...

class TaskUpdated(_message.Message):
    __slots__ = ["changed_fields", "spec"]
    CHANGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    changed_fields: _containers.RepeatedScalarFieldContainer[str]
    spec: _types_pb2.TaskSpec
    def __init__(self, spec: _Optional[_Union[_types_pb2.TaskSpec, _Mapping]] = ..., changed_fields: _Optional[_Iterable[str]] = ...) -> None: ...
