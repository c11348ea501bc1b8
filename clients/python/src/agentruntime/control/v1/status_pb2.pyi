from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

ACTION_STATUS_CANCELLED: ActionStatus
ACTION_STATUS_PENDING: ActionStatus
ACTION_STATUS_RESOLVED: ActionStatus
ACTION_STATUS_TIMED_OUT: ActionStatus
ACTION_STATUS_UNSPECIFIED: ActionStatus
CHANNEL_STATUS_CONNECTED: ChannelStatus
CHANNEL_STATUS_DISCONNECTED: ChannelStatus
CHANNEL_STATUS_UNSPECIFIED: ChannelStatus
DESCRIPTOR: _descriptor.FileDescriptor
PROCESS_STATUS_COMPLETED: ProcessStatus
PROCESS_STATUS_FAILED: ProcessStatus
PROCESS_STATUS_LOST: ProcessStatus
PROCESS_STATUS_RUNNING: ProcessStatus
PROCESS_STATUS_TERMINATED: ProcessStatus
PROCESS_STATUS_UNSPECIFIED: ProcessStatus
SUBAGENT_STATUS_CLOSED: SubagentStatus
SUBAGENT_STATUS_COMPLETED: SubagentStatus
SUBAGENT_STATUS_FAILED: SubagentStatus
SUBAGENT_STATUS_IDLE: SubagentStatus
SUBAGENT_STATUS_RUNNING: SubagentStatus
SUBAGENT_STATUS_UNSPECIFIED: SubagentStatus
SUBAGENT_STATUS_WAITING_INPUT: SubagentStatus
SUBAGENT_STATUS_WAITING_PERMISSION: SubagentStatus
THREAD_STATUS_CLOSED: ThreadStatus
THREAD_STATUS_IDLE: ThreadStatus
THREAD_STATUS_INTERRUPTING: ThreadStatus
THREAD_STATUS_RUNNING: ThreadStatus
THREAD_STATUS_UNSPECIFIED: ThreadStatus
THREAD_STATUS_WAITING_INPUT: ThreadStatus
THREAD_STATUS_WAITING_PERMISSION: ThreadStatus
TURN_ATTEMPT_STATUS_CANCELLED: TurnAttemptStatus
TURN_ATTEMPT_STATUS_COMPLETED: TurnAttemptStatus
TURN_ATTEMPT_STATUS_FAILED: TurnAttemptStatus
TURN_ATTEMPT_STATUS_LOST: TurnAttemptStatus
TURN_ATTEMPT_STATUS_PARKED: TurnAttemptStatus
TURN_ATTEMPT_STATUS_RUNNING: TurnAttemptStatus
TURN_ATTEMPT_STATUS_TIMED_OUT: TurnAttemptStatus
TURN_ATTEMPT_STATUS_UNSPECIFIED: TurnAttemptStatus
TURN_STATUS_ACCEPTED: TurnStatus
TURN_STATUS_CANCELLED: TurnStatus
TURN_STATUS_COMPLETED: TurnStatus
TURN_STATUS_FAILED: TurnStatus
TURN_STATUS_INTERRUPTING: TurnStatus
TURN_STATUS_QUEUED: TurnStatus
TURN_STATUS_ROLLED_BACK: TurnStatus
TURN_STATUS_RUNNING: TurnStatus
TURN_STATUS_STEERED: TurnStatus
TURN_STATUS_TIMED_OUT: TurnStatus
TURN_STATUS_UNSPECIFIED: TurnStatus
TURN_STATUS_WAITING_INPUT: TurnStatus
TURN_STATUS_WAITING_PERMISSION: TurnStatus

class TurnStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ThreadStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ActionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SubagentStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ChannelStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TurnAttemptStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ProcessStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
