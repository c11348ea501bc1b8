"""The asyncio client (``grpc.aio``): every RPC of the five services with
typed errors and retries, plus the pieces a client otherwise writes by hand
(resumable subscriptions, paged and checked output reads, remote channels).

    async with await Client.connect("127.0.0.1:7233", token="...") as c:
        turn = await c.submit_turn("default", "hello")
        async for ev in c.subscribe(session_id="default", start=turn.sequence):
            ...
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import (Any, AsyncIterator, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import grpc
import grpc.aio

from agentruntime.control.v1 import control_pb2, control_pb2_grpc
from agentruntime.events.v1 import envelope_pb2
from agentruntime.evidence.v1 import evidence_pb2, evidence_pb2_grpc
from agentruntime.permission.v1 import permission_pb2, permission_pb2_grpc
from agentruntime.routing.v1 import routing_pb2, routing_pb2_grpc
from agentruntime.tasks.v1 import tasks_pb2, tasks_pb2_grpc

from .endpoints import Endpoints
from .errors import IntegrityError, ResourceExhausted, RpcError, Unavailable, from_grpc_error

__all__ = ["Client", "RetryPolicy", "Channel", "Service"]

# The W3C trace context calls made in this context carry (as the
# ``traceparent`` metadata the runtime's servers read): the worker sets it
# to its turn's trace, so every call it makes for the turn joins the trace
# the turn was submitted in (docs/observability.md).
traceparent: contextvars.ContextVar[str] = contextvars.ContextVar("agentruntime_traceparent", default="")

RuntimeEvent = envelope_pb2.RuntimeEvent
Snapshot = control_pb2.Snapshot
Gap = control_pb2.Gap
Heartbeat = control_pb2.Heartbeat

_SERVICES = {
    # name: (pb2 module, grpc module, service name)
    "control": (control_pb2, control_pb2_grpc, "ControlService"),
    "tasks": (tasks_pb2, tasks_pb2_grpc, "TasksService"),
    "routing": (routing_pb2, routing_pb2_grpc, "RoutingService"),
    "permission": (permission_pb2, permission_pb2_grpc, "PermissionService"),
    "evidence": (evidence_pb2, evidence_pb2_grpc, "EvidenceService"),
}


@dataclass(frozen=True)
class RetryPolicy:
    """Which failed calls are retried and how long to wait. The wait is the
    server's ``RetryInfo`` delay when it gives one, else an exponential
    backoff with jitter. A request with an empty ``idempotency_key`` gets
    one before the first attempt, so every retry carries the same key and
    the server appends nothing twice."""

    max_attempts: int = 5
    initial_backoff: float = 0.1
    max_backoff: float = 5.0
    codes: Tuple[grpc.StatusCode, ...] = (grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE)

    def delay(self, attempt: int, err: RpcError) -> float:
        if err.retry_delay is not None:
            return err.retry_delay
        base = min(self.max_backoff, self.initial_backoff * (2 ** (attempt - 1)))
        return base * (0.5 + random.random() / 2)


NO_RETRY = RetryPolicy(max_attempts=1)


class _Unary:
    """One unary RPC: typed errors, retries, credentials."""

    def __init__(self, client: "Client", method: str, call: Any) -> None:
        self._client, self._method, self._call = client, method, call

    async def __call__(self, request: Any, *, timeout: Optional[float] = None,
                       metadata: Sequence[Tuple[str, str]] = (), retry: Optional[RetryPolicy] = None) -> Any:
        policy = retry or self._client.retry
        if "idempotency_key" in request.DESCRIPTOR.fields_by_name and not request.idempotency_key:
            copy = type(request)()
            copy.CopyFrom(request)
            copy.idempotency_key = "py-" + uuid.uuid4().hex
            request = copy
        deadline = None if timeout is None else time.monotonic() + timeout
        md = self._client._metadata(metadata)
        attempt = 0
        while True:
            attempt += 1
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await self._call(request, timeout=remaining, metadata=md)
            except grpc.aio.AioRpcError as e:
                err = from_grpc_error(e, self._method)
                if err.code not in policy.codes or attempt >= policy.max_attempts:
                    raise err from None
                wait = policy.delay(attempt, err)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise err from None
                await asyncio.sleep(wait)


class _ServerStream:
    """One server-streaming RPC: an async iterator with typed errors (no
    retries: resuming needs a cursor; see :meth:`Client.subscribe`)."""

    def __init__(self, client: "Client", method: str, call: Any) -> None:
        self._client, self._method, self._call = client, method, call

    async def __call__(self, request: Any, *, timeout: Optional[float] = None,
                       metadata: Sequence[Tuple[str, str]] = ()) -> AsyncIterator[Any]:
        call = self._call(request, timeout=timeout, metadata=self._client._metadata(metadata))
        try:
            async for item in call:
                yield item
        except grpc.aio.AioRpcError as e:
            raise from_grpc_error(e, self._method) from None
        finally:
            call.cancel()


class Service:
    """Every RPC of one service by its proto name, e.g.
    ``await client.control.GetThreadRead(control_pb2.GetThreadReadRequest(...))``.
    Unary calls return the response (retried per the client's policy);
    streaming calls are async iterators. Errors are :class:`RpcError`s."""

    def __init__(self, client: "Client", name: str, channel: grpc.aio.Channel) -> None:
        pb2, pb2_grpc, service = _SERVICES[name]
        self.name = name
        self.stub = getattr(pb2_grpc, service + "Stub")(channel)
        self._methods: Dict[str, Any] = {}
        for m in pb2.DESCRIPTOR.services_by_name[service].methods:
            full = f"/{pb2.DESCRIPTOR.package}.{service}/{m.name}"
            call = getattr(self.stub, m.name)
            self._methods[m.name] = (_ServerStream if m.server_streaming else _Unary)(client, full, call)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_methods"][name]
        except KeyError:
            raise AttributeError(f"{self.__dict__.get('name')} has no RPC {name}") from None

    def __dir__(self) -> List[str]:
        return sorted(list(super().__dir__()) + list(self._methods))

    @property
    def methods(self) -> List[str]:
        return sorted(self._methods)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _start(start: Union[str, int]) -> Tuple[int, int]:
    if isinstance(start, int) and not isinstance(start, bool):
        return control_pb2.START_FROM_SEQUENCE, max(start, 1)
    if start == "now":
        return control_pb2.START_FROM_NOW, 0
    if start == "snapshot":
        return control_pb2.START_FROM_SNAPSHOT, 0
    raise ValueError(f"start: want 'now', 'snapshot' or a sequence, got {start!r}")


def _reconnectable(err: RpcError) -> bool:
    if err.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN):
        return True
    if err.code == grpc.StatusCode.INTERNAL:  # e.g. a reset HTTP/2 stream
        return True
    return err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and (
        "resume_from_sequence" in err.metadata or "resume_cursor" in err.metadata)


class Client:
    """An asyncio client of the runtime. Make one with :meth:`connect`."""

    def __init__(self, endpoints: Endpoints, channels: Mapping[str, grpc.aio.Channel], *,
                 token: Optional[str], retry: RetryPolicy) -> None:
        self.endpoints = endpoints
        self._channels = dict(channels)
        self._token = token
        self.retry = retry
        by_service = {s: channels[endpoints.addr(s)] for s in _SERVICES}
        self.control = Service(self, "control", by_service["control"])
        self.tasks = Service(self, "tasks", by_service["tasks"])
        self.routing = Service(self, "routing", by_service["routing"])
        self.permission = Service(self, "permission", by_service["permission"])
        self.evidence = Service(self, "evidence", by_service["evidence"])

    @classmethod
    async def connect(cls, endpoints: Union[Endpoints, str, Mapping[str, str]], *,
                      api_key: Optional[str] = None, token: Optional[str] = None,
                      tls: bool = False, root_certificates: Optional[bytes] = None,
                      retry: RetryPolicy = RetryPolicy(),
                      options: Sequence[Tuple[str, Any]] = ()) -> "Client":
        """Opens one channel per distinct address. ``endpoints`` is one
        address, a ``control=HOST:PORT,...`` map or an :class:`Endpoints`.
        ``api_key`` or ``token`` (a JWT) is sent as ``authorization: Bearer``.
        ``tls`` uses TLS with the system roots; ``root_certificates`` (PEM
        bytes) uses TLS trusting these only (it implies ``tls``)."""
        if api_key and token:
            raise ValueError("give api_key or token, not both")
        eps = Endpoints.of(endpoints)
        channels: Dict[str, grpc.aio.Channel] = {}
        opts = [("grpc.keepalive_time_ms", 30000), *options]
        for s in _SERVICES:
            addr = eps.addr(s)
            if addr in channels:
                continue
            if tls or root_certificates is not None:
                creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
                channels[addr] = grpc.aio.secure_channel(addr, creds, options=opts)
            else:
                channels[addr] = grpc.aio.insecure_channel(addr, options=opts)
        return cls(eps, channels, token=token or api_key, retry=retry)

    async def close(self) -> None:
        for ch in self._channels.values():
            await ch.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def _metadata(self, extra: Sequence[Tuple[str, str]] = ()) -> Tuple[Tuple[str, str], ...]:
        md = list(extra)
        if self._token:
            md.append(("authorization", "Bearer " + self._token))
        parent = traceparent.get()
        if parent and not any(k == "traceparent" for k, _ in md):
            md.append(("traceparent", parent))
        return tuple(md)

    async def health(self, service: str, *, timeout: float = 5.0) -> str:
        """What ``grpc.health.v1`` answers for a service (``control``,
        ``routing``, ... or a full name): SERVING, NOT_SERVING, UNKNOWN or
        SERVICE_UNKNOWN. Errors are :class:`RpcError` (NotFound: the address
        does not serve it)."""
        full = service
        if service in _SERVICES:
            pb2, _, name = _SERVICES[service]
            full = f"{pb2.DESCRIPTOR.package}.{name}"
        short = full.split(".")[1] if full.startswith("agentruntime.") else "control"
        ch = self._channels[self.endpoints.addr(short if short in _SERVICES else "control")]
        # grpc.health.v1 by hand (two fields): no extra package needed.
        name_bytes = full.encode()
        req = b"\n" + _varint(len(name_bytes)) + name_bytes
        check = ch.unary_unary("/grpc.health.v1.Health/Check")
        try:
            raw = await check(req, timeout=timeout, metadata=self._metadata())
        except grpc.aio.AioRpcError as e:
            raise from_grpc_error(e, "/grpc.health.v1.Health/Check") from None
        status = raw[1] if len(raw) >= 2 and raw[0] == 0x08 else 0
        return {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}.get(status, "UNKNOWN")

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Waits until every service's channel is connected."""
        await asyncio.wait_for(asyncio.gather(*(ch.channel_ready() for ch in self._channels.values())), timeout)

    # ---- commands with an idiomatic shape (everything else: client.<service>.<Rpc>) ----

    async def submit_turn(self, session_id: str, text: str, *, thread_id: str = "main", turn_id: str = "",
                          idempotency_key: str = "", options: Optional[Mapping[str, str]] = None,
                          metadata: Optional[Mapping[str, str]] = None, **fields: Any) -> control_pb2.SubmitTurnResponse:
        """Submits a turn with one text input (the session and thread are
        created when missing, per the request's policies)."""
        req = control_pb2.SubmitTurnRequest(session_id=session_id, thread_id=thread_id, turn_id=turn_id,
                                            idempotency_key=idempotency_key, options=options or {},
                                            metadata=metadata or {}, **fields)
        req.input.add(text=text)
        return await self.control.SubmitTurn(req)

    async def interrupt_turn(self, session_id: str, thread_id: str, *, reason: str = "", **fields: Any
                             ) -> control_pb2.InterruptTurnResponse:
        req = control_pb2.InterruptTurnRequest(session_id=session_id, thread_id=thread_id, **fields)
        if reason and "reason" in req.DESCRIPTOR.fields_by_name:
            req.reason = reason
        return await self.control.InterruptTurn(req)

    async def respond_action(self, action_id: str, decision: str, payload_json: str = ""
                             ) -> control_pb2.RespondActionResponse:
        return await self.control.RespondAction(control_pb2.RespondActionRequest(
            action_id=action_id, decision=decision, payload_json=payload_json))

    async def approve(self, action_id: str, decision: str = "allow_once") -> control_pb2.RespondActionResponse:
        """Approves an approval action (``allow_once``; ``allow_session``
        also allows the same call for the rest of the session)."""
        return await self.respond_action(action_id, decision)

    async def deny(self, action_id: str) -> control_pb2.RespondActionResponse:
        return await self.respond_action(action_id, "deny")

    async def read_output(self, uri: str, *, page_size: int = 0, expect_sha256: str = "") -> bytes:
        """Reads a stored output (``OutputRef.uri``) in pages (``page_size``
        bytes each; 0: the server's maximum, 1 MiB) and checks the whole
        against the sha256 and size the store answers (and
        ``expect_sha256``, e.g. the ref's, when given). A mismatch raises
        :class:`IntegrityError`."""
        buf = bytearray()
        offset, size, digest = 0, None, ""
        while True:
            r = await self.control.ReadOutput(control_pb2.ReadOutputRequest(uri=uri, offset=offset, limit=page_size))
            if size is None:
                size, digest = r.size_bytes, r.sha256
            elif (r.size_bytes, r.sha256) != (size, digest):
                raise IntegrityError(f"{uri} changed while it was read")
            buf += r.data
            if r.next_offset >= r.size_bytes:
                break
            if r.next_offset <= offset:
                raise IntegrityError(f"{uri}: the read did not advance at offset {offset}")
            offset = r.next_offset
        got = hashlib.sha256(buf).hexdigest()
        if len(buf) != size or got != digest or (expect_sha256 and got != expect_sha256):
            raise IntegrityError(f"{uri}: read {len(buf)} bytes with sha256 {got}; "
                                 f"the store says {size} bytes, sha256 {expect_sha256 or digest}")
        return bytes(buf)

    async def subscribe(self, *, session_id: str = "", thread_id: str = "", task_id: str = "",
                        types: Iterable[str] = (), start: Union[str, int] = "now",
                        heartbeat: Optional[float] = None, channel_id: str = "",
                        heartbeats: bool = False, reconnect_timeout: float = 60.0,
                        resume_cursor: str = "", on_cursor: Optional[Callable[[str], None]] = None,
                        ) -> AsyncIterator[Any]:
        """Follows the log as an async iterator of ``RuntimeEvent`` (and the
        ``Snapshot`` a snapshot-first subscription starts with, ``Heartbeat``
        when ``heartbeats``). A cursor older than the log's retention gets
        the session's ``Snapshot`` and a ``snapshot.repaired`` event, then
        what follows (a tenant-wide subscription, which no snapshot covers,
        gets a ``Gap`` saying what is gone).

        ``start``: ``"now"``, ``"snapshot"`` (the read model first, then
        every event after the sequence it covers) or a sequence. A dropped
        connection (Unavailable, a reset stream, a slow-subscriber cut, an
        unexpected end) resumes from the sequence after the last one
        delivered: no gap, no duplicate. It gives up with the last error
        after ``reconnect_timeout`` seconds without getting through.

        A subscription across sessions (no ``session_id``) resumes from a
        cursor instead: the log's partitions have no order between them,
        so no single sequence says where it is. The server sends one with
        each event and heartbeat; the subscription keeps the last one for
        its reconnects and passes each to ``on_cursor``. Keep the last one
        (an opaque string: do not parse or compare it) to start a later
        subscription right after it with ``resume_cursor``."""
        if resume_cursor and start != "now":
            raise ValueError("subscribe: give start or resume_cursor, not both")
        kind, from_seq = _start(start)
        req = control_pb2.SubscribeEventsRequest(session_id=session_id, thread_id=thread_id, task_id=task_id,
                                                 type_prefixes=list(types), start=kind, from_sequence=from_seq,
                                                 channel_id=channel_id)
        if heartbeat is not None:
            req.heartbeat.FromNanoseconds(int(heartbeat * 1e9))
        cursor = from_seq - 1 if kind == control_pb2.START_FROM_SEQUENCE else None  # last sequence covered
        resume = resume_cursor  # the last cursor of a subscription across sessions
        failing_since: Optional[float] = None
        backoff = 0.05
        while True:
            if resume:
                req.start, req.from_sequence, req.resume_cursor = control_pb2.START_FROM_SEQUENCE, 0, resume
            elif cursor is not None:
                req.start, req.from_sequence = control_pb2.START_FROM_SEQUENCE, cursor + 1
            try:
                async for item in self.control.SubscribeEvents(req):
                    failing_since, backoff = None, 0.05
                    which = item.WhichOneof("item")
                    if item.cursor:
                        resume = item.cursor
                    if which == "event":
                        ev = item.event
                        # With a cursor the server resumes each partition
                        # exactly; their events come in no sequence order.
                        if not item.cursor and cursor is not None and ev.sequence <= cursor:
                            continue  # already delivered before the reconnect
                        cursor = ev.sequence
                        yield ev
                    elif which == "snapshot":
                        cursor = item.snapshot.sequence
                        yield item.snapshot
                    elif which == "gap":
                        yield item.gap
                    elif which == "heartbeat":
                        if item.heartbeat.sequence and cursor is not None and item.heartbeat.sequence > cursor:
                            # Everything up to it was looked at (filters included).
                            cursor = item.heartbeat.sequence
                        if heartbeats:
                            yield item.heartbeat
                    if item.cursor and on_cursor is not None:
                        # After the consumer took the event: a cursor kept
                        # from here never skips one it did not process.
                        on_cursor(item.cursor)
                else:
                    pass  # the stream ended without an error: the server went away; resume
            except RpcError as err:
                if not _reconnectable(err):
                    raise
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > reconnect_timeout:
                    raise
            else:
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > reconnect_timeout:
                    raise Unavailable("the subscription kept ending without events")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    def channel(self, channel_id: str, session_id: str, *, peer: str = "") -> "Channel":
        """A remote channel: a subscription whose progress the runtime keeps
        (acks), so a reconnect from anywhere resumes after the last ack."""
        return Channel(self, channel_id, session_id, peer)


class Channel:
    """A remote channel of a session. :meth:`events` (re)connects it and
    follows the session from the sequence after the last ack (snapshot
    first for a channel that never acked, when asked); :meth:`ack` records
    how far the consumer has processed."""

    def __init__(self, client: Client, channel_id: str, session_id: str, peer: str) -> None:
        self._c, self.channel_id, self.session_id, self.peer = client, channel_id, session_id, peer
        self.last_acked = 0

    async def reconnect(self) -> control_pb2.ReconnectChannelResponse:
        r = await self._c.control.ReconnectChannel(control_pb2.ReconnectChannelRequest(
            channel_id=self.channel_id, session_id=self.session_id, peer=self.peer))
        self.last_acked = r.channel.last_acked_sequence
        return r

    async def events(self, *, types: Iterable[str] = (), snapshot_first: bool = False,
                     thread_id: str = "", heartbeats: bool = False) -> AsyncIterator[Any]:
        """Reconnects the channel, then yields what follows the last ack.
        With ``snapshot_first`` and no ack yet, the session's snapshot comes
        first and then every event after the sequence it covers (the merge
        the server does, continued without a gap across reconnects)."""
        r = await self.reconnect()
        start: Union[str, int] = r.resume_from_sequence
        if snapshot_first and self.last_acked == 0:
            start = "snapshot"
        async for item in self._c.subscribe(session_id=self.session_id, thread_id=thread_id, types=types,
                                            start=start, channel_id=self.channel_id, heartbeats=heartbeats):
            yield item

    async def ack(self, sequence: int) -> control_pb2.AckEventsResponse:
        """Records that everything up to ``sequence`` was processed (acks
        only move forward)."""
        r = await self._c.control.AckEvents(control_pb2.AckEventsRequest(
            channel_id=self.channel_id, session_id=self.session_id, sequence=sequence))
        self.last_acked = max(self.last_acked, r.channel.last_acked_sequence, sequence)
        return r
