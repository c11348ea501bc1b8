from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.control.v1 import processes_pb2 as _processes_pb2
from agentruntime.control.v1 import status_pb2 as _status_pb2
from agentruntime.control.v1 import webhooks_pb2 as _webhooks_pb2
from agentruntime.events.v1 import control_pb2 as _control_pb2
from agentruntime.events.v1 import envelope_pb2 as _envelope_pb2
from agentruntime.routing.v1 import routing_pb2 as _routing_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BUSY_POLICY_ENQUEUE: BusyPolicy
BUSY_POLICY_INTERRUPT: BusyPolicy
BUSY_POLICY_REJECT: BusyPolicy
BUSY_POLICY_STEER: BusyPolicy
BUSY_POLICY_UNSPECIFIED: BusyPolicy
CREATE_POLICY_CREATE_IF_MISSING: CreatePolicy
CREATE_POLICY_REQUIRE_EXISTING: CreatePolicy
CREATE_POLICY_UNSPECIFIED: CreatePolicy
DESCRIPTOR: _descriptor.FileDescriptor
QUEUE_POLICY_CANCEL: QueuePolicy
QUEUE_POLICY_PRESERVE: QueuePolicy
QUEUE_POLICY_UNSPECIFIED: QueuePolicy
START_FROM_NOW: StartFrom
START_FROM_SEQUENCE: StartFrom
START_FROM_SNAPSHOT: StartFrom
START_FROM_UNSPECIFIED: StartFrom

class AckEventsRequest(_message.Message):
    __slots__ = ["channel_id", "sequence", "session_id"]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    sequence: int
    session_id: str
    def __init__(self, channel_id: _Optional[str] = ..., session_id: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class AckEventsResponse(_message.Message):
    __slots__ = ["channel", "sequence"]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    channel: Channel
    sequence: int
    def __init__(self, channel: _Optional[_Union[Channel, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class Action(_message.Message):
    __slots__ = ["action_id", "action_type", "context", "decision", "decision_on_timeout", "decisions", "expires_at", "json_schema", "payload_json", "prompt", "requested_at", "requested_by", "requester_role", "requester_subject", "resolved_at", "responder", "sequence", "session_id", "status", "step_id", "thread_id", "tool_call_id", "turn_id"]
    class ContextEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_ROLE_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_AT_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    action_type: str
    context: _containers.ScalarMap[str, str]
    decision: str
    decision_on_timeout: str
    decisions: _containers.RepeatedScalarFieldContainer[str]
    expires_at: _timestamp_pb2.Timestamp
    json_schema: str
    payload_json: str
    prompt: str
    requested_at: _timestamp_pb2.Timestamp
    requested_by: str
    requester_role: str
    requester_subject: str
    resolved_at: _timestamp_pb2.Timestamp
    responder: str
    sequence: int
    session_id: str
    status: _status_pb2.ActionStatus
    step_id: str
    thread_id: str
    tool_call_id: str
    turn_id: str
    def __init__(self, action_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., action_type: _Optional[str] = ..., prompt: _Optional[str] = ..., json_schema: _Optional[str] = ..., decisions: _Optional[_Iterable[str]] = ..., decision_on_timeout: _Optional[str] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., context: _Optional[_Mapping[str, str]] = ..., requested_by: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.ActionStatus, str]] = ..., decision: _Optional[str] = ..., payload_json: _Optional[str] = ..., responder: _Optional[str] = ..., requested_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., resolved_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., sequence: _Optional[int] = ..., requester_subject: _Optional[str] = ..., requester_role: _Optional[str] = ...) -> None: ...

class Channel(_message.Message):
    __slots__ = ["channel_id", "last_acked_sequence", "peer", "sequence", "session_id", "status"]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ACKED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    last_acked_sequence: int
    peer: str
    sequence: int
    session_id: str
    status: _status_pb2.ChannelStatus
    def __init__(self, channel_id: _Optional[str] = ..., session_id: _Optional[str] = ..., peer: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.ChannelStatus, str]] = ..., last_acked_sequence: _Optional[int] = ..., sequence: _Optional[int] = ...) -> None: ...

class ClaimTurnRequest(_message.Message):
    __slots__ = ["lease_ttl", "session_id", "wait", "worker_id"]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lease_ttl: _duration_pb2.Duration
    session_id: str
    wait: _duration_pb2.Duration
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., session_id: _Optional[str] = ..., wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClaimTurnResponse(_message.Message):
    __slots__ = ["checkpoint_sequence", "checkpoint_uri", "lease_expires_at", "lease_token", "run_id", "sequence", "turn"]
    CHECKPOINT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_URI_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    checkpoint_sequence: int
    checkpoint_uri: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_token: str
    run_id: str
    sequence: int
    turn: Turn
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ..., run_id: _Optional[str] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ..., lease_token: _Optional[str] = ..., checkpoint_uri: _Optional[str] = ..., checkpoint_sequence: _Optional[int] = ...) -> None: ...

class CloseSubagentRequest(_message.Message):
    __slots__ = ["reason", "session_id", "subagent_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    session_id: str
    subagent_id: str
    def __init__(self, session_id: _Optional[str] = ..., subagent_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CloseSubagentResponse(_message.Message):
    __slots__ = ["sequence", "subagent"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    subagent: Subagent
    def __init__(self, subagent: _Optional[_Union[Subagent, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class Gap(_message.Message):
    __slots__ = ["first_available_sequence", "requested_sequence"]
    FIRST_AVAILABLE_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    first_available_sequence: int
    requested_sequence: int
    def __init__(self, requested_sequence: _Optional[int] = ..., first_available_sequence: _Optional[int] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ["history_cursor", "history_limit", "min_sequence", "session_id"]
    HISTORY_CURSOR_FIELD_NUMBER: _ClassVar[int]
    HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    history_cursor: str
    history_limit: int
    min_sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., min_sequence: _Optional[int] = ..., history_limit: _Optional[int] = ..., history_cursor: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ["history", "history_cursor", "sequence", "session", "threads"]
    HISTORY_CURSOR_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    history: _containers.RepeatedCompositeFieldContainer[Turn]
    history_cursor: str
    sequence: int
    session: Session
    threads: _containers.RepeatedCompositeFieldContainer[ThreadRead]
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., threads: _Optional[_Iterable[_Union[ThreadRead, _Mapping]]] = ..., history: _Optional[_Iterable[_Union[Turn, _Mapping]]] = ..., history_cursor: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetThreadReadRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id", "thread_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetThreadReadResponse(_message.Message):
    __slots__ = ["sequence", "thread"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    thread: ThreadRead
    def __init__(self, thread: _Optional[_Union[ThreadRead, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetToolInventoryRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetToolInventoryResponse(_message.Message):
    __slots__ = ["sequence", "tools"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    tools: _containers.RepeatedCompositeFieldContainer[_control_pb2.ToolSpec]
    def __init__(self, tools: _Optional[_Iterable[_Union[_control_pb2.ToolSpec, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetTurnAttemptsRequest(_message.Message):
    __slots__ = ["min_sequence", "turn_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetTurnAttemptsResponse(_message.Message):
    __slots__ = ["attempts", "sequence"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    attempts: TurnAttempts
    sequence: int
    def __init__(self, attempts: _Optional[_Union[TurnAttempts, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ["sequence", "time"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    time: _timestamp_pb2.Timestamp
    def __init__(self, time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class HeartbeatTurnRequest(_message.Message):
    __slots__ = ["lease_token", "lease_ttl", "run_id", "turn_id"]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_TTL_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    lease_token: str
    lease_ttl: _duration_pb2.Duration
    run_id: str
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ..., run_id: _Optional[str] = ..., lease_ttl: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., lease_token: _Optional[str] = ...) -> None: ...

class HeartbeatTurnResponse(_message.Message):
    __slots__ = ["interrupt_requested", "lease_expires_at", "status"]
    INTERRUPT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    interrupt_requested: bool
    lease_expires_at: _timestamp_pb2.Timestamp
    status: _status_pb2.TurnStatus
    def __init__(self, lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., status: _Optional[_Union[_status_pb2.TurnStatus, str]] = ..., interrupt_requested: bool = ...) -> None: ...

class Incident(_message.Message):
    __slots__ = ["category", "message", "sequence", "turn_id", "type"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    sequence: int
    turn_id: str
    type: str
    def __init__(self, type: _Optional[str] = ..., turn_id: _Optional[str] = ..., category: _Optional[str] = ..., message: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class InterruptTurnRequest(_message.Message):
    __slots__ = ["queue_policy", "reason", "session_id", "thread_id", "turn_id"]
    QUEUE_POLICY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    queue_policy: QueuePolicy
    reason: str
    session_id: str
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., reason: _Optional[str] = ..., queue_policy: _Optional[_Union[QueuePolicy, str]] = ...) -> None: ...

class InterruptTurnResponse(_message.Message):
    __slots__ = ["accepted", "sequence", "turn"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    sequence: int
    turn: Turn
    def __init__(self, accepted: bool = ..., turn: _Optional[_Union[Turn, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["min_sequence", "page_size", "page_token"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["next_page_token", "sequence", "sessions"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sequence: int
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListSubagentsRequest(_message.Message):
    __slots__ = ["min_sequence", "recursive", "session_id", "thread_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    recursive: bool
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., recursive: bool = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ListSubagentsResponse(_message.Message):
    __slots__ = ["sequence", "subagents"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    def __init__(self, subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListTurnsRequest(_message.Message):
    __slots__ = ["after_turn_id", "min_sequence", "page_size", "page_token"]
    AFTER_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    after_turn_id: str
    min_sequence: int
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., min_sequence: _Optional[int] = ..., after_turn_id: _Optional[str] = ...) -> None: ...

class ListTurnsResponse(_message.Message):
    __slots__ = ["next_page_token", "sequence", "total_size", "turns"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sequence: int
    total_size: int
    turns: _containers.RepeatedCompositeFieldContainer[Turn]
    def __init__(self, turns: _Optional[_Iterable[_Union[Turn, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., sequence: _Optional[int] = ..., total_size: _Optional[int] = ...) -> None: ...

class PromoteQueuedTurnRequest(_message.Message):
    __slots__ = ["queued_turn_id", "session_id", "thread_id"]
    QUEUED_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    queued_turn_id: str
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., queued_turn_id: _Optional[str] = ...) -> None: ...

class PromoteQueuedTurnResponse(_message.Message):
    __slots__ = ["queued_turn_ids", "sequence"]
    QUEUED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    queued_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    def __init__(self, queued_turn_ids: _Optional[_Iterable[str]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ReadOutputRequest(_message.Message):
    __slots__ = ["limit", "offset", "uri"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    limit: int
    offset: int
    uri: str
    def __init__(self, uri: _Optional[str] = ..., offset: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadOutputResponse(_message.Message):
    __slots__ = ["data", "next_offset", "sha256", "size_bytes"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    next_offset: int
    sha256: str
    size_bytes: int
    def __init__(self, data: _Optional[bytes] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., next_offset: _Optional[int] = ...) -> None: ...

class ReconnectChannelRequest(_message.Message):
    __slots__ = ["channel_id", "peer", "resume_token", "session_id"]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    peer: str
    resume_token: str
    session_id: str
    def __init__(self, channel_id: _Optional[str] = ..., session_id: _Optional[str] = ..., peer: _Optional[str] = ..., resume_token: _Optional[str] = ...) -> None: ...

class ReconnectChannelResponse(_message.Message):
    __slots__ = ["channel", "resume_from_sequence", "sequence"]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    RESUME_FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    channel: Channel
    resume_from_sequence: int
    sequence: int
    def __init__(self, channel: _Optional[_Union[Channel, _Mapping]] = ..., resume_from_sequence: _Optional[int] = ..., sequence: _Optional[int] = ...) -> None: ...

class Refusal(_message.Message):
    __slots__ = ["action_id", "cause", "command", "evaluation_id", "hook_run_ids", "paths", "reason", "rule_refs", "sequence", "tool", "tool_call_id", "turn_id", "violation"]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULE_REFS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    cause: str
    command: str
    evaluation_id: str
    hook_run_ids: _containers.RepeatedScalarFieldContainer[str]
    paths: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    rule_refs: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    tool: str
    tool_call_id: str
    turn_id: str
    violation: str
    def __init__(self, cause: _Optional[str] = ..., reason: _Optional[str] = ..., rule_refs: _Optional[_Iterable[str]] = ..., hook_run_ids: _Optional[_Iterable[str]] = ..., tool: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., command: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., action_id: _Optional[str] = ..., violation: _Optional[str] = ..., turn_id: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class RegisterToolsRequest(_message.Message):
    __slots__ = ["facts", "session_id", "tools", "worker_id"]
    class FactsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FACTS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.ScalarMap[str, str]
    session_id: str
    tools: _containers.RepeatedCompositeFieldContainer[_control_pb2.ToolSpec]
    worker_id: str
    def __init__(self, session_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_control_pb2.ToolSpec, _Mapping]]] = ..., facts: _Optional[_Mapping[str, str]] = ...) -> None: ...

class RegisterToolsResponse(_message.Message):
    __slots__ = ["sequence"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class RemoveQueuedTurnRequest(_message.Message):
    __slots__ = ["queued_turn_id", "session_id", "thread_id"]
    QUEUED_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    queued_turn_id: str
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., queued_turn_id: _Optional[str] = ...) -> None: ...

class RemoveQueuedTurnResponse(_message.Message):
    __slots__ = ["queued_turn_ids", "sequence"]
    QUEUED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    queued_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    def __init__(self, queued_turn_ids: _Optional[_Iterable[str]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ReportEventsRequest(_message.Message):
    __slots__ = ["events", "lease_token", "run_id"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.RuntimeEvent]
    lease_token: str
    run_id: str
    def __init__(self, events: _Optional[_Iterable[_Union[_envelope_pb2.RuntimeEvent, _Mapping]]] = ..., run_id: _Optional[str] = ..., lease_token: _Optional[str] = ...) -> None: ...

class ReportEventsResponse(_message.Message):
    __slots__ = ["event_ids", "sequence"]
    EVENT_IDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    event_ids: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    def __init__(self, event_ids: _Optional[_Iterable[str]] = ..., sequence: _Optional[int] = ...) -> None: ...

class RequestActionRequest(_message.Message):
    __slots__ = ["action_id", "action_type", "context", "decision_on_timeout", "decisions", "json_schema", "prompt", "session_id", "step_id", "thread_id", "timeout", "tool_call_id", "turn_id"]
    class ContextEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    action_type: str
    context: _containers.ScalarMap[str, str]
    decision_on_timeout: str
    decisions: _containers.RepeatedScalarFieldContainer[str]
    json_schema: str
    prompt: str
    session_id: str
    step_id: str
    thread_id: str
    timeout: _duration_pb2.Duration
    tool_call_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., action_id: _Optional[str] = ..., action_type: _Optional[str] = ..., prompt: _Optional[str] = ..., json_schema: _Optional[str] = ..., decisions: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., decision_on_timeout: _Optional[str] = ..., context: _Optional[_Mapping[str, str]] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class RequestActionResponse(_message.Message):
    __slots__ = ["action", "sequence"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    action: Action
    sequence: int
    def __init__(self, action: _Optional[_Union[Action, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class RespondActionRequest(_message.Message):
    __slots__ = ["action_id", "decision", "payload_json"]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    decision: str
    payload_json: str
    def __init__(self, action_id: _Optional[str] = ..., decision: _Optional[str] = ..., payload_json: _Optional[str] = ...) -> None: ...

class RespondActionResponse(_message.Message):
    __slots__ = ["action", "already_resolved", "sequence"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ALREADY_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    action: Action
    already_resolved: bool
    sequence: int
    def __init__(self, action: _Optional[_Union[Action, _Mapping]] = ..., already_resolved: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class ResumeSubagentRequest(_message.Message):
    __slots__ = ["session_id", "subagent_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    subagent_id: str
    def __init__(self, session_id: _Optional[str] = ..., subagent_id: _Optional[str] = ...) -> None: ...

class ResumeSubagentResponse(_message.Message):
    __slots__ = ["sequence", "subagent"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    subagent: Subagent
    def __init__(self, subagent: _Optional[_Union[Subagent, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ResumeThreadRequest(_message.Message):
    __slots__ = ["resume_token", "session_id", "thread_id"]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    resume_token: str
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., resume_token: _Optional[str] = ...) -> None: ...

class ResumeThreadResponse(_message.Message):
    __slots__ = ["sequence", "thread"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    thread: ThreadRead
    def __init__(self, thread: _Optional[_Union[ThreadRead, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class SendSubagentInputRequest(_message.Message):
    __slots__ = ["input", "session_id", "subagent_id"]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    input: _containers.RepeatedCompositeFieldContainer[_control_pb2.InputPart]
    session_id: str
    subagent_id: str
    def __init__(self, session_id: _Optional[str] = ..., subagent_id: _Optional[str] = ..., input: _Optional[_Iterable[_Union[_control_pb2.InputPart, _Mapping]]] = ...) -> None: ...

class SendSubagentInputResponse(_message.Message):
    __slots__ = ["sequence", "turn"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    turn: Turn
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ["created_at", "created_by", "metadata", "sequence", "session_id", "thread_ids", "title", "turn_count", "updated_at"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_IDS_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    metadata: _containers.ScalarMap[str, str]
    sequence: int
    session_id: str
    thread_ids: _containers.RepeatedScalarFieldContainer[str]
    title: str
    turn_count: int
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, session_id: _Optional[str] = ..., title: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., created_by: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., thread_ids: _Optional[_Iterable[str]] = ..., turn_count: _Optional[int] = ..., sequence: _Optional[int] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ["sequence", "session", "thread"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    session: Session
    thread: ThreadRead
    def __init__(self, thread: _Optional[_Union[ThreadRead, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class SpawnSubagentRequest(_message.Message):
    __slots__ = ["agent", "input", "isolation", "model_policy", "objective", "parent_thread_id", "parent_turn_id", "role", "session_id", "subagent_id"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_POLICY_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PARENT_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    agent: str
    input: _containers.RepeatedCompositeFieldContainer[_control_pb2.InputPart]
    isolation: str
    model_policy: str
    objective: str
    parent_thread_id: str
    parent_turn_id: str
    role: str
    session_id: str
    subagent_id: str
    def __init__(self, session_id: _Optional[str] = ..., parent_thread_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., subagent_id: _Optional[str] = ..., role: _Optional[str] = ..., isolation: _Optional[str] = ..., model_policy: _Optional[str] = ..., objective: _Optional[str] = ..., input: _Optional[_Iterable[_Union[_control_pb2.InputPart, _Mapping]]] = ..., agent: _Optional[str] = ...) -> None: ...

class SpawnSubagentResponse(_message.Message):
    __slots__ = ["sequence", "subagent"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    subagent: Subagent
    def __init__(self, subagent: _Optional[_Union[Subagent, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class StoreOutputRequest(_message.Message):
    __slots__ = ["content", "media_type", "process_id", "redacted", "tool_call_id", "truncated", "turn_id"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    media_type: str
    process_id: str
    redacted: bool
    tool_call_id: str
    truncated: bool
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., process_id: _Optional[str] = ..., media_type: _Optional[str] = ..., content: _Optional[bytes] = ..., truncated: bool = ..., redacted: bool = ...) -> None: ...

class StoreOutputResponse(_message.Message):
    __slots__ = ["output"]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    output: _common_pb2.OutputRef
    def __init__(self, output: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ...) -> None: ...

class Subagent(_message.Message):
    __slots__ = ["agent", "child_thread_id", "depth", "isolation", "model_policy", "objective", "parent_thread_id", "parent_turn_id", "peer_action_id", "peer_context_id", "peer_state", "peer_task_id", "role", "sequence", "session_id", "status", "subagent_id", "summary"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_POLICY_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    PARENT_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PEER_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    PEER_CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    PEER_STATE_FIELD_NUMBER: _ClassVar[int]
    PEER_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    agent: str
    child_thread_id: str
    depth: int
    isolation: str
    model_policy: str
    objective: str
    parent_thread_id: str
    parent_turn_id: str
    peer_action_id: str
    peer_context_id: str
    peer_state: str
    peer_task_id: str
    role: str
    sequence: int
    session_id: str
    status: _status_pb2.SubagentStatus
    subagent_id: str
    summary: str
    def __init__(self, subagent_id: _Optional[str] = ..., session_id: _Optional[str] = ..., parent_thread_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., child_thread_id: _Optional[str] = ..., role: _Optional[str] = ..., isolation: _Optional[str] = ..., model_policy: _Optional[str] = ..., objective: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.SubagentStatus, str]] = ..., summary: _Optional[str] = ..., depth: _Optional[int] = ..., sequence: _Optional[int] = ..., agent: _Optional[str] = ..., peer_task_id: _Optional[str] = ..., peer_context_id: _Optional[str] = ..., peer_state: _Optional[str] = ..., peer_action_id: _Optional[str] = ...) -> None: ...

class SubmitTurnRequest(_message.Message):
    __slots__ = ["busy_policy", "create_policy", "expected_active_turn_id", "fairness_key", "fairness_weight", "idempotency_key", "input", "metadata", "options", "priority", "session_id", "session_title", "thread_id", "turn_id"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class OptionsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUSY_POLICY_FIELD_NUMBER: _ClassVar[int]
    CREATE_POLICY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_ACTIVE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TITLE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    busy_policy: BusyPolicy
    create_policy: CreatePolicy
    expected_active_turn_id: str
    fairness_key: str
    fairness_weight: float
    idempotency_key: str
    input: _containers.RepeatedCompositeFieldContainer[_control_pb2.InputPart]
    metadata: _containers.ScalarMap[str, str]
    options: _containers.ScalarMap[str, str]
    priority: int
    session_id: str
    session_title: str
    thread_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., input: _Optional[_Iterable[_Union[_control_pb2.InputPart, _Mapping]]] = ..., options: _Optional[_Mapping[str, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., create_policy: _Optional[_Union[CreatePolicy, str]] = ..., busy_policy: _Optional[_Union[BusyPolicy, str]] = ..., expected_active_turn_id: _Optional[str] = ..., session_title: _Optional[str] = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class SubmitTurnResponse(_message.Message):
    __slots__ = ["deduplicated", "sequence", "turn"]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    deduplicated: bool
    sequence: int
    turn: Turn
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ..., deduplicated: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class SubscribeEventsRequest(_message.Message):
    __slots__ = ["channel_id", "from_sequence", "heartbeat", "resume_cursor", "session_id", "start", "task_id", "thread_id", "type_prefixes"]
    CHANNEL_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    RESUME_CURSOR_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_PREFIXES_FIELD_NUMBER: _ClassVar[int]
    channel_id: str
    from_sequence: int
    heartbeat: _duration_pb2.Duration
    resume_cursor: str
    session_id: str
    start: StartFrom
    task_id: str
    thread_id: str
    type_prefixes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., task_id: _Optional[str] = ..., type_prefixes: _Optional[_Iterable[str]] = ..., start: _Optional[_Union[StartFrom, str]] = ..., from_sequence: _Optional[int] = ..., heartbeat: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., channel_id: _Optional[str] = ..., resume_cursor: _Optional[str] = ...) -> None: ...

class SubscribeEventsResponse(_message.Message):
    __slots__ = ["cursor", "event", "gap", "heartbeat", "snapshot"]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    event: _envelope_pb2.RuntimeEvent
    gap: Gap
    heartbeat: Heartbeat
    snapshot: Snapshot
    def __init__(self, event: _Optional[_Union[_envelope_pb2.RuntimeEvent, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ..., gap: _Optional[_Union[Gap, _Mapping]] = ..., cursor: _Optional[str] = ...) -> None: ...

class Summary(_message.Message):
    __slots__ = ["facts", "sequence", "state"]
    class FactsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FACTS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.ScalarMap[str, str]
    sequence: int
    state: _common_pb2.FactState
    def __init__(self, state: _Optional[_Union[_common_pb2.FactState, str]] = ..., facts: _Optional[_Mapping[str, str]] = ..., sequence: _Optional[int] = ...) -> None: ...

class ThreadRead(_message.Message):
    __slots__ = ["active_turn", "active_turn_id", "compaction_summary_refs", "created_at", "diagnostics", "evidence_refs", "incidents", "last_outcome", "last_turn_id", "parent_thread_id", "parent_turn_id", "pending_actions", "permission", "queued_turn_ids", "refusals", "routing", "routing_limit", "sequence", "session_id", "status", "subagent_id", "task_ids", "tasks", "thread_id", "title", "turn_count", "updated_at"]
    class DiagnosticsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTIVE_TURN_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_SUMMARY_REFS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_REFS_FIELD_NUMBER: _ClassVar[int]
    INCIDENTS_FIELD_NUMBER: _ClassVar[int]
    LAST_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    LAST_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    QUEUED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_FIELD_NUMBER: _ClassVar[int]
    ROUTING_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    active_turn: Turn
    active_turn_id: str
    compaction_summary_refs: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    diagnostics: _containers.ScalarMap[str, str]
    evidence_refs: _containers.RepeatedScalarFieldContainer[str]
    incidents: _containers.RepeatedCompositeFieldContainer[Incident]
    last_outcome: _status_pb2.TurnStatus
    last_turn_id: str
    parent_thread_id: str
    parent_turn_id: str
    pending_actions: _containers.RepeatedCompositeFieldContainer[Action]
    permission: Summary
    queued_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    refusals: _containers.RepeatedCompositeFieldContainer[Refusal]
    routing: Summary
    routing_limit: _routing_pb2.RoutingLimitSummary
    sequence: int
    session_id: str
    status: _status_pb2.ThreadStatus
    subagent_id: str
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    tasks: Summary
    thread_id: str
    title: str
    turn_count: int
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.ThreadStatus, str]] = ..., active_turn_id: _Optional[str] = ..., active_turn: _Optional[_Union[Turn, _Mapping]] = ..., queued_turn_ids: _Optional[_Iterable[str]] = ..., pending_actions: _Optional[_Iterable[_Union[Action, _Mapping]]] = ..., last_outcome: _Optional[_Union[_status_pb2.TurnStatus, str]] = ..., last_turn_id: _Optional[str] = ..., incidents: _Optional[_Iterable[_Union[Incident, _Mapping]]] = ..., diagnostics: _Optional[_Mapping[str, str]] = ..., parent_thread_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., subagent_id: _Optional[str] = ..., task_ids: _Optional[_Iterable[str]] = ..., routing: _Optional[_Union[Summary, _Mapping]] = ..., permission: _Optional[_Union[Summary, _Mapping]] = ..., tasks: _Optional[_Union[Summary, _Mapping]] = ..., evidence_refs: _Optional[_Iterable[str]] = ..., title: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., turn_count: _Optional[int] = ..., compaction_summary_refs: _Optional[_Iterable[str]] = ..., sequence: _Optional[int] = ..., routing_limit: _Optional[_Union[_routing_pb2.RoutingLimitSummary, _Mapping]] = ..., refusals: _Optional[_Iterable[_Union[Refusal, _Mapping]]] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ["admission", "ended_at", "fairness_key", "fairness_weight", "idempotency_key", "input", "metadata", "options", "outcome_category", "outcome_message", "parked", "parked_call_ids", "parked_step_id", "priority", "sequence", "session_id", "span_id", "started_at", "status", "steered_into", "submitted_at", "submitted_sequence", "thread_id", "trace_id", "turn_id"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class OptionsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARKED_CALL_IDS_FIELD_NUMBER: _ClassVar[int]
    PARKED_FIELD_NUMBER: _ClassVar[int]
    PARKED_STEP_ID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STEERED_INTO_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    admission: _status_pb2.TurnStatus
    ended_at: _timestamp_pb2.Timestamp
    fairness_key: str
    fairness_weight: float
    idempotency_key: str
    input: _containers.RepeatedCompositeFieldContainer[_control_pb2.InputPart]
    metadata: _containers.ScalarMap[str, str]
    options: _containers.ScalarMap[str, str]
    outcome_category: str
    outcome_message: str
    parked: bool
    parked_call_ids: _containers.RepeatedScalarFieldContainer[str]
    parked_step_id: str
    priority: int
    sequence: int
    session_id: str
    span_id: str
    started_at: _timestamp_pb2.Timestamp
    status: _status_pb2.TurnStatus
    steered_into: str
    submitted_at: _timestamp_pb2.Timestamp
    submitted_sequence: int
    thread_id: str
    trace_id: str
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.TurnStatus, str]] = ..., admission: _Optional[_Union[_status_pb2.TurnStatus, str]] = ..., input: _Optional[_Iterable[_Union[_control_pb2.InputPart, _Mapping]]] = ..., options: _Optional[_Mapping[str, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., submitted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., outcome_category: _Optional[str] = ..., outcome_message: _Optional[str] = ..., steered_into: _Optional[str] = ..., submitted_sequence: _Optional[int] = ..., sequence: _Optional[int] = ..., trace_id: _Optional[str] = ..., span_id: _Optional[str] = ..., parked: bool = ..., parked_step_id: _Optional[str] = ..., parked_call_ids: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class TurnAttempt(_message.Message):
    __slots__ = ["attempt", "ended_at", "ended_sequence", "outcome_category", "outcome_message", "run_id", "started_at", "started_sequence", "status", "waits_for", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_CATEGORY_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WAITS_FOR_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    ended_at: _timestamp_pb2.Timestamp
    ended_sequence: int
    outcome_category: str
    outcome_message: str
    run_id: str
    started_at: _timestamp_pb2.Timestamp
    started_sequence: int
    status: _status_pb2.TurnAttemptStatus
    waits_for: _containers.RepeatedScalarFieldContainer[str]
    worker_id: str
    def __init__(self, attempt: _Optional[int] = ..., run_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.TurnAttemptStatus, str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., started_sequence: _Optional[int] = ..., ended_sequence: _Optional[int] = ..., outcome_category: _Optional[str] = ..., outcome_message: _Optional[str] = ..., waits_for: _Optional[_Iterable[str]] = ...) -> None: ...

class TurnAttempts(_message.Message):
    __slots__ = ["attempts", "checkpoint_sequence", "checkpoint_uri", "ended_subagent_ids", "max_attempts", "resolved_action_ids", "resume_pending", "retry_pending", "session_id", "thread_id", "turn_id"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_URI_FIELD_NUMBER: _ClassVar[int]
    ENDED_SUBAGENT_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_ACTION_IDS_FIELD_NUMBER: _ClassVar[int]
    RESUME_PENDING_FIELD_NUMBER: _ClassVar[int]
    RETRY_PENDING_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[TurnAttempt]
    checkpoint_sequence: int
    checkpoint_uri: str
    ended_subagent_ids: _containers.RepeatedScalarFieldContainer[str]
    max_attempts: int
    resolved_action_ids: _containers.RepeatedScalarFieldContainer[str]
    resume_pending: bool
    retry_pending: bool
    session_id: str
    thread_id: str
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., attempts: _Optional[_Iterable[_Union[TurnAttempt, _Mapping]]] = ..., retry_pending: bool = ..., max_attempts: _Optional[int] = ..., resume_pending: bool = ..., resolved_action_ids: _Optional[_Iterable[str]] = ..., ended_subagent_ids: _Optional[_Iterable[str]] = ..., checkpoint_uri: _Optional[str] = ..., checkpoint_sequence: _Optional[int] = ...) -> None: ...

class WaitSubagentsRequest(_message.Message):
    __slots__ = ["session_id", "subagent_ids", "timeout"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    subagent_ids: _containers.RepeatedScalarFieldContainer[str]
    timeout: _duration_pb2.Duration
    def __init__(self, session_id: _Optional[str] = ..., subagent_ids: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class WaitSubagentsResponse(_message.Message):
    __slots__ = ["all_terminal", "sequence", "subagents"]
    ALL_TERMINAL_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENTS_FIELD_NUMBER: _ClassVar[int]
    all_terminal: bool
    sequence: int
    subagents: _containers.RepeatedCompositeFieldContainer[Subagent]
    def __init__(self, subagents: _Optional[_Iterable[_Union[Subagent, _Mapping]]] = ..., all_terminal: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class CreatePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BusyPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class QueuePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class StartFrom(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
