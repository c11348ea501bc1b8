"""MCP tool servers for the Python worker: the same ``--mcp-config`` file
as the Go worker (the ``mcpServers`` shape of Claude Code's ``.mcp.json``;
docs/services/worker.md, "MCP tool servers"). Each stdio server is started
and supervised (restarted with a backoff when it exits); its tools are
offered as ``mcp__<server>__<tool>`` tools, evaluated by the permission
service like any tool (access ``execute``). A call to a server that is
down fails ``mcp_server_unavailable``; one whose server dies under it
``mcp_server_exited``; a tool's own error (``isError``) ``tool_error``; a
JSON-RPC error ``mcp_error``. Streamable-HTTP servers are the Go worker's
only: the Python worker logs that it skips them.

    servers = await start_mcp("mcp.json", cwd=workspace)
    worker = Worker(..., tools=[*my_tools, *servers.tools()])
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
from typing import Any, Callable, Dict, List, Mapping, Optional

from .tools import Tool, ToolError, ToolResult

__all__ = ["load_mcp_config", "start_mcp", "MCPServers"]

PROTOCOL_VERSION = "2025-06-18"
ENV_ALLOW = ("PATH", "HOME", "LANG", "TERM", "TMPDIR")
MAX_TOOLS_PER_SERVER = 128
MAX_NAME = 64

_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KEYS = {"type", "command", "args", "env", "url", "headers"}


def load_mcp_config(path: str, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """Reads and checks a config file as the Go worker does (errors name
    the field); ``${VAR}`` and ``${VAR:-default}`` are expanded."""
    env = os.environ if environ is None else environ
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    if not isinstance(raw, dict) or set(raw) - {"mcpServers"}:
        raise ValueError(f"mcp config: only mcpServers is known (got {sorted(raw) if isinstance(raw, dict) else raw!r})")
    servers = raw.get("mcpServers")
    if not isinstance(servers, dict):
        raise ValueError("mcp config: mcpServers: required (an object of servers by name)")
    missing: List[str] = []

    def expand(s: str) -> str:
        def sub(m: "re.Match[str]") -> str:
            if m.group(1) in env:
                return env[m.group(1)]
            if m.group(2):
                return m.group(3)
            missing.append(m.group(1))
            return ""
        return _ENV_REF.sub(sub, s)

    out: Dict[str, Dict[str, Any]] = {}
    for name in sorted(servers):
        field = f"mcpServers.{name}"
        s = servers[name]
        if not _SERVER_NAME.match(name) or "__" in name or name.endswith("_"):
            raise ValueError(f"mcp config: {field}: a server name is 1 to 32 letters, digits, '-' or single '_'")
        if not isinstance(s, dict) or set(s) - _KEYS:
            raise ValueError(f"mcp config: {field}: unknown keys {sorted(set(s) - _KEYS) if isinstance(s, dict) else s!r}")
        typ = s.get("type") or "stdio"
        c = {"type": typ, "command": expand(s.get("command", "")), "args": [expand(a) for a in s.get("args", [])],
             "env": {k: expand(v) for k, v in s.get("env", {}).items()}, "url": expand(s.get("url", "")),
             "headers": {k: expand(v) for k, v in s.get("headers", {}).items()}}
        if missing:
            raise ValueError(f"mcp config: {field}: ${{{missing[0]}}} is not set in the worker's environment")
        if typ == "stdio" and not c["command"]:
            raise ValueError(f"mcp config: {field}.command: required for a stdio server")
        if typ in ("http", "streamable-http", "streamableHttp"):
            c["type"] = "http"
            if not c["url"].startswith(("http://", "https://")):
                raise ValueError(f"mcp config: {field}.url: an http:// or https:// URL is required for an http server")
        elif typ != "stdio":
            raise ValueError(f"mcp config: {field}.type: {typ!r} is not a transport; \"stdio\" or \"http\"")
        out[name] = c
    return out


class _Server:
    """One supervised stdio server."""

    def __init__(self, name: str, cfg: Dict[str, Any], cwd: str, log: logging.Logger,
                 min_backoff: float, max_backoff: float) -> None:
        self.name, self.cfg, self.cwd, self.log = name, cfg, cwd, log
        self.min_backoff, self.max_backoff = min_backoff, max_backoff
        self.state, self.last_error, self.restarts = "starting", "", 0
        self.proc: Optional[asyncio.subprocess.Process] = None
        self.tools: Dict[str, Dict[str, Any]] = {}
        self._pending: Dict[int, asyncio.Future] = {}
        self._next_id = 0
        self.ready = asyncio.Event()
        self.first = asyncio.Event()

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None and self.state == "running" else 0

    async def _start(self) -> None:
        env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
        env.update(self.cfg["env"])
        self.proc = await asyncio.create_subprocess_exec(
            self.cfg["command"], *self.cfg["args"], stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env, cwd=self.cwd, start_new_session=True, limit=8 << 20)
        self._reader = asyncio.ensure_future(self._read(self.proc))
        await self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "agentruntime-python-worker", "version": "dev"}}, 30.0)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self._list()

    async def _list(self) -> None:
        tools: Dict[str, Dict[str, Any]] = {}
        cursor = None
        while True:
            res = await self.request("tools/list", {"cursor": cursor} if cursor else {}, 30.0)
            for t in res.get("tools", []):
                if isinstance(t, dict) and isinstance(t.get("name"), str) and len(tools) < MAX_TOOLS_PER_SERVER:
                    tools[t["name"]] = t
            cursor = res.get("nextCursor")
            if not cursor:
                break
        self.tools = tools

    def _send(self, msg: Dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())

    async def request(self, method: str, params: Dict[str, Any], timeout: Optional[float]) -> Dict[str, Any]:
        if self.proc is None or self.proc.returncode is not None:
            raise ConnectionError("the server is not running")
        self._next_id += 1
        rid = self._next_id
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            return await asyncio.wait_for(fut, timeout)
        except asyncio.CancelledError:
            # The call was interrupted: the server is told.
            try:
                self._send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}})
            except Exception:  # noqa: BLE001 - the server may be gone
                pass
            raise
        finally:
            self._pending.pop(rid, None)

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while True:
            try:
                line = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                break  # a message over the bound: the connection is not trusted further
            if not line:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                fut = self._pending.get(msg["id"])
                if fut is not None and not fut.done():
                    if "error" in msg:
                        fut.set_exception(_RPCError(msg["error"]))
                    else:
                        fut.set_result(msg.get("result") or {})
            elif msg.get("method") == "notifications/tools/list_changed":
                asyncio.ensure_future(self._relist())
            elif "id" in msg and "method" in msg:
                # Requests of the server: ping is answered; nothing else is
                # offered (no roots, sampling or elicitation).
                if msg["method"] == "ping":
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                else:
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not offered"}})
        for fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(ConnectionError("the server exited"))

    async def _relist(self) -> None:
        try:
            await self._list()
        except Exception as e:  # noqa: BLE001 - logged, the old list stays
            self.log.warning("MCP server %s: listing tools: %s", self.name, e)

    async def supervise(self) -> None:
        backoff = self.min_backoff
        while True:
            try:
                await self._start()
            except Exception as e:  # noqa: BLE001 - any failure to start is said and retried
                self.state, self.last_error = "restarting", f"failed to start: {e}"
                self.log.warning("MCP server %s %s", self.name, self.last_error)
                self._kill()
            else:
                self.state, self.last_error = "running", ""
                self.ready.set()
                self.first.set()
                code = await self.proc.wait()
                await self._reader
                self.ready.clear()
                self.state, self.last_error = "restarting", f"exited ({code})"
                self.log.warning("MCP server %s %s; restarting in %.2fs", self.name, self.last_error, backoff)
            self.first.set()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)
            self.restarts += 1

    def _kill(self) -> None:
        """Kills the server's process group (it was started in a session of
        its own): a shell's children go too."""
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def close(self) -> None:
        self._kill()
        if self.proc is not None:
            await self.proc.wait()


class _RPCError(Exception):
    def __init__(self, err: Any) -> None:
        err = err if isinstance(err, dict) else {}
        super().__init__(str(err.get("message", "")))
        self.code = err.get("code", 0)


def _render(res: Dict[str, Any]) -> str:
    parts: List[str] = []
    for c in res.get("content") or []:
        if not isinstance(c, dict):
            continue
        t = c.get("type")
        if t == "text":
            parts.append(str(c.get("text", "")))
        elif t in ("image", "audio"):
            parts.append(f"[{t} {c.get('mimeType', '')}, {len(c.get('data', '')) * 3 // 4} bytes]")
        elif t == "resource_link":
            parts.append(f"[resource {c.get('uri', '')} {c.get('name', '')}]")
        elif t == "resource":
            r = c.get("resource") or {}
            parts.append(f"[resource {r.get('uri', '')}]\n{r['text']}" if r.get("text") else f"[resource {r.get('uri', '')}]")
    if not parts and res.get("structuredContent") is not None:
        parts.append(json.dumps(res["structuredContent"]))
    return "\n".join(parts)


class MCPServers:
    """The running servers of a config."""

    def __init__(self, servers: List[_Server], tasks: List[asyncio.Task], max_output: int, call_timeout: float) -> None:
        self._servers, self._tasks = servers, tasks
        self.max_output, self.call_timeout = max_output, call_timeout

    def status(self, name: str) -> Dict[str, Any]:
        s = next(s for s in self._servers if s.name == name)
        return {"state": s.state, "pid": s.pid, "restarts": s.restarts, "last_error": s.last_error,
                "tools": sorted(f"mcp__{s.name}__{_UNSAFE.sub('_', n)}" for n in s.tools)}

    def notices(self) -> List[str]:
        return [f"The MCP server {s.name!r} is {s.state}; its tools (mcp__{s.name}__*) are unavailable until it is back"
                + (f" ({s.last_error})." if s.last_error else ".") for s in self._servers if s.state != "running"]

    def tools(self) -> List[Tool]:
        """The tools the servers listed when they started, as worker tools;
        a call reaches its server's running process, whichever it is."""
        out: List[Tool] = []
        for s in self._servers:
            for remote, t in sorted(s.tools.items()):
                name = f"mcp__{s.name}__{_UNSAFE.sub('_', remote)}"
                if len(name) > MAX_NAME:
                    continue
                schema = t.get("inputSchema") if isinstance(t.get("inputSchema"), dict) else {"type": "object"}
                ann = t.get("annotations") or {}
                ro = bool(ann.get("readOnlyHint"))
                out.append(Tool(name=name, description=str(t.get("description") or t.get("title") or "")[:4000],
                                fn=self._caller(s, remote), schema=schema, read_only=ro,
                                destructive=not ro and ann.get("destructiveHint", True) is not False, access="execute"))
        return out

    def _caller(self, s: _Server, remote: str) -> Callable[..., Any]:
        async def call(**args: Any) -> ToolResult:
            if not s.ready.is_set():
                raise ToolError("mcp_server_unavailable",
                                f"the MCP server {s.name!r} is {s.state}, so it cannot be called now; it is restarted "
                                f"automatically, try again later" + (f" (last failure: {s.last_error})" if s.last_error else ""))
            try:
                res = await s.request("tools/call", {"name": remote, "arguments": args}, self.call_timeout)
            except asyncio.TimeoutError:
                raise ToolError("timeout", f"the MCP server {s.name!r} did not answer in time") from None
            except _RPCError as e:
                raise ToolError("mcp_error", f"the MCP server {s.name!r} refused the call (JSON-RPC error {e.code}): {e}") from None
            except ConnectionError as e:
                raise ToolError("mcp_server_exited", f"the MCP server {s.name!r} went away during the call ({e}); it is "
                                "being restarted and its tools are unavailable until it is back: try again later") from None
            text = _render(res)
            if res.get("isError"):
                raise ToolError("tool_error", text[:8000])
            data = text.encode()
            if len(data) > self.max_output:
                return ToolResult(output=data[:self.max_output].decode(errors="ignore"), truncated=True, bytes=len(data))
            return ToolResult(output=text, bytes=len(data))
        return call

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        for s in self._servers:
            await s.close()


async def start_mcp(path_or_config: Any, *, cwd: str = "", logger: Optional[logging.Logger] = None,
                    start_timeout: float = 30.0, min_backoff: float = 0.25, max_backoff: float = 30.0,
                    max_output: int = 1 << 20, call_timeout: float = 120.0) -> MCPServers:
    """Starts the stdio servers of a config file (or of a parsed config)
    and waits, up to ``start_timeout``, until each is running or failed
    its first start."""
    cfg = load_mcp_config(path_or_config) if isinstance(path_or_config, str) else path_or_config
    log = logger or logging.getLogger("agentruntime.mcp")
    servers: List[_Server] = []
    for name, c in cfg.items():
        if c["type"] != "stdio":
            log.warning("MCP server %s: http servers are served by the Go worker only; skipped", name)
            continue
        servers.append(_Server(name, c, cwd or os.getcwd(), log, min_backoff, max_backoff))
    tasks = [asyncio.ensure_future(s.supervise()) for s in servers]
    if servers:
        await asyncio.wait([asyncio.ensure_future(s.first.wait()) for s in servers], timeout=start_timeout)
    return MCPServers(servers, tasks, max_output, call_timeout)
