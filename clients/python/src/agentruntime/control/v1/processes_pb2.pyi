from agentruntime.control.v1 import status_pb2 as _status_pb2
from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Process(_message.Message):
    __slots__ = ["command", "process_id", "run_id", "sequence", "session_id", "started_sequence", "status", "terminate_requested", "thread_id", "turn_id"]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    command: str
    process_id: str
    run_id: str
    sequence: int
    session_id: str
    started_sequence: int
    status: _status_pb2.ProcessStatus
    terminate_requested: bool
    thread_id: str
    turn_id: str
    def __init__(self, process_id: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., run_id: _Optional[str] = ..., status: _Optional[_Union[_status_pb2.ProcessStatus, str]] = ..., command: _Optional[str] = ..., terminate_requested: bool = ..., started_sequence: _Optional[int] = ..., sequence: _Optional[int] = ...) -> None: ...

class TerminateProcessRequest(_message.Message):
    __slots__ = ["process_id", "reason"]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    reason: str
    def __init__(self, process_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class TerminateProcessResponse(_message.Message):
    __slots__ = ["accepted", "sequence"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    sequence: int
    def __init__(self, accepted: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class WriteProcessStdinRequest(_message.Message):
    __slots__ = ["data", "process_id"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    process_id: str
    def __init__(self, process_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class WriteProcessStdinResponse(_message.Message):
    __slots__ = ["event_id", "sequence"]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    sequence: int
    def __init__(self, sequence: _Optional[int] = ..., event_id: _Optional[str] = ...) -> None: ...
