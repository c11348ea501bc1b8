from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

ACCESS_FIELD_NUMBER: _ClassVar[int]
DESCRIPTOR: _descriptor.FileDescriptor
ROLE_ADMIN: Role
ROLE_OPERATOR: Role
ROLE_UNSPECIFIED: Role
ROLE_VIEWER: Role
ROLE_WORKER: Role
access: _descriptor.FieldDescriptor

class Access(_message.Message):
    __slots__ = ["also_worker", "min_role"]
    ALSO_WORKER_FIELD_NUMBER: _ClassVar[int]
    MIN_ROLE_FIELD_NUMBER: _ClassVar[int]
    also_worker: bool
    min_role: Role
    def __init__(self, min_role: _Optional[_Union[Role, str]] = ..., also_worker: bool = ...) -> None: ...

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
