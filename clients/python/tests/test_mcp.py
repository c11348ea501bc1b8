"""MCP tool servers in the Python worker (agentruntime.mcp), against the
real @modelcontextprotocol/server-everything of test/mcpservers (installed
by scripts/test; skipped, saying so, when it is not)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import REPO, python_worker
from test_worker_e2e import run_turn

from agentruntime import Client, ToolError
from agentruntime.mcp import load_mcp_config, start_mcp

EVERYTHING = REPO / "test" / "mcpservers" / "node_modules" / ".bin" / "mcp-server-everything"


def need_everything() -> None:
    if not EVERYTHING.exists():
        pytest.skip(f"{EVERYTHING} is not installed (scripts/test runs npm ci in test/mcpservers)")


def wrapped(d: Path) -> dict:
    """server-everything under sh: its pid in d/pid, what it is sent in
    d/requests, refused to start while d/block exists."""
    line = (f'if [ -e "{d}/block" ]; then echo blocked >&2; exit 3; fi; echo $$ > "{d}/pid"; '
            f'tee -a "{d}/requests" | exec "{EVERYTHING}" stdio')
    return {"mcpServers": {"everything": {"command": "/bin/sh", "args": ["-c", line]}}}


async def until(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def test_the_config_is_the_go_workers(tmp_path):
    p = tmp_path / "mcp.json"
    p.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "args": ["${ROOT:-/w}"]}, "b": {"type": "http", "url": "http://h/mcp"}}}))
    c = load_mcp_config(str(p), {})
    assert c["a"]["args"] == ["/w"] and c["a"]["type"] == "stdio" and c["b"]["type"] == "http"
    for bad, field in [({"mcpServers": {"bad__name": {"command": "x"}}}, "mcpServers.bad__name"),
                       ({"mcpServers": {"a": {}}}, "mcpServers.a.command"),
                       ({"mcpServers": {"a": {"command": "${NOPE}"}}}, "${NOPE}"),
                       ({"mcpServers": {"a": {"command": "x", "cwd": "/"}}}, "unknown keys")]:
        p.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=None) as e:
            load_mcp_config(str(p), {})
        assert field in str(e.value)


def test_a_server_killed_mid_call_is_restarted_and_its_tools_come_back(tmp_path):
    need_everything()

    async def main():
        servers = await start_mcp(load_mcp_config_dict(wrapped(tmp_path)), cwd=str(tmp_path), min_backoff=0.05)
        try:
            assert servers.status("everything")["state"] == "running"
            tools = {t.name: t for t in servers.tools()}
            echo, slow = tools["mcp__everything__echo"], tools["mcp__everything__trigger-long-running-operation"]
            assert echo.access == "execute" and "message" in echo.schema["properties"]
            r = await echo.call(echo.bind('{"message": "hello from python"}'))
            assert "hello from python" in r.output

            call = asyncio.ensure_future(slow.call(slow.bind('{"duration": 60, "steps": 60}')))
            await until(lambda: "trigger-long-running-operation" in (tmp_path / "requests").read_text(), "the call to reach the server")
            (tmp_path / "block").write_text("")
            os.killpg(int((tmp_path / "pid").read_text()), signal.SIGKILL)
            with pytest.raises(ToolError) as e:
                await call
            assert e.value.category == "mcp_server_exited"
            await until(lambda: "exit" in servers.status("everything")["last_error"] or "failed" in servers.status("everything")["last_error"], "the server restarting")
            assert servers.notices() and "mcp__everything__*" in servers.notices()[0]
            with pytest.raises(ToolError) as e:
                await echo.call(echo.bind('{"message": "too early"}'))
            assert e.value.category == "mcp_server_unavailable"

            (tmp_path / "block").unlink()
            await until(lambda: servers.status("everything")["state"] == "running", "the server back")
            assert servers.status("everything")["restarts"] >= 1
            r = await echo.call(echo.bind('{"message": "back again"}'))
            assert "back again" in r.output
        finally:
            await servers.close()

    asyncio.run(main())


def load_mcp_config_dict(cfg: dict) -> dict:
    return {name: {"type": "stdio", "command": s["command"], "args": s.get("args", []), "env": s.get("env", {}),
                   "url": "", "headers": {}} for name, s in cfg["mcpServers"].items()}


def test_python_worker_runs_an_mcp_tool_through_permission(dev, tmp_path, procs):
    need_everything()
    ws = tmp_path / "ws"
    ws.mkdir()
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"everything": {"command": str(EVERYTHING), "args": ["stdio"]}}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"model": "scripted", "turns": [{"steps": [
        {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hello through the python worker"}}]},
        {"text": "Echoed."}]}]}))
    python_worker(procs, dev, ws, "pymcp", "wpy-mcp", script, extra=("--mcp-config", str(cfg)))

    async def main():
        async with await Client.connect(dev) as c:
            _, events = await run_turn(c, "pymcp", "echo it")
            return events

    events = asyncio.run(main())
    types = [e.type for e in events]
    cat = next(e for e in events if e.type == "tool.catalog.resolved").tool_catalog_resolved
    assert "mcp__everything__echo" in cat.tool_names
    ev = next(e for e in events if e.type == "permission.evaluated").permission_evaluated
    assert ev.name == "mcp__everything__echo"
    res = next(e for e in events if e.type == "tool.result").tool_result
    assert "hello through the python worker" in res.preview, types
    assert types[-1] == "turn.completed"
