from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FACT_STATE_BLOCKED: FactState
FACT_STATE_KNOWN: FactState
FACT_STATE_NOT_APPLICABLE: FactState
FACT_STATE_STALE: FactState
FACT_STATE_UNAVAILABLE: FactState
FACT_STATE_UNKNOWN: FactState
FACT_STATE_UNSPECIFIED: FactState

class OutputRef(_message.Message):
    __slots__ = ["encoding", "expires_at", "media_type", "owner", "preview", "redacted", "sha256", "size_bytes", "truncated", "uri"]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    encoding: str
    expires_at: _timestamp_pb2.Timestamp
    media_type: str
    owner: str
    preview: str
    redacted: bool
    sha256: str
    size_bytes: int
    truncated: bool
    uri: str
    def __init__(self, uri: _Optional[str] = ..., owner: _Optional[str] = ..., media_type: _Optional[str] = ..., encoding: _Optional[str] = ..., size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ..., preview: _Optional[str] = ..., truncated: bool = ..., redacted: bool = ..., expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WriteResult(_message.Message):
    __slots__ = ["deduplicated", "event_ids", "sequence"]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    EVENT_IDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    deduplicated: bool
    event_ids: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ..., event_ids: _Optional[_Iterable[str]] = ..., deduplicated: bool = ...) -> None: ...

class FactState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
