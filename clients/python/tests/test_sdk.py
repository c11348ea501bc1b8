"""The worker SDK's parts that need no runtime: tool schemas from type hints
and docstrings, argument checks, and the OpenAI-compatible adapter against
a local server replaying the real SSE format."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Literal, Optional

import pytest

from agentruntime import ModelError, ModelRequest, OpenAICompatible, ToolError, ToolDef, enum_value, enum_word, tool
from agentruntime.common.v1 import common_pb2
from agentruntime.control.v1 import status_pb2
from agentruntime.models import Message


def test_schema_comes_from_type_hints_and_the_docstring():
    @tool(read_only=True, concurrency_safe=True)
    def search(pattern: str, paths: List[str], mode: Literal["regex", "literal"] = "regex",
               max_results: Optional[int] = None, case: bool = False) -> str:
        """Searches files.

        Args:
            pattern: what to look for,
                as a regular expression.
            paths: where.
            mode: how to read the pattern.
        """

    assert search.description == "Searches files."
    assert search.schema == {
        "type": "object", "additionalProperties": False, "required": ["pattern", "paths"],
        "properties": {
            "pattern": {"type": "string", "description": "what to look for, as a regular expression."},
            "paths": {"type": "array", "items": {"type": "string"}, "description": "where."},
            "mode": {"type": "string", "enum": ["regex", "literal"], "default": "regex", "description": "how to read the pattern."},
            "max_results": {"type": "integer"},
            "case": {"type": "boolean", "default": False},
        }}
    spec = search.spec()
    assert spec.read_only and spec.concurrency_safe and not spec.destructive and spec.interrupt_behavior == "cancel"
    assert json.loads(spec.input_schema_json) == search.schema
    assert search.access == "read" and search.paths({"paths": ["a", "b"]}) == ["a", "b"]


def test_arguments_are_checked_before_the_call():
    @tool(destructive=True)
    def write(path: str, content: str, mode: int = 0o644) -> str:
        """Writes."""

    assert write.access == "write"
    assert write.bind('{"path": "a", "content": "b"}') == {"path": "a", "content": "b"}
    for bad, why in (('{"path": "a"}', "content is required"), ('{"path": 1, "content": ""}', "path must be string"),
                     ('{"path": "a", "content": "", "x": 1}', "unknown argument x"), ("[1]", "JSON object"),
                     ("{", "not JSON")):
        with pytest.raises(ToolError) as e:
            write.bind(bad)
        assert e.value.category == "invalid_arguments" and why in e.value.message
    with pytest.raises(ValueError):
        tool(read_only=True, destructive=True)(lambda: "")


class _Recorder:
    def __init__(self) -> None:
        self.items: List[tuple] = []

    def text(self, d):
        self.items.append(("text", d))

    def reasoning(self, d):
        self.items.append(("reasoning", d))

    def tool_call(self, i, call_id, name):
        self.items.append(("call", i, call_id, name))

    def tool_args(self, i, chunk):
        self.items.append(("args", i, chunk))


def _serve(responses):
    """A local server answering each POST with the next (status, headers, body)."""
    seen = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append((self.path, dict(self.headers), json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
            status, headers, body = responses.pop(0)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/v1", seen


def _sse(*chunks) -> bytes:
    return b"".join(b"data: " + (c if isinstance(c, bytes) else json.dumps(c).encode()) + b"\n\n" for c in chunks)


def test_openai_compatible_streams_text_reasoning_tool_calls_and_usage():
    body = _sse(
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Think."}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_abc", "type": "function", "function": {"name": "read_file", "arguments": "{\"pa"}}]}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"x\"}"}}]}}]},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5,
                                                      "prompt_tokens_details": {"cached_tokens": 4}}},
        b"[DONE]")
    srv, url, seen = _serve([(200, {"Content-Type": "text/event-stream"}, body)])
    try:
        sink = _Recorder()
        req = ModelRequest("m1", [Message("user", "hi")], [ToolDef("read_file", "Reads.", {"type": "object"})])
        resp = asyncio.run(OpenAICompatible(url, "sk-test").stream(req, sink))
    finally:
        srv.shutdown()
    assert resp.text == "Hello" and resp.stop_reason == "tool_calls" and resp.request_id == "chatcmpl-1"
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [("call_abc", "read_file", '{"path":"x"}')]
    assert resp.usage.input_tokens == 12 and resp.usage.output_tokens == 5 and resp.usage.cached_input_tokens == 4
    assert sink.items[:3] == [("reasoning", "Think."), ("text", "Hel"), ("text", "lo")]
    assert sink.items[3] == ("call", 0, "call_abc", "read_file")
    path, headers, sent = seen[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["tools"][0]["function"]["name"] == "read_file"


@pytest.mark.parametrize("status,headers,body,category", [
    (429, {"Retry-After": "2"}, b'{"error":{"message":"slow down"}}', "rate_limited"),
    (503, {}, b"busy", "overloaded"),
    (500, {}, b"oops", "server_error"),
    (401, {}, b"no", "authentication"),
    (400, {}, b'{"error":{"message":"maximum context length is 8192 tokens"}}', "context_length"),
    (200, {"Content-Type": "text/event-stream"}, _sse({"choices": [{"index": 0, "delta": {"content": "cut"}}]}), "stream_error"),
    (200, {"Content-Type": "text/event-stream"}, _sse({"error": {"message": "upstream failed"}}), "stream_error"),
])
def test_openai_compatible_failures_have_the_go_adapters_categories(status, headers, body, category):
    srv, url, _ = _serve([(status, headers, body)])
    try:
        with pytest.raises(ModelError) as e:
            asyncio.run(OpenAICompatible(url).stream(ModelRequest("m", [Message("user", "hi")], []), _Recorder()))
    finally:
        srv.shutdown()
    assert e.value.category == category
    if status == 429:
        assert e.value.retry_after == 2.0 and e.value.retryable


def test_the_client_offers_every_rpc_of_every_service():
    from agentruntime import Client
    from agentruntime.client import _SERVICES

    async def main():
        c = await Client.connect("127.0.0.1:1")  # nothing is dialled until a call
        try:
            for name, (pb2, _, service) in _SERVICES.items():
                want = sorted(m.name for m in pb2.DESCRIPTOR.services_by_name[service].methods)
                svc = getattr(c, name)
                assert svc.methods == want and all(callable(getattr(svc, m)) for m in want)
            return c
        finally:
            await c.close()

    asyncio.run(main())


def test_enum_words_are_the_specs_status_words():
    assert enum_word(status_pb2.TurnStatus, status_pb2.TURN_STATUS_WAITING_PERMISSION) == "waiting_permission"
    assert enum_word(status_pb2.TurnAttemptStatus, status_pb2.TURN_ATTEMPT_STATUS_TIMED_OUT) == "timed_out"
    assert enum_word(common_pb2.FactState, common_pb2.FACT_STATE_NOT_APPLICABLE) == "not_applicable"
    assert enum_word(status_pb2.ThreadStatus, 0) == "unspecified"
    assert enum_word(status_pb2.ThreadStatus, 99) == "99"
    assert enum_value(status_pb2.SubagentStatus, "waiting_input") == status_pb2.SUBAGENT_STATUS_WAITING_INPUT
    with pytest.raises(ValueError):
        enum_value(status_pb2.TurnStatus, "nope")
