"""agentruntime: the asyncio client of the runtime's gRPC services and the
worker SDK. Generated stubs live beside this layer
(``agentruntime.control.v1.control_pb2`` and so on)."""

from .client import Channel, Client, RetryPolicy, Service
from .endpoints import SERVICES, Endpoints
from .enums import enum_value, enum_word
from .errors import (Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, FailedPrecondition,
                     FieldViolation, IntegrityError, Internal, InvalidArgument, NotFound, OutOfRange,
                     PermissionDenied, PreconditionViolation, ResourceExhausted, RpcError, Unauthenticated,
                     Unavailable, Unimplemented, Unknown)
from .ids import new_id
from .models import (Message, Model, ModelError, ModelRequest, ModelResponse, ModelSink, OpenAICompatible,
                     ScriptedModel, ToolCall, ToolDef, Usage)
from .tools import Tool, ToolContext, ToolError, ToolResult, tool
from .worker import DEFAULT_REDACTION_RULES, RedactionRule, Worker

__version__ = "0.1.0"
