from agentruntime.auth.v1 import access_pb2 as _access_pb2
from agentruntime.common.v1 import common_pb2 as _common_pb2
from agentruntime.events.v1 import permission_pb2 as _permission_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
HOOK_RUN_STATUS_COMPLETED: HookRunStatus
HOOK_RUN_STATUS_FAILED: HookRunStatus
HOOK_RUN_STATUS_RUNNING: HookRunStatus
HOOK_RUN_STATUS_UNSPECIFIED: HookRunStatus

class DecisionSummary(_message.Message):
    __slots__ = ["approval_action_id", "decision", "decision_reason", "decision_source", "destructive", "evaluation_id", "input_rewritten", "name", "resolution", "rule_refs", "sequence", "thread_id", "tool_call_id", "turn_id"]
    APPROVAL_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_REASON_FIELD_NUMBER: _ClassVar[int]
    DECISION_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    RULE_REFS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    approval_action_id: str
    decision: _permission_pb2.Decision
    decision_reason: str
    decision_source: _permission_pb2.DecisionSource
    destructive: bool
    evaluation_id: str
    input_rewritten: bool
    name: str
    resolution: _permission_pb2.PermissionResolution
    rule_refs: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    thread_id: str
    tool_call_id: str
    turn_id: str
    def __init__(self, evaluation_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., decision: _Optional[_Union[_permission_pb2.Decision, str]] = ..., decision_source: _Optional[_Union[_permission_pb2.DecisionSource, str]] = ..., decision_reason: _Optional[str] = ..., rule_refs: _Optional[_Iterable[str]] = ..., destructive: bool = ..., approval_action_id: _Optional[str] = ..., resolution: _Optional[_Union[_permission_pb2.PermissionResolution, str]] = ..., sequence: _Optional[int] = ..., input_rewritten: bool = ...) -> None: ...

class EvaluatePermissionRequest(_message.Message):
    __slots__ = ["access", "applied_if_allowed", "approval_timeout", "arguments_json", "command", "cwd", "hosts", "min_sequence", "name", "paths", "process_id", "resolved_paths", "session_id", "skip_hooks", "step_id", "target", "thread_id", "tool_call_id", "turn_id", "workspace_id"]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_IF_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_PATHS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SKIP_HOOKS_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    access: _permission_pb2.Access
    applied_if_allowed: SandboxEnforcement
    approval_timeout: _duration_pb2.Duration
    arguments_json: str
    command: str
    cwd: str
    hosts: _containers.RepeatedScalarFieldContainer[str]
    min_sequence: int
    name: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    process_id: str
    resolved_paths: _containers.RepeatedCompositeFieldContainer[PathResolution]
    session_id: str
    skip_hooks: bool
    step_id: str
    target: _permission_pb2.TargetKind
    thread_id: str
    tool_call_id: str
    turn_id: str
    workspace_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., process_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., target: _Optional[_Union[_permission_pb2.TargetKind, str]] = ..., name: _Optional[str] = ..., access: _Optional[_Union[_permission_pb2.Access, str]] = ..., paths: _Optional[_Iterable[str]] = ..., command: _Optional[str] = ..., hosts: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., resolved_paths: _Optional[_Iterable[_Union[PathResolution, _Mapping]]] = ..., arguments_json: _Optional[str] = ..., skip_hooks: bool = ..., approval_timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., min_sequence: _Optional[int] = ..., applied_if_allowed: _Optional[_Union[SandboxEnforcement, _Mapping]] = ...) -> None: ...

class EvaluatePermissionResponse(_message.Message):
    __slots__ = ["evaluation", "sandbox_applied", "sandbox_profile", "updated_arguments_json", "write"]
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_APPLIED_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    evaluation: _permission_pb2.PermissionEvaluated
    sandbox_applied: _permission_pb2.SandboxApplied
    sandbox_profile: _permission_pb2.SandboxProfile
    updated_arguments_json: str
    write: _common_pb2.WriteResult
    def __init__(self, evaluation: _Optional[_Union[_permission_pb2.PermissionEvaluated, _Mapping]] = ..., sandbox_profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., updated_arguments_json: _Optional[str] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ..., sandbox_applied: _Optional[_Union[_permission_pb2.SandboxApplied, _Mapping]] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ["cause", "evaluation_id", "reason", "rule_refs", "state"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULE_REFS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    cause: _permission_pb2.DecisionSource
    evaluation_id: str
    reason: str
    rule_refs: _containers.RepeatedScalarFieldContainer[str]
    state: _common_pb2.FactState
    def __init__(self, state: _Optional[_Union[_common_pb2.FactState, str]] = ..., cause: _Optional[_Union[_permission_pb2.DecisionSource, str]] = ..., reason: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., rule_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class GetExecutionEnvironmentRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id", "turn_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetExecutionEnvironmentResponse(_message.Message):
    __slots__ = ["environment", "recorded_at", "sequence", "thread_id"]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    environment: _permission_pb2.ExecutionEnvironment
    recorded_at: _timestamp_pb2.Timestamp
    sequence: int
    thread_id: str
    def __init__(self, environment: _Optional[_Union[_permission_pb2.ExecutionEnvironment, _Mapping]] = ..., thread_id: _Optional[str] = ..., recorded_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetPermissionSandboxSummaryRequest(_message.Message):
    __slots__ = ["min_sequence", "session_id", "thread_id"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    session_id: str
    thread_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetPermissionSandboxSummaryResponse(_message.Message):
    __slots__ = ["interactive", "last_denial", "mode", "pending_approvals", "recent_decisions", "recent_hook_runs", "sandbox_profile", "sandbox_state", "sequence", "violations"]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_DENIAL_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PENDING_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    RECENT_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    RECENT_HOOK_RUNS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_STATE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    interactive: bool
    last_denial: Explanation
    mode: _permission_pb2.PermissionMode
    pending_approvals: _containers.RepeatedCompositeFieldContainer[PendingApproval]
    recent_decisions: _containers.RepeatedCompositeFieldContainer[DecisionSummary]
    recent_hook_runs: _containers.RepeatedCompositeFieldContainer[HookRunSummary]
    sandbox_profile: _permission_pb2.SandboxProfile
    sandbox_state: _common_pb2.FactState
    sequence: int
    violations: _containers.RepeatedCompositeFieldContainer[ViolationSummary]
    def __init__(self, sequence: _Optional[int] = ..., mode: _Optional[_Union[_permission_pb2.PermissionMode, str]] = ..., interactive: bool = ..., pending_approvals: _Optional[_Iterable[_Union[PendingApproval, _Mapping]]] = ..., recent_decisions: _Optional[_Iterable[_Union[DecisionSummary, _Mapping]]] = ..., sandbox_profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., sandbox_state: _Optional[_Union[_common_pb2.FactState, str]] = ..., violations: _Optional[_Iterable[_Union[ViolationSummary, _Mapping]]] = ..., last_denial: _Optional[_Union[Explanation, _Mapping]] = ..., recent_hook_runs: _Optional[_Iterable[_Union[HookRunSummary, _Mapping]]] = ...) -> None: ...

class GetPermissionStateRequest(_message.Message):
    __slots__ = ["min_sequence", "target"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    target: Target
    def __init__(self, target: _Optional[_Union[Target, _Mapping]] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetPermissionStateResponse(_message.Message):
    __slots__ = ["interactive", "levels", "mode", "mode_level", "rules", "sequence"]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MODE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    interactive: bool
    levels: _containers.RepeatedCompositeFieldContainer[LevelState]
    mode: _permission_pb2.PermissionMode
    mode_level: _permission_pb2.PolicyLevel
    rules: _containers.RepeatedCompositeFieldContainer[_permission_pb2.PermissionRule]
    sequence: int
    def __init__(self, mode: _Optional[_Union[_permission_pb2.PermissionMode, str]] = ..., mode_level: _Optional[_Union[_permission_pb2.PolicyLevel, str]] = ..., interactive: bool = ..., rules: _Optional[_Iterable[_Union[_permission_pb2.PermissionRule, _Mapping]]] = ..., levels: _Optional[_Iterable[_Union[LevelState, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class GetSandboxProfileRequest(_message.Message):
    __slots__ = ["min_sequence", "target"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    target: Target
    def __init__(self, target: _Optional[_Union[Target, _Mapping]] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class GetSandboxProfileResponse(_message.Message):
    __slots__ = ["level", "profile", "sequence"]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    level: _permission_pb2.PolicyLevel
    profile: _permission_pb2.SandboxProfile
    sequence: int
    def __init__(self, profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., level: _Optional[_Union[_permission_pb2.PolicyLevel, str]] = ..., sequence: _Optional[int] = ...) -> None: ...

class HookRunResult(_message.Message):
    __slots__ = ["additional_context_refs", "audit_refs", "decision", "fail_mode", "failure", "hook_id", "hook_run_id", "reason", "suppress_output", "updated_input_ref", "updated_output_ref"]
    ADDITIONAL_CONTEXT_REFS_FIELD_NUMBER: _ClassVar[int]
    AUDIT_REFS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    FAIL_MODE_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    UPDATED_OUTPUT_REF_FIELD_NUMBER: _ClassVar[int]
    additional_context_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    audit_refs: _containers.RepeatedScalarFieldContainer[str]
    decision: _permission_pb2.HookOutcome
    fail_mode: _permission_pb2.FailMode
    failure: _permission_pb2.HookFailureCategory
    hook_id: str
    hook_run_id: str
    reason: str
    suppress_output: bool
    updated_input_ref: _common_pb2.OutputRef
    updated_output_ref: _common_pb2.OutputRef
    def __init__(self, hook_run_id: _Optional[str] = ..., hook_id: _Optional[str] = ..., decision: _Optional[_Union[_permission_pb2.HookOutcome, str]] = ..., reason: _Optional[str] = ..., failure: _Optional[_Union[_permission_pb2.HookFailureCategory, str]] = ..., fail_mode: _Optional[_Union[_permission_pb2.FailMode, str]] = ..., updated_input_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., additional_context_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., updated_output_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., suppress_output: bool = ..., audit_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class HookRunSummary(_message.Message):
    __slots__ = ["decision", "fail_mode", "hook_id", "hook_run_id", "input_rewritten", "point", "reason", "status"]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    FAIL_MODE_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    decision: _permission_pb2.HookOutcome
    fail_mode: _permission_pb2.FailMode
    hook_id: str
    hook_run_id: str
    input_rewritten: bool
    point: _permission_pb2.HookPoint
    reason: str
    status: HookRunStatus
    def __init__(self, hook_run_id: _Optional[str] = ..., hook_id: _Optional[str] = ..., point: _Optional[_Union[_permission_pb2.HookPoint, str]] = ..., status: _Optional[_Union[HookRunStatus, str]] = ..., decision: _Optional[_Union[_permission_pb2.HookOutcome, str]] = ..., fail_mode: _Optional[_Union[_permission_pb2.FailMode, str]] = ..., input_rewritten: bool = ..., reason: _Optional[str] = ...) -> None: ...

class LevelState(_message.Message):
    __slots__ = ["interactive", "mode", "mode_set", "rules", "sandbox", "scope"]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MODE_SET_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    interactive: bool
    mode: _permission_pb2.PermissionMode
    mode_set: bool
    rules: _containers.RepeatedCompositeFieldContainer[_permission_pb2.PermissionRule]
    sandbox: _permission_pb2.SandboxProfile
    scope: PolicyScope
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., mode: _Optional[_Union[_permission_pb2.PermissionMode, str]] = ..., interactive: bool = ..., mode_set: bool = ..., rules: _Optional[_Iterable[_Union[_permission_pb2.PermissionRule, _Mapping]]] = ..., sandbox: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ...) -> None: ...

class ListHooksRequest(_message.Message):
    __slots__ = ["min_sequence", "point"]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    min_sequence: int
    point: _permission_pb2.HookPoint
    def __init__(self, point: _Optional[_Union[_permission_pb2.HookPoint, str]] = ..., min_sequence: _Optional[int] = ...) -> None: ...

class ListHooksResponse(_message.Message):
    __slots__ = ["hooks", "sequence"]
    HOOKS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    hooks: _containers.RepeatedCompositeFieldContainer[_permission_pb2.Hook]
    sequence: int
    def __init__(self, hooks: _Optional[_Iterable[_Union[_permission_pb2.Hook, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class PathResolution(_message.Message):
    __slots__ = ["path", "resolved"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    path: str
    resolved: str
    def __init__(self, path: _Optional[str] = ..., resolved: _Optional[str] = ...) -> None: ...

class PendingApproval(_message.Message):
    __slots__ = ["action_id", "evaluation_id", "name", "prompt", "requested_at", "thread_id", "timeout", "turn_id"]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    evaluation_id: str
    name: str
    prompt: str
    requested_at: _timestamp_pb2.Timestamp
    thread_id: str
    timeout: _duration_pb2.Duration
    turn_id: str
    def __init__(self, action_id: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., name: _Optional[str] = ..., prompt: _Optional[str] = ..., requested_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PolicyScope(_message.Message):
    __slots__ = ["level", "session_id", "thread_id", "workspace_id"]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    level: _permission_pb2.PolicyLevel
    session_id: str
    thread_id: str
    workspace_id: str
    def __init__(self, level: _Optional[_Union[_permission_pb2.PolicyLevel, str]] = ..., workspace_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ...) -> None: ...

class PutRulesRequest(_message.Message):
    __slots__ = ["reason", "rules", "scope"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    rules: _containers.RepeatedCompositeFieldContainer[_permission_pb2.PermissionRule]
    scope: PolicyScope
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[_permission_pb2.PermissionRule, _Mapping]]] = ..., reason: _Optional[str] = ...) -> None: ...

class PutRulesResponse(_message.Message):
    __slots__ = ["rules", "write"]
    RULES_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[_permission_pb2.PermissionRule]
    write: _common_pb2.WriteResult
    def __init__(self, rules: _Optional[_Iterable[_Union[_permission_pb2.PermissionRule, _Mapping]]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RegisterHookRequest(_message.Message):
    __slots__ = ["hook"]
    HOOK_FIELD_NUMBER: _ClassVar[int]
    hook: _permission_pb2.Hook
    def __init__(self, hook: _Optional[_Union[_permission_pb2.Hook, _Mapping]] = ...) -> None: ...

class RegisterHookResponse(_message.Message):
    __slots__ = ["hook", "write"]
    HOOK_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    hook: _permission_pb2.Hook
    write: _common_pb2.WriteResult
    def __init__(self, hook: _Optional[_Union[_permission_pb2.Hook, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RemoveHookRequest(_message.Message):
    __slots__ = ["hook_id"]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    def __init__(self, hook_id: _Optional[str] = ...) -> None: ...

class RemoveHookResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ReportExecutionEnvironmentRequest(_message.Message):
    __slots__ = ["additional_roots", "arch", "cwd", "env_ref", "os", "session_id", "shell", "thread_id", "turn_id", "workspace_id"]
    ADDITIONAL_ROOTS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_REF_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    additional_roots: _containers.RepeatedScalarFieldContainer[str]
    arch: str
    cwd: str
    env_ref: str
    os: str
    session_id: str
    shell: str
    thread_id: str
    turn_id: str
    workspace_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., cwd: _Optional[str] = ..., additional_roots: _Optional[_Iterable[str]] = ..., shell: _Optional[str] = ..., os: _Optional[str] = ..., arch: _Optional[str] = ..., env_ref: _Optional[str] = ...) -> None: ...

class ReportExecutionEnvironmentResponse(_message.Message):
    __slots__ = ["environment", "write"]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    environment: _permission_pb2.ExecutionEnvironment
    write: _common_pb2.WriteResult
    def __init__(self, environment: _Optional[_Union[_permission_pb2.ExecutionEnvironment, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ReportSandboxAppliedRequest(_message.Message):
    __slots__ = ["env_allowlist", "evaluation_id", "name", "network_enforcement", "network_enforcement_reason", "process_id", "profile", "session_id", "step_id", "target", "thread_id", "tool_call_id", "turn_id"]
    ENV_ALLOWLIST_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_REASON_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    env_allowlist: _containers.RepeatedScalarFieldContainer[str]
    evaluation_id: str
    name: str
    network_enforcement: _permission_pb2.NetworkEnforcement
    network_enforcement_reason: str
    process_id: str
    profile: _permission_pb2.SandboxProfile
    session_id: str
    step_id: str
    target: _permission_pb2.SandboxTarget
    thread_id: str
    tool_call_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., process_id: _Optional[str] = ..., target: _Optional[_Union[_permission_pb2.SandboxTarget, str]] = ..., name: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., network_enforcement: _Optional[_Union[_permission_pb2.NetworkEnforcement, str]] = ..., network_enforcement_reason: _Optional[str] = ..., env_allowlist: _Optional[_Iterable[str]] = ...) -> None: ...

class ReportSandboxAppliedResponse(_message.Message):
    __slots__ = ["applied", "write"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    applied: _permission_pb2.SandboxApplied
    write: _common_pb2.WriteResult
    def __init__(self, applied: _Optional[_Union[_permission_pb2.SandboxApplied, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ReportSandboxViolationRequest(_message.Message):
    __slots__ = ["blocked", "evaluation_id", "kind", "process_id", "reason", "session_id", "step_id", "target", "thread_id", "tool_call_id", "turn_id"]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    blocked: bool
    evaluation_id: str
    kind: _permission_pb2.ViolationKind
    process_id: str
    reason: str
    session_id: str
    step_id: str
    target: str
    thread_id: str
    tool_call_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., process_id: _Optional[str] = ..., kind: _Optional[_Union[_permission_pb2.ViolationKind, str]] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., blocked: bool = ..., step_id: _Optional[str] = ...) -> None: ...

class ReportSandboxViolationResponse(_message.Message):
    __slots__ = ["violation", "write"]
    VIOLATION_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    violation: _permission_pb2.SandboxViolation
    write: _common_pb2.WriteResult
    def __init__(self, violation: _Optional[_Union[_permission_pb2.SandboxViolation, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class ResolvePermissionRequest(_message.Message):
    __slots__ = ["action_id", "decision", "session_id"]
    ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    action_id: str
    decision: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., action_id: _Optional[str] = ..., decision: _Optional[str] = ...) -> None: ...

class ResolvePermissionResponse(_message.Message):
    __slots__ = ["resolution", "write"]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    resolution: _permission_pb2.PermissionResolved
    write: _common_pb2.WriteResult
    def __init__(self, resolution: _Optional[_Union[_permission_pb2.PermissionResolved, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class RunHooksRequest(_message.Message):
    __slots__ = ["cwd", "point", "prompt", "session_id", "step_id", "thread_id", "tool_call_id", "tool_input_json", "tool_name", "tool_output_json", "turn_id", "workspace_id"]
    CWD_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    point: _permission_pb2.HookPoint
    prompt: str
    session_id: str
    step_id: str
    thread_id: str
    tool_call_id: str
    tool_input_json: str
    tool_name: str
    tool_output_json: str
    turn_id: str
    workspace_id: str
    def __init__(self, point: _Optional[_Union[_permission_pb2.HookPoint, str]] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., step_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., workspace_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., tool_input_json: _Optional[str] = ..., tool_output_json: _Optional[str] = ..., prompt: _Optional[str] = ..., cwd: _Optional[str] = ...) -> None: ...

class RunHooksResponse(_message.Message):
    __slots__ = ["decision", "reason", "results", "updated_input_json", "write"]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    decision: _permission_pb2.HookOutcome
    reason: str
    results: _containers.RepeatedCompositeFieldContainer[HookRunResult]
    updated_input_json: str
    write: _common_pb2.WriteResult
    def __init__(self, results: _Optional[_Iterable[_Union[HookRunResult, _Mapping]]] = ..., decision: _Optional[_Union[_permission_pb2.HookOutcome, str]] = ..., reason: _Optional[str] = ..., updated_input_json: _Optional[str] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class SandboxEnforcement(_message.Message):
    __slots__ = ["env_allowlist", "network_enforcement", "network_enforcement_reason", "profile"]
    ENV_ALLOWLIST_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_REASON_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    env_allowlist: _containers.RepeatedScalarFieldContainer[str]
    network_enforcement: _permission_pb2.NetworkEnforcement
    network_enforcement_reason: str
    profile: _permission_pb2.SandboxProfile
    def __init__(self, profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., network_enforcement: _Optional[_Union[_permission_pb2.NetworkEnforcement, str]] = ..., network_enforcement_reason: _Optional[str] = ..., env_allowlist: _Optional[_Iterable[str]] = ...) -> None: ...

class SetPermissionModeRequest(_message.Message):
    __slots__ = ["interactive", "mode", "reason", "scope"]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    interactive: bool
    mode: _permission_pb2.PermissionMode
    reason: str
    scope: PolicyScope
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., mode: _Optional[_Union[_permission_pb2.PermissionMode, str]] = ..., interactive: bool = ..., reason: _Optional[str] = ...) -> None: ...

class SetPermissionModeResponse(_message.Message):
    __slots__ = ["write"]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    write: _common_pb2.WriteResult
    def __init__(self, write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class SetSandboxProfileRequest(_message.Message):
    __slots__ = ["profile", "reason", "scope"]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    profile: _permission_pb2.SandboxProfile
    reason: str
    scope: PolicyScope
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class SetSandboxProfileResponse(_message.Message):
    __slots__ = ["profile", "write"]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    WRITE_FIELD_NUMBER: _ClassVar[int]
    profile: _permission_pb2.SandboxProfile
    write: _common_pb2.WriteResult
    def __init__(self, profile: _Optional[_Union[_permission_pb2.SandboxProfile, _Mapping]] = ..., write: _Optional[_Union[_common_pb2.WriteResult, _Mapping]] = ...) -> None: ...

class Target(_message.Message):
    __slots__ = ["session_id", "thread_id", "workspace_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    thread_id: str
    workspace_id: str
    def __init__(self, workspace_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ...) -> None: ...

class ViolationSummary(_message.Message):
    __slots__ = ["blocked", "event_id", "kind", "reason", "sequence", "target", "thread_id", "turn_id"]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    blocked: bool
    event_id: str
    kind: _permission_pb2.ViolationKind
    reason: str
    sequence: int
    target: str
    thread_id: str
    turn_id: str
    def __init__(self, event_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., kind: _Optional[_Union[_permission_pb2.ViolationKind, str]] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., blocked: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class HookRunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
