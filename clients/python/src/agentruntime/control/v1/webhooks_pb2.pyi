from buf.validate import validate_pb2 as _validate_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class A2APush(_message.Message):
    __slots__ = ["auth_credentials", "auth_scheme", "config_id", "session_id", "task_id", "thread_id", "token"]
    AUTH_CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    AUTH_SCHEME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    auth_credentials: str
    auth_scheme: str
    config_id: str
    session_id: str
    task_id: str
    thread_id: str
    token: str
    def __init__(self, task_id: _Optional[str] = ..., config_id: _Optional[str] = ..., token: _Optional[str] = ..., auth_scheme: _Optional[str] = ..., auth_credentials: _Optional[str] = ..., session_id: _Optional[str] = ..., thread_id: _Optional[str] = ...) -> None: ...

class CreateWebhookRequest(_message.Message):
    __slots__ = ["a2a_push", "description", "event_types", "session_ids", "url", "webhook_id"]
    A2A_PUSH_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_ID_FIELD_NUMBER: _ClassVar[int]
    a2a_push: A2APush
    description: str
    event_types: _containers.RepeatedScalarFieldContainer[str]
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    url: str
    webhook_id: str
    def __init__(self, url: _Optional[str] = ..., event_types: _Optional[_Iterable[str]] = ..., session_ids: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., a2a_push: _Optional[_Union[A2APush, _Mapping]] = ..., webhook_id: _Optional[str] = ...) -> None: ...

class CreateWebhookResponse(_message.Message):
    __slots__ = ["secret", "sequence", "webhook"]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_FIELD_NUMBER: _ClassVar[int]
    secret: str
    sequence: int
    webhook: Webhook
    def __init__(self, webhook: _Optional[_Union[Webhook, _Mapping]] = ..., secret: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class DeleteWebhookRequest(_message.Message):
    __slots__ = ["webhook_id"]
    WEBHOOK_ID_FIELD_NUMBER: _ClassVar[int]
    webhook_id: str
    def __init__(self, webhook_id: _Optional[str] = ...) -> None: ...

class DeleteWebhookResponse(_message.Message):
    __slots__ = ["sequence"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class ListWebhooksRequest(_message.Message):
    __slots__ = ["a2a_task_id", "min_sequence"]
    A2A_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    a2a_task_id: str
    min_sequence: int
    def __init__(self, min_sequence: _Optional[int] = ..., a2a_task_id: _Optional[str] = ...) -> None: ...

class ListWebhooksResponse(_message.Message):
    __slots__ = ["sequence", "webhooks"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    webhooks: _containers.RepeatedCompositeFieldContainer[Webhook]
    def __init__(self, webhooks: _Optional[_Iterable[_Union[Webhook, _Mapping]]] = ..., sequence: _Optional[int] = ...) -> None: ...

class Webhook(_message.Message):
    __slots__ = ["a2a_push", "created_at", "delivered", "description", "event_types", "failed", "recent_deliveries", "sequence", "session_ids", "url", "webhook_id"]
    A2A_PUSH_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    RECENT_DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_IDS_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    WEBHOOK_ID_FIELD_NUMBER: _ClassVar[int]
    a2a_push: A2APush
    created_at: _timestamp_pb2.Timestamp
    delivered: int
    description: str
    event_types: _containers.RepeatedScalarFieldContainer[str]
    failed: int
    recent_deliveries: _containers.RepeatedCompositeFieldContainer[WebhookDelivery]
    sequence: int
    session_ids: _containers.RepeatedScalarFieldContainer[str]
    url: str
    webhook_id: str
    def __init__(self, webhook_id: _Optional[str] = ..., url: _Optional[str] = ..., event_types: _Optional[_Iterable[str]] = ..., session_ids: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., delivered: _Optional[int] = ..., failed: _Optional[int] = ..., recent_deliveries: _Optional[_Iterable[_Union[WebhookDelivery, _Mapping]]] = ..., sequence: _Optional[int] = ..., a2a_push: _Optional[_Union[A2APush, _Mapping]] = ...) -> None: ...

class WebhookDelivery(_message.Message):
    __slots__ = ["at", "attempts", "delivery_id", "error", "event_id", "event_type", "outcome", "session_id", "status_code"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    attempts: int
    delivery_id: str
    error: str
    event_id: str
    event_type: str
    outcome: str
    session_id: str
    status_code: int
    def __init__(self, delivery_id: _Optional[str] = ..., event_id: _Optional[str] = ..., event_type: _Optional[str] = ..., session_id: _Optional[str] = ..., outcome: _Optional[str] = ..., attempts: _Optional[int] = ..., status_code: _Optional[int] = ..., error: _Optional[str] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
