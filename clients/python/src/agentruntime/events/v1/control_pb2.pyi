from agentruntime.common.v1 import common_pb2 as _common_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ACTION_OUTCOME_CANCELLED: ActionOutcome
ACTION_OUTCOME_RESOLVED: ActionOutcome
ACTION_OUTCOME_TIMED_OUT: ActionOutcome
ACTION_OUTCOME_UNSPECIFIED: ActionOutcome
DESCRIPTOR: _descriptor.FileDescriptor
TURN_OUTCOME_CANCELLED: TurnOutcome
TURN_OUTCOME_FAILED: TurnOutcome
TURN_OUTCOME_TIMED_OUT: TurnOutcome
TURN_OUTCOME_UNSPECIFIED: TurnOutcome

class A2APushSubscription(_message.Message):
    __slots__ = ["auth_scheme", "config_id", "sealed_auth", "session_id", "thread_id", "turn_id", "turn_sequence"]
    AUTH_SCHEME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ID_FIELD_NUMBER: _ClassVar[int]
    SEALED_AUTH_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    auth_scheme: str
    config_id: str
    sealed_auth: bytes
    session_id: str
    thread_id: str
    turn_id: str
    turn_sequence: int
    def __init__(self, config_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_sequence: _Optional[int] = ..., auth_scheme: _Optional[str] = ..., sealed_auth: _Optional[bytes] = ...) -> None: ...

class ActionRequired(_message.Message):
    __slots__ = ["action_type", "context", "decision_on_timeout", "decisions", "expires_at", "json_schema", "prompt", "requested_by", "requester_role", "requester_subject", "timeout"]
    class ContextEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_ROLE_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    action_type: str
    context: _containers.ScalarMap[str, str]
    decision_on_timeout: str
    decisions: _containers.RepeatedScalarFieldContainer[str]
    expires_at: _timestamp_pb2.Timestamp
    json_schema: str
    prompt: str
    requested_by: str
    requester_role: str
    requester_subject: str
    timeout: _duration_pb2.Duration
    def __init__(self, action_type: _Optional[str] = ..., prompt: _Optional[str] = ..., json_schema: _Optional[str] = ..., decisions: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., decision_on_timeout: _Optional[str] = ..., requested_by: _Optional[str] = ..., context: _Optional[_Mapping[str, str]] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., requester_subject: _Optional[str] = ..., requester_role: _Optional[str] = ...) -> None: ...

class ActionResolved(_message.Message):
    __slots__ = ["action_type", "decision", "outcome", "payload_json", "requested_by", "responder"]
    ACTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BY_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    action_type: str
    decision: str
    outcome: ActionOutcome
    payload_json: str
    requested_by: str
    responder: str
    def __init__(self, outcome: _Optional[_Union[ActionOutcome, str]] = ..., decision: _Optional[str] = ..., payload_json: _Optional[str] = ..., responder: _Optional[str] = ..., action_type: _Optional[str] = ..., requested_by: _Optional[str] = ...) -> None: ...

class ArtifactChanged(_message.Message):
    __slots__ = ["artifact_id", "preview", "read_ref", "version_id"]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    READ_REF_FIELD_NUMBER: _ClassVar[int]
    VERSION_ID_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    preview: str
    read_ref: str
    version_id: str
    def __init__(self, artifact_id: _Optional[str] = ..., read_ref: _Optional[str] = ..., version_id: _Optional[str] = ..., preview: _Optional[str] = ...) -> None: ...

class ChannelFact(_message.Message):
    __slots__ = ["delivery", "last_acked_sequence", "peer", "reason", "transport", "webhook"]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    LAST_ACKED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    delivery: WebhookDeliveryFact
    last_acked_sequence: int
    peer: str
    reason: str
    transport: str
    webhook: WebhookSubscription
    def __init__(self, peer: _Optional[str] = ..., last_acked_sequence: _Optional[int] = ..., reason: _Optional[str] = ..., transport: _Optional[str] = ..., webhook: _Optional[_Union[WebhookSubscription, _Mapping]] = ..., delivery: _Optional[_Union[WebhookDeliveryFact, _Mapping]] = ...) -> None: ...

class ContextCompaction(_message.Message):
    __slots__ = ["affected_turn_ids", "error", "summary_ref", "tokens_after", "tokens_before", "trigger"]
    AFFECTED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_REF_FIELD_NUMBER: _ClassVar[int]
    TOKENS_AFTER_FIELD_NUMBER: _ClassVar[int]
    TOKENS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    affected_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    error: str
    summary_ref: str
    tokens_after: int
    tokens_before: int
    trigger: str
    def __init__(self, trigger: _Optional[str] = ..., affected_turn_ids: _Optional[_Iterable[str]] = ..., summary_ref: _Optional[str] = ..., tokens_before: _Optional[int] = ..., tokens_after: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class ContextResolved(_message.Message):
    __slots__ = ["refs", "tokens", "warnings"]
    REFS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    refs: _containers.RepeatedScalarFieldContainer[str]
    tokens: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, refs: _Optional[_Iterable[str]] = ..., tokens: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class HistoryRollback(_message.Message):
    __slots__ = ["reason", "removed_turn_ids", "to_turn_id"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REMOVED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    TO_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    removed_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    to_turn_id: str
    def __init__(self, removed_turn_ids: _Optional[_Iterable[str]] = ..., to_turn_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class InputPart(_message.Message):
    __slots__ = ["json", "media_type", "ref", "text"]
    JSON_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    json: str
    media_type: str
    ref: str
    text: str
    def __init__(self, text: _Optional[str] = ..., json: _Optional[str] = ..., ref: _Optional[str] = ..., media_type: _Optional[str] = ...) -> None: ...

class ModelCompleted(_message.Message):
    __slots__ = ["model", "provider", "response_ref", "stop_reason", "usage"]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_REF_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    model: str
    provider: str
    response_ref: str
    stop_reason: str
    usage: ModelUsage
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., stop_reason: _Optional[str] = ..., usage: _Optional[_Union[ModelUsage, _Mapping]] = ..., response_ref: _Optional[str] = ...) -> None: ...

class ModelDelta(_message.Message):
    __slots__ = ["index", "text"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    index: int
    text: str
    def __init__(self, text: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class ModelFailed(_message.Message):
    __slots__ = ["category", "message", "model", "provider", "retryable"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    model: str
    provider: str
    retryable: bool
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., category: _Optional[str] = ..., message: _Optional[str] = ..., retryable: bool = ...) -> None: ...

class ModelRequested(_message.Message):
    __slots__ = ["model", "provider", "request_ref"]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_REF_FIELD_NUMBER: _ClassVar[int]
    model: str
    provider: str
    request_ref: str
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., request_ref: _Optional[str] = ...) -> None: ...

class ModelUsage(_message.Message):
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

class OutputFact(_message.Message):
    __slots__ = ["output", "reason"]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    output: _common_pb2.OutputRef
    reason: str
    def __init__(self, output: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class PeerArtifact(_message.Message):
    __slots__ = ["artifact_id", "name", "text"]
    ARTIFACT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    artifact_id: str
    name: str
    text: str
    def __init__(self, artifact_id: _Optional[str] = ..., name: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class PeerTaskFact(_message.Message):
    __slots__ = ["answered_action_id", "artifacts", "card_url", "context_id", "input_action_id", "message", "native_protocol", "peer_name", "state", "task_id"]
    ANSWERED_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_FIELD_NUMBER: _ClassVar[int]
    CARD_URL_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NATIVE_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PEER_NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    answered_action_id: str
    artifacts: _containers.RepeatedCompositeFieldContainer[PeerArtifact]
    card_url: str
    context_id: str
    input_action_id: str
    message: str
    native_protocol: str
    peer_name: str
    state: str
    task_id: str
    def __init__(self, card_url: _Optional[str] = ..., task_id: _Optional[str] = ..., context_id: _Optional[str] = ..., state: _Optional[str] = ..., message: _Optional[str] = ..., artifacts: _Optional[_Iterable[_Union[PeerArtifact, _Mapping]]] = ..., input_action_id: _Optional[str] = ..., answered_action_id: _Optional[str] = ..., peer_name: _Optional[str] = ..., native_protocol: _Optional[str] = ...) -> None: ...

class ProcessCompleted(_message.Message):
    __slots__ = ["exit_code", "output"]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    output: _common_pb2.OutputRef
    def __init__(self, exit_code: _Optional[int] = ..., output: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ...) -> None: ...

class ProcessFailed(_message.Message):
    __slots__ = ["category", "message"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    def __init__(self, category: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ProcessInput(_message.Message):
    __slots__ = ["preview"]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    preview: str
    def __init__(self, preview: _Optional[str] = ...) -> None: ...

class ProcessOutput(_message.Message):
    __slots__ = ["output", "preview", "stream"]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    output: _common_pb2.OutputRef
    preview: str
    stream: str
    def __init__(self, stream: _Optional[str] = ..., preview: _Optional[str] = ..., output: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ...) -> None: ...

class ProcessStarted(_message.Message):
    __slots__ = ["command", "cwd", "pty"]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    PTY_FIELD_NUMBER: _ClassVar[int]
    command: str
    cwd: str
    pty: bool
    def __init__(self, command: _Optional[str] = ..., cwd: _Optional[str] = ..., pty: bool = ...) -> None: ...

class ProcessTerminated(_message.Message):
    __slots__ = ["reason", "signal"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    reason: str
    signal: str
    def __init__(self, reason: _Optional[str] = ..., signal: _Optional[str] = ...) -> None: ...

class QueueChanged(_message.Message):
    __slots__ = ["change", "position", "queue_length", "reason", "turn_id"]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    QUEUE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    change: str
    position: int
    queue_length: int
    reason: str
    turn_id: str
    def __init__(self, change: _Optional[str] = ..., turn_id: _Optional[str] = ..., reason: _Optional[str] = ..., position: _Optional[int] = ..., queue_length: _Optional[int] = ...) -> None: ...

class ReasoningDelta(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ReasoningSummary(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class RepairedFact(_message.Message):
    __slots__ = ["from_sequence", "id", "kind", "reason", "status", "to_sequence"]
    FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TO_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    from_sequence: int
    id: str
    kind: str
    reason: str
    status: str
    to_sequence: int
    def __init__(self, status: _Optional[str] = ..., kind: _Optional[str] = ..., id: _Optional[str] = ..., from_sequence: _Optional[int] = ..., to_sequence: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RunStatus(_message.Message):
    __slots__ = ["checkpoints", "detail", "metadata", "phase", "title"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedScalarFieldContainer[str]
    detail: str
    metadata: _containers.ScalarMap[str, str]
    phase: str
    title: str
    def __init__(self, phase: _Optional[str] = ..., title: _Optional[str] = ..., detail: _Optional[str] = ..., checkpoints: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SessionCreated(_message.Message):
    __slots__ = ["created_by", "metadata", "title"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    created_by: str
    metadata: _containers.ScalarMap[str, str]
    title: str
    def __init__(self, title: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., created_by: _Optional[str] = ...) -> None: ...

class SessionUpdated(_message.Message):
    __slots__ = ["metadata", "title"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    metadata: _containers.ScalarMap[str, str]
    title: str
    def __init__(self, title: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SnapshotRepaired(_message.Message):
    __slots__ = ["facts", "first_available_sequence", "requested_sequence", "snapshot_sequence"]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    FIRST_AVAILABLE_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.RepeatedCompositeFieldContainer[RepairedFact]
    first_available_sequence: int
    requested_sequence: int
    snapshot_sequence: int
    def __init__(self, requested_sequence: _Optional[int] = ..., first_available_sequence: _Optional[int] = ..., snapshot_sequence: _Optional[int] = ..., facts: _Optional[_Iterable[_Union[RepairedFact, _Mapping]]] = ...) -> None: ...

class SnapshotUpdated(_message.Message):
    __slots__ = ["facts", "kind", "tools", "worker_id"]
    class FactsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FACTS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    facts: _containers.ScalarMap[str, str]
    kind: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    worker_id: str
    def __init__(self, kind: _Optional[str] = ..., worker_id: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ..., facts: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SubagentSpawned(_message.Message):
    __slots__ = ["agent", "child_thread_id", "isolation", "model_policy", "objective", "role"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_POLICY_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    child_thread_id: str
    isolation: str
    model_policy: str
    objective: str
    role: str
    def __init__(self, child_thread_id: _Optional[str] = ..., role: _Optional[str] = ..., isolation: _Optional[str] = ..., model_policy: _Optional[str] = ..., objective: _Optional[str] = ..., agent: _Optional[str] = ...) -> None: ...

class SubagentStatus(_message.Message):
    __slots__ = ["child_thread_id", "input_turn_id", "reason", "status", "summary"]
    CHILD_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    child_thread_id: str
    input_turn_id: str
    reason: str
    status: str
    summary: str
    def __init__(self, status: _Optional[str] = ..., child_thread_id: _Optional[str] = ..., summary: _Optional[str] = ..., input_turn_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ThreadStarted(_message.Message):
    __slots__ = ["parent_thread_id", "parent_turn_id", "subagent_id", "title"]
    PARENT_THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    parent_thread_id: str
    parent_turn_id: str
    subagent_id: str
    title: str
    def __init__(self, title: _Optional[str] = ..., parent_thread_id: _Optional[str] = ..., parent_turn_id: _Optional[str] = ..., subagent_id: _Optional[str] = ...) -> None: ...

class ThreadUpdated(_message.Message):
    __slots__ = ["change", "facts", "reason", "turn_id"]
    class FactsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    FACTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    change: str
    facts: _containers.ScalarMap[str, str]
    reason: str
    turn_id: str
    def __init__(self, change: _Optional[str] = ..., turn_id: _Optional[str] = ..., reason: _Optional[str] = ..., facts: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ToolArgs(_message.Message):
    __slots__ = ["input_ref", "safe_args_json"]
    INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    SAFE_ARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    input_ref: str
    safe_args_json: str
    def __init__(self, safe_args_json: _Optional[str] = ..., input_ref: _Optional[str] = ...) -> None: ...

class ToolCatalogResolved(_message.Message):
    __slots__ = ["inventory_ref", "tool_names"]
    INVENTORY_REF_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAMES_FIELD_NUMBER: _ClassVar[int]
    inventory_ref: str
    tool_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tool_names: _Optional[_Iterable[str]] = ..., inventory_ref: _Optional[str] = ...) -> None: ...

class ToolFailed(_message.Message):
    __slots__ = ["category", "message", "retryable"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    retryable: bool
    def __init__(self, category: _Optional[str] = ..., message: _Optional[str] = ..., retryable: bool = ...) -> None: ...

class ToolProgress(_message.Message):
    __slots__ = ["fraction", "message"]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    fraction: float
    message: str
    def __init__(self, message: _Optional[str] = ..., fraction: _Optional[float] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ["is_error", "output", "preview"]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    is_error: bool
    output: _common_pb2.OutputRef
    preview: str
    def __init__(self, preview: _Optional[str] = ..., output: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., is_error: bool = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ["concurrency_safe", "description", "destructive", "input_schema_json", "interrupt_behavior", "name", "read_only"]
    CONCURRENCY_SAFE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    concurrency_safe: bool
    description: str
    destructive: bool
    input_schema_json: str
    interrupt_behavior: str
    name: str
    read_only: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., read_only: bool = ..., destructive: bool = ..., concurrency_safe: bool = ..., interrupt_behavior: _Optional[str] = ...) -> None: ...

class ToolStarted(_message.Message):
    __slots__ = ["tool_name"]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    tool_name: str
    def __init__(self, tool_name: _Optional[str] = ...) -> None: ...

class TurnCompleted(_message.Message):
    __slots__ = ["refs", "stop_reason", "summary"]
    class RefsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REFS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    refs: _containers.ScalarMap[str, str]
    stop_reason: str
    summary: str
    def __init__(self, summary: _Optional[str] = ..., stop_reason: _Optional[str] = ..., refs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TurnFailed(_message.Message):
    __slots__ = ["category", "message", "outcome", "retryable"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    category: str
    message: str
    outcome: TurnOutcome
    retryable: bool
    def __init__(self, outcome: _Optional[_Union[TurnOutcome, str]] = ..., category: _Optional[str] = ..., message: _Optional[str] = ..., retryable: bool = ...) -> None: ...

class TurnStarted(_message.Message):
    __slots__ = ["worker_id"]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ...) -> None: ...

class TurnSubmitted(_message.Message):
    __slots__ = ["admission", "busy_policy", "fair_tag", "fairness_key", "fairness_weight", "idempotency_key", "input", "interrupted_turn_id", "metadata", "options", "priority", "steered_into", "submitted_by"]
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
    BUSY_POLICY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    FAIR_TAG_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    STEERED_INTO_FIELD_NUMBER: _ClassVar[int]
    SUBMITTED_BY_FIELD_NUMBER: _ClassVar[int]
    admission: str
    busy_policy: str
    fair_tag: float
    fairness_key: str
    fairness_weight: float
    idempotency_key: str
    input: _containers.RepeatedCompositeFieldContainer[InputPart]
    interrupted_turn_id: str
    metadata: _containers.ScalarMap[str, str]
    options: _containers.ScalarMap[str, str]
    priority: int
    steered_into: str
    submitted_by: str
    def __init__(self, input: _Optional[_Iterable[_Union[InputPart, _Mapping]]] = ..., options: _Optional[_Mapping[str, str]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., idempotency_key: _Optional[str] = ..., admission: _Optional[str] = ..., busy_policy: _Optional[str] = ..., steered_into: _Optional[str] = ..., submitted_by: _Optional[str] = ..., interrupted_turn_id: _Optional[str] = ..., priority: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ..., fair_tag: _Optional[float] = ...) -> None: ...

class WebhookDeliveryFact(_message.Message):
    __slots__ = ["attempt", "delivery_id", "error", "event_id", "event_sequence", "event_time", "event_type", "next_attempt_at", "outcome", "status_code"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    delivery_id: str
    error: str
    event_id: str
    event_sequence: int
    event_time: _timestamp_pb2.Timestamp
    event_type: str
    next_attempt_at: _timestamp_pb2.Timestamp
    outcome: str
    status_code: int
    def __init__(self, delivery_id: _Optional[str] = ..., event_id: _Optional[str] = ..., event_type: _Optional[str] = ..., event_sequence: _Optional[int] = ..., outcome: _Optional[str] = ..., attempt: _Optional[int] = ..., status_code: _Optional[int] = ..., error: _Optional[str] = ..., next_attempt_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., event_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WebhookSubscription(_message.Message):
    __slots__ = ["a2a_push", "created_by", "description", "event_types", "key_id", "sealed_secret", "session_ids", "url"]
    A2A_PUSH_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SEALED_SECRET_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    a2a_push: A2APushSubscription
    created_by: str
    description: str
    event_types: _containers.RepeatedScalarFieldContainer[str]
    key_id: str
    sealed_secret: bytes
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    url: str
    def __init__(self, url: _Optional[str] = ..., event_types: _Optional[_Iterable[str]] = ..., session_ids: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., sealed_secret: _Optional[bytes] = ..., key_id: _Optional[str] = ..., a2a_push: _Optional[_Union[A2APushSubscription, _Mapping]] = ..., created_by: _Optional[str] = ...) -> None: ...

class ActionOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TurnOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
