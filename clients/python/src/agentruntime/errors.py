"""Typed errors: a failed call is an :class:`RpcError` subclass per gRPC
code, carrying the rich details the services send in the
``grpc-status-details-bin`` trailer (``google.rpc.Status``): the
``ErrorInfo`` reason and metadata, ``BadRequest`` field violations,
``PreconditionFailure`` violations, ``RetryInfo`` delay and
``ResourceInfo``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Type

import grpc

from google.rpc import error_details_pb2, status_pb2

__all__ = [
    "RpcError", "Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
    "FieldViolation", "PreconditionViolation", "IntegrityError", "from_grpc_error",
]

STATUS_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    """A request field that is wrong (``BadRequest.FieldViolation``)."""

    field: str
    description: str
    reason: str = ""


@dataclass(frozen=True)
class PreconditionViolation:
    """A precondition that does not hold (``PreconditionFailure.Violation``)."""

    type: str
    subject: str
    description: str


class RpcError(Exception):
    """A call that failed with a gRPC status. ``code`` is the
    :class:`grpc.StatusCode`; the rest comes from the status details."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, *, code: Optional[grpc.StatusCode] = None,
                 details: Sequence[object] = (), method: str = "") -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.method = method
        #: Every decoded detail message (ErrorInfo, BadRequest, ...), in order.
        self.details: List[object] = list(details)
        info = self._first(error_details_pb2.ErrorInfo)
        self.reason: str = info.reason if info else ""
        self.domain: str = info.domain if info else ""
        self.metadata: Dict[str, str] = dict(info.metadata) if info else {}
        bad = self._first(error_details_pb2.BadRequest)
        self.field_violations: List[FieldViolation] = [
            FieldViolation(v.field, v.description, getattr(v, "reason", ""))
            for v in (bad.field_violations if bad else [])]
        pre = self._first(error_details_pb2.PreconditionFailure)
        self.precondition_violations: List[PreconditionViolation] = [
            PreconditionViolation(v.type, v.subject, v.description) for v in (pre.violations if pre else [])]
        retry = self._first(error_details_pb2.RetryInfo)
        #: Seconds the server asks to wait before a retry (None: it did not say).
        self.retry_delay: Optional[float] = (
            retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9
            if retry is not None and retry.HasField("retry_delay") else None)
        res = self._first(error_details_pb2.ResourceInfo)
        self.resource: Optional[Tuple[str, str]] = (res.resource_type, res.resource_name) if res else None

    def _first(self, kind: type):
        for d in self.details:
            if isinstance(d, kind):
                return d
        return None

    def field(self, name: str) -> Optional[FieldViolation]:
        """The violation of the field ``name``, if any."""
        for v in self.field_violations:
            if v.field == name:
                return v
        return None

    def __str__(self) -> str:
        s = f"{self.code.name}: {self.message}"
        if self.reason:
            s += f" [{self.reason}]"
        if self.field_violations:
            s += " (" + "; ".join(f"{v.field}: {v.description}" for v in self.field_violations) + ")"
        return s

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class Cancelled(RpcError):
    code = grpc.StatusCode.CANCELLED


class Unknown(RpcError):
    code = grpc.StatusCode.UNKNOWN


class InvalidArgument(RpcError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class DeadlineExceeded(RpcError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class NotFound(RpcError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(RpcError):
    code = grpc.StatusCode.ALREADY_EXISTS


class PermissionDenied(RpcError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhausted(RpcError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class FailedPrecondition(RpcError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(RpcError):
    code = grpc.StatusCode.ABORTED


class OutOfRange(RpcError):
    code = grpc.StatusCode.OUT_OF_RANGE


class Unimplemented(RpcError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(RpcError):
    code = grpc.StatusCode.INTERNAL


class Unavailable(RpcError):
    code = grpc.StatusCode.UNAVAILABLE


class DataLoss(RpcError):
    code = grpc.StatusCode.DATA_LOSS


class Unauthenticated(RpcError):
    code = grpc.StatusCode.UNAUTHENTICATED


class IntegrityError(Exception):
    """Bytes read back do not match the sha256 or size the store gave."""


_BY_CODE: Dict[grpc.StatusCode, Type[RpcError]] = {
    c.code: c for c in (Cancelled, Unknown, InvalidArgument, DeadlineExceeded, NotFound, AlreadyExists,
                        PermissionDenied, ResourceExhausted, FailedPrecondition, Aborted, OutOfRange,
                        Unimplemented, Internal, Unavailable, DataLoss, Unauthenticated)}

_DETAIL_TYPES = {
    m.DESCRIPTOR.full_name: m for m in (
        error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo, error_details_pb2.DebugInfo,
        error_details_pb2.QuotaFailure, error_details_pb2.PreconditionFailure, error_details_pb2.BadRequest,
        error_details_pb2.RequestInfo, error_details_pb2.ResourceInfo, error_details_pb2.Help,
        error_details_pb2.LocalizedMessage)}


def decode_status_details(raw: bytes) -> Tuple[Optional[status_pb2.Status], List[object]]:
    """Decodes a ``grpc-status-details-bin`` value into the Status and its
    known detail messages (unknown ones are kept as ``google.protobuf.Any``)."""
    st = status_pb2.Status.FromString(raw)
    out: List[object] = []
    for anyd in st.details:
        kind = _DETAIL_TYPES.get(anyd.TypeName())
        if kind is None:
            out.append(anyd)
            continue
        msg = kind()
        anyd.Unpack(msg)
        out.append(msg)
    return st, out


def _metadata_value(md: Optional[Sequence[Tuple[str, object]]], key: str) -> Optional[bytes]:
    for k, v in md or ():
        if k == key:
            return v if isinstance(v, bytes) else str(v).encode()
    return None


def from_grpc_error(err: grpc.RpcError, method: str = "") -> RpcError:
    """The typed error for a failed call (``grpc.aio.AioRpcError`` or a
    sync ``grpc.RpcError`` that is also a ``grpc.Call``)."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = err.details() if hasattr(err, "details") else str(err)
    trailing: Optional[Sequence[Tuple[str, object]]] = None
    if hasattr(err, "trailing_metadata"):
        trailing = err.trailing_metadata()
    details: List[object] = []
    raw = _metadata_value(trailing, STATUS_DETAILS_KEY)
    if raw:
        try:
            st, details = decode_status_details(raw)
            message = st.message or message
        except Exception:  # a malformed trailer must not hide the error itself
            details = []
    cls = _BY_CODE.get(code, RpcError)
    return cls(message or "", code=code, details=details, method=method)
