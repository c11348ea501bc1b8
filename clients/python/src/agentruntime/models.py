"""The model step: a :class:`Model` streams one call into a
:class:`ModelSink` and answers a :class:`ModelResponse`. Bring any model
call; included are :class:`ScriptedModel` (the Go worker's script format,
deterministic, for demos and tests) and :class:`OpenAICompatible` (chat
completions with streaming and tool calls, on the standard library's HTTP
client)."""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Sequence, Union

from .ids import new_id

__all__ = ["Message", "ToolCall", "ToolDef", "Usage", "ModelRequest", "ModelResponse", "ModelSink",
           "Model", "ModelError", "ScriptedModel", "OpenAICompatible"]

# Failure categories (model.failed{category}); the first six make the
# worker ask routing for a fallback model.
RATE_LIMITED, OVERLOADED, SERVER_ERROR, STREAM_ERROR, TIMEOUT, NETWORK = (
    "rate_limited", "overloaded", "server_error", "stream_error", "timeout", "network")
AUTHENTICATION, CONTEXT_LENGTH, BAD_REQUEST, SCRIPT_ENDED = (
    "authentication", "context_length", "bad_request", "script_ended")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON


@dataclass
class Message:
    role: str  # system, user, assistant, tool
    content: str = ""
    tool_calls: List[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""


@dataclass
class ToolDef:
    name: str
    description: str
    schema: Dict[str, Any]


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class ModelRequest:
    model: str
    messages: List[Message]
    tools: List[ToolDef]


@dataclass
class ModelResponse:
    text: str = ""
    tool_calls: List[ToolCall] = field(default_factory=list)
    stop_reason: str = ""
    #: None: the provider did not say (never reported as zero).
    usage: Optional[Usage] = None
    request_id: str = ""


class ModelError(Exception):
    """A failed model call with its category (``model.failed{category}``)."""

    def __init__(self, category: str, message: str, *, status: int = 0, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.category, self.message, self.status, self.retry_after = category, message, status, retry_after

    @property
    def retryable(self) -> bool:
        return self.category in (RATE_LIMITED, OVERLOADED, SERVER_ERROR, STREAM_ERROR, TIMEOUT, NETWORK)


class ModelSink(Protocol):
    def text(self, delta: str) -> None: ...
    def reasoning(self, delta: str) -> None: ...
    def tool_call(self, index: int, call_id: str, name: str) -> None: ...
    def tool_args(self, index: int, chunk: str) -> None: ...


class Model(Protocol):
    #: the provider's name in model.requested / model.completed.
    name: str

    async def stream(self, request: ModelRequest, sink: ModelSink) -> ModelResponse: ...


def _args_json(v: Any) -> str:
    if v is None:
        return "{}"
    if isinstance(v, str):
        json.loads(v)
        return v
    return json.dumps(v, separators=(",", ":"))


class ScriptedModel:
    """Answers from a script (the Go worker's ``--script`` format, as a
    dict or a JSON file): ``{"model": ..., "turns": [{"match": ...,
    "steps": [{"reasoning", "text", "tool_calls": [{"name", "arguments"}],
    "stop_reason", "usage": {"input_tokens", "output_tokens"}, "error"}]}]}``.
    The step is the number of assistant messages since the user's message,
    so a retried turn replays the same answers."""

    name = "scripted"

    def __init__(self, script: Union[Dict[str, Any], str]) -> None:
        if isinstance(script, str):
            with open(script, encoding="utf-8") as f:
                script = json.load(f)
        if not script.get("turns"):
            raise ValueError("script: no turns")
        for i, t in enumerate(script["turns"]):
            if not t.get("steps"):
                raise ValueError(f"script: turns[{i}] has no steps")
        self.script = script
        self.model = script.get("model") or "scripted"

    def _pick(self, user: str) -> Dict[str, Any]:
        lower = user.lower()
        turns = self.script["turns"]
        for t in turns:
            if t.get("match") and t["match"].lower() in lower:
                return t
        for t in turns:
            if not t.get("match"):
                return t
        return turns[0]

    async def stream(self, request: ModelRequest, sink: ModelSink) -> ModelResponse:
        last_user, step = "", 0
        for m in request.messages:
            if m.role == "user":
                last_user, step = m.content, 0
            elif m.role == "assistant":
                step += 1
        turn = self._pick(last_user)
        steps = turn["steps"]
        if step >= len(steps):
            raise ModelError(SCRIPT_ENDED, f"the script has {len(steps)} steps for this turn; step {step + 1} was asked for")
        st = steps[step]
        if st.get("error"):
            raise ModelError(st["error"], "scripted failure")
        if st.get("reasoning"):
            sink.reasoning(st["reasoning"])
        text = st.get("text", "")
        rest = text
        while rest:  # word by word, the way streams deliver text
            i = rest.find(" ")
            chunk, rest = (rest, "") if i < 0 else (rest[:i + 1], rest[i + 1:])
            sink.text(chunk)
            await asyncio.sleep(0)
        resp = ModelResponse(text=text, stop_reason=st.get("stop_reason", ""))
        for i, c in enumerate(st.get("tool_calls") or []):
            args = _args_json(c.get("arguments"))
            call_id = new_id("call")
            sink.tool_call(i, call_id, c["name"])
            half = len(args) // 2
            sink.tool_args(i, args[:half])
            sink.tool_args(i, args[half:])
            resp.tool_calls.append(ToolCall(call_id, c["name"], args))
        if not resp.stop_reason:
            resp.stop_reason = "tool_use" if resp.tool_calls else "end_turn"
        if st.get("usage") is not None:
            u = st["usage"]
            resp.usage = Usage(input_tokens=int(u.get("input_tokens", 0)), output_tokens=int(u.get("output_tokens", 0)))
        return resp


class OpenAICompatible:
    """OpenAI-compatible chat completions, streamed (``stream: true`` with
    ``stream_options.include_usage``), on ``http.client`` in a thread:
    tool calls joined by index across chunks, usage from the last chunk,
    ``reasoning_content`` as reasoning. HTTP 429 is ``rate_limited``
    (Retry-After kept), 503/529 ``overloaded``, 504 ``timeout``, other 5xx
    ``server_error``, 401/403 ``authentication``, a context-length 400
    ``context_length``; an ``error`` chunk or a stream that stops before a
    finish reason or ``[DONE]`` is ``stream_error``."""

    name = "openai"

    def __init__(self, base_url: str, api_key: str = "", *, timeout: float = 120.0,
                 extra_body: Optional[Dict[str, Any]] = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key, self.timeout, self.extra_body = api_key, timeout, dict(extra_body or {})

    def _body(self, req: ModelRequest) -> Dict[str, Any]:
        msgs: List[Dict[str, Any]] = []
        for m in req.messages:
            d: Dict[str, Any] = {"role": m.role, "content": m.content}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                   for c in m.tool_calls]
            if m.tool_call_id:
                d["tool_call_id"] = m.tool_call_id
            msgs.append(d)
        body: Dict[str, Any] = {"model": req.model, "messages": msgs, "stream": True,
                                "stream_options": {"include_usage": True}}
        if req.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.schema}} for t in req.tools]
        body.update(self.extra_body)
        return body

    async def stream(self, request: ModelRequest, sink: ModelSink) -> ModelResponse:
        loop = asyncio.get_running_loop()
        queue: "asyncio.Queue[Any]" = asyncio.Queue()
        stop = threading.Event()
        conn_box: List[http.client.HTTPConnection] = []

        def put(item: Any) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def run() -> None:
            try:
                self._read(request, put, stop, conn_box)
                put(None)
            except BaseException as e:  # handed to the event loop
                put(e)

        thread = threading.Thread(target=run, name="openai-stream", daemon=True)
        thread.start()
        resp = ModelResponse()
        calls: Dict[int, ToolCall] = {}
        text: List[str] = []
        try:
            while True:
                item = await queue.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                kind, payload = item
                if kind == "text":
                    text.append(payload)
                    sink.text(payload)
                elif kind == "reasoning":
                    sink.reasoning(payload)
                elif kind == "call":
                    i, cid, name = payload
                    calls[i] = ToolCall(cid or new_id("call"), name, "")
                    sink.tool_call(i, calls[i].id, name)
                elif kind == "args":
                    i, chunk = payload
                    if i in calls:
                        calls[i].arguments += chunk
                        sink.tool_args(i, chunk)
                elif kind == "finish":
                    resp.stop_reason = payload
                elif kind == "usage":
                    resp.usage = payload
                elif kind == "id":
                    resp.request_id = payload
        finally:
            stop.set()
            for c in conn_box:
                try:
                    c.sock and c.sock.shutdown(2)  # unblock a read of a cancelled call
                except OSError:
                    pass
        resp.text = "".join(text)
        resp.tool_calls = [calls[i] for i in sorted(calls)]
        for c in resp.tool_calls:
            c.arguments = c.arguments or "{}"
        return resp

    def _read(self, request: ModelRequest, put: Any, stop: threading.Event, conn_box: list) -> None:
        u = urllib.parse.urlsplit(self.base_url + "/chat/completions")
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        kwargs: Dict[str, Any] = {"timeout": self.timeout}
        if u.scheme == "https":
            kwargs["context"] = ssl.create_default_context()
        conn = cls(u.hostname, u.port, **kwargs)
        conn_box.append(conn)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        path = u.path + (("?" + u.query) if u.query else "")
        try:
            conn.request("POST", path, body=json.dumps(self._body(request)).encode(), headers=headers)
            r = conn.getresponse()
        except TimeoutError as e:
            raise ModelError(TIMEOUT, str(e)) from None
        except OSError as e:
            raise ModelError(NETWORK, str(e)) from None
        if r.status != 200:
            body = r.read(64 << 10).decode("utf-8", "replace")
            raise _http_error(r.status, body, r.getheader("Retry-After", ""))
        finished = False
        try:
            while not stop.is_set():
                line = r.readline()
                if not line:
                    break
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    finished = True
                    break
                chunk = json.loads(data)
                if chunk.get("error"):
                    err = chunk["error"]
                    raise ModelError(STREAM_ERROR, err.get("message", str(err)) if isinstance(err, dict) else str(err))
                if chunk.get("id"):
                    put(("id", chunk["id"]))
                if chunk.get("usage"):
                    uu = chunk["usage"]
                    details = uu.get("prompt_tokens_details") or {}
                    cdetails = uu.get("completion_tokens_details") or {}
                    put(("usage", Usage(input_tokens=uu.get("prompt_tokens", 0), output_tokens=uu.get("completion_tokens", 0),
                                        cached_input_tokens=details.get("cached_tokens", 0) or 0,
                                        reasoning_tokens=cdetails.get("reasoning_tokens", 0) or 0)))
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("reasoning_content"):
                        put(("reasoning", delta["reasoning_content"]))
                    if delta.get("content"):
                        put(("text", delta["content"]))
                    for tc in delta.get("tool_calls") or []:
                        i = tc.get("index", 0)
                        fn = tc.get("function") or {}
                        if tc.get("id") or fn.get("name"):
                            put(("call", (i, tc.get("id", ""), fn.get("name", ""))))
                        if fn.get("arguments"):
                            put(("args", (i, fn["arguments"])))
                    if choice.get("finish_reason"):
                        finished = True
                        put(("finish", choice["finish_reason"]))
        except TimeoutError as e:
            raise ModelError(TIMEOUT, str(e)) from None
        except (OSError, ValueError) as e:
            if stop.is_set():
                return
            raise ModelError(STREAM_ERROR, str(e)) from None
        finally:
            conn.close()
        if not finished and not stop.is_set():
            raise ModelError(STREAM_ERROR, "the stream ended before a finish reason")


def _http_error(status: int, body: str, retry_after: str) -> ModelError:
    msg = f"HTTP {status}: {body[:500]}"
    ra = 0.0
    try:
        ra = float(retry_after)
    except ValueError:
        pass
    if status == 429:
        return ModelError(RATE_LIMITED, msg, status=status, retry_after=ra)
    if status in (503, 529):
        return ModelError(OVERLOADED, msg, status=status, retry_after=ra)
    if status == 504:
        return ModelError(TIMEOUT, msg, status=status)
    if status >= 500:
        return ModelError(SERVER_ERROR, msg, status=status)
    if status in (401, 403):
        return ModelError(AUTHENTICATION, msg, status=status)
    if status == 400 and ("context" in body.lower() and ("length" in body.lower() or "window" in body.lower())):
        return ModelError(CONTEXT_LENGTH, msg, status=status)
    return ModelError(BAD_REQUEST, msg, status=status)
