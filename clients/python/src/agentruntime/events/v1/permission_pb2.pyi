from agentruntime.common.v1 import common_pb2 as _common_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ACCESS_EXECUTE: Access
ACCESS_NETWORK: Access
ACCESS_READ: Access
ACCESS_UNSPECIFIED: Access
ACCESS_WRITE: Access
DECISION_ALLOW: Decision
DECISION_ASK: Decision
DECISION_DENY: Decision
DECISION_SANDBOXED: Decision
DECISION_SOURCE_HOOK: DecisionSource
DECISION_SOURCE_HOST_POLICY: DecisionSource
DECISION_SOURCE_HUMAN: DecisionSource
DECISION_SOURCE_MODE: DecisionSource
DECISION_SOURCE_RULE: DecisionSource
DECISION_SOURCE_SANDBOX: DecisionSource
DECISION_SOURCE_UNSPECIFIED: DecisionSource
DECISION_UNAVAILABLE: Decision
DECISION_UNSPECIFIED: Decision
DESCRIPTOR: _descriptor.FileDescriptor
FAIL_MODE_CLOSED: FailMode
FAIL_MODE_OPEN: FailMode
FAIL_MODE_UNSPECIFIED: FailMode
HOOK_FAILURE_CATEGORY_HANDLER_ERROR: HookFailureCategory
HOOK_FAILURE_CATEGORY_INVALID_OUTPUT: HookFailureCategory
HOOK_FAILURE_CATEGORY_TIMEOUT: HookFailureCategory
HOOK_FAILURE_CATEGORY_UNAVAILABLE: HookFailureCategory
HOOK_FAILURE_CATEGORY_UNSPECIFIED: HookFailureCategory
HOOK_OUTCOME_ALLOW: HookOutcome
HOOK_OUTCOME_ASK: HookOutcome
HOOK_OUTCOME_BLOCK: HookOutcome
HOOK_OUTCOME_CONTINUE: HookOutcome
HOOK_OUTCOME_DENY: HookOutcome
HOOK_OUTCOME_UNSPECIFIED: HookOutcome
HOOK_POINT_PERMISSION_REQUEST: HookPoint
HOOK_POINT_POST_SAMPLING: HookPoint
HOOK_POINT_POST_TOOL_FAILURE: HookPoint
HOOK_POINT_POST_TOOL_USE: HookPoint
HOOK_POINT_PRE_TOOL_USE: HookPoint
HOOK_POINT_SESSION_START: HookPoint
HOOK_POINT_STOP: HookPoint
HOOK_POINT_UNSPECIFIED: HookPoint
HOOK_POINT_USER_PROMPT_SUBMIT: HookPoint
HOOK_RISK_HIGH: HookRisk
HOOK_RISK_READ_ONLY: HookRisk
HOOK_RISK_UNSPECIFIED: HookRisk
NETWORK_ENFORCEMENT_ENFORCED: NetworkEnforcement
NETWORK_ENFORCEMENT_NOT_APPLICABLE: NetworkEnforcement
NETWORK_ENFORCEMENT_UNAVAILABLE: NetworkEnforcement
NETWORK_ENFORCEMENT_UNSPECIFIED: NetworkEnforcement
NETWORK_MODE_ALLOWLIST: NetworkMode
NETWORK_MODE_FULL: NetworkMode
NETWORK_MODE_NONE: NetworkMode
NETWORK_MODE_UNSPECIFIED: NetworkMode
PERMISSION_MODE_AUTO: PermissionMode
PERMISSION_MODE_BYPASS: PermissionMode
PERMISSION_MODE_DEFAULT: PermissionMode
PERMISSION_MODE_NEVER: PermissionMode
PERMISSION_MODE_ON_FAILURE: PermissionMode
PERMISSION_MODE_ON_REQUEST: PermissionMode
PERMISSION_MODE_PLAN: PermissionMode
PERMISSION_MODE_UNSPECIFIED: PermissionMode
PERMISSION_MODE_UNTRUSTED: PermissionMode
PERMISSION_RESOLUTION_ALLOWED: PermissionResolution
PERMISSION_RESOLUTION_CANCELLED: PermissionResolution
PERMISSION_RESOLUTION_DENIED: PermissionResolution
PERMISSION_RESOLUTION_TIMED_OUT: PermissionResolution
PERMISSION_RESOLUTION_UNSPECIFIED: PermissionResolution
POLICY_LEVEL_SESSION: PolicyLevel
POLICY_LEVEL_TENANT: PolicyLevel
POLICY_LEVEL_THREAD: PolicyLevel
POLICY_LEVEL_UNSPECIFIED: PolicyLevel
POLICY_LEVEL_WORKSPACE: PolicyLevel
RULE_EFFECT_ALLOW: RuleEffect
RULE_EFFECT_ASK: RuleEffect
RULE_EFFECT_DENY: RuleEffect
RULE_EFFECT_UNSPECIFIED: RuleEffect
RULE_SOURCE_HOST: RuleSource
RULE_SOURCE_SESSION: RuleSource
RULE_SOURCE_UNSPECIFIED: RuleSource
RULE_SOURCE_USER: RuleSource
RULE_SOURCE_WORKSPACE: RuleSource
SANDBOX_MODE_FULL_ACCESS: SandboxMode
SANDBOX_MODE_READ_ONLY: SandboxMode
SANDBOX_MODE_UNSPECIFIED: SandboxMode
SANDBOX_MODE_WORKSPACE_WRITE: SandboxMode
SANDBOX_TARGET_PROCESS: SandboxTarget
SANDBOX_TARGET_TOOL: SandboxTarget
SANDBOX_TARGET_TURN: SandboxTarget
SANDBOX_TARGET_UNSPECIFIED: SandboxTarget
TARGET_KIND_ACTION: TargetKind
TARGET_KIND_PROCESS: TargetKind
TARGET_KIND_TOOL: TargetKind
TARGET_KIND_UNSPECIFIED: TargetKind
VIOLATION_KIND_FILESYSTEM_READ: ViolationKind
VIOLATION_KIND_FILESYSTEM_WRITE: ViolationKind
VIOLATION_KIND_NETWORK: ViolationKind
VIOLATION_KIND_PROCESS: ViolationKind
VIOLATION_KIND_UNSPECIFIED: ViolationKind

class ExecutionEnvironment(_message.Message):
    __slots__ = ["additional_roots", "allowed_hosts", "arch", "cwd", "env_ref", "network", "os", "resource_limits", "sandbox_profile", "shell", "workspace_id"]
    ADDITIONAL_ROOTS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_REF_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    additional_roots: _containers.RepeatedScalarFieldContainer[str]
    allowed_hosts: _containers.RepeatedScalarFieldContainer[str]
    arch: str
    cwd: str
    env_ref: str
    network: NetworkMode
    os: str
    resource_limits: ProcessLimits
    sandbox_profile: SandboxProfile
    shell: str
    workspace_id: str
    def __init__(self, workspace_id: _Optional[str] = ..., cwd: _Optional[str] = ..., additional_roots: _Optional[_Iterable[str]] = ..., shell: _Optional[str] = ..., os: _Optional[str] = ..., arch: _Optional[str] = ..., env_ref: _Optional[str] = ..., sandbox_profile: _Optional[_Union[SandboxProfile, _Mapping]] = ..., network: _Optional[_Union[NetworkMode, str]] = ..., allowed_hosts: _Optional[_Iterable[str]] = ..., resource_limits: _Optional[_Union[ProcessLimits, _Mapping]] = ...) -> None: ...

class Hook(_message.Message):
    __slots__ = ["grpc_target", "hook_id", "http_url", "point", "risk", "timeout", "tool_matcher", "workspace_id"]
    GRPC_TARGET_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HTTP_URL_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    RISK_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_MATCHER_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    grpc_target: str
    hook_id: str
    http_url: str
    point: HookPoint
    risk: HookRisk
    timeout: _duration_pb2.Duration
    tool_matcher: str
    workspace_id: str
    def __init__(self, hook_id: _Optional[str] = ..., point: _Optional[_Union[HookPoint, str]] = ..., grpc_target: _Optional[str] = ..., http_url: _Optional[str] = ..., tool_matcher: _Optional[str] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., risk: _Optional[_Union[HookRisk, str]] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class HookCompleted(_message.Message):
    __slots__ = ["additional_context_refs", "audit_refs", "decision", "duration", "evaluation_id", "hook_id", "hook_run_id", "point", "reason", "suppress_output", "updated_input_ref", "updated_output_ref"]
    ADDITIONAL_CONTEXT_REFS_FIELD_NUMBER: _ClassVar[int]
    AUDIT_REFS_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SUPPRESS_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    UPDATED_OUTPUT_REF_FIELD_NUMBER: _ClassVar[int]
    additional_context_refs: _containers.RepeatedCompositeFieldContainer[_common_pb2.OutputRef]
    audit_refs: _containers.RepeatedScalarFieldContainer[str]
    decision: HookOutcome
    duration: _duration_pb2.Duration
    evaluation_id: str
    hook_id: str
    hook_run_id: str
    point: HookPoint
    reason: str
    suppress_output: bool
    updated_input_ref: _common_pb2.OutputRef
    updated_output_ref: _common_pb2.OutputRef
    def __init__(self, hook_run_id: _Optional[str] = ..., hook_id: _Optional[str] = ..., point: _Optional[_Union[HookPoint, str]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., decision: _Optional[_Union[HookOutcome, str]] = ..., reason: _Optional[str] = ..., updated_input_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., additional_context_refs: _Optional[_Iterable[_Union[_common_pb2.OutputRef, _Mapping]]] = ..., updated_output_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., suppress_output: bool = ..., audit_refs: _Optional[_Iterable[str]] = ..., evaluation_id: _Optional[str] = ...) -> None: ...

class HookFailed(_message.Message):
    __slots__ = ["category", "duration", "error", "evaluation_id", "fail_mode", "hook_id", "hook_run_id", "point", "retryable", "warning"]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    FAIL_MODE_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    category: HookFailureCategory
    duration: _duration_pb2.Duration
    error: str
    evaluation_id: str
    fail_mode: FailMode
    hook_id: str
    hook_run_id: str
    point: HookPoint
    retryable: bool
    warning: str
    def __init__(self, hook_run_id: _Optional[str] = ..., hook_id: _Optional[str] = ..., point: _Optional[_Union[HookPoint, str]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., category: _Optional[_Union[HookFailureCategory, str]] = ..., retryable: bool = ..., fail_mode: _Optional[_Union[FailMode, str]] = ..., error: _Optional[str] = ..., warning: _Optional[str] = ..., evaluation_id: _Optional[str] = ...) -> None: ...

class HookStarted(_message.Message):
    __slots__ = ["evaluation_id", "handler_ref", "hook_id", "hook_run_id", "point", "preview", "timeout"]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    HANDLER_REF_FIELD_NUMBER: _ClassVar[int]
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    POINT_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    evaluation_id: str
    handler_ref: str
    hook_id: str
    hook_run_id: str
    point: HookPoint
    preview: str
    timeout: _duration_pb2.Duration
    def __init__(self, hook_run_id: _Optional[str] = ..., hook_id: _Optional[str] = ..., point: _Optional[_Union[HookPoint, str]] = ..., handler_ref: _Optional[str] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., preview: _Optional[str] = ..., evaluation_id: _Optional[str] = ...) -> None: ...

class PermissionEvaluated(_message.Message):
    __slots__ = ["access", "approval_action_id", "arguments_preview", "decision", "decision_reason", "decision_source", "destructive", "evaluation_id", "expires_at", "hook_run_ids", "hosts", "impact_scope", "interactive", "mode", "name", "paths", "rollback_advice", "rule_refs", "scope", "subcommands", "target", "updated_input_ref"]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ACTION_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DECISION_REASON_FIELD_NUMBER: _ClassVar[int]
    DECISION_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HOOK_RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    IMPACT_SCOPE_FIELD_NUMBER: _ClassVar[int]
    INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    ROLLBACK_ADVICE_FIELD_NUMBER: _ClassVar[int]
    RULE_REFS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SUBCOMMANDS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_REF_FIELD_NUMBER: _ClassVar[int]
    access: Access
    approval_action_id: str
    arguments_preview: str
    decision: Decision
    decision_reason: str
    decision_source: DecisionSource
    destructive: bool
    evaluation_id: str
    expires_at: _timestamp_pb2.Timestamp
    hook_run_ids: _containers.RepeatedScalarFieldContainer[str]
    hosts: _containers.RepeatedScalarFieldContainer[str]
    impact_scope: str
    interactive: bool
    mode: PermissionMode
    name: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    rollback_advice: str
    rule_refs: _containers.RepeatedScalarFieldContainer[str]
    scope: str
    subcommands: _containers.RepeatedCompositeFieldContainer[Subcommand]
    target: TargetKind
    updated_input_ref: _common_pb2.OutputRef
    def __init__(self, evaluation_id: _Optional[str] = ..., target: _Optional[_Union[TargetKind, str]] = ..., name: _Optional[str] = ..., access: _Optional[_Union[Access, str]] = ..., decision: _Optional[_Union[Decision, str]] = ..., decision_source: _Optional[_Union[DecisionSource, str]] = ..., decision_reason: _Optional[str] = ..., rule_refs: _Optional[_Iterable[str]] = ..., destructive: bool = ..., impact_scope: _Optional[str] = ..., rollback_advice: _Optional[str] = ..., scope: _Optional[str] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., mode: _Optional[_Union[PermissionMode, str]] = ..., interactive: bool = ..., updated_input_ref: _Optional[_Union[_common_pb2.OutputRef, _Mapping]] = ..., approval_action_id: _Optional[str] = ..., subcommands: _Optional[_Iterable[_Union[Subcommand, _Mapping]]] = ..., paths: _Optional[_Iterable[str]] = ..., hosts: _Optional[_Iterable[str]] = ..., hook_run_ids: _Optional[_Iterable[str]] = ..., arguments_preview: _Optional[str] = ...) -> None: ...

class PermissionRequested(_message.Message):
    __slots__ = ["arguments_preview", "decision_on_timeout", "decisions", "destructive", "evaluation_id", "impact_scope", "name", "prompt", "proposed_session_rule", "requester_role", "requester_subject", "sandbox_profile", "target", "timeout"]
    ARGUMENTS_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    DECISION_ON_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    IMPACT_SCOPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_SESSION_RULE_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_ROLE_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_PROFILE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    arguments_preview: str
    decision_on_timeout: str
    decisions: _containers.RepeatedScalarFieldContainer[str]
    destructive: bool
    evaluation_id: str
    impact_scope: str
    name: str
    prompt: str
    proposed_session_rule: PermissionRule
    requester_role: str
    requester_subject: str
    sandbox_profile: SandboxProfile
    target: TargetKind
    timeout: _duration_pb2.Duration
    def __init__(self, evaluation_id: _Optional[str] = ..., prompt: _Optional[str] = ..., target: _Optional[_Union[TargetKind, str]] = ..., name: _Optional[str] = ..., arguments_preview: _Optional[str] = ..., decisions: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., decision_on_timeout: _Optional[str] = ..., destructive: bool = ..., impact_scope: _Optional[str] = ..., proposed_session_rule: _Optional[_Union[PermissionRule, _Mapping]] = ..., sandbox_profile: _Optional[_Union[SandboxProfile, _Mapping]] = ..., requester_subject: _Optional[str] = ..., requester_role: _Optional[str] = ...) -> None: ...

class PermissionResolved(_message.Message):
    __slots__ = ["allowed", "decision", "evaluation_id", "resolution", "responder", "session_rule_id"]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    RESPONDER_FIELD_NUMBER: _ClassVar[int]
    SESSION_RULE_ID_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    decision: str
    evaluation_id: str
    resolution: PermissionResolution
    responder: str
    session_rule_id: str
    def __init__(self, evaluation_id: _Optional[str] = ..., resolution: _Optional[_Union[PermissionResolution, str]] = ..., decision: _Optional[str] = ..., responder: _Optional[str] = ..., session_rule_id: _Optional[str] = ..., allowed: bool = ...) -> None: ...

class PermissionRule(_message.Message):
    __slots__ = ["commands", "description", "effect", "expires_at", "hosts", "paths", "rule_id", "source", "tool"]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedScalarFieldContainer[str]
    description: str
    effect: RuleEffect
    expires_at: _timestamp_pb2.Timestamp
    hosts: _containers.RepeatedScalarFieldContainer[str]
    paths: _containers.RepeatedScalarFieldContainer[str]
    rule_id: str
    source: RuleSource
    tool: str
    def __init__(self, rule_id: _Optional[str] = ..., effect: _Optional[_Union[RuleEffect, str]] = ..., source: _Optional[_Union[RuleSource, str]] = ..., tool: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., commands: _Optional[_Iterable[str]] = ..., hosts: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PolicyChanged(_message.Message):
    __slots__ = ["changed_by", "hook_registered", "hook_removed", "level", "mode_set", "reason", "rules_put", "sandbox_set", "scope_id", "session_rule_added"]
    class HookRegistered(_message.Message):
        __slots__ = ["hook"]
        HOOK_FIELD_NUMBER: _ClassVar[int]
        hook: Hook
        def __init__(self, hook: _Optional[_Union[Hook, _Mapping]] = ...) -> None: ...
    class HookRemoved(_message.Message):
        __slots__ = ["hook_id"]
        HOOK_ID_FIELD_NUMBER: _ClassVar[int]
        hook_id: str
        def __init__(self, hook_id: _Optional[str] = ...) -> None: ...
    class ModeSet(_message.Message):
        __slots__ = ["interactive", "mode"]
        INTERACTIVE_FIELD_NUMBER: _ClassVar[int]
        MODE_FIELD_NUMBER: _ClassVar[int]
        interactive: bool
        mode: PermissionMode
        def __init__(self, mode: _Optional[_Union[PermissionMode, str]] = ..., interactive: bool = ...) -> None: ...
    class RulesPut(_message.Message):
        __slots__ = ["rules"]
        RULES_FIELD_NUMBER: _ClassVar[int]
        rules: _containers.RepeatedCompositeFieldContainer[PermissionRule]
        def __init__(self, rules: _Optional[_Iterable[_Union[PermissionRule, _Mapping]]] = ...) -> None: ...
    class SandboxSet(_message.Message):
        __slots__ = ["profile"]
        PROFILE_FIELD_NUMBER: _ClassVar[int]
        profile: SandboxProfile
        def __init__(self, profile: _Optional[_Union[SandboxProfile, _Mapping]] = ...) -> None: ...
    class SessionRuleAdded(_message.Message):
        __slots__ = ["action_id", "rule"]
        ACTION_ID_FIELD_NUMBER: _ClassVar[int]
        RULE_FIELD_NUMBER: _ClassVar[int]
        action_id: str
        rule: PermissionRule
        def __init__(self, rule: _Optional[_Union[PermissionRule, _Mapping]] = ..., action_id: _Optional[str] = ...) -> None: ...
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    HOOK_REGISTERED_FIELD_NUMBER: _ClassVar[int]
    HOOK_REMOVED_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MODE_SET_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULES_PUT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_SET_FIELD_NUMBER: _ClassVar[int]
    SCOPE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_RULE_ADDED_FIELD_NUMBER: _ClassVar[int]
    changed_by: str
    hook_registered: PolicyChanged.HookRegistered
    hook_removed: PolicyChanged.HookRemoved
    level: PolicyLevel
    mode_set: PolicyChanged.ModeSet
    reason: str
    rules_put: PolicyChanged.RulesPut
    sandbox_set: PolicyChanged.SandboxSet
    scope_id: str
    session_rule_added: PolicyChanged.SessionRuleAdded
    def __init__(self, level: _Optional[_Union[PolicyLevel, str]] = ..., scope_id: _Optional[str] = ..., mode_set: _Optional[_Union[PolicyChanged.ModeSet, _Mapping]] = ..., rules_put: _Optional[_Union[PolicyChanged.RulesPut, _Mapping]] = ..., session_rule_added: _Optional[_Union[PolicyChanged.SessionRuleAdded, _Mapping]] = ..., sandbox_set: _Optional[_Union[PolicyChanged.SandboxSet, _Mapping]] = ..., hook_registered: _Optional[_Union[PolicyChanged.HookRegistered, _Mapping]] = ..., hook_removed: _Optional[_Union[PolicyChanged.HookRemoved, _Mapping]] = ..., changed_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ProcessLimits(_message.Message):
    __slots__ = ["cpu_time", "max_open_files", "max_processes", "memory_bytes", "wall_time"]
    CPU_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_OPEN_FILES_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_FIELD_NUMBER: _ClassVar[int]
    cpu_time: _duration_pb2.Duration
    max_open_files: int
    max_processes: int
    memory_bytes: int
    wall_time: _duration_pb2.Duration
    def __init__(self, max_processes: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., cpu_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., wall_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., max_open_files: _Optional[int] = ...) -> None: ...

class SandboxApplied(_message.Message):
    __slots__ = ["applied_by", "env_allowlist", "environment", "evaluation_id", "name", "network_enforcement", "network_enforcement_reason", "profile", "target"]
    APPLIED_BY_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    ENV_ALLOWLIST_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ENFORCEMENT_REASON_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    applied_by: str
    env_allowlist: _containers.RepeatedScalarFieldContainer[str]
    environment: ExecutionEnvironment
    evaluation_id: str
    name: str
    network_enforcement: NetworkEnforcement
    network_enforcement_reason: str
    profile: SandboxProfile
    target: SandboxTarget
    def __init__(self, target: _Optional[_Union[SandboxTarget, str]] = ..., name: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., profile: _Optional[_Union[SandboxProfile, _Mapping]] = ..., environment: _Optional[_Union[ExecutionEnvironment, _Mapping]] = ..., network_enforcement: _Optional[_Union[NetworkEnforcement, str]] = ..., network_enforcement_reason: _Optional[str] = ..., env_allowlist: _Optional[_Iterable[str]] = ..., applied_by: _Optional[str] = ...) -> None: ...

class SandboxProfile(_message.Message):
    __slots__ = ["allowed_hosts", "cwd", "environment_ref", "mode", "network", "process_limits", "read_roots", "violation_refs", "write_roots"]
    ALLOWED_HOSTS_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_REF_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    PROCESS_LIMITS_FIELD_NUMBER: _ClassVar[int]
    READ_ROOTS_FIELD_NUMBER: _ClassVar[int]
    VIOLATION_REFS_FIELD_NUMBER: _ClassVar[int]
    WRITE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    allowed_hosts: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    environment_ref: str
    mode: SandboxMode
    network: NetworkMode
    process_limits: ProcessLimits
    read_roots: _containers.RepeatedScalarFieldContainer[str]
    violation_refs: _containers.RepeatedScalarFieldContainer[str]
    write_roots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, mode: _Optional[_Union[SandboxMode, str]] = ..., cwd: _Optional[str] = ..., read_roots: _Optional[_Iterable[str]] = ..., write_roots: _Optional[_Iterable[str]] = ..., network: _Optional[_Union[NetworkMode, str]] = ..., allowed_hosts: _Optional[_Iterable[str]] = ..., environment_ref: _Optional[str] = ..., process_limits: _Optional[_Union[ProcessLimits, _Mapping]] = ..., violation_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class SandboxViolation(_message.Message):
    __slots__ = ["blocked", "detected_by", "evaluation_id", "kind", "reason", "target"]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    DETECTED_BY_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    blocked: bool
    detected_by: str
    evaluation_id: str
    kind: ViolationKind
    reason: str
    target: str
    def __init__(self, kind: _Optional[_Union[ViolationKind, str]] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., evaluation_id: _Optional[str] = ..., detected_by: _Optional[str] = ..., blocked: bool = ...) -> None: ...

class Subcommand(_message.Message):
    __slots__ = ["argv", "decision", "destructive", "destructive_reason", "read_paths", "rule_refs", "write_paths"]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_REASON_FIELD_NUMBER: _ClassVar[int]
    READ_PATHS_FIELD_NUMBER: _ClassVar[int]
    RULE_REFS_FIELD_NUMBER: _ClassVar[int]
    WRITE_PATHS_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    decision: Decision
    destructive: bool
    destructive_reason: str
    read_paths: _containers.RepeatedScalarFieldContainer[str]
    rule_refs: _containers.RepeatedScalarFieldContainer[str]
    write_paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., write_paths: _Optional[_Iterable[str]] = ..., read_paths: _Optional[_Iterable[str]] = ..., destructive: bool = ..., destructive_reason: _Optional[str] = ..., decision: _Optional[_Union[Decision, str]] = ..., rule_refs: _Optional[_Iterable[str]] = ...) -> None: ...

class PermissionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DecisionSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RuleEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RuleSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class NetworkMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SandboxMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PolicyLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HookPoint(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HookRisk(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class FailMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HookOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TargetKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Access(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PermissionResolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SandboxTarget(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class NetworkEnforcement(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ViolationKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HookFailureCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
