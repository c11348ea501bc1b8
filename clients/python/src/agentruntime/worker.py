"""The worker SDK: claims turns under a lease, runs the agent loop with
Python tools and a pluggable model, and reports every step as the same
normalized facts the Go worker (pkg/worker) reports
(docs/services/worker.md):

    worker = Worker("127.0.0.1:7233", tools=[read_file, write_file], model=ScriptedModel(...))
    await worker.run()          # until cancelled or worker.stop()

A turn: ``turn.started`` (the claim) -> ``context.resolved`` ->
``tool.catalog.resolved`` -> routing (``DecideRoute``; no decision: the
default model and a ``run.status`` that says so) -> per model call a step
(``model.requested``, ``reasoning.delta`` / ``model.delta``,
``model.completed`` or ``model.failed``) -> per tool call ``tool.started``,
``tool.args``, the permission decision (an ``ask`` waits for
``permission.resolved``), ``sandbox.applied``, then ``output.*`` facts and
``tool.result`` or ``tool.failed`` -> ``turn.completed`` / ``turn.failed``.
Leases are heartbeated every third of their ttl; an interrupt, a lost lease
or the turn ending elsewhere stops the turn at once, and a run lost by its
lease reports nothing more."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import signal
import threading
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from google.protobuf import duration_pb2

from agentruntime.control.v1 import control_pb2, status_pb2
from agentruntime.events.v1 import control_pb2 as ev_control
from agentruntime.events.v1 import envelope_pb2
from agentruntime.events.v1 import permission_pb2 as ev_permission
from agentruntime.events.v1 import routing_pb2 as ev_routing
from agentruntime.permission.v1 import permission_pb2
from agentruntime.routing.v1 import routing_pb2
from agentruntime.tasks.v1 import tasks_pb2, types_pb2

from . import client as client_module
from .client import Client, RetryPolicy
from .endpoints import Endpoints
from .errors import FailedPrecondition, NotFound, RpcError, Unimplemented
from .ids import ID_PATTERN, new_id
from .models import Message, Model, ModelError, ModelRequest, ModelResponse, ToolCall, ToolDef
from .tools import Tool, ToolContext, ToolError, ToolResult

__all__ = ["Worker", "RedactionRule", "DEFAULT_REDACTION_RULES", "DEFAULT_OUTPUT_BUDGET"]

RuntimeEvent = envelope_pb2.RuntimeEvent

DEFAULT_OUTPUT_BUDGET = 16 << 10
PREVIEW_BYTES = 2000
MAX_STORED_OUTPUT = 3 << 20
DELTA_FLUSH_BYTES = 256


@dataclass(frozen=True)
class RedactionRule:
    name: str
    pattern: "re.Pattern[str]"


# The Go worker's DefaultRedactionRules, the same patterns.
DEFAULT_REDACTION_RULES: Tuple[RedactionRule, ...] = (
    RedactionRule("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----")),
    RedactionRule("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    RedactionRule("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    RedactionRule("api_key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    RedactionRule("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
    RedactionRule("secret_assignment", re.compile(
        r"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token)\s*[:=]\s*[\"']?[^\s\"']{6,}")),
)

_TERMINAL = frozenset({status_pb2.TURN_STATUS_COMPLETED, status_pb2.TURN_STATUS_FAILED, status_pb2.TURN_STATUS_CANCELLED,
                       status_pb2.TURN_STATUS_TIMED_OUT, status_pb2.TURN_STATUS_ROLLED_BACK})


class _Stop(Exception):
    """Why a turn stopped before its loop ended."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why  # interrupted, ended, lease_lost


class _TurnFailure(Exception):
    def __init__(self, category: str, message: str, retryable: bool = False) -> None:
        super().__init__(f"{category}: {message}")
        self.category, self.message, self.retryable = category, message, retryable


class _MustWait(Exception):
    """A call that must wait for a person: its step is handed back. ``call``
    is the parked call as the Go worker's checkpoint holds it
    (pkg/worker/park.go, parkedCall)."""

    def __init__(self, call: Dict[str, Any]) -> None:
        super().__init__("waits for action " + call["action_id"])
        self.call = call


class _StepParked(Exception):
    """Calls of a step wait for a person: the step as the checkpoint holds
    it (pendingStep: its calls, the results of those that ran, the parked
    ones)."""

    def __init__(self, step: Dict[str, Any]) -> None:
        super().__init__("the step waits for a person")
        self.step = step


class _Parked(Exception):
    """The run handed the turn back: it says nothing more."""


# The checkpoint a parked run hands back, in the Go worker's shape
# (pkg/worker/park.go): either worker resumes the other's.
CHECKPOINT_VERSION = 1
MAX_CHECKPOINT = 3 << 20


def _go_message(m: Message) -> Dict[str, Any]:
    out: Dict[str, Any] = {"Role": m.role, "Content": m.content}
    if m.tool_calls:
        out["ToolCalls"] = [_go_call(c) for c in m.tool_calls]
    if m.tool_call_id:
        out["ToolCallID"] = m.tool_call_id
    return out


def _go_call(c: ToolCall) -> Dict[str, str]:
    return {"ID": c.id, "Name": c.name, "Arguments": c.arguments}


def _message(d: Mapping[str, Any]) -> Message:
    return Message(d.get("Role", ""), d.get("Content", "") or "",
                   tool_calls=[_call(c) for c in d.get("ToolCalls") or []], tool_call_id=d.get("ToolCallID", "") or "")


def _call(d: Mapping[str, Any]) -> ToolCall:
    return ToolCall(d.get("ID", ""), d.get("Name", ""), d.get("Arguments", "") or "")


def _client_result(payload: str) -> str:
    """A client tool's result from its action's payload: a JSON string is
    its text, anything else is kept as it came (pkg/clienttool Result)."""
    try:
        v = json.loads(payload)
    except ValueError:
        return payload
    return v if isinstance(v, str) else payload


# request_user_input: the agent asks the user and the turn waits for the
# answer (the Go worker's pkg/worker/userinput.go, the same action).
USER_INPUT = "request_user_input"
INPUT_ACTION_TYPE = "input"
INPUT_ANSWER, INPUT_NO_ANSWER = "answer", "no_answer"
INPUT_SCHEMA = '{"type":["string","null"],"maxLength":16384}'


def _user_input_tool() -> Tool:
    async def outside(**_: Any) -> str:
        raise ToolError("invalid_arguments", USER_INPUT + " runs only inside a turn")

    return Tool(name=USER_INPUT, fn=outside, access="read", interrupt="cancel",
                description="Ask the user a question and wait for the answer, which is this call's result. "
                            "With choices the user picks one of them (and may add text). With timeout_ms, the call "
                            "answers that nobody answered when the time is up.",
                schema={"type": "object", "properties": {
                    "question": {"type": "string"}, "choices": {"type": "array", "items": {"type": "string"}, "maxItems": 15},
                    "timeout_ms": {"type": "integer", "minimum": 1}}, "required": ["question"], "additionalProperties": False})


def _input_args(args: Mapping[str, Any]) -> Tuple[str, List[str], int]:
    q, choices, timeout = args.get("question") or "", list(args.get("choices") or []), args.get("timeout_ms") or 0
    if not q.strip():
        raise ToolError("invalid_arguments", "question is required")
    if len(q.encode()) > 16000:
        raise ToolError("invalid_arguments", f"question is {len(q.encode())} bytes; at most 16000")
    if len(choices) > 15:
        raise ToolError("invalid_arguments", f"choices has {len(choices)} entries; at most 15")
    if timeout < 0 or timeout > 7 * 24 * 3600 * 1000:
        raise ToolError("invalid_arguments", f"timeout_ms {timeout} is outside 1..{7 * 24 * 3600 * 1000}")
    for i, c in enumerate(choices):
        if not isinstance(c, str) or not 1 <= len(c.encode()) <= 64:
            raise ToolError("invalid_arguments", f"choices[{i}] must be 1 to 64 bytes")
        if c == INPUT_NO_ANSWER:
            raise ToolError("invalid_arguments", f"choices[{i}] {c!r} is reserved: it declines to answer")
        if c in choices[:i]:
            raise ToolError("invalid_arguments", f"choices[{i}] {c!r} is given twice")
    return q, choices, timeout


def _input_action_id(call_id: str) -> str:
    aid = "in_" + call_id
    if len(aid) > 128:
        import hashlib
        aid = "in_" + hashlib.sha256(call_id.encode()).hexdigest()
    return aid


def _go_duration(ms: int) -> str:
    """A whole number of milliseconds as Go's time.Duration prints it."""
    if ms < 1000:
        return f"{ms}ms"
    h, rem = divmod(ms, 3600_000)
    m, rem = divmod(rem, 60_000)
    sec = str(rem // 1000) if rem % 1000 == 0 else f"{rem / 1000:.3f}".rstrip("0")
    return (f"{h}h" if h else "") + (f"{m}m" if h or m else "") + sec + "s"


def _input_result(outcome: int, decision: str, payload: str, timeout_ms: int) -> str:
    """What the model gets for the person's answer (ToolError when the
    question was cancelled)."""
    text = ""
    if payload and payload != "null":
        try:
            v = json.loads(payload)
            text = v if isinstance(v, str) else payload
        except ValueError:
            text = payload
    if outcome == ev_control.ACTION_OUTCOME_TIMED_OUT:
        return f"no answer within {_go_duration(timeout_ms)}: the user did not answer in time"
    if outcome != ev_control.ACTION_OUTCOME_RESOLVED:
        raise ToolError("input_unanswered", "the question was " +
                        ev_control.ActionOutcome.Name(outcome).removeprefix("ACTION_OUTCOME_").lower())
    if decision == INPUT_NO_ANSWER:
        return "the user declined to answer" + (": " + text if text else "")
    if decision == INPUT_ANSWER:
        return text or "(the user answered with no text)"
    return "the user chose: " + decision + ("\n" + text if text else "")


def _clip(s: str, n: int) -> str:
    b = s.encode()
    if len(b) <= n:
        return s
    return b[:n].decode("utf-8", "ignore") + "…"


def _head(s: str, n: int) -> str:
    b = s.encode()
    return s if len(b) <= n else b[:n].decode("utf-8", "ignore")


def _tail(s: str, n: int) -> str:
    b = s.encode()
    return s if len(b) <= n else b[len(b) - n:].decode("utf-8", "ignore")


def _redact(rules: Sequence[RedactionRule], s: str) -> Tuple[str, Dict[str, int]]:
    hits: Dict[str, int] = {}
    for r in rules:
        s, n = r.pattern.subn(f"[REDACTED:{r.name}]", s)
        if n:
            hits[r.name] = n
    return s, hits


def _hit_summary(hits: Mapping[str, int]) -> str:
    return ", ".join(f"{n}×{hits[n]}" for n in sorted(hits))


def _input_text(parts: Iterable[Any]) -> str:
    out = []
    for p in parts:
        if p.text:
            out.append(p.text)
        elif p.json:
            out.append(p.json)
        elif p.ref:
            out.append(f"[attachment {p.ref}]")
        else:
            out.append("")
    return "\n".join(out).strip()


def _duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(seconds * 1e9))
    return d


def _set_if(msg: Any, name: str, value: Any) -> None:
    """Sets a field the protos may not have yet (lease_token fencing)."""
    if value and name in msg.DESCRIPTOR.fields_by_name:
        setattr(msg, name, value)


class Worker:
    """Runs turns. ``endpoints``: one address, a ``control=HOST:PORT,...``
    map or an :class:`Endpoints`; ``api_key`` / ``token``: the worker's
    credentials; ``tls``: TLS with the system roots, ``root_certificates``
    (PEM bytes): TLS trusting these only; ``tools``: :func:`agentruntime.tool` functions; ``model``:
    any :class:`agentruntime.models.Model`."""

    def __init__(self, endpoints: Union[Endpoints, str, Mapping[str, str], None] = None, *,
                 client: Optional[Client] = None, api_key: Optional[str] = None, token: Optional[str] = None,
                 tls: bool = False, root_certificates: Optional[bytes] = None,
                 tools: Sequence[Tool] = (), model: Model,
                 worker_id: str = "", default_model: str = "", session_id: str = "", workspace: str = "",
                 lease_ttl: float = 15.0, claim_wait: float = 20.0, max_turns: int = 4, max_steps: int = 32,
                 tasks: bool = False, task_kinds: Sequence[str] = (), max_tasks: int = 1,
                 system_prompt: str = "You are an agent working in a workspace through tools. Use them; be brief.",
                 output_budget: int = DEFAULT_OUTPUT_BUDGET,
                 redaction_rules: Sequence[RedactionRule] = DEFAULT_REDACTION_RULES,
                 mcp_config: str = "",
                 report_linger: float = 0.010, park_waits: bool = True,
                 shutdown_timeout: float = 10.0, handle_signals: bool = True, user_input: bool = True,
                 logger: Optional[logging.Logger] = None) -> None:
        if client is None and endpoints is None:
            raise ValueError("give endpoints or a client")
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"two tools share a name: {names}")
        self._endpoints, self._client = endpoints, client
        self._creds = dict(api_key=api_key, token=token, tls=tls or root_certificates is not None,
                           root_certificates=root_certificates)
        self.tools: Dict[str, Tool] = {t.name: t for t in tools}
        #: request_user_input (the Go worker's built-in): the agent asks the
        #: user and the turn waits for the answer; a tool of that name given
        #: in ``tools`` stays the caller's.
        self._user_input: Optional[Tool] = None
        if user_input and USER_INPUT not in self.tools:
            self._user_input = self.tools[USER_INPUT] = _user_input_tool()
        self.model = model
        self.worker_id = worker_id or new_id("wkr")
        self.default_model = default_model or getattr(model, "model", "")
        self.session_id = session_id
        #: the directory the tools work in: the cwd the permission decision
        #: and sandbox.applied see (default: the process's).
        self.workspace = os.path.abspath(workspace or os.getcwd())
        self.lease_ttl, self.claim_wait = lease_ttl, claim_wait
        self.max_turns, self.max_steps = max(1, max_turns), max(1, max_steps)
        self.system_prompt = system_prompt
        #: also pull task runs (PollTask) and run each as a turn (the Go
        #: worker's --tasks): off by default.
        self.tasks, self.task_kinds, self.max_tasks = tasks, list(task_kinds), max(1, max_tasks)
        self.output_budget = output_budget
        self.redaction_rules = tuple(redaction_rules)
        self.log = logger or logging.getLogger("agentruntime.worker")
        self._stopping: Optional[asyncio.Event] = None  # made in run(), on its loop
        #: the MCP config file (the Go worker's --mcp-config): its servers
        #: start with run() and their tools join ``tools`` (agentruntime.mcp).
        self.mcp_config = mcp_config
        #: how long a turn holds its facts so that a step's facts travel in
        #: one ReportEvents call (the Go worker's ReportLinger); 0 sends
        #: each fact at once.
        self.report_linger = max(0.0, report_linger)
        #: hand a turn that waits for a person back (a checkpoint and
        #: run.status "parked") instead of holding a slot while it waits;
        #: any worker, Go or Python, resumes it once the answer is in.
        self.park_waits = park_waits
        #: how long a stop waits for the running turns to hand themselves
        #: back at their next step boundary before it cancels them (they
        #: then hand back what completed): the Go worker's
        #: --shutdown-timeout.
        self.shutdown_timeout = max(0.0, shutdown_timeout)
        #: run() drains on SIGTERM and SIGINT (when it runs in the main
        #: thread): :meth:`stop`.
        self.handle_signals = handle_signals
        self._draining = False

    @property
    def draining(self) -> bool:
        """The worker is stopping: it claims nothing more and its turns hand
        themselves back."""
        return self._draining

    async def _connect(self) -> Client:
        if self._client is None:
            # Calls that fail Unavailable or Aborted (a service restarting)
            # are retried for about 30 s, as their RetryInfo says, before the
            # failure becomes a fact (the Go worker's InfraRetry).
            self._client = await Client.connect(self._endpoints, retry=RetryPolicy(max_attempts=12), **self._creds)
        return self._client

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the worker is not connected yet")
        return self._client

    async def register_tools(self) -> None:
        c = await self._connect()
        req = control_pb2.RegisterToolsRequest(worker_id=self.worker_id, session_id=self.session_id)
        for name in sorted(self.tools):
            req.tools.append(self.tools[name].spec())
        await c.control.RegisterTools(req)

    def stop(self) -> None:
        """Drains: the worker stops claiming, its turns hand themselves back
        at their next step boundary (a checkpoint and ``run.status
        {phase "parked", reason "drain"}``, claimable at once by any
        worker), and after ``shutdown_timeout`` the rest are cancelled and
        handed back from their last completed call. :meth:`run` returns
        then. Nothing is reported failed."""
        if self._stopping is not None and not self._stopping.is_set():
            self.log.info("worker %s draining: claiming nothing more; turns hand themselves back", self.worker_id)
            self._stopping.set()

    async def run(self) -> None:
        """Starts the MCP servers of ``mcp_config`` (their tools join the
        worker's), registers the tools, then claims and runs up to
        ``max_turns`` turns at once until cancelled or :meth:`stop`."""
        if not self.mcp_config:
            return await self._run()
        from .mcp import start_mcp
        servers = await start_mcp(self.mcp_config, cwd=self.workspace, logger=self.log)
        for t in servers.tools():
            self.tools.setdefault(t.name, t)
        try:
            await self._run()
        finally:
            await servers.close()

    async def _run(self) -> None:
        self._stopping = asyncio.Event()
        self._draining = False
        signals = self._handle_signals()
        try:
            await self._claim_loop()
        finally:
            loop = asyncio.get_running_loop()
            for sig in signals:
                loop.remove_signal_handler(sig)

    def _handle_signals(self) -> List[int]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return []
        loop, out = asyncio.get_running_loop(), []
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
                out.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass  # not on this platform or loop
        return out

    async def _claim_loop(self) -> None:
        assert self._stopping is not None
        backoff = 0.2
        while True:
            try:
                await self.register_tools()
                break
            except RpcError as e:
                self.log.warning("registering tools: %s", e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
        slots = asyncio.Semaphore(self.max_turns)
        running: set = set()
        turns: set = set()
        stop_wait = asyncio.ensure_future(self._stopping.wait())
        if self.tasks:
            t = asyncio.ensure_future(self._run_tasks(stop_wait))
            running.add(t)
            t.add_done_callback(running.discard)
        try:
            backoff = 0.2
            while not self._stopping.is_set():
                # A stop while every slot is busy ends the loop at once (the
                # drain's clock starts then, not when a turn ends).
                acquire = asyncio.ensure_future(slots.acquire())
                await asyncio.wait({acquire, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                if not acquire.done():
                    acquire.cancel()
                    break
                # A turn claimed while routing or permission is down would
                # fail for nothing (or run its tools unchecked): claim only
                # when every service a turn needs says it is serving.
                if not await self._await_ready(stop_wait):
                    slots.release()
                    break
                claim_task = asyncio.ensure_future(self.claim(self.claim_wait))
                done, _ = await asyncio.wait({claim_task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                if claim_task not in done:
                    claim_task.cancel()
                    slots.release()
                    break
                try:
                    claim = claim_task.result()
                except RpcError as e:
                    slots.release()
                    self.log.warning("claiming a turn: %s", e)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                backoff = 0.2
                if not claim.HasField("turn"):
                    slots.release()
                    continue
                t = asyncio.ensure_future(self._run_slot(claim, slots))
                turns.add(t)
                t.add_done_callback(turns.discard)
        finally:
            stop_wait.cancel()
            for t in list(running):
                t.cancel()
            try:
                await self._drain(turns)
            finally:
                if running:
                    await asyncio.gather(*running, return_exceptions=True)

    async def _drain(self, turns: set) -> None:
        """Ends run(): turns hand themselves back at their next step
        boundary; after shutdown_timeout the rest are cancelled (and hand
        back what completed). A second cancellation cuts the wait short."""
        self._draining = True
        if not turns:
            return
        self.log.info("draining %d turn(s) for up to %.1f s", len(turns), self.shutdown_timeout)
        try:
            _, pending = await asyncio.wait(set(turns), timeout=self.shutdown_timeout)
        except asyncio.CancelledError:
            pending = set(turns)
            raise
        finally:
            for t in pending:
                t.cancel()  # each hands back what completed
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    async def not_serving(self) -> List[str]:
        """The services a turn needs (control, routing, permission) that do
        not answer SERVING, each with what its health said."""
        c = await self._connect()

        async def one(name: str) -> str:
            try:
                st = await c.health(name)
            except RpcError as e:
                return f"{name} ({e.code.name}: {e.message})"
            return "" if st == "SERVING" else f"{name} ({st})"

        out = await asyncio.gather(*(one(n) for n in ("control", "routing", "permission")))
        return [x for x in out if x]

    async def _await_ready(self, stop: "asyncio.Future") -> bool:
        backoff, said = 0.1, None
        while not stop.done():
            down = await self.not_serving()
            if not down:
                if said:
                    self.log.info("services serving again; claiming")
                return True
            if down != said:
                self.log.warning("not claiming: %s not serving", ", ".join(down))
                said = down
            await asyncio.wait({stop}, timeout=backoff)
            backoff = min(backoff * 2, 5.0)
        return False

    async def _run_slot(self, claim: control_pb2.ClaimTurnResponse, slots: asyncio.Semaphore) -> None:
        try:
            await self.run_turn(claim)
        except Exception as e:  # a turn's failure must not stop the worker
            self.log.warning("turn %s: %s", claim.turn.turn_id, e)
        finally:
            slots.release()

    async def _run_tasks(self, stop: "asyncio.Future") -> None:
        c = await self._connect()
        slots = asyncio.Semaphore(self.max_tasks)
        running: set = set()
        backoff = 0.2
        try:
            while not stop.done():
                await slots.acquire()
                req = tasks_pb2.PollTaskRequest(worker_id=self.worker_id, task_kinds=self.task_kinds,
                                                wait=_duration(min(self.claim_wait, 60.0)), lease_ttl=_duration(self.lease_ttl))
                try:
                    poll = await c.tasks.PollTask(req, timeout=min(self.claim_wait, 60.0) + 30)
                except Unimplemented as e:
                    slots.release()
                    self.log.warning("the tasks service is not served here; not polling task runs: %s", e)
                    return
                except RpcError as e:
                    slots.release()
                    self.log.warning("polling a task: %s", e)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    continue
                backoff = 0.2
                if not poll.HasField("task"):
                    slots.release()
                    continue

                async def one(poll: tasks_pb2.PollTaskResponse = poll) -> None:
                    try:
                        await self.run_task(poll)
                    except Exception as e:
                        self.log.warning("task run %s: %s", poll.run_id, e)
                    finally:
                        slots.release()

                t = asyncio.ensure_future(one())
                running.add(t)
                t.add_done_callback(running.discard)
        finally:
            for t in list(running):
                t.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def run_task(self, poll: "tasks_pb2.PollTaskResponse") -> None:
        """Runs a polled task run as a turn on the task's thread and hands the
        run to the turn (DelegateTaskRun: the runtime settles it when the
        turn ends), or, against a tasks service without it, follows the turn
        and settles the run with its end (the Go worker's RunTask)."""
        c = await self._connect()
        t, run = poll.task, poll.run_id
        token = getattr(poll, "lease_token", "")
        session = t.session_id or "tasks"
        thread = t.thread_id or f"task-{t.task_id}"
        text = t.spec.objective.strip() or t.spec.title

        async def settle(req: Any, call: Any) -> Any:
            _set_if(req, "lease_token", token)
            return await asyncio.shield(call(req, timeout=10))

        async def fail(category: str, message: str, retryable: bool) -> None:
            await settle(tasks_pb2.FailTaskRequest(task_id=t.task_id, run_id=run, idempotency_key="fail:" + run,
                                                   error=types_pb2.TaskError(category=category, message=_clip(message, 4000),
                                                                             retryable=retryable)),
                         c.tasks.FailTask)

        if not text:
            return await fail("invalid_input", "the task has no objective or title to run", False)
        try:
            sub = await c.submit_turn(session, text, thread_id=thread, idempotency_key="task-run:" + run,
                                      metadata={"task_id": t.task_id, "task_run_id": run},
                                      create_policy=control_pb2.CREATE_POLICY_CREATE_IF_MISSING,
                                      busy_policy=control_pb2.BUSY_POLICY_ENQUEUE)
        except RpcError as e:
            return await fail("invalid_input", "the task's turn was refused: " + e.message, e.code.name == "UNAVAILABLE")
        turn = sub.turn
        progress = tasks_pb2.AppendTaskProgressRequest(
            task_id=t.task_id, run_id=run, idempotency_key="turn:" + run, run_state=types_pb2.TASK_STATUS_RUNNING,
            reason=f"running as turn {turn.turn_id} on thread {thread} of session {session}")
        _set_if(progress, "lease_token", token)
        try:
            await c.tasks.AppendTaskProgress(progress, timeout=10)
        except RpcError as e:
            self.log.warning("task progress of %s: %s", t.task_id, e)
        # Hand the run to its turn (the Go worker's RunTask): the tasks
        # service settles it when the turn ends, and this slot is free now.
        # An older tasks service (Unimplemented), or a refusal (a lost
        # lease, a cancel requested first), gets the turn followed below.
        delegate = tasks_pb2.DelegateTaskRunRequest(task_id=t.task_id, run_id=run, lease_token=token, session_id=turn.session_id,
                                                    thread_id=turn.thread_id, turn_id=turn.turn_id, idempotency_key="delegate:" + run)
        try:
            await asyncio.shield(c.tasks.DelegateTaskRun(delegate, timeout=10))
            return
        except Unimplemented:
            pass
        except RpcError as e:
            self.log.warning("handing task run %s to its turn; following the turn instead: %s", run, e)
        lost = asyncio.Event()

        async def heartbeat() -> None:
            interrupted = False
            while True:
                await asyncio.sleep(self.lease_ttl / 3)
                req = tasks_pb2.HeartbeatTaskRequest(task_id=t.task_id, run_id=run, lease_ttl=_duration(self.lease_ttl))
                _set_if(req, "lease_token", token)
                try:
                    hb = await c.tasks.HeartbeatTask(req, timeout=self.lease_ttl / 3)
                except (FailedPrecondition, NotFound):
                    lost.set()
                    return
                except RpcError as e:
                    self.log.warning("task heartbeat of %s: %s", t.task_id, e)
                    continue
                if hb.cancel_requested and not interrupted:
                    interrupted = True
                    await self._interrupt(turn, "the task's cancellation was requested")

        async def turn_end() -> Any:
            async for ev in c.subscribe(session_id=turn.session_id, thread_id=turn.thread_id,
                                        types=["turn.completed", "turn.failed"], start=sub.sequence, heartbeat=5.0):
                if isinstance(ev, RuntimeEvent) and ev.turn_id == turn.turn_id:
                    return ev

        hb_task = asyncio.ensure_future(heartbeat())
        end_task = asyncio.ensure_future(turn_end())
        lost_task = asyncio.ensure_future(lost.wait())
        try:
            done, _ = await asyncio.wait({end_task, lost_task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await asyncio.shield(self._interrupt(turn, "its task run ended: the worker stopped"))
            await fail("cancelled", "the worker stopped during the task's turn", True)
            raise
        finally:
            hb_task.cancel()
            for x in (end_task, lost_task):
                if not x.done():
                    x.cancel()
        if lost_task in done and not end_task in done:
            await self._interrupt(turn, "its task run ended: the lease on the task run was lost")
            return  # the tasks service records the run lost
        end = end_task.result()
        if end.type == "turn.completed":
            req = tasks_pb2.CompleteTaskRequest(task_id=t.task_id, run_id=run, idempotency_key="complete:" + run,
                                                summary=_clip(end.turn_completed.summary, 8000), native_status="turn:" + turn.turn_id)
            try:
                await settle(req, c.tasks.CompleteTask)
            except FailedPrecondition as e:
                await fail("acceptance_not_met", e.message, False)
            return
        f = end.turn_failed
        category = _task_category(f.category)
        if f.outcome == ev_control.TURN_OUTCOME_CANCELLED:
            category = "cancelled"
        await fail(category, f"turn {turn.turn_id} failed: {f.message}", f.retryable)

    async def _interrupt(self, turn: Any, reason: str) -> None:
        try:
            await self.client.interrupt_turn(turn.session_id, turn.thread_id, turn_id=turn.turn_id, reason=reason)
        except RpcError as e:
            self.log.warning("interrupting a task's turn %s: %s", turn.turn_id, e)

    async def claim(self, wait: float) -> control_pb2.ClaimTurnResponse:
        c = await self._connect()
        return await c.control.ClaimTurn(control_pb2.ClaimTurnRequest(
            worker_id=self.worker_id, session_id=self.session_id, wait=_duration(wait),
            lease_ttl=_duration(self.lease_ttl)), timeout=wait + 30)

    async def run_turn(self, claim: control_pb2.ClaimTurnResponse) -> None:
        """Runs a claimed turn to its end and reports it. Every call it makes
        carries the trace the turn was submitted in (``traceparent``)."""
        await self._connect()
        t = claim.turn
        token = None
        if len(t.trace_id) == 32 and len(t.span_id) == 16:
            token = client_module.traceparent.set(f"00-{t.trace_id}-{t.span_id}-01")
        try:
            await _Turn(self, claim).run()
        finally:
            if token is not None:
                client_module.traceparent.reset(token)


class _Turn:
    def __init__(self, w: Worker, claim: control_pb2.ClaimTurnResponse) -> None:
        self.w, self.c = w, w.client
        self.t = claim.turn
        self.run_id = claim.run_id
        self.lease_token = getattr(claim, "lease_token", "")
        self.claim_sequence = claim.sequence
        self.model = ""
        self.routed = False
        self.stop_reason: Optional[str] = None  # interrupted, ended, lease_lost
        # Tool calls that did not run because permission could not be
        # asked: such a turn ends failed, never completed.
        self.permission_unavailable = 0
        self.procs = _Processes(self)
        self.task: Optional[asyncio.Task] = None
        # Facts said but not sent yet (say), the timer that sends them, the
        # lock that keeps one call in flight, and a timer send's failure
        # for the next report.
        self._held: List[RuntimeEvent] = []
        self._timer: Optional[asyncio.TimerHandle] = None
        self._sending = asyncio.Lock()
        self._held_error: Optional[BaseException] = None
        self.checkpoint_uri = getattr(claim, "checkpoint_uri", "")
        # A hand back failed: the turn's waits are waited in place.
        self.hold_waits = False
        # Where the turn is, for a hand back at any moment (the Go worker's
        # progress): the transcript at the last step boundary, the model
        # steps taken, and the step whose calls run (its results as they
        # complete), in the checkpoint's shape.
        self.prog_msgs: List[Message] = []
        self.prog_steps = 0
        self.prog_step: Optional[Dict[str, Any]] = None

    # ---- facts ----

    def event(self, typ: str, step: str = "", call: str = "", **payload: Any) -> RuntimeEvent:
        # The session and thread ride along: control then appends to the
        # thread's partition at once, with no lookup of the turn by id.
        ev = RuntimeEvent(type=typ, session_id=self.t.session_id, thread_id=self.t.thread_id, turn_id=self.t.turn_id,
                          run_id=self.run_id, step_id=step, tool_call_id=call)
        for name, value in payload.items():
            getattr(ev, name).CopyFrom(value)
        return ev

    def say(self, *events: RuntimeEvent) -> None:
        """Holds facts for at most the worker's report_linger, so that a
        step's facts travel in one ReportEvents call. Every event gets its
        id now, so a retry appends nothing twice. Whatever another service
        decides on or records about the turn (a route, a permission
        evaluation, a sandbox fact, the turn's end) is preceded by flush()
        or report(): the log's order is the order facts were said in."""
        if self.stop_reason in ("ended", "lease_lost"):
            raise asyncio.CancelledError()
        for ev in events:
            if not ev.event_id:
                ev.event_id = new_id("evt")
        self._held.extend(events)
        if self.w.report_linger <= 0 or len(self._held) >= 64:
            asyncio.ensure_future(self._flush_held())
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                self.w.report_linger, lambda: asyncio.ensure_future(self._flush_held()))

    async def _flush_held(self) -> None:
        try:
            await self.flush()
        except BaseException as e:  # said by the next report or flush
            if self._held_error is None:
                self._held_error = e

    async def flush(self) -> None:
        """Sends the facts held, in order, and waits for them."""
        await self.report()

    async def report(self, *events: RuntimeEvent) -> None:
        """Sends the facts held and these, in order, and waits for them."""
        if self.stop_reason in ("ended", "lease_lost"):
            # The run is lost or the turn ended elsewhere: this run says
            # nothing more, whatever was under way.
            raise asyncio.CancelledError()
        async with self._sending:
            if self._held_error is not None:
                err, self._held_error = self._held_error, None
                raise err
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            evs, self._held = self._held + list(events), []
            while evs:
                req = control_pb2.ReportEventsRequest(events=evs[:256])
                _set_if(req, "lease_token", self.lease_token)
                await self.c.control.ReportEvents(req, timeout=30)
                evs = evs[256:]

    async def report_anyway(self, *events: RuntimeEvent) -> None:
        """Reports even while the turn's task is being cancelled (the
        cancelled facts are still said), bounded."""
        try:
            await asyncio.shield(asyncio.wait_for(self.report(*events), 10))
        except FailedPrecondition as e:
            if e.reason == "LEASE_LOST":
                # The run was lost before this last word (its heartbeat and
                # its watch had not said so yet): the same stop as theirs.
                self.stop_reason = "lease_lost"
                self.w.log.info("turn %s run %s stopped: lease_lost", self.t.turn_id, self.run_id)
                return
            self.w.log.warning("reporting %s: %s", [e.type for e in events], e)
        except (RpcError, asyncio.TimeoutError) as e:
            self.w.log.warning("reporting %s: %s", [e.type for e in events], e)

    def failed(self, outcome: int, category: str, message: str, retryable: bool) -> RuntimeEvent:
        return self.event("turn.failed", turn_failed=ev_control.TurnFailed(
            outcome=outcome, category=category, message=message, retryable=retryable))

    # ---- lifecycle ----

    def halt(self, why: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = why
            if self.task is not None:
                self.task.cancel()

    async def run(self) -> None:
        loop_task = asyncio.ensure_future(self.loop())
        self.task = loop_task
        side = [asyncio.ensure_future(self.heartbeat()), asyncio.ensure_future(self.watch())]
        final: Optional[ModelResponse] = None
        error: Optional[BaseException] = None
        try:
            final = await asyncio.shield(loop_task)
        except asyncio.CancelledError:
            if not loop_task.done():  # the worker itself is stopping
                self.stop_reason = self.stop_reason or "shutdown"
                loop_task.cancel()
                try:
                    await loop_task
                except BaseException:
                    pass
                error = asyncio.CancelledError()
            else:
                error = asyncio.CancelledError()
        except BaseException as e:
            error = e
        finally:
            for s in side:
                s.cancel()
        if isinstance(error, _Parked):
            self.w.log.info("turn %s run %s handed back", self.t.turn_id, self.run_id)
            return
        why = self.stop_reason
        if why == "shutdown":
            # The worker stopped before the turn reached a step boundary:
            # hand back what completed; the calls in flight run again
            # elsewhere.
            try:
                await asyncio.shield(asyncio.wait_for(self.park(self.snapshot(), "drain"), 30))
            except _Parked:
                self.w.log.info("turn %s run %s handed back from its last completed call", self.t.turn_id, self.run_id)
                raise asyncio.CancelledError() from None
            except (RpcError, ValueError, asyncio.TimeoutError) as e:
                self.w.log.warning("handing back %s: %s", self.t.turn_id, e)
        # Background processes end with their turn, and say so before it does.
        if why in ("ended", "lease_lost") or _is_ended(error):
            await self.procs.close_all("the turn ended without this worker", silent=True)
        elif why == "interrupted":
            await self.procs.close_all("the turn was interrupted")
        elif why == "shutdown":
            await self.procs.close_all("the worker stopped")
        elif error is None:
            await self.procs.close_all("the turn ended")
        else:
            await self.procs.close_all("the turn failed")
        if error is None and why is None and self.permission_unavailable:
            # The model may say it is done, but calls it asked for never ran
            # because nobody could check them: that is not a completed turn.
            await self.report_anyway(self.failed(
                ev_control.TURN_OUTCOME_FAILED, "permission_unavailable",
                f"{self.permission_unavailable} tool call(s) could not be checked by the permission service and did not run", True))
            return
        if error is None and why is None:
            await self.report_anyway(self.event("turn.completed", turn_completed=ev_control.TurnCompleted(
                summary=_clip(final.text if final else "", 2000), stop_reason=final.stop_reason if final else "")))
            return
        if why in ("ended", "lease_lost") or _is_ended(error):
            # Someone else ended it (or the run is lost): nothing more to say.
            self.w.log.info("turn %s run %s stopped: %s", self.t.turn_id, self.run_id, why or "ended")
            return
        if why == "interrupted":
            await self.report_anyway(self.failed(ev_control.TURN_OUTCOME_CANCELLED, "interrupted",
                                                 "interrupted at the user's request", False))
            return
        if why == "shutdown":
            await self.report_anyway(self.failed(ev_control.TURN_OUTCOME_FAILED, "worker_shutdown",
                                                 "the worker stopped during the turn", True))
            raise asyncio.CancelledError()
        if isinstance(error, _TurnFailure):
            await self.report_anyway(self.failed(ev_control.TURN_OUTCOME_FAILED, error.category, error.message, error.retryable))
            return
        # A report that failed: the lease will lapse and the turn be lost.
        if error is not None:
            raise error

    async def heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.w.lease_ttl / 3)
            await self.check_now()
            if self.stop_reason:
                return

    async def check_now(self) -> None:
        req = control_pb2.HeartbeatTurnRequest(turn_id=self.t.turn_id, run_id=self.run_id,
                                               lease_ttl=_duration(self.w.lease_ttl))
        _set_if(req, "lease_token", self.lease_token)
        try:
            hb = await self.c.control.HeartbeatTurn(req, timeout=self.w.lease_ttl / 3)
        except FailedPrecondition:
            self.halt("lease_lost")
            return
        except RpcError as e:  # transient: the next beat may get through before the lease ends
            self.w.log.warning("heartbeat of %s: %s", self.t.turn_id, e)
            return
        if hb.interrupt_requested:
            self.halt("interrupted")
        elif hb.status in _TERMINAL:
            self.halt("ended")

    async def watch(self) -> None:
        """Follows the thread: an interrupt, the turn ending without this
        run, another run starting or this run recorded lost stop the turn
        at once (heartbeats would notice a third of a lease later)."""
        try:
            async for ev in self.c.subscribe(session_id=self.t.session_id, thread_id=self.t.thread_id,
                                             types=["thread.updated", "turn.failed", "turn.completed", "turn.started", "run.status",
                                                    "process.input"],
                                             start=self.claim_sequence + 1):
                if not isinstance(ev, RuntimeEvent):
                    continue
                if ev.type == "process.input" and ev.turn_id == self.t.turn_id:
                    self.procs.input(ev)
                    continue
                if ev.type == "thread.updated" and ev.thread_updated.change == "process_terminate_requested" \
                        and ev.turn_id == self.t.turn_id:
                    self.procs.terminate(ev.process_id, ev.thread_updated.reason)
                    continue
                if ev.type == "thread.updated" and ev.thread_updated.change == "interrupt_requested" \
                        and ev.thread_updated.turn_id == self.t.turn_id:
                    self.halt("interrupted")
                    return
                if ev.type in ("turn.failed", "turn.completed") and ev.turn_id == self.t.turn_id and ev.run_id != self.run_id:
                    self.halt("ended")
                    return
                if (ev.type == "turn.started" and ev.turn_id == self.t.turn_id and ev.run_id != self.run_id) or \
                        (ev.type == "run.status" and ev.run_id == self.run_id and ev.run_status.phase == "lost"):
                    self.halt("lease_lost")
                    return
        except RpcError:
            return  # heartbeats still carry the news

    # ---- the agent loop ----

    async def loop(self) -> ModelResponse:
        w = self.w
        names = sorted(w.tools)
        defs = [ToolDef(n, w.tools[n].description, w.tools[n].schema) for n in names]
        cp = await self.load_checkpoint()
        first = 0
        if cp is not None and cp.get("messages"):
            # A parked run handed the turn back: go on from its checkpoint.
            msgs = [_message(m) for m in cp["messages"]]
            self.model, self.routed, first = cp.get("model", ""), bool(cp.get("routed")), int(cp.get("steps", 0))
            step = cp.get("step")
            if step:
                msgs.extend(await self.tool_step(msgs, first, step["id"], [_call(c) for c in step.get("calls") or []], step))
        else:
            msgs = await self.prepare(names)
        for n in range(first, w.max_steps):
            self.prog_msgs, self.prog_steps, self.prog_step = list(msgs), n, None
            if w.draining:
                # Hand the turn back at a step boundary: nothing is lost.
                try:
                    await self.park(self.snapshot(), "drain")
                except (RpcError, ValueError) as e:
                    w.log.warning("handing back %s: %s", self.t.turn_id, e)
            resp, step_id = await self.model_step(msgs, defs)
            if not resp.tool_calls:
                return resp
            msgs.append(Message("assistant", resp.text, tool_calls=list(resp.tool_calls)))
            msgs.extend(await self.tool_step(msgs, n + 1, step_id, list(resp.tool_calls), None))
        raise _TurnFailure("max_steps", f"the model made {w.max_steps} calls without finishing")

    async def load_checkpoint(self) -> Optional[Dict[str, Any]]:
        if not self.checkpoint_uri:
            return None
        raw = await self.c.read_output(self.checkpoint_uri)
        cp = json.loads(raw)
        if cp.get("version") != CHECKPOINT_VERSION:
            raise _TurnFailure("checkpoint", f"checkpoint {self.checkpoint_uri} is version {cp.get('version')}; "
                                             f"this worker resumes version {CHECKPOINT_VERSION}")
        return cp

    def snapshot(self) -> Dict[str, Any]:
        """A checkpoint of what completed: the calls and the model call in
        flight run again on resume (the Go worker's progress.snapshot)."""
        cp: Dict[str, Any] = {"version": CHECKPOINT_VERSION, "model": self.model, "routed": self.routed,
                              "steps": self.prog_steps, "messages": [_go_message(m) for m in self.prog_msgs]}
        if self.prog_step is not None:
            cp["step"] = {"id": self.prog_step["id"], "calls": self.prog_step["calls"],
                          "results": {str(k): _go_message(m) for k, m in self.prog_step["results"].items()}}
        return cp

    def completed(self, k: int, m: Message) -> None:
        if self.prog_step is not None:
            self.prog_step["results"][k] = m

    def may_park(self) -> bool:
        return self.w.park_waits and not self.hold_waits and not self.procs.procs

    async def tool_step(self, msgs: List[Message], steps: int, step: str, calls: List[ToolCall],
                        resume: Optional[Dict[str, Any]]) -> List[Message]:
        """Runs a model step's calls; when some must wait for a person the
        turn is handed back (_Parked), and when that fails they wait in
        place."""
        while True:
            self.prog_msgs, self.prog_steps = list(msgs), steps
            self.prog_step = {"id": step, "calls": [_go_call(c) for c in calls], "results": {}}
            try:
                return await self.run_tools(step, calls, resume)
            except _StepParked as sp:
                try:
                    await self.park({"version": CHECKPOINT_VERSION, "model": self.model, "routed": self.routed,
                                     "steps": steps, "messages": [_go_message(m) for m in msgs], "step": sp.step})
                except (RpcError, ValueError) as e:
                    self.w.log.warning("handing back %s: %s; its calls wait in place", self.t.turn_id, e)
                    self.hold_waits, resume = True, sp.step

    async def park(self, cp: Dict[str, Any], reason: str = "wait") -> None:
        """Stores the checkpoint and reports run.status "parked" naming it
        and the actions the turn waits for (reason "wait"), or saying the
        worker is stopping (reason "drain"); raises _Parked. Background
        processes end first (they belong to the run)."""
        raw = json.dumps(cp).encode()
        if len(raw) > MAX_CHECKPOINT:
            raise ValueError(f"the checkpoint is {len(raw)} bytes, above the {MAX_CHECKPOINT} a stored output takes")
        await self.flush()
        stored = await self.c.control.StoreOutput(control_pb2.StoreOutputRequest(
            turn_id=self.t.turn_id, tool_call_id="checkpoint:" + self.run_id, media_type="application/json",
            content=raw), timeout=60)
        parked = (cp.get("step") or {}).get("parked") or {}
        waits = [pc["action_id"] for pc in parked.values()]
        calls = [pc["call_id"] for pc in parked.values()]
        title = "handed back: waiting for a person"
        detail = f"the worker released the turn while {len(waits)} action(s) wait for an answer; any worker resumes it then"
        if reason == "drain":
            title = "handed back: the worker is stopping"
            detail = f"worker {self.w.worker_id} is draining; another worker resumes the turn from its checkpoint"
        await self.procs.close_all("the turn was handed back")
        await self.report(self.event("run.status", run_status=ev_control.RunStatus(
            phase="parked", title=title, detail=detail, checkpoints=[stored.output.uri],
            metadata={"reason": reason, "action_ids": ",".join(waits), "worker_id": self.w.worker_id,
                      "step_id": (cp.get("step") or {}).get("id", ""), "call_ids": ",".join(calls)})))
        raise _Parked()

    async def prepare(self, names: List[str]) -> List[Message]:
        """Opens the transcript of a turn started from its input: the
        context and catalog facts, and the route."""
        w = self.w
        msgs = [Message("system", w.system_prompt), Message("user", _input_text(self.t.input))]
        tokens = sum((len(m.content.encode()) + 3) // 4 for m in msgs)
        self.say(
            self.event("context.resolved", context_resolved=ev_control.ContextResolved(
                refs=["system_prompt", f"turn:{self.t.turn_id}/input"], tokens=tokens,
                warnings=["earlier turns of the thread are not included (history is not carried yet)",
                          "tokens are estimated (4 bytes per token)"])),
            # tool.* facts need a step and a call id: the catalog is the
            # turn's preparation step, and its "call" is the catalog itself.
            self.event("tool.catalog.resolved", new_id("step"), "catalog",
                       tool_catalog_resolved=ev_control.ToolCatalogResolved(
                           tool_names=names, inventory_ref="worker:" + w.worker_id)))
        await self.route(tokens)
        return msgs

    def scope(self) -> routing_pb2.TurnScope:
        return routing_pb2.TurnScope(session_id=self.t.session_id, thread_id=self.t.thread_id, turn_id=self.t.turn_id)

    async def route(self, tokens: int) -> None:
        w = self.w
        req = routing_pb2.DecideRouteRequest(scope=self.scope(), route=routing_pb2.RouteRequest(
            profile=ev_routing.TaskProfile(kind="chat", source="user", required_capabilities=[ev_routing.CAPABILITY_TOOLS],
                                           fallback_policy=ev_routing.FALLBACK_POLICY_NEXT_CANDIDATE),
            requested_model_id=self.t.options.get("model", ""), estimated_input_tokens=tokens))
        try:
            await self.flush()
            resp = await self.c.routing.DecideRoute(req, timeout=30)
            if resp.HasField("decision"):
                self.model, self.routed = resp.decision.selected_model_id, True
                return
            why = "routing not possible: " + resp.not_possible.reason
        except RpcError as e:
            why = "routing unavailable: " + e.message
        if not w.default_model:
            raise _TurnFailure("routing", why)
        self.model = w.default_model
        self.say(self.event("run.status", run_status=ev_control.RunStatus(
            phase="routing", title="using the worker's default model " + self.model, detail=why)))

    async def model_step(self, msgs: List[Message], defs: List[ToolDef]) -> Tuple[ModelResponse, str]:
        w = self.w
        provider = getattr(w.model, "name", "custom")
        while True:
            step = new_id("step")
            self.say(self.event("model.requested", step, model_requested=ev_control.ModelRequested(
                provider=provider, model=self.model)))
            sink = _Sink(self, step)
            try:
                resp = await w.model.stream(ModelRequest(self.model, list(msgs), defs), sink)
                await sink.flush()
            except asyncio.CancelledError:
                await sink.flush_anyway()
                if self.stop_reason not in ("ended", "lease_lost"):
                    await self.report_anyway(self.event("model.failed", step, model_failed=ev_control.ModelFailed(
                        provider=provider, model=self.model, category="cancelled",
                        message="the turn was interrupted during the call")))
                raise
            except ModelError as e:
                await sink.flush()
                await self.report(self.event("model.failed", step, model_failed=ev_control.ModelFailed(
                    provider=provider, model=self.model, category=e.category, message=e.message, retryable=e.retryable)))
                nxt = await self.fallback(e)
                if nxt:
                    self.model = nxt
                    continue
                raise _TurnFailure("provider_error", f"{e.category}: {e.message}", e.retryable) from None
            usage = None
            if resp.usage is not None:
                u = resp.usage
                usage = ev_control.ModelUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                                              cached_input_tokens=u.cached_input_tokens, reasoning_tokens=u.reasoning_tokens)
            completed = ev_control.ModelCompleted(provider=provider, model=self.model, stop_reason=resp.stop_reason,
                                                  response_ref=resp.request_id)
            if usage is not None:
                completed.usage.CopyFrom(usage)  # absent when unknown, never zero
            self.say(self.event("model.completed", step, model_completed=completed))
            if resp.usage is not None and self.routed:
                u = resp.usage
                try:
                    await self.flush()
                    await self.c.routing.RecordCost(routing_pb2.RecordCostRequest(
                        scope=self.scope(), usage_id=step, model_id=self.model, usage=routing_pb2.Usage(
                            input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                            cached_input_tokens=u.cached_input_tokens, reasoning_tokens=u.reasoning_tokens)), timeout=30)
                except RpcError as e:
                    w.log.warning("recording cost of %s: %s", self.t.turn_id, e)
            return resp, step

    async def fallback(self, e: ModelError) -> str:
        if not self.routed:
            return ""
        cat = {"rate_limited": ev_routing.FAILURE_CATEGORY_RATE_LIMITED, "overloaded": ev_routing.FAILURE_CATEGORY_OVERLOADED,
               "server_error": ev_routing.FAILURE_CATEGORY_SERVER_ERROR, "stream_error": ev_routing.FAILURE_CATEGORY_SERVER_ERROR,
               "timeout": ev_routing.FAILURE_CATEGORY_TIMEOUT, "network": ev_routing.FAILURE_CATEGORY_NETWORK}.get(e.category)
        if cat is None:
            return ""
        try:
            await self.flush()
            resp = await self.c.routing.ApplyFallback(routing_pb2.ApplyFallbackRequest(
                scope=self.scope(), failed_model_id=self.model, failure_category=cat,
                failure_detail=_clip(f"{e.category}: {e.message}", 1000)), timeout=30)
        except RpcError as err:
            self.w.log.warning("fallback of %s: %s", self.t.turn_id, err)
            return ""
        return resp.fallback.decision.selected_model_id if resp.HasField("fallback") else ""

    def parallel(self, c: ToolCall) -> bool:
        t = self.w.tools.get(c.name)
        return bool(t and t.read_only and t.concurrency_safe)

    async def run_tools(self, step: str, calls: List[ToolCall], resume: Optional[Dict[str, Any]] = None) -> List[Message]:
        """Consecutive read-only, concurrency-safe calls run together;
        anything else alone, in order. A resumed step (``resume``, from a
        checkpoint) keeps the results of the calls that ran and goes on
        with its parked calls where they waited. When calls must wait for a
        person, the calls running beside them finish and the step is handed
        back (_StepParked) with what ran."""
        results: Dict[int, Message] = {}
        waiting: Dict[str, Any] = {}
        if resume:
            results = {int(k): _message(m) for k, m in (resume.get("results") or {}).items()}
            waiting = {k: pc for k, pc in (resume.get("parked") or {}).items()}
        for k, m in results.items():
            self.completed(k, m)

        async def one(k: int) -> Message:
            m = await self.run_tool(step, calls[k], waiting.get(str(k)), k)
            self.completed(k, m)
            return m

        parked: Dict[str, Any] = {}
        i = 0
        while i < len(calls):
            if i in results:
                i += 1
                continue
            j = i + 1
            if self.parallel(calls[i]):
                while j < len(calls) and j not in results and self.parallel(calls[j]):
                    j += 1
            outs = await asyncio.gather(*(one(k) for k in range(i, j)), return_exceptions=True)
            for k, o in zip(range(i, j), outs):
                if isinstance(o, _MustWait):
                    parked[str(k)] = o.call
                elif isinstance(o, BaseException):
                    raise o
                else:
                    results[k] = o
            if parked:
                raise _StepParked({"id": step, "calls": [_go_call(c) for c in calls],
                                   "results": {str(k): _go_message(m) for k, m in results.items()}, "parked": parked})
            i = j
        return [results[k] for k in range(len(calls))]

    async def run_tool(self, step: str, c: ToolCall, parked: Optional[Dict[str, Any]] = None, index: int = -1) -> Message:
        if parked is None:
            call = c.id if ID_PATTERN.match(c.id or "") else new_id("call")
            self.say(
                self.event("tool.started", step, call, tool_started=ev_control.ToolStarted(tool_name=c.name)),
                self.event("tool.args", step, call, tool_args=ev_control.ToolArgs(safe_args_json=_clip(c.arguments, 4096))))
        else:
            # A call that waited for a person in a run that handed the turn
            # back: it goes on under the id its facts began with.
            call = parked["call_id"]
        ended: list = []  # the call's last fact was reported
        finished: list = []  # a "finish"/"block" call that ended under an interrupt
        try:
            return await self._run_tool(step, call, c, ended, finished, parked)
        except asyncio.CancelledError:
            # Interrupted anywhere after it started (the permission wait,
            # the sandbox record, the call itself): the last fact is still
            # said, unless the run is no longer ours. A call that was let
            # finish says what it did.
            if not ended and self.stop_reason not in ("ended", "lease_lost"):
                if finished and not finished[0].cancelled() and finished[0].exception() is None:
                    out, _ = _redact(self.w.redaction_rules, finished[0].result().output)
                    ev = self.event("tool.result", step, call, tool_result=ev_control.ToolResult(
                        preview=_head(out, PREVIEW_BYTES)))
                    # What it did is kept for a hand back: it does not run twice.
                    self.completed(index, Message("tool", _head(out, self.w.output_budget), tool_call_id=c.id))
                else:
                    ev = self.event("tool.failed", step, call, tool_failed=ev_control.ToolFailed(
                        category="cancelled", message="the turn was interrupted during the call"))
                await self.report_anyway(ev)
            raise

    async def _run_tool(self, step: str, call: str, c: ToolCall, ended: list, finished: list,
                        parked: Optional[Dict[str, Any]] = None) -> Message:
        w = self.w
        msg = Message("tool", tool_call_id=c.id)

        async def failed(category: str, message: str) -> Message:
            msg.content = f"error ({category}): {message}"
            self.say(self.event("tool.failed", step, call, tool_failed=ev_control.ToolFailed(
                category=category, message=_clip(message, 2000), retryable=category == "timeout")))
            ended.append(True)
            return msg

        async def succeeded(res: ToolResult) -> Message:
            content, preview, ref, facts = await self.shape_output(step, call, res)
            msg.content = content
            result = ev_control.ToolResult(preview=preview)
            if ref is not None:
                result.output.CopyFrom(ref)
            self.say(*facts, self.event("tool.result", step, call, tool_result=result))
            ended.append(True)
            return msg

        if parked is not None and parked.get("client"):
            # A front end's tool (docs/services/worker.md, "Client tools")
            # that a run parked: its result is the answer of its action.
            outcome, payload = await self.await_action(parked["action_id"], int(parked.get("from", 0)))
            if outcome != ev_control.ACTION_OUTCOME_RESOLVED:
                return await failed("client_tool_unanswered", "the client tool call was " +
                                    ev_control.ActionOutcome.Name(outcome).removeprefix("ACTION_OUTCOME_").lower())
            return await succeeded(ToolResult(output=_client_result(payload)))
        if parked is not None and parked.get("input"):
            # A question a run parked: the person's answer is its result.
            return await self.ask_user(step, call, c, parked, failed, succeeded)
        tool = w.tools.get(c.name)
        if tool is None:
            return await failed("unknown_tool", "no tool named " + c.name)
        try:
            args = tool.bind(c.arguments)
        except ToolError as e:
            return await failed(e.category, e.message)
        try:
            if parked is None:
                allowed, why, eval_id, rewritten = await self.permit(step, call, c, tool, args)
            else:
                allowed, why = await self.await_approval(parked["action_id"], int(parked.get("from", 0)))
                eval_id, rewritten = parked.get("eval_id", ""), parked.get("rewritten", "") if allowed else ""
        except RpcError as e:
            self.permission_unavailable += 1
            return await failed("permission_unavailable", e.message)
        if not allowed:
            return await failed("permission_denied", why)
        if rewritten:
            try:
                args = tool.bind(rewritten)
            except ToolError as e:
                return await failed(e.category, "the hook's rewritten arguments: " + e.message)
        # What the call runs under is recorded before it runs: a call whose
        # sandbox cannot be recorded does not run.
        try:
            await self.report_applied(c.name, step, call, eval_id)
        except RpcError as e:
            self.permission_unavailable += 1
            return await failed("permission_unavailable", "the sandbox could not be recorded: " + e.message)
        if tool is w._user_input and tool is not None:
            return await self.ask_user(step, call, ToolCall(c.id, c.name, json.dumps(args)), None, failed, succeeded)
        try:
            if tool.interrupt == "cancel":
                res = await tool.call(args, _CallContext(self, step, call, eval_id))
            else:
                # "finish" and "block": an interrupt waits for the call to
                # end (a write is never cut in half), then stops the turn.
                inner = asyncio.ensure_future(tool.call(args, _CallContext(self, step, call, eval_id)))
                finished.append(inner)
                try:
                    res = await asyncio.shield(inner)
                except asyncio.CancelledError:
                    await asyncio.wait({inner})
                    raise
        except ToolError as e:
            return await failed(e.category, e.message)
        except Exception as e:
            return await failed("tool_error", f"{type(e).__name__}: {e}")
        return await succeeded(res)

    async def ask_user(self, step: str, call: str, c: ToolCall, parked: Optional[Dict[str, Any]], failed: Any, succeeded: Any) -> Message:
        """A request_user_input call: opens the input action and parks the
        call (_MustWait), or waits for the answer (a call a parked run
        left, or one that may not park) and reports it as the result."""
        try:
            question, choices, timeout_ms = _input_args(json.loads(c.arguments or "{}"))
        except ToolError as e:
            return await failed(e.category, e.message)
        try:
            if parked is not None:
                action_id, start = parked["action_id"], int(parked.get("from", 0))
            else:
                req = control_pb2.RequestActionRequest(
                    session_id=self.t.session_id, thread_id=self.t.thread_id, turn_id=self.t.turn_id,
                    action_id=_input_action_id(call), action_type=INPUT_ACTION_TYPE, step_id=step, tool_call_id=call,
                    prompt=question, decisions=(choices or [INPUT_ANSWER]) + [INPUT_NO_ANSWER], json_schema=INPUT_SCHEMA,
                    context={"tool": USER_INPUT})
                if timeout_ms:
                    req.timeout.CopyFrom(_duration(timeout_ms / 1000))
                    req.decision_on_timeout = INPUT_NO_ANSWER
                # The call's start is in the log before the action that asks for it.
                await self.flush()
                resp = await self.c.control.RequestAction(req, timeout=30)
                act = resp.action
                if act.status != status_pb2.ACTION_STATUS_PENDING:
                    # The same call asking again finds its action answered.
                    outcome = {status_pb2.ACTION_STATUS_RESOLVED: ev_control.ACTION_OUTCOME_RESOLVED,
                               status_pb2.ACTION_STATUS_TIMED_OUT: ev_control.ACTION_OUTCOME_TIMED_OUT,
                               status_pb2.ACTION_STATUS_CANCELLED: ev_control.ACTION_OUTCOME_CANCELLED}.get(
                        act.status, ev_control.ACTION_OUTCOME_UNSPECIFIED)
                    return await succeeded(ToolResult(output=_input_result(outcome, act.decision, act.payload_json, timeout_ms)))
                action_id, start = act.action_id, resp.sequence
                if self.may_park():
                    raise _MustWait({"call_id": call, "action_id": action_id, "from": start, "own": True, "input": True})
            ev = await self.await_answer(action_id, start)
        except RpcError as e:
            return await failed("input_unavailable", e.message)
        a = ev.action_resolved
        if a.outcome == ev_control.ACTION_OUTCOME_CANCELLED:
            await self.check_now()  # the turn was interrupted or ended
        try:
            out = _input_result(a.outcome, a.decision, a.payload_json, timeout_ms)
        except ToolError as e:
            return await failed(e.category, e.message)
        return await succeeded(ToolResult(output=out))

    async def permit(self, step: str, call: str, c: ToolCall, tool: Tool, args: Dict[str, Any]) -> Tuple[bool, str, str, str]:
        req = permission_pb2.EvaluatePermissionRequest(
            session_id=self.t.session_id, thread_id=self.t.thread_id, turn_id=self.t.turn_id, step_id=step, tool_call_id=call,
            target=ev_permission.TARGET_KIND_TOOL, name=c.name, access=tool.access_enum(), paths=tool.paths(args),
            cwd=self.w.workspace, arguments_json=c.arguments)
        await self.flush()
        resp = await self.c.permission.EvaluatePermission(req, timeout=30)
        ev = resp.evaluation
        d = ev.decision
        if d in (ev_permission.DECISION_ALLOW, ev_permission.DECISION_SANDBOXED):
            return True, "", ev.evaluation_id, resp.updated_arguments_json
        if d == ev_permission.DECISION_ASK:
            if self.may_park():
                # Hand the turn back while the person decides (tool_step).
                raise _MustWait({"call_id": call, "action_id": ev.approval_action_id, "from": resp.write.sequence,
                                 "eval_id": ev.evaluation_id, "rewritten": resp.updated_arguments_json})
            allowed, why = await self.await_approval(ev.approval_action_id, resp.write.sequence)
            return allowed, why, ev.evaluation_id, resp.updated_arguments_json
        if d == ev_permission.DECISION_UNAVAILABLE:
            return False, "the permission decision was unavailable: " + ev.decision_reason, ev.evaluation_id, ""
        return False, ev.decision_reason, ev.evaluation_id, ""

    async def await_answer(self, action_id: str, from_sequence: int, approval: bool = False) -> RuntimeEvent:
        """The fact that answers an action, read from the session's events
        from ``from_sequence``: its ``action.resolved``, or, ``approval``,
        the ``permission.resolved`` that carries a permission's answer (an
        approval's action.resolved counts only when it was not resolved:
        expired, cancelled)."""
        if not action_id:
            raise RpcError("an ask without an approval action")
        types = ["permission.resolved", "action.resolved"] if approval else ["action.resolved"]
        async for ev in self.c.subscribe(session_id=self.t.session_id, types=types,
                                         start=max(from_sequence, 1), heartbeat=5.0):
            if not isinstance(ev, RuntimeEvent) or ev.action_id != action_id:
                continue
            if approval and ev.HasField("permission_resolved"):
                return ev
            if ev.HasField("action_resolved") and not (approval and ev.action_resolved.outcome == ev_control.ACTION_OUTCOME_RESOLVED):
                return ev
        raise RpcError("the subscription ended")

    async def await_action(self, action_id: str, from_sequence: int) -> Tuple[int, str]:
        """The outcome and payload (JSON) of an action's answer."""
        ev = await self.await_answer(action_id, from_sequence)
        return ev.action_resolved.outcome, ev.action_resolved.payload_json

    async def await_approval(self, action_id: str, from_sequence: int) -> Tuple[bool, str]:
        """Whether a person allowed a call, and why not."""
        ev = await self.await_answer(action_id, from_sequence, approval=True)
        if ev.HasField("permission_resolved"):
            p = ev.permission_resolved
            if p.allowed:
                return True, ""
            return False, f"denied by {p.responder or 'unknown'} ({p.decision})"
        if ev.action_resolved.outcome == ev_control.ACTION_OUTCOME_CANCELLED:
            # Actions are cancelled when their turn is interrupted or ends:
            # ask now rather than run another step first.
            await self.check_now()
        name = ev_control.ActionOutcome.Name(ev.action_resolved.outcome)
        return False, "the approval was " + name.removeprefix("ACTION_OUTCOME_").lower()

    async def report_applied(self, name: str, step: str, call: str, eval_id: str, process_id: str = "") -> None:
        # Python tools run inside the worker process with its access: the
        # SDK confines nothing, and says so (a process it starts likewise).
        cwd = self.w.workspace
        req = permission_pb2.ReportSandboxAppliedRequest(
            session_id=self.t.session_id, thread_id=self.t.thread_id, turn_id=self.t.turn_id, step_id=step,
            tool_call_id=call, target=ev_permission.SANDBOX_TARGET_TOOL, name=name, evaluation_id=eval_id,
            profile=ev_permission.SandboxProfile(mode=ev_permission.SANDBOX_MODE_FULL_ACCESS, cwd=cwd,
                                                 read_roots=["/"], write_roots=["/"],
                                                 network=ev_permission.NETWORK_MODE_FULL),
            network_enforcement=ev_permission.NETWORK_ENFORCEMENT_UNAVAILABLE,
            network_enforcement_reason="the tool is a Python function in the worker process; the Python SDK does not confine it")
        if process_id:
            req.target, req.step_id, req.tool_call_id, req.process_id = ev_permission.SANDBOX_TARGET_PROCESS, "", "", process_id
            req.network_enforcement_reason = "a process a Python tool started; the Python SDK does not confine it"
        await self.flush()
        await self.c.permission.ReportSandboxApplied(req, timeout=30)

    async def shape_output(self, step: str, call: str, res: ToolResult) -> Tuple[str, str, Any, List[RuntimeEvent]]:
        """Redaction, spill above the inline budget, truncation: the Go
        worker's output.go, fact for fact."""
        w = self.w
        out = res.output
        produced = res.bytes or len(out.encode())
        kept = len(out.encode())
        truncated = res.truncated
        out, hits = _redact(w.redaction_rules, out)
        facts: List[RuntimeEvent] = []
        ref = None
        budget = w.output_budget
        size = len(out.encode())
        if size > budget:
            stored, cut = out, truncated
            if len(stored.encode()) > MAX_STORED_OUTPUT:
                stored, cut = _head(stored, MAX_STORED_OUTPUT), True
                kept = len(stored.encode())
            try:
                r = await self.c.control.StoreOutput(control_pb2.StoreOutputRequest(
                    turn_id=self.t.turn_id, tool_call_id=call, media_type="text/plain; charset=utf-8",
                    content=stored.encode(), truncated=cut, redacted=bool(hits)), timeout=60)
            except RpcError as e:
                content = _head(res.output, budget) + f"\n[output not stored: {e.message}]"
                content, _ = _redact(w.redaction_rules, content)
                return content, _head(content, PREVIEW_BYTES), None, []
            ref = r.output
            facts.append(self.event("output.spilled", step, call, output_spilled=ev_control.OutputFact(
                output=ref, reason=f"{size} bytes are above the inline budget of {budget} bytes")))
            truncated = cut
            half = budget // 2
            content = (_head(out, half) +
                       f"\n[… {size - 2 * half} bytes in the middle omitted; the whole output ({len(stored.encode())} bytes) is stored as {ref.uri} …]\n" +
                       _tail(out, half))
        else:
            content = out
        if hits:
            fact = ev_control.OutputFact(reason="matched redaction rules: " + _hit_summary(hits))
            if ref is not None:
                fact.output.CopyFrom(ref)
            facts.append(self.event("output.redacted", step, call, output_redacted=fact))
        if truncated:
            fact = ev_control.OutputFact(reason=f"the tool produced {produced} bytes; {kept} were kept")
            if ref is not None:
                fact.output.CopyFrom(ref)
            facts.append(self.event("output.truncated", step, call, output_truncated=fact))
            content += f"\n[output truncated: the tool produced {produced} bytes; {kept} were kept]"
        preview = _head(out, PREVIEW_BYTES)
        if size > PREVIEW_BYTES:
            preview += "…"
        return content, preview, ref, facts


class _CallContext(ToolContext):
    def __init__(self, turn: "_Turn", step: str, call: str, eval_id: str) -> None:
        self._turn, self._eval = turn, eval_id
        self.session_id, self.thread_id, self.turn_id = turn.t.session_id, turn.t.thread_id, turn.t.turn_id
        self.step_id, self.tool_call_id = step, call

    async def start_process(self, command: Union[str, Sequence[str]], *, cwd: Optional[str] = None) -> str:
        return await self._turn.procs.start(self.step_id, self.tool_call_id, self._eval, command, cwd)

    async def wait_process(self, process_id: str = "", timeout: float = 30.0) -> str:
        return await self._turn.procs.wait(process_id, timeout)


class _Proc:
    def __init__(self, pid: str, command: str, proc: "asyncio.subprocess.Process") -> None:
        self.id, self.command, self.p = pid, command, proc
        self.kill_reason = ""
        self.inputs: "asyncio.Queue[str]" = asyncio.Queue(maxsize=64)
        self.done = asyncio.Event()
        self.end = ""
        self.tail = ""


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


class _Processes:
    """A turn's long-lived processes (the Go worker's procTable): their
    facts, their stdin and terminate requests, their end with the turn."""

    def __init__(self, turn: "_Turn") -> None:
        self.turn = turn
        self.procs: Dict[str, _Proc] = {}
        self.tasks: set = set()
        self.silent = False

    def event(self, typ: str, pr: _Proc, **payload: Any) -> RuntimeEvent:
        ev = self.turn.event(typ, **payload)
        ev.process_id = pr.id
        return ev

    async def report(self, *evs: RuntimeEvent) -> None:
        if self.silent:
            return
        try:
            await asyncio.wait_for(self.turn.report(*evs), 10)
        except (RpcError, asyncio.TimeoutError, asyncio.CancelledError) as e:
            self.turn.w.log.warning("reporting a process fact of %s: %r", self.turn.t.turn_id, e)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    async def start(self, step: str, call: str, eval_id: str, command: Union[str, Sequence[str]], cwd: Optional[str]) -> str:
        turn, w = self.turn, self.turn.w
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        shown = command if isinstance(command, str) else shlex.join(argv)
        cwd = os.path.abspath(os.path.join(w.workspace, cwd or "."))
        p = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE, start_new_session=True)
        pr = _Proc(new_id("proc"), shown, p)
        # Known before process.started is out: a stdin or terminate request
        # can come back through the thread before the report's answer does.
        self.procs[pr.id] = pr
        # The process's own sandbox.applied, then process.started: its output
        # waits for both, so no fact of it comes before them.
        try:
            await turn.report_applied(_clip(shown, 4096), "", "", eval_id, process_id=pr.id)
            started = self.event("process.started", pr, process_started=ev_control.ProcessStarted(command=_clip(shown, 4096), cwd=cwd))
            started.step_id, started.tool_call_id = step, call
            await turn.report(started)
        except BaseException:
            # Unreported, nothing could reach it: it must not run.
            del self.procs[pr.id]
            _killpg(p)
            await p.wait()
            raise
        self._spawn(self._run(pr))
        return pr.id

    async def _run(self, pr: _Proc) -> None:
        feeder = asyncio.ensure_future(self._feed(pr))
        await asyncio.gather(self._pump(pr, pr.p.stdout, "stdout"), self._pump(pr, pr.p.stderr, "stderr"))
        rc = await pr.p.wait()
        feeder.cancel()
        if pr.kill_reason and rc < 0:
            ev = self.event("process.terminated", pr, process_terminated=ev_control.ProcessTerminated(
                reason=pr.kill_reason, signal=_signal_name(rc)))
            pr.end = f"terminated ({pr.kill_reason})"
        elif rc < 0:
            ev = self.event("process.failed", pr, process_failed=ev_control.ProcessFailed(
                category="signaled", message="ended by " + _signal_name(rc)))
            pr.end = "failed: ended by " + _signal_name(rc)
        else:
            ev = self.event("process.completed", pr, process_completed=ev_control.ProcessCompleted(exit_code=rc))
            pr.end = f"completed with exit status {rc}"
        await self.report(ev)
        pr.done.set()

    async def _pump(self, pr: _Proc, stream: Any, name: str) -> None:
        w = self.turn.w
        while True:
            chunk = await stream.read(64 << 10)
            if not chunk:
                return
            out, hits = _redact(w.redaction_rules, chunk.decode("utf-8", "replace"))
            pr.tail = _tail(pr.tail + out, w.output_budget)
            payload = ev_control.ProcessOutput(stream=name, preview=_head(out, PREVIEW_BYTES))
            facts: List[RuntimeEvent] = []
            size = len(out.encode())
            if size > w.output_budget:
                try:
                    r = await self.turn.c.control.StoreOutput(control_pb2.StoreOutputRequest(
                        turn_id=self.turn.t.turn_id, process_id=pr.id, media_type="text/plain; charset=utf-8",
                        content=_head(out, MAX_STORED_OUTPUT).encode(), truncated=size > MAX_STORED_OUTPUT,
                        redacted=bool(hits)), timeout=10)
                    payload.output.CopyFrom(r.output)
                    facts.append(self.event("output.spilled", pr, output_spilled=ev_control.OutputFact(
                        output=r.output, reason=f"{size} bytes are above the inline budget of {w.output_budget} bytes")))
                except RpcError as e:
                    facts.append(self.event("output.truncated", pr, output_truncated=ev_control.OutputFact(
                        reason=f"the process wrote {size} bytes; only the {PREVIEW_BYTES}-byte preview is kept (the store failed: {e.message})")))
            if hits:
                fact = ev_control.OutputFact(reason="matched redaction rules: " + _hit_summary(hits))
                if payload.HasField("output"):
                    fact.output.CopyFrom(payload.output)
                facts.append(self.event("output.redacted", pr, output_redacted=fact))
            await self.report(*facts, self.event("process.output", pr, process_output=payload))

    async def _feed(self, pr: _Proc) -> None:
        while True:
            uri = await pr.inputs.get()
            try:
                data = await self.turn.c.read_output(uri)
                assert pr.p.stdin is not None
                pr.p.stdin.write(data)
                await pr.p.stdin.drain()
            except (RpcError, OSError, ConnectionError) as e:
                self.turn.w.log.warning("writing stdin of %s: %s", pr.id, e)

    def input(self, ev: RuntimeEvent) -> None:
        pr = self.procs.get(ev.process_id)
        uri = ev.refs.get("input_ref", "")
        if pr is None or not uri or pr.done.is_set():
            return
        try:
            pr.inputs.put_nowait(uri)
        except asyncio.QueueFull:
            self.turn.w.log.warning("stdin queue of %s full; input %s dropped", pr.id, ev.event_id)

    def terminate(self, process_id: str, reason: str) -> None:
        pr = self.procs.get(process_id)
        if pr is None or pr.done.is_set():
            return
        if not pr.kill_reason:
            pr.kill_reason = reason or "terminated"
        _killpg(pr.p)

    async def close_all(self, reason: str, silent: bool = False) -> None:
        self.silent = self.silent or silent
        for pid in list(self.procs):
            self.terminate(pid, reason)
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=10)

    async def wait(self, process_id: str, timeout: float) -> str:
        prs = [self.procs[process_id]] if process_id else list(self.procs.values())
        if process_id and process_id not in self.procs:
            raise ToolError("not_found", f"no process {process_id} in this turn")
        await asyncio.wait({asyncio.ensure_future(p.done.wait()) for p in prs} or {asyncio.ensure_future(asyncio.sleep(0))},
                           timeout=timeout)
        lines = []
        for pr in prs:
            state = pr.end or "still running"
            lines.append(f"{pr.id} ({pr.command}): {state}\n{pr.tail[-2000:]}")
        return "\n".join(lines) or "no processes"


def _killpg(p: "asyncio.subprocess.Process") -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _task_category(c: str) -> str:
    out = "".join(ch if ch.isascii() and (ch.isalnum() or ch == "_") else "_" for ch in c.lower())
    return _clip(out, 64) if out else "internal"


def _is_ended(err: Optional[BaseException]) -> bool:
    return isinstance(err, FailedPrecondition) and "already ended" in err.message


class _Sink:
    """Coalesces a model stream into facts: text and reasoning cut at 256
    bytes, at a tool call and at the end, and said to the turn, which sends
    them within its report_linger; tool calls are announced by the tool
    runner (with the ids the facts use)."""

    def __init__(self, turn: _Turn, step: str) -> None:
        self.turn, self.step = turn, step
        self.text_buf: List[str] = []
        self.reasoning_buf: List[str] = []
        self.text_len = self.reasoning_len = 0
        self.index = 0
        self.pending: List[RuntimeEvent] = []
        self.sending: Optional[asyncio.Future] = None

    def text(self, delta: str) -> None:
        self.text_buf.append(delta)
        self.text_len += len(delta.encode())
        if self.text_len >= DELTA_FLUSH_BYTES:
            self._cut()
            self._send()

    def reasoning(self, delta: str) -> None:
        self.reasoning_buf.append(delta)
        self.reasoning_len += len(delta.encode())
        if self.reasoning_len >= DELTA_FLUSH_BYTES:
            self._cut()
            self._send()

    def tool_call(self, index: int, call_id: str, name: str) -> None:
        self._cut()

    def tool_args(self, index: int, chunk: str) -> None:
        pass

    def _cut(self) -> None:
        t = self.turn
        if self.reasoning_buf:
            self.pending.append(t.event("reasoning.delta", self.step, reasoning_delta=ev_control.ReasoningDelta(
                text="".join(self.reasoning_buf))))
            self.reasoning_buf, self.reasoning_len = [], 0
        if self.text_buf:
            self.pending.append(t.event("model.delta", self.step, model_delta=ev_control.ModelDelta(
                text="".join(self.text_buf), index=self.index)))
            self.index += 1
            self.text_buf, self.text_len = [], 0

    def _send(self) -> None:
        # The sink is called synchronously by the model: chain the report
        # behind the previous one so deltas stay in order.
        batch, self.pending = self.pending, []
        if not batch:
            return
        prev = self.sending

        async def go() -> None:
            if prev is not None:
                await prev
            self.turn.say(*batch)

        self.sending = asyncio.ensure_future(go())

    async def flush(self) -> None:
        self._cut()
        self._send()
        if self.sending is not None:
            await self.sending

    async def flush_anyway(self) -> None:
        self._cut()
        batch, self.pending = self.pending, []
        if self.sending is not None:
            try:
                await asyncio.shield(self.sending)
            except BaseException:
                pass
        if batch:
            await self.turn.report_anyway(*batch)
