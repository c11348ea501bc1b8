"""The Python worker against the real binary: the same scripted turn run by
the Go worker and by the Python worker reports the same facts (event types
and id structure); a Python worker killed mid-turn loses its run and a
second one finishes the turn."""

from __future__ import annotations

import asyncio
import pytest
import json
import re
import signal
from pathlib import Path
from typing import Dict, List, Tuple

from conftest import go_worker, python_worker, start_dev

from agentruntime import Client, PermissionDenied, Unauthenticated
from agentruntime.control.v1 import control_pb2, processes_pb2, status_pb2
from agentruntime.events.v1 import control_pb2 as ev_control
from agentruntime.tasks.v1 import tasks_pb2, types_pb2

TIMEOUT = 40.0

# The demo script (cmd/agentruntime/demo.yaml) as JSON, with a README
# whose read is above the 16 KiB inline budget: output.spilled too.
SCRIPT = {
    "model": "scripted",
    "turns": [{"steps": [
        {"reasoning": "Start from what the workspace says about itself.",
         "text": "I'll read the README first.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md", "limit": 40}}],
         "usage": {"input_tokens": 420, "output_tokens": 36}},
        {"text": "I'll write my notes to NOTES.md.",
         "tool_calls": [{"name": "write_file", "arguments": {
             "path": "NOTES.md", "content": "# Notes\nThe agent read README.md and asked to write this file.\n"}}],
         "usage": {"input_tokens": 1210, "output_tokens": 88}},
        {"text": "Done: NOTES.md holds my notes on the README.",
         "usage": {"input_tokens": 1320, "output_tokens": 14}},
    ]}, {"match": "pause", "steps": [
        {"text": "Waiting.", "tool_calls": [{"name": "pause", "arguments": {"seconds": 600}}]},
        {"text": "Waited."},
    ]}, {"match": "slow", "steps": [
        {"text": "Writing slowly.", "tool_calls": [{"name": "slow_note", "arguments": {"seconds": 1}}]},
        {"text": "Written."},
    ]}, {"match": "echo", "steps": [
        {"text": "Starting.", "tool_calls": [{"name": "echo_server", "arguments": {}}]},
        {"text": "Waiting.", "tool_calls": [{"name": "wait_processes", "arguments": {}}]},
        {"text": "It ended."},
    ]}, {"match": "two reads", "steps": [
        {"text": "Reading both.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md", "limit": 2}},
                                                 {"name": "read_file", "arguments": {"path": "README.md", "offset": 2, "limit": 2}}]},
        {"text": "Read."},
    ]}, {"match": "what time", "tool": "browser_time", "steps": [
        {"text": "I'll ask your browser.", "tool_calls": [{"name": "browser_time", "arguments": {}}]},
        {"text": "Your browser told me the time."},
    ]}, {"match": "hold on", "steps": [
        {"text": "Reading, then holding.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md", "limit": 2}},
                                                          {"name": "hold", "arguments": {}}]},
        {"text": "Held."},
    ]}, {"match": "ask colour", "steps": [
        {"text": "Asking.", "tool_calls": [{"name": "request_user_input", "arguments": {"question": "Which colour?"}}]},
        {"text": "Noted."},
    ]}, {"match": "ask late", "steps": [
        {"text": "Asking.", "tool_calls": [{"name": "request_user_input", "arguments": {"question": "Anyone there?", "timeout_ms": 300}}]},
        {"text": "Nobody came."},
    ]}, {"match": "leak", "steps": [
        {"text": "Looking.", "tool_calls": [{"name": "leak", "arguments": {}}]},
        {"text": "Seen."},
    ]}],
}


def workspace(tmp: Path, name: str) -> Path:
    ws = tmp / name
    ws.mkdir()
    (ws / "README.md").write_text("".join(f"line {i}: " + "x" * 600 + "\n" for i in range(40)))
    return ws


def script_file(tmp: Path) -> Path:
    p = tmp / "script.json"
    p.write_text(json.dumps(SCRIPT))
    return p


async def run_turn(c: Client, session: str, text: str, approve: bool = True,
                   on_event=None) -> Tuple[str, List]:
    """Submits a turn, approves what it asks (as a person would, through the
    client), and returns the turn's events once it ended."""
    sub = await c.submit_turn(session, text, thread_id=session)
    turn_id = sub.turn.turn_id
    events = []

    async def follow():
        async for ev in c.subscribe(session_id=session, start=1):
            if ev.turn_id != turn_id:
                continue
            events.append(ev)
            if on_event is not None:
                await on_event(ev)
            if ev.type == "action.required" and approve:
                r = await c.approve(ev.action_id)
                assert r.action.action_id == ev.action_id
            if ev.type in ("turn.completed", "turn.failed"):
                return

    await asyncio.wait_for(follow(), TIMEOUT)
    return turn_id, events


def shape(events) -> List[Tuple[str, str, str, bool]]:
    """Each event as (type, step, call, has run id), with ids replaced by
    their order of first appearance: the structure, not the values."""
    steps: Dict[str, str] = {}
    calls: Dict[str, str] = {}

    def label(m: Dict[str, str], v: str, p: str) -> str:
        if not v or v == "catalog":
            return v
        return m.setdefault(v, f"{p}{len(m) + 1}")

    return [(e.type, label(steps, e.step_id, "S"), label(calls, e.tool_call_id, "C"), bool(e.run_id)) for e in events]


def payloads(events) -> List[Tuple]:
    out = []
    for e in events:
        if e.type in ("model.requested", "model.completed", "model.failed"):
            m = getattr(e, e.type.replace(".", "_"))
            out.append((e.type, m.provider, m.model, getattr(m, "stop_reason", ""), str(getattr(m, "usage", ""))))
        elif e.type in ("model.delta", "reasoning.delta"):
            m = getattr(e, e.type.replace(".", "_"))
            out.append((e.type, m.text))
        elif e.type == "tool.started":
            out.append((e.type, e.tool_started.tool_name))
        elif e.type == "run.status":
            out.append((e.type, e.run_status.phase, e.run_status.title))
        elif e.type == "turn.completed":
            out.append((e.type, e.turn_completed.summary, e.turn_completed.stop_reason))
        elif e.type == "context.resolved":
            out.append((e.type, e.context_resolved.tokens, tuple(e.context_resolved.warnings)))
    return out


def without_hand_back(events):
    """Both workers hand a turn that waits for an approval back and a run
    resumes it (docs/services/worker.md, "Waits cost nothing"). The hand
    back (run.status parked and resumed, the resuming run's turn.started)
    is left out of the comparison."""
    out, started = [], False
    for e in events:
        if e.type == "run.status" and e.run_status.phase in ("parked", "resumed"):
            continue
        if e.type == "turn.started":
            if started:
                continue
            started = True
        out.append(e)
    return out


def test_python_worker_reports_what_the_go_worker_reports(dev, binary, tmp_path, procs):
    script = script_file(tmp_path)
    go_worker(procs, binary, dev, workspace(tmp_path, "go"), "cmp-go", "go-1", script, lease_ttl=5)
    python_worker(procs, dev, workspace(tmp_path, "py"), "cmp-py", "py-1", script, lease_ttl=5)

    async def main():
        async with await Client.connect(dev) as c:
            go = await run_turn(c, "cmp-go", "write notes about this project")
            py = await run_turn(c, "cmp-py", "write notes about this project")
            # The spilled read, back from the store in 4 KiB pages, checked.
            spilled = [e for e in py[1] if e.type == "output.spilled"][0].output_spilled.output
            stored = await c.read_output(spilled.uri, page_size=4096, expect_sha256=spilled.sha256)
            return go, py, spilled, stored

    (go_turn, go_events), (py_turn, py_events), spilled, stored = asyncio.run(main())
    for who, events in (("Go", go_events), ("Python", py_events)):
        assert any(e.type == "run.status" and e.run_status.phase == "parked" for e in events), f"the {who} worker did not hand its waiting turn back"
    go_events, py_events = without_hand_back(go_events), without_hand_back(py_events)
    readme = (tmp_path / "py" / "README.md").read_text()
    assert stored.decode() == "\n".join(readme.splitlines()[:40]) and spilled.size_bytes == len(stored)
    result = [e for e in py_events if e.type == "tool.result"][0].tool_result
    assert result.output.uri == spilled.uri and result.preview.startswith("line 0: ")
    # Both workers continue the trace the turn was submitted in: the facts
    # their calls appended carry its trace id (docs/observability.md).
    for who, events in (("go", go_events), ("py", py_events)):
        submitted = [e for e in events if e.type == "turn.submitted"]
        assert submitted and len(submitted[0].trace_id) == 32, f"{who}: turn.submitted carries no trace"
        for e in events:
            if e.type in ("model.requested", "tool.result", "turn.completed"):
                assert e.trace_id == submitted[0].trace_id, f"{who}: {e.type} in trace {e.trace_id!r}, not the turn's {submitted[0].trace_id}"
    go_shape, py_shape = shape(go_events), shape(py_events)
    types = [s[0] for s in py_shape]
    for want in ("turn.started", "context.resolved", "tool.catalog.resolved", "model.requested", "reasoning.delta",
                 "model.delta", "model.completed", "tool.started", "tool.args", "sandbox.applied", "output.spilled",
                 "tool.result", "action.required", "permission.resolved", "turn.completed"):
        assert want in types, f"the Python worker's turn lacks {want}: {types}"
    diff = "\n".join(f"{'  ' if a == b else '!='} go {a}  py {b}"
                     for a, b in zip(go_shape + [None] * len(py_shape), py_shape + [None] * len(go_shape)) if a or b)
    # The facts the worker reports for its run, in its order...
    assert [s for s in py_shape if s[3]] == [s for s in go_shape if s[3]], diff
    # ...and every fact of the turn, whoever wrote it (the services' own
    # facts, e.g. permission's sandbox.applied after an approval, race the
    # worker's next report, so their place in the log is not the worker's).
    assert sorted(py_shape) == sorted(go_shape), diff
    assert (tmp_path / "py" / "NOTES.md").read_text().startswith("# Notes")
    done = py_events[-1]
    assert done.type == "turn.completed" and done.turn_completed.summary.startswith("Done:")
    started = [e for e in py_events if e.type == "turn.started"]
    assert len(started) == 1 and started[0].turn_started.worker_id == "py-1"
    # And the payloads that do not depend on the tools' own output.
    assert payloads(py_events) == payloads(go_events)


def test_python_worker_killed_mid_turn_is_lost_and_another_finishes_it(dev, tmp_path, procs):
    script = script_file(tmp_path)
    ws = workspace(tmp_path, "ws")
    # It waits for the approval in place (a worker that hands waiting turns
    # back would have nothing to lose there: see the hand-back test).
    w1 = python_worker(procs, dev, ws, "kill", "py-w1", script, lease_ttl=1.5, extra=("--no-park",))
    seen = {}

    async def main():
        async with await Client.connect(dev) as c:
            async def on_event(ev):
                if ev.type == "turn.started" and "run1" not in seen:
                    seen["run1"] = ev.run_id
                    assert ev.turn_started.worker_id == "py-w1"
                elif ev.type == "action.required" and "asked1" not in seen:
                    seen["asked1"] = ev.action_id
                    # Kill the worker while it waits for the approval: it
                    # cannot report anything more.
                    w1.p.send_signal(signal.SIGKILL)
                    w1.p.wait()
                    assert w1.p.returncode == -signal.SIGKILL
                    python_worker(procs, dev, ws, "kill", "py-w2", script, lease_ttl=1.5, extra=("--no-park",))
                    return
                elif ev.type == "action.required":
                    await c.approve(ev.action_id)

            turn_id, events = await run_turn(c, "kill", "write notes about this project", approve=False, on_event=on_event)
            attempts = await c.control.GetTurnAttempts(control_pb2.GetTurnAttemptsRequest(
                turn_id=turn_id, min_sequence=events[-1].sequence))
            return turn_id, events, attempts

    turn_id, events, attempts = asyncio.run(main())
    run1 = seen["run1"]
    lost = [e for e in events if e.type == "run.status" and e.run_status.phase == "lost"]
    assert len(lost) == 1 and lost[0].run_id == run1 and lost[0].run_status.metadata["next"] == "retry"
    # (The dead run's question is cancelled by the loss only when control's
    # thread read model had applied it when the loss was decided: a race in
    # services/control (claimState waits for the claims projection only),
    # seen about once in fifteen runs, so it is not asserted here.)
    starts = [e for e in events if e.type == "turn.started"]
    assert [s.turn_started.worker_id for s in starts] == ["py-w1", "py-w2"]
    run2 = starts[1].run_id
    assert run2 != run1
    # The dead run said nothing after its loss; the second run finished.
    after_loss = [e for e in events if e.sequence > lost[0].sequence and e.run_id == run1]
    assert after_loss == [], [e.type for e in after_loss]
    assert events[-1].type == "turn.completed" and events[-1].run_id == run2
    got = [(a.run_id, a.status, a.worker_id) for a in attempts.attempts.attempts]
    assert got == [(run1, status_pb2.TURN_ATTEMPT_STATUS_LOST, "py-w1"), (run2, status_pb2.TURN_ATTEMPT_STATUS_COMPLETED, "py-w2")]
    assert (ws / "NOTES.md").exists()


def test_interrupt_cancels_the_running_tool_and_the_turn(dev, tmp_path, procs):
    python_worker(procs, dev, workspace(tmp_path, "ws"), "intr", "py-i", script_file(tmp_path), lease_ttl=5)

    interrupted = []

    async def main():
        async with await Client.connect(dev) as c:
            async def on_event(ev):
                # The tool runs once its sandbox is recorded: interrupt it
                # then (it would wait ten minutes). Once: the call has two
                # sandbox.applied (the decision's and the worker's), and
                # the turn may have ended by the second.
                if ev.type == "sandbox.applied" and ev.step_id and not interrupted:
                    interrupted.append(ev.sequence)
                    r = await c.interrupt_turn("intr", "intr", reason="enough")
                    assert r.accepted

            return await run_turn(c, "intr", "pause for a while", on_event=on_event)

    _, events = asyncio.run(main())
    types = [e.type for e in events]
    failed = [e for e in events if e.type == "tool.failed"]
    assert len(failed) == 1 and failed[0].tool_failed.category == "cancelled", types
    assert "tool.result" not in types
    end = events[-1]
    assert end.type == "turn.failed", types
    assert end.turn_failed.outcome == ev_control.TURN_OUTCOME_CANCELLED and end.turn_failed.category == "interrupted"


def test_an_interrupt_lets_a_finish_tool_end_and_says_what_it_did(dev, tmp_path, procs):
    ws = workspace(tmp_path, "ws")
    python_worker(procs, dev, ws, "fin", "py-f", script_file(tmp_path), lease_ttl=5)

    interrupted = []

    async def main():
        async with await Client.connect(dev) as c:
            async def on_event(ev):
                if ev.type == "sandbox.applied" and ev.step_id and not interrupted:
                    interrupted.append(ev.sequence)
                    # Interrupt once the call is running (it says so on disk).
                    deadline = asyncio.get_running_loop().time() + TIMEOUT
                    while not (ws / "slow.started").exists():
                        assert asyncio.get_running_loop().time() < deadline, "the call never started"
                        await asyncio.sleep(0.01)
                    assert (await c.interrupt_turn("fin", "fin")).accepted

            return await run_turn(c, "fin", "slow write please", on_event=on_event)

    _, events = asyncio.run(main())
    types = [e.type for e in events]
    assert "tool.failed" not in types, types
    assert [e.tool_result.preview for e in events if e.type == "tool.result"] == ["wrote slow.txt"]
    assert (ws / "slow.txt").read_text() == "finished"
    end = events[-1]
    assert end.type == "turn.failed" and end.turn_failed.category == "interrupted"
    assert types.index("tool.result") < types.index("turn.failed")
    assert "model.requested" not in types[types.index("tool.result"):], "the turn went on after the interrupt"


def test_a_stalled_worker_whose_run_was_lost_reports_nothing_more(dev, tmp_path, procs):
    script = script_file(tmp_path)
    ws = workspace(tmp_path, "ws")
    w1 = python_worker(procs, dev, ws, "stall", "py-s1", script, lease_ttl=1.5)

    async def main():
        async with await Client.connect(dev) as c:
            # The hold call blocks until release exists, so the worker
            # holds its run while stopped (a wait for a person would park
            # the turn and hold nothing).
            turn_id = await _until_parked(c, "stall", ws)
            w1.p.send_signal(signal.SIGSTOP)  # stalled, not dead
            events = []
            async for ev in c.subscribe(session_id="stall", thread_id="stall", start=1):
                if ev.turn_id != turn_id:
                    continue
                events.append(ev)
                if ev.type == "run.status" and ev.run_status.phase == "lost":
                    # It wakes up after its lease, its call released.
                    (ws / "release").write_text("go")
                    w1.p.send_signal(signal.SIGCONT)
                    python_worker(procs, dev, ws, "stall", "py-s2", script, lease_ttl=1.5)
                if ev.type in ("turn.completed", "turn.failed"):
                    break
            run1 = [e for e in events if e.type == "turn.started"][0].run_id
            # The woken worker learnt that its run was lost and stopped it.
            await asyncio.to_thread(w1.wait_line, re.compile(r"run %s stopped: lease_lost" % run1), TIMEOUT)
            # Everything in the log from the loss up to a fact appended now.
            marker = (await c.channel("marker", "stall").reconnect()).sequence
            lost = [e for e in events if e.type == "run.status" and e.run_status.phase == "lost"][0]
            later = []
            async for ev in c.subscribe(session_id="stall", start=lost.sequence + 1):
                later.append(ev)
                if ev.sequence >= marker:
                    break
            return run1, events, later

    run1, events, later = asyncio.run(asyncio.wait_for(main(), 2 * TIMEOUT))
    after = [e.type for e in later if e.run_id == run1]
    assert after == [], after
    assert events[-1].type == "turn.completed" and events[-1].run_id != run1
    assert w1.p.poll() is None, "the stalled worker should live on and claim other turns"


def test_secrets_are_redacted_and_a_cut_output_is_said(dev, tmp_path, procs):
    python_worker(procs, dev, workspace(tmp_path, "ws"), "leak", "py-l", script_file(tmp_path), lease_ttl=5)

    async def main():
        async with await Client.connect(dev) as c:
            return await run_turn(c, "leak", "leak something")

    _, events = asyncio.run(main())
    by_type = {e.type: e for e in events}
    assert by_type["output.redacted"].output_redacted.reason == "matched redaction rules: aws_access_key_id×1"
    assert by_type["output.truncated"].output_truncated.reason == "the tool produced 100000 bytes; 36 were kept"
    preview = by_type["tool.result"].tool_result.preview
    assert "AKIA" not in preview and "[REDACTED:aws_access_key_id]" in preview
    order = [e.type for e in events if e.type.startswith("output.") or e.type == "tool.result"]
    assert order == ["output.redacted", "output.truncated", "tool.result"]
    assert events[-1].type == "turn.completed"


def _jwt(secret: bytes, claims: dict) -> str:
    import base64, hashlib, hmac, time as _t

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(dict(claims, exp=int(_t.time()) + 600)).encode())
    sig = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


def test_credentials_api_key_for_the_worker_and_a_jwt_for_the_person(binary, tmp_path, procs):
    secret = b"s" * 32
    (tmp_path / "hs256.key").write_bytes(secret)
    (tmp_path / "auth.yaml").write_text(
        "api_keys:\n"
        "  - {name: py-worker, tenant: acme, role: worker, key: worker-key-123}\n"
        "jwt:\n"
        "  hs256_secret_file: hs256.key\n")
    addr = start_dev(binary, tmp_path / "data", procs, "--auth", str(tmp_path / "auth.yaml"))
    python_worker(procs, addr, workspace(tmp_path, "ws"), "auth", "py-a", script_file(tmp_path), lease_ttl=5,
                  token="worker-key-123")
    person = _jwt(secret, {"sub": "ada", "tenant": "acme", "role": "operator"})

    async def main():
        async with await Client.connect(addr) as anonymous:
            with pytest.raises(Unauthenticated):
                await anonymous.submit_turn("auth", "hello", thread_id="auth")
        async with await Client.connect(addr, api_key="worker-key-123") as as_worker, \
                await Client.connect(addr, token=person) as c:
            async def on_event(ev):
                if ev.type == "action.required":
                    # The worker cannot answer its own question; the person can.
                    with pytest.raises(PermissionDenied) as denied:
                        await as_worker.approve(ev.action_id)
                    assert denied.value.reason
                    await c.approve(ev.action_id)

            return await run_turn(c, "auth", "write notes about this project", approve=False, on_event=on_event)

    _, events = asyncio.run(main())
    assert events[-1].type == "turn.completed"
    assert all(e.tenant_id == "acme" for e in events)


def test_a_tools_process_gets_stdin_and_terminate_requests_and_says_so(dev, tmp_path, procs):
    python_worker(procs, dev, workspace(tmp_path, "ws"), "proc", "py-p", script_file(tmp_path), lease_ttl=5)

    async def main():
        async with await Client.connect(dev) as c:
            async def on_event(ev):
                if ev.type == "process.started":
                    await c.control.WriteProcessStdin(processes_pb2.WriteProcessStdinRequest(
                        process_id=ev.process_id, data=b"hello\n"))
                elif ev.type == "process.output" and "echo: hello" in ev.process_output.preview:
                    await c.control.TerminateProcess(processes_pb2.TerminateProcessRequest(
                        process_id=ev.process_id, reason="done testing"))

            return await run_turn(c, "proc", "echo please", on_event=on_event)

    _, events = asyncio.run(main())
    types = [e.type for e in events]
    started = [e for e in events if e.type == "process.started"]
    assert len(started) == 1 and started[0].step_id and started[0].tool_call_id, types
    pid = started[0].process_id
    applied = [e for e in events if e.type == "sandbox.applied" and e.process_id == pid]
    assert applied and events.index(applied[0]) < events.index(started[0])
    assert [e.process_input.preview for e in events if e.type == "process.input"] == ["hello\n"]
    out = [e for e in events if e.type == "process.output"]
    assert out and out[0].process_output.stream == "stdout" and "echo: hello" in out[0].process_output.preview
    term = [e for e in events if e.type == "process.terminated"]
    assert len(term) == 1 and term[0].process_terminated.reason == "done testing" and term[0].process_terminated.signal == "SIGKILL"
    waited = [e for e in events if e.type == "tool.result"][-1].tool_result.preview
    assert "terminated (done testing)" in waited and "echo: hello" in waited
    assert events[-1].type == "turn.completed"


def test_the_worker_claims_nothing_while_a_service_it_needs_is_not_served(dev, tmp_path, procs):
    import socket

    # Routing's address in the endpoints map is a port nobody serves.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    w = python_worker(procs, dev, workspace(tmp_path, "ws"), "ready", "py-r", script_file(tmp_path),
                      endpoints=f"routing={dead}")

    async def main():
        async with await Client.connect(dev) as c:
            sub = await c.submit_turn("ready", "write notes", thread_id="ready")
            # The worker says why it waits...
            await asyncio.to_thread(w.wait_line, re.compile(r"not claiming: agentruntime\.routing\.v1\.RoutingService|not claiming: routing"), TIMEOUT)
            # ...and the turn was not started by anyone.
            th = await c.control.GetThreadRead(control_pb2.GetThreadReadRequest(session_id="ready", thread_id="ready"))
            return sub.turn.turn_id, th

    turn_id, th = asyncio.run(main())
    assert th.thread.active_turn_id == turn_id and th.thread.active_turn.status == status_pb2.TURN_STATUS_ACCEPTED, th.thread.active_turn


def test_a_task_run_is_run_as_a_turn_and_settled(dev, tmp_path, procs):
    python_worker(procs, dev, workspace(tmp_path, "ws"), "", "py-t", script_file(tmp_path), lease_ttl=5, extra=("--tasks",))

    async def main():
        async with await Client.connect(dev) as c:
            created = await c.tasks.CreateTask(tasks_pb2.CreateTaskRequest(
                session_id="tk", thread_id="tk", spec=types_pb2.TaskSpec(
                    title="notes", objective="write notes about this project", task_kind="agent")))
            task_id = created.task.task_id
            seen = []

            async def follow():
                async for ev in c.subscribe(session_id="tk", start=1):
                    seen.append(ev)
                    if ev.type == "action.required":
                        await c.approve(ev.action_id)
                    if ev.type in ("task.completed", "task.failed") and ev.task_id == task_id:
                        return ev

            done = await asyncio.wait_for(follow(), TIMEOUT)
            got = await c.tasks.GetTask(tasks_pb2.GetTaskRequest(task_id=task_id, min_sequence=done.sequence))
            return task_id, seen, got.task

    task_id, seen, task = asyncio.run(main())
    types = [e.type for e in seen]
    order = [t for t in types if t in ("task.started", "turn.submitted", "turn.started", "tool.result", "turn.completed", "task.completed")]
    assert order[0] == "task.started" and order[-1] == "task.completed" and order.index("turn.submitted") < order.index("turn.completed"), types
    submitted = [e for e in seen if e.type == "turn.submitted"][0]
    started = [e for e in seen if e.type == "task.started"][0]
    assert submitted.turn_submitted.metadata["task_id"] == task_id
    assert submitted.turn_submitted.metadata["task_run_id"] == started.run_id
    assert task.status == types_pb2.TASK_STATUS_COMPLETED and len(task.attempts) == 1
    # The worker handed the run to its turn; the runtime settled it.
    assert "task.delegated" in types and task.attempts[0].carried_by.turn_id == submitted.turn_id, types


def test_a_cancelled_task_interrupts_its_turn(dev, tmp_path, procs):
    python_worker(procs, dev, workspace(tmp_path, "ws"), "", "py-tc", script_file(tmp_path), lease_ttl=1.5, extra=("--tasks",))

    async def main():
        async with await Client.connect(dev) as c:
            created = await c.tasks.CreateTask(tasks_pb2.CreateTaskRequest(
                session_id="tc", thread_id="tc", spec=types_pb2.TaskSpec(
                    title="notes", objective="write notes about this project", task_kind="agent")))
            task_id = created.task.task_id
            seen = []

            async def follow():
                async for ev in c.subscribe(session_id="tc", start=1):
                    seen.append(ev)
                    if ev.type == "action.required":
                        # Nobody answers: the task is cancelled instead.
                        await c.tasks.CancelTask(tasks_pb2.CancelTaskRequest(task_id=task_id, reason="not needed"))
                    if ev.type in ("task.completed", "task.failed", "task.cancelled") and ev.task_id == task_id:
                        return ev

            return await asyncio.wait_for(follow(), TIMEOUT), seen

    end, seen = asyncio.run(main())
    types = [e.type for e in seen]
    assert end.type == "task.cancelled", types
    failed = [e for e in seen if e.type == "turn.failed"]
    assert failed and failed[0].turn_failed.category == "interrupted", types
    assert types.index("turn.failed") < types.index("task.cancelled")


def test_a_steps_facts_travel_in_one_report(dev, tmp_path):
    """The worker holds a step's facts for its report_linger and sends them
    together before anything another service decides on: a turn of two
    reads and an answer is a few ReportEvents calls, not one per fact,
    counted on the worker's own channel; with no linger it is one per
    fact, in the same order either way."""
    import grpc
    from agentruntime import Endpoints, RetryPolicy, ScriptedModel, Worker
    from worker_main import workspace_tools

    class Count(grpc.aio.UnaryUnaryClientInterceptor):
        def __init__(self) -> None:
            self.reports = 0

        async def intercept_unary_unary(self, continuation, details, request):
            method = details.method.decode() if isinstance(details.method, bytes) else details.method
            if method.endswith("/ReportEvents"):
                self.reports += 1
            return await continuation(details, request)

    script = script_file(tmp_path)

    async def turn(linger: float, session: str) -> Tuple[int, List[str]]:
        count = Count()
        channel = grpc.aio.insecure_channel(dev, interceptors=[count])
        client = Client(Endpoints.of(dev), {dev: channel}, token=None, retry=RetryPolicy())
        ws = workspace(tmp_path, session)
        w = Worker(client=client, tools=workspace_tools(str(ws)), model=ScriptedModel(str(script)), session_id=session,
                   workspace=str(ws), claim_wait=5.0, report_linger=linger)
        running = asyncio.ensure_future(w.run())
        try:
            async with await Client.connect(dev) as c:
                _, events = await run_turn(c, session, "two reads")
        finally:
            w.stop()
            await asyncio.wait_for(running, TIMEOUT)
            await channel.close()
        assert events[-1].type == "turn.completed", [e.type for e in events]
        return count.reports, [e.type for e in events if e.run_id]

    held, held_types = asyncio.run(turn(0.010, "facts-held"))
    each, each_types = asyncio.run(turn(0.0, "facts-each"))
    assert held_types == each_types, (held_types, each_types)
    print(f"ReportEvents calls of the turn: {held} with a linger, {each} without")
    assert held <= 5 < each, f"ReportEvents calls: {held} with a linger, {each} without"


def test_a_waiting_turn_is_handed_back_and_a_go_worker_finishes_it(dev, binary, tmp_path, procs):
    """A Python worker with one slot hands a turn that waits for an approval
    back (a checkpoint, run.status parked) and runs another turn meanwhile;
    it is then stopped, the person approves, and a Go worker resumes the
    turn from the Python worker's checkpoint: the approved write runs once,
    in the Go worker's workspace, after the read the Python worker did."""
    script = script_file(tmp_path)
    py = python_worker(procs, dev, workspace(tmp_path, "py"), "handback", "py-h", script, lease_ttl=5,
                       extra=("--max-turns", "1"))
    go_ws = workspace(tmp_path, "go")

    async def main():
        async with await Client.connect(dev) as c:
            sub = await c.submit_turn("handback", "write notes about this project", thread_id="th-wait")
            turn_id = sub.turn.turn_id
            action, parked = "", None
            async for ev in c.subscribe(session_id="handback", start=1):
                if ev.turn_id != turn_id:
                    continue
                if ev.type == "action.required":
                    action = ev.action_id
                if ev.type == "run.status" and ev.run_status.phase == "parked":
                    parked = ev
                if action and parked is not None:
                    break
            # The slot is free: the one-slot worker runs another turn now.
            _, other = await run_turn(c, "handback", "two reads")
            assert other[-1].type == "turn.completed"
            assert [e.turn_started.worker_id for e in other if e.type == "turn.started"] == ["py-h"]
            py.p.send_signal(signal.SIGTERM)
            py.p.wait()
            go_worker(procs, binary, dev, go_ws, "handback", "go-h", script, lease_ttl=5)
            await c.approve(action)
            events = []
            async for ev in c.subscribe(session_id="handback", thread_id="th-wait", start=1):
                if ev.turn_id == turn_id:
                    events.append(ev)
                    if ev.type in ("turn.completed", "turn.failed"):
                        break
            return parked, events

    parked, events = asyncio.run(asyncio.wait_for(main(), 60))
    assert parked.run_status.metadata["reason"] == "wait" and parked.run_status.checkpoints
    assert events[-1].type == "turn.completed", [e.type for e in events]
    starts = [e.turn_started.worker_id for e in events if e.type == "turn.started"]
    assert starts == ["py-h", "go-h"], starts
    # The read ran once (in the Python run), the approved write once (in
    # the Go run), under the call id the Python run opened it with.
    results = [e for e in events if e.type == "tool.result"]
    assert [e.run_id == parked.run_id for e in results] == [True, False], [(e.type, e.run_id) for e in results]
    write_call = parked.run_status.metadata["call_ids"]
    assert results[1].tool_call_id == write_call
    assert len([e for e in events if e.type == "tool.started" and e.tool_call_id == write_call]) == 1
    assert (go_ws / "NOTES.md").read_text().startswith("# Notes")
    assert not (tmp_path / "py" / "NOTES.md").exists()


def test_a_client_tool_call_parked_by_a_go_worker_is_finished_by_a_python_worker(dev, binary, tmp_path, procs):
    """A front end's tool (the turn's client_tools option) called in a Go
    worker's run parks the turn on its client_tool action; the Go worker
    stops, the front end answers, and a Python worker resumes the turn from
    the Go checkpoint: the call's result is the answer's payload."""
    script = script_file(tmp_path)
    go = go_worker(procs, binary, dev, workspace(tmp_path, "go"), "client", "go-c", script, lease_ttl=5)
    tools = json.dumps([{"name": "browser_time", "description": "The time in the user's browser.",
                         "parameters": {"type": "object", "properties": {}}}])

    async def main():
        async with await Client.connect(dev) as c:
            sub = await c.submit_turn("client", "what time is it?", thread_id="th-client", options={"client_tools": tools})
            turn_id = sub.turn.turn_id
            action, parked = None, None
            async for ev in c.subscribe(session_id="client", start=1):
                if ev.turn_id != turn_id:
                    continue
                if ev.type == "action.required":
                    action = ev
                if ev.type == "run.status" and ev.run_status.phase == "parked":
                    parked = ev
                if action is not None and parked is not None:
                    break
            go.p.send_signal(signal.SIGTERM)
            go.p.wait()
            python_worker(procs, dev, workspace(tmp_path, "py"), "client", "py-c", script, lease_ttl=5)
            await c.control.RespondAction(control_pb2.RespondActionRequest(
                action_id=action.action_id, decision="result", payload_json=json.dumps("12:00 in Lisbon")))
            events = []
            async for ev in c.subscribe(session_id="client", thread_id="th-client", start=1):
                if ev.turn_id == turn_id:
                    events.append(ev)
                    if ev.type in ("turn.completed", "turn.failed"):
                        break
            return action, parked, events

    action, parked, events = asyncio.run(asyncio.wait_for(main(), 60))
    assert action.action_required.action_type == "client_tool"
    assert events[-1].type == "turn.completed", [e.type for e in events]
    assert [e.turn_started.worker_id for e in events if e.type == "turn.started"] == ["go-c", "py-c"]
    results = [e for e in events if e.type == "tool.result"]
    assert len(results) == 1 and results[0].run_id != parked.run_id
    assert results[0].tool_result.preview == "12:00 in Lisbon"
    assert results[0].tool_call_id == parked.run_status.metadata["call_ids"]


async def _until_parked(c: Client, session: str, ws: Path) -> Tuple[str, List]:
    """Submits the "hold on" turn and returns its id once its hold call
    runs (hold.started is on disk)."""
    sub = await c.submit_turn(session, "hold on", thread_id=session)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not (ws / "hold.started").exists():
        assert loop.time() < deadline, "the hold call never started"
        await asyncio.sleep(0.01)
    return sub.turn.turn_id


async def _turn_events(c: Client, session: str, turn_id: str, thread: str = "") -> List:
    events = []
    async for ev in c.subscribe(session_id=session, thread_id=thread or session, start=1):
        if ev.turn_id == turn_id:
            events.append(ev)
            if ev.type in ("turn.completed", "turn.failed"):
                return events
    return events


def _by_tool(events) -> Dict[str, List]:
    """tool.result facts by the name their call started with."""
    names = {e.tool_call_id: e.tool_started.tool_name for e in events if e.type == "tool.started"}
    out: Dict[str, List] = {}
    for e in events:
        if e.type == "tool.result":
            out.setdefault(names[e.tool_call_id], []).append(e)
    return out


def test_a_stopped_python_worker_hands_its_turn_back_at_the_step_boundary(dev, binary, tmp_path, procs):
    """SIGTERM while a call runs: the worker claims nothing more, the call
    finishes, and at the step boundary the turn is handed back (reason
    "drain", no action waited for); the worker exits, and a Go worker
    finishes the turn from the Python checkpoint: each call ran once and
    nothing was reported failed."""
    script = script_file(tmp_path)
    ws = workspace(tmp_path, "py")
    py = python_worker(procs, dev, ws, "drain", "py-d", script, lease_ttl=5, extra=("--max-turns", "1"))

    async def main():
        async with await Client.connect(dev) as c:
            turn_id = await _until_parked(c, "drain", ws)
            py.p.send_signal(signal.SIGTERM)
            await asyncio.to_thread(py.wait_line, re.compile(r"draining: claiming nothing more"), TIMEOUT)
            (ws / "release").write_text("")
            await asyncio.to_thread(py.wait_line, re.compile(r"worker py-d stopped"), TIMEOUT)
            go_worker(procs, binary, dev, workspace(tmp_path, "go"), "drain", "go-d", script, lease_ttl=5)
            return await _turn_events(c, "drain", turn_id)

    events = asyncio.run(asyncio.wait_for(main(), 60))
    types = [e.type for e in events]
    assert events[-1].type == "turn.completed" and events[-1].turn_completed.summary == "Held.", types
    assert py.p.wait(TIMEOUT) == 0, py.output()
    parked = [e for e in events if e.type == "run.status" and e.run_status.phase == "parked"]
    assert len(parked) == 1, types
    meta = parked[0].run_status.metadata
    assert meta["reason"] == "drain" and meta["action_ids"] == "" and meta["worker_id"] == "py-d", meta
    assert parked[0].run_status.checkpoints, parked[0]
    assert [e.turn_started.worker_id for e in events if e.type == "turn.started"] == ["py-d", "go-d"]
    results = _by_tool(events)
    assert {n: [e.run_id for e in r] for n, r in results.items()} == {
        "read_file": [parked[0].run_id], "hold": [parked[0].run_id]}, results
    assert "tool.failed" not in types and types.count("turn.failed") == 0, types
    # The Go run asked the model once more, with both results in its transcript.
    resumed = [e for e in events if e.type == "model.requested" and e.run_id != parked[0].run_id]
    assert len(resumed) == 1, types


def test_a_python_worker_past_its_shutdown_timeout_hands_back_its_last_completed_call(dev, tmp_path, procs):
    """SIGTERM while a call blocks past shutdown_timeout: the call is
    cancelled and the turn handed back with the step's completed read; a
    second Python worker resumes the step: the read is not run again, the
    cancelled call is, and the turn completes."""
    script = script_file(tmp_path)
    ws = workspace(tmp_path, "ws")
    py = python_worker(procs, dev, ws, "drain-t", "py-t1", script, lease_ttl=5,
                       extra=("--max-turns", "1", "--shutdown-timeout", "0.5"))

    async def main():
        async with await Client.connect(dev) as c:
            turn_id = await _until_parked(c, "drain-t", ws)
            py.p.send_signal(signal.SIGTERM)
            await asyncio.to_thread(py.wait_line, re.compile(r"worker py-t1 stopped"), TIMEOUT)
            (ws / "release").write_text("")
            python_worker(procs, dev, ws, "drain-t", "py-t2", script, lease_ttl=5)
            return await _turn_events(c, "drain-t", turn_id)

    events = asyncio.run(asyncio.wait_for(main(), 60))
    types = [e.type for e in events]
    assert events[-1].type == "turn.completed" and events[-1].turn_completed.summary == "Held.", types
    assert py.p.wait(TIMEOUT) == 0, py.output()
    parked = [e for e in events if e.type == "run.status" and e.run_status.phase == "parked"]
    assert len(parked) == 1 and parked[0].run_status.metadata["reason"] == "drain", types
    run1 = parked[0].run_id
    assert [e.turn_started.worker_id for e in events if e.type == "turn.started"] == ["py-t1", "py-t2"]
    results = _by_tool(events)
    assert {n: [e.run_id == run1 for e in r] for n, r in results.items()} == {"read_file": [True], "hold": [False]}, results
    # The first hold call was cancelled (said), never failed the turn.
    cancelled = [e for e in events if e.type == "tool.failed"]
    assert [(e.run_id, e.tool_failed.category) for e in cancelled] == [(run1, "cancelled")], types
    assert "turn.failed" not in types, types
    # The resumed step ran only the hold call: one tool.started in run 2.
    assert [e.tool_started.tool_name for e in events if e.type == "tool.started" and e.run_id != run1] == ["hold"]


def test_a_question_parked_by_a_go_worker_is_answered_and_a_python_worker_finishes_it(dev, binary, tmp_path, procs):
    """request_user_input in a Go worker's run: an input action (the
    question, no approval asked first) and the turn parked; the Go worker
    stops, the person answers, and a Python worker resumes the turn from
    the Go checkpoint: the answer is the call's result."""
    script = script_file(tmp_path)
    go = go_worker(procs, binary, dev, workspace(tmp_path, "go"), "ask", "go-q", script, lease_ttl=5)

    async def main():
        async with await Client.connect(dev) as c:
            sub = await c.submit_turn("ask", "ask colour please", thread_id="th-ask")
            turn_id = sub.turn.turn_id
            actions, parked = [], None
            async for ev in c.subscribe(session_id="ask", start=1):
                if ev.turn_id != turn_id:
                    continue
                if ev.type == "action.required":
                    actions.append(ev)
                if ev.type == "run.status" and ev.run_status.phase == "parked":
                    parked = ev
                    break
            go.p.send_signal(signal.SIGTERM)
            go.p.wait()
            python_worker(procs, dev, workspace(tmp_path, "py"), "ask", "py-q", script, lease_ttl=5)
            await c.control.RespondAction(control_pb2.RespondActionRequest(
                action_id=actions[0].action_id, decision="answer", payload_json=json.dumps("teal, please")))
            return actions, parked, await _turn_events(c, "ask", turn_id, thread="th-ask")

    actions, parked, events = asyncio.run(asyncio.wait_for(main(), 60))
    assert [(a.action_required.action_type, a.action_required.prompt) for a in actions] == [("input", "Which colour?")]
    assert events[-1].type == "turn.completed" and events[-1].turn_completed.summary == "Noted.", [e.type for e in events]
    assert [e.turn_started.worker_id for e in events if e.type == "turn.started"] == ["go-q", "py-q"]
    results = [e for e in events if e.type == "tool.result"]
    assert [(e.tool_result.preview, e.run_id != parked.run_id) for e in results] == [("teal, please", True)]
    assert results[0].tool_call_id == parked.run_status.metadata["call_ids"]


def test_a_python_workers_question_times_out_into_an_answer(dev, tmp_path, procs):
    """request_user_input with a timeout in a Python worker: the input
    action decides no_answer at its deadline (no worker holds the turn),
    and the model is told nobody answered; the turn completes."""
    python_worker(procs, dev, workspace(tmp_path, "ws"), "ask-late", "py-l", script_file(tmp_path), lease_ttl=5,
                  extra=("--max-turns", "1"))

    async def main():
        async with await Client.connect(dev) as c:
            return await run_turn(c, "ask-late", "ask late please", approve=False)

    _, events = asyncio.run(main())
    types = [e.type for e in events]
    asked = [e.action_required for e in events if e.type == "action.required"]
    assert [(a.action_type, a.prompt, list(a.decisions), a.decision_on_timeout) for a in asked] == [
        ("input", "Anyone there?", ["answer", "no_answer"], "no_answer")], types
    assert any(e.type == "run.status" and e.run_status.phase == "parked" for e in events), types
    resolved = [e.action_resolved for e in events if e.type == "action.resolved"]
    assert [(r.outcome, r.decision) for r in resolved] == [(ev_control.ACTION_OUTCOME_TIMED_OUT, "no_answer")]
    assert [e.tool_result.preview for e in events if e.type == "tool.result"] == [
        "no answer within 300ms: the user did not answer in time"]
    assert events[-1].type == "turn.completed" and events[-1].turn_completed.summary == "Nobody came.", types
