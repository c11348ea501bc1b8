from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.events.v1 import permission_pb2 as _permission_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HandleHookRequest(_message.Message):
    __slots__ = ["cwd", "hook_id", "hook_run_id", "mode", "point", "prompt", "sandbox", "sandbox_summary", "session_id", "step_id", "tenant_id", "thread_id", "tool_call_id", "tool_input_json", "tool_name", "tool_output_json", "turn_id", "workspace_id"]
    CWD_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    hook_id: str
    hook_run_id: str
    mode: _permission_pb2.PermissionMode
    point: _permission_pb2.HookPoint
    prompt: str
    sandbox: _permission_pb2.SandboxProfile
    sandbox_summary: str
    session_id: str
    step_id: str
    tenant_id: str
    thread_id: str
    tool_call_id: str
    tool_input_json: str
    tool_name: str
    tool_output_json: str
    turn_id: str
    workspace_id: str
    def __init__(self, hook_id: _Optional[str] = ..., hook_run_id: _Optional[str] = ..., point: _Optional[_Union[_permission_pb2.HookPoint, str]] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., cwd: _Optional[str] = ..., mode: _Optional[_Union[_permission_pb2.PermissionMode, str]] = ..., sandbox_summary: _Optional[str] = ..., sandbox: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., tool_name: _Optional[str] = ..., tool_input_json: _Optional[str] = ..., tool_output_json: _Optional[str] = ..., prompt: _Optional[str] = ...) -> None: ...

class HandleHookResponse(_message.Message):
    __slots__ = ["additional_context", "audit_refs", "decision", "reason", "suppress_output", "updated_input_json", "updated_output_json"]
    ADDITIONAL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    AUDIT_REFS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    UPDATED_OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    additional_context: _containers.RepeatedScalarFieldContainer[str]
    audit_refs: _containers.RepeatedScalarFieldContainer[str]
    decision: _permission_pb2.HookOutcome
    reason: str
    suppress_output: bool
    updated_input_json: str
    updated_output_json: str
    def __init__(self, decision: _Optional[_Union[_permission_pb2.HookOutcome, str]] = ..., reason: _Optional[str] = ..., updated_input_json: _Optional[str] = ..., additional_context: _Optional[_Iterable[str]] = ..., updated_output_json: _Optional[str] = ..., suppress_output: bool = ..., audit_refs: _Optional[_Iterable[str]] = ...) -> None: ...
