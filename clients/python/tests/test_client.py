"""The client: typed errors with their details from the real services,
retries with one idempotency key and RetryInfo's delay, a subscription
that resumes after its connection drops (no gap, no duplicate), remote
channels (ack, snapshot first then replay), paged output reads with the
sha256 checked."""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import List

import grpc
import grpc.aio
import pytest
from google.protobuf import duration_pb2

from agentruntime import (Client, Endpoints, IntegrityError, InvalidArgument, NotFound, RetryPolicy, Unavailable)
from agentruntime.control.v1 import control_pb2, control_pb2_grpc
from agentruntime.events.v1 import envelope_pb2
from google.rpc import error_details_pb2, status_pb2

TIMEOUT = 30.0


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def test_errors_carry_code_reason_and_field_violations(dev):
    async def main():
        async with await Client.connect(dev) as c:
            with pytest.raises(InvalidArgument) as bad:
                await c.submit_turn("not.valid", "hello")
            with pytest.raises(NotFound) as missing:
                await c.control.GetTurnAttempts(control_pb2.GetTurnAttemptsRequest(turn_id="turn_nope"))
            return bad.value, missing.value

    bad, missing = run(main())
    assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
    v = bad.field("session_id")
    assert v is not None and "pattern" in v.description, bad.field_violations
    assert missing.code == grpc.StatusCode.NOT_FOUND and missing.message


def test_endpoints_map_and_parse_errors(dev):
    eps = Endpoints.parse(f"control={dev},permission={dev}", default="127.0.0.1:1")
    assert eps.addr("control") == dev and eps.addr("routing") == "127.0.0.1:1"
    for bad in ("control", "nope=a:1", "control=a:1,control=b:2", "control=a"):
        with pytest.raises(ValueError):
            Endpoints.parse(bad, "x:1")

    async def main():
        # Routing's address is wrong on purpose: a control call goes to control's.
        async with await Client.connect({"default": "127.0.0.1:1", "control": dev}) as c:
            r = await c.control.ListSessions(control_pb2.ListSessionsRequest())
            with pytest.raises(Unavailable):
                await c.routing.GetModelRegistry(__import__("agentruntime.routing.v1.routing_pb2", fromlist=["x"]).GetModelRegistryRequest(),
                                                 retry=RetryPolicy(max_attempts=1), timeout=5)
            return r

    assert run(main()) is not None


class _FlakyControl(control_pb2_grpc.ControlServiceServicer):
    """Fails SubmitTurn as the script says, then answers; records the keys."""

    def __init__(self, failures: List[grpc.StatusCode], retry_delay: float) -> None:
        self.failures, self.retry_delay = list(failures), retry_delay
        self.keys: List[str] = []
        self.times: List[float] = []
        self.output = b"x" * 10000
        self.lie = False

    async def SubmitTurn(self, request, context):
        self.keys.append(request.idempotency_key)
        self.times.append(time.monotonic())
        if self.failures:
            code = self.failures.pop(0)
            st = status_pb2.Status(code=code.value[0], message="try again")
            info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=int(self.retry_delay * 1e9)))
            st.details.add().Pack(info)
            await context.abort(code, "try again", trailing_metadata=(("grpc-status-details-bin", st.SerializeToString()),))
        return control_pb2.SubmitTurnResponse(turn=control_pb2.Turn(turn_id="turn_1", idempotency_key=request.idempotency_key))

    async def ReadOutput(self, request, context):
        data = self.output[request.offset:request.offset + (request.limit or 1 << 20)]
        digest = hashlib.sha256(self.output).hexdigest()
        if self.lie:
            digest = "0" * 64
        return control_pb2.ReadOutputResponse(data=data, size_bytes=len(self.output), sha256=digest,
                                              next_offset=request.offset + len(data))


async def _serve(servicer):
    server = grpc.aio.server()
    control_pb2_grpc.add_ControlServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


def test_aborted_and_unavailable_are_retried_with_one_idempotency_key_after_retry_info():
    async def main():
        fake = _FlakyControl([grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE], retry_delay=0.2)
        server, addr = await _serve(fake)
        try:
            async with await Client.connect(addr) as c:
                r = await c.submit_turn("s", "hello")
                # A caller's mistake is not retried.
                fake.failures = [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INVALID_ARGUMENT]
                with pytest.raises(InvalidArgument):
                    await c.submit_turn("s", "again")
                return fake, r
        finally:
            await server.stop(None)

    fake, r = run(main())
    assert len(fake.keys) == 4
    assert fake.keys[0] and fake.keys[0] == fake.keys[1] == fake.keys[2], fake.keys
    assert r.turn.idempotency_key == fake.keys[0]
    assert fake.keys[3] != fake.keys[0]
    # RetryInfo said 0.2 s between attempts.
    assert fake.times[1] - fake.times[0] >= 0.19 and fake.times[2] - fake.times[1] >= 0.19


def test_read_output_checks_the_sha256():
    async def main():
        fake = _FlakyControl([], 0)
        server, addr = await _serve(fake)
        try:
            async with await Client.connect(addr) as c:
                good = await c.read_output("object://b/o/t/x", page_size=4096)
                fake.lie = True
                with pytest.raises(IntegrityError):
                    await c.read_output("object://b/o/t/x", page_size=4096)
                return good
        finally:
            await server.stop(None)

    assert run(main()) == b"x" * 10000


class _PartitionedStream(control_pb2_grpc.ControlServiceServicer):
    """SubscribeEvents across sessions of a log of three partitions: events
    come in no sequence order, each with a cursor; the stream breaks once."""

    def __init__(self) -> None:
        self.requests: List[control_pb2.SubscribeEventsRequest] = []

    async def SubscribeEvents(self, request, context):
        self.requests.append(control_pb2.SubscribeEventsRequest.FromString(request.SerializeToString()))
        ev = lambda seq, cur: control_pb2.SubscribeEventsResponse(  # noqa: E731
            event=envelope_pb2.RuntimeEvent(sequence=seq, type="turn.progress"), cursor=cur)
        if len(self.requests) == 1:
            yield ev(9, "c9")
            yield ev(11, "c11")
            yield ev(7, "c7")  # partition 1's, after partition 0's and 2's
            await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset")
        yield control_pb2.SubscribeEventsResponse(heartbeat=control_pb2.Heartbeat(), cursor="c-hb")
        yield ev(4, "c4")
        await asyncio.Event().wait()  # then nothing


def test_subscription_across_partitions_keeps_out_of_order_events_and_resumes_after_the_cursor():
    async def main():
        fake = _PartitionedStream()
        server, addr = await _serve(fake)
        try:
            async with await Client.connect(addr) as c:
                got, cursors = [], []
                async for ev in c.subscribe(resume_cursor="c0", on_cursor=cursors.append):
                    got.append(ev.sequence)
                    if ev.sequence == 4:
                        break
                with pytest.raises(ValueError):
                    async for _ in c.subscribe(resume_cursor="c0", start=1):
                        pass
                return got, cursors, fake.requests
        finally:
            await server.stop(None)

    got, cursors, requests = run(main())
    assert got == [9, 11, 7, 4]
    assert cursors == ["c9", "c11", "c7", "c-hb"]
    assert [(r.start, r.from_sequence, r.resume_cursor) for r in requests] == [
        (control_pb2.START_FROM_SEQUENCE, 0, "c0"), (control_pb2.START_FROM_SEQUENCE, 0, "c7")]


class _Proxy:
    """A TCP proxy whose connections can all be cut at once."""

    def __init__(self, target: str) -> None:
        self.host, port = target.rsplit(":", 1)
        self.port = int(port)
        self.conns: List[asyncio.StreamWriter] = []
        self.accepted = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader, writer):
        self.accepted += 1
        up_r, up_w = await asyncio.open_connection(self.host, self.port)
        self.conns += [writer, up_w]

        async def pipe(r, w):
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    def cut(self) -> None:
        for w in self.conns:
            w.transport.abort()
        self.conns = []

    async def close(self) -> None:
        self.cut()
        self.server.close()


async def _submit_many(c: Client, session: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await c.submit_turn(session, f"turn {i}", thread_id=f"{session}-t{i}")


def test_subscription_resumes_after_a_dropped_connection_without_gap_or_duplicate(dev):
    async def main():
        proxy = _Proxy(dev)
        paddr = await proxy.start()
        opts = [("grpc.initial_reconnect_backoff_ms", 50), ("grpc.min_reconnect_backoff_ms", 50)]
        async with await Client.connect(dev) as direct, await Client.connect(paddr, options=opts) as c:
            await _submit_many(direct, "resume", 5)
            got: List[int] = []
            cut_done = asyncio.Event()

            async def follow():
                async for ev in c.subscribe(session_id="resume", start=1):
                    got.append(ev.sequence)
                    if len(got) == 8 and not cut_done.is_set():
                        proxy.cut()  # mid-stream: the connection is gone
                        cut_done.set()
                        # Written while the stream is down.
                        await _submit_many(direct, "resume", 5, start=5)
                    if ev.type == "turn.submitted" and ev.turn_submitted.input and \
                            ev.turn_submitted.input[0].text == "turn 14":
                        return

            after = asyncio.ensure_future(follow())
            await cut_done.wait()
            await _submit_many(direct, "resume", 5, start=10)
            await after
            # What a subscription that never dropped sees, to the same point.
            want: List[int] = []
            async for ev in direct.subscribe(session_id="resume", start=1):
                want.append(ev.sequence)
                if ev.sequence == got[-1]:
                    break
            await proxy.close()
            return got, want, proxy.accepted

    got, want, accepted = run(main())
    assert accepted >= 2, "the connection was not re-established"
    assert got == want
    assert len(set(got)) == len(got)


def test_subscription_across_sessions_resumes_by_cursor_without_gap_or_duplicate(dev):
    async def main():
        proxy = _Proxy(dev)
        paddr = await proxy.start()
        opts = [("grpc.initial_reconnect_backoff_ms", 50), ("grpc.min_reconnect_backoff_ms", 50)]
        async with await Client.connect(dev) as direct, await Client.connect(paddr, options=opts) as c:
            await _submit_many(direct, "across-a", 3)
            got: List[envelope_pb2.RuntimeEvent] = []
            cursors: List[str] = []
            cut_done = asyncio.Event()

            async def follow():
                # The tenant's whole story from the start; the server sends a
                # cursor with each event, and the reconnect resumes after it.
                async for ev in c.subscribe(types=["turn.submitted"], start=1, on_cursor=cursors.append):
                    got.append(ev)
                    if sum(g.session_id == "across-a" for g in got) == 2 and not cut_done.is_set():
                        proxy.cut()  # mid-stream: the connection is gone
                        cut_done.set()
                        await _submit_many(direct, "across-b", 3)
                    # Turns 0-2 and 3-5 of across-b are submitted concurrently:
                    # stop at the sixth, whichever it is.
                    if sum(g.session_id == "across-b" for g in got) == 6:
                        return

            after = asyncio.ensure_future(follow())
            await cut_done.wait()
            await _submit_many(direct, "across-b", 3, start=3)
            await after
            # A later subscription from the last cursor passed on (the one
            # before the event the loop stopped at) starts with that event.
            later = None
            async for ev in direct.subscribe(types=["turn.submitted"], resume_cursor=cursors[-1]):
                later = ev
                break
            want = {}
            for session, n in (("across-a", 3), ("across-b", 6)):
                want[session] = []
                async for ev in direct.subscribe(session_id=session, types=["turn.submitted"], start=1):
                    want[session].append(ev.sequence)
                    if len(want[session]) == n:
                        break
            await proxy.close()
            return got, cursors, later, want, proxy.accepted

    got, cursors, later, want, accepted = run(main())
    assert accepted >= 2, "the connection was not re-established"
    assert cursors and all(cursors), "every event and heartbeat comes with a cursor"
    seqs = [ev.sequence for ev in got]
    assert len(set(seqs)) == len(seqs), "no duplicate"
    for session, w in want.items():
        assert [ev.sequence for ev in got if ev.session_id == session] == w, session
    assert later is not None and later.sequence == got[-1].sequence


def test_channel_acks_and_snapshot_first_then_replay(dev):
    async def main():
        async with await Client.connect(dev) as c:
            await _submit_many(c, "chan", 3)
            ch = c.channel("ch-1", "chan", peer="test")
            items = []
            async for item in ch.events(snapshot_first=True):
                items.append(item)
                if isinstance(item, control_pb2.Snapshot):
                    await _submit_many(c, "chan", 2, start=3)
                if isinstance(item, envelope_pb2.RuntimeEvent) and item.type == "turn.submitted" and \
                        item.turn_submitted.input[0].text == "turn 4":
                    break
            snap = items[0]
            # The session as it was (its three turns), then every event after
            # the sequence the snapshot covers, none at or before it.
            assert isinstance(snap, control_pb2.Snapshot) and snap.session.session_id == "chan"
            assert snap.session.turn_count == 3
            evs = items[1:]
            assert evs and all(e.sequence > snap.sequence for e in evs)
            texts = [e.turn_submitted.input[0].text for e in evs if e.type == "turn.submitted"]
            assert texts == ["turn 3", "turn 4"]
            await ch.ack(evs[-1].sequence)
            # Another consumer of the channel resumes after the ack: replay.
            again = c.channel("ch-1", "chan", peer="test-2")
            first = None
            async for item in again.events(snapshot_first=True):
                first = item
                break
            # The session's next event after the ack, as the log holds it
            # (positions of a session are consecutive on one partition,
            # spaced on several).
            nxt = None
            async for ev in c.subscribe(session_id="chan", start=evs[-1].sequence + 1):
                nxt = ev
                break
            return evs[-1].sequence, first, nxt

    acked, first, nxt = run(main())
    assert isinstance(first, envelope_pb2.RuntimeEvent) and first.sequence > acked
    assert first.sequence == nxt.sequence and first.event_id == nxt.event_id


def test_subscription_resumes_across_a_restart_of_the_server(binary, tmp_path, procs):
    import signal
    import socket

    from conftest import start_dev

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    listen = f"127.0.0.1:{port}"
    data = tmp_path / "data"
    addr = start_dev(binary, data, procs, "--listen", listen)

    async def main():
        opts = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 500)]
        async with await Client.connect(addr, options=opts) as c:
            await _submit_many(c, "restart", 3)
            got: List[int] = []
            restarted = asyncio.Event()

            async def follow():
                async for ev in c.subscribe(session_id="restart", start=1):
                    got.append(ev.sequence)
                    if ev.type == "turn.submitted" and ev.turn_submitted.input[0].text == "turn 2" and not restarted.is_set():
                        # Stop the server under the live stream, start it again.
                        first = procs[-1]
                        first.p.send_signal(signal.SIGTERM)
                        await asyncio.to_thread(first.p.wait)
                        await asyncio.to_thread(start_dev, binary, data, procs, "--listen", listen)
                        restarted.set()
                    if ev.type == "turn.submitted" and ev.turn_submitted.input[0].text == "turn 5":
                        return

            task = asyncio.ensure_future(follow())
            await restarted.wait()
            await _submit_many(c, "restart", 3, start=3)
            await task
            want: List[int] = []
            async for ev in c.subscribe(session_id="restart", start=1):
                want.append(ev.sequence)
                if ev.sequence == got[-1]:
                    break
            return got, want

    got, want = run(main())
    assert got == want and len(set(got)) == len(got)
