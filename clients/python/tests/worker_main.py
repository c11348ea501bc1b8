"""A Python worker process for the end-to-end tests: the two workspace
tools of examples/python and the scripted model."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from agentruntime import ScriptedModel, ToolContext, ToolError, ToolResult, Worker, tool


def workspace_tools(root: str):
    def resolve(path: str) -> str:
        full = os.path.realpath(os.path.join(root, path))
        if not full.startswith(os.path.realpath(root) + os.sep):
            raise ToolError("sandbox_violation", f"{path} is outside the workspace")
        return full

    @tool(read_only=True, concurrency_safe=True)
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Reads lines of a text file of the workspace.

        Args:
            path: the file, relative to the workspace.
            offset: the first line (0-based).
            limit: at most this many lines.
        """
        try:
            with open(resolve(path), encoding="utf-8") as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            raise ToolError("not_found", f"{path} does not exist") from None
        return "\n".join(lines[offset:offset + limit])

    @tool(destructive=True, interrupt="finish")
    def write_file(path: str, content: str) -> str:
        """Writes a text file of the workspace (replacing it).

        Args:
            path: the file, relative to the workspace.
            content: the whole new content.
        """
        full = resolve(path)
        tmp = full + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, full)
        return f"wrote {len(content.encode())} bytes to {path}"

    @tool(read_only=True, concurrency_safe=True)
    async def pause(seconds: float) -> str:
        """Waits, doing nothing (a long call to interrupt).

        Args:
            seconds: how long.
        """
        await asyncio.sleep(seconds)
        return f"waited {seconds} s"

    @tool(read_only=True)
    def leak() -> ToolResult:
        """Prints a credential and more than it could keep."""
        return ToolResult(output="config: AKIAIOSFODNN7EXAMPLE in use\n", truncated=True, bytes=100000)

    @tool(interrupt="finish", access="read")
    async def slow_note(seconds: float) -> str:
        """Waits, then writes slow.txt: a call an interrupt lets finish.

        Args:
            seconds: how long before the write.
        """
        with open(os.path.join(root, "slow.started"), "w", encoding="utf-8") as f:
            f.write("started")
        await asyncio.sleep(seconds)
        with open(os.path.join(root, "slow.txt"), "w", encoding="utf-8") as f:
            f.write("finished")
        return "wrote slow.txt"

    @tool(access="read")
    async def echo_server(ctx: ToolContext) -> str:
        """Starts a process that echoes each line it reads."""
        pid = await ctx.start_process('while read l; do echo "echo: $l"; done')
        return f"started {pid}"

    @tool(access="read")
    async def wait_processes(ctx: ToolContext) -> str:
        """Waits for the turn's processes to end."""
        return await ctx.wait_process("", timeout=30)

    @tool(access="read")
    async def hold() -> str:
        """Says it started (hold.started), then blocks until release exists:
        a call a test stops the worker during.
        """
        with open(os.path.join(root, "hold.started"), "w", encoding="utf-8") as f:
            f.write("started")
        while not os.path.exists(os.path.join(root, "release")):
            await asyncio.sleep(0.02)
        return "released"

    return [read_file, write_file, pause, leak, slow_note, echo_server, wait_processes, hold]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--endpoints", default="")
    ap.add_argument("--tasks", action="store_true")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--session", default="")
    ap.add_argument("--worker-id", default="")
    ap.add_argument("--script", required=True)
    ap.add_argument("--lease-ttl", type=float, default=15.0)
    ap.add_argument("--mcp-config", default="")
    ap.add_argument("--max-turns", type=int, default=4)
    ap.add_argument("--shutdown-timeout", type=float, default=10.0)
    ap.add_argument("--no-park", action="store_true", help="wait for approvals in place instead of handing the turn back")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    from agentruntime import Endpoints
    w = Worker(Endpoints.parse(a.endpoints, a.addr), token=os.environ.get("AR_TOKEN") or None, tools=workspace_tools(a.workspace), model=ScriptedModel(a.script), worker_id=a.worker_id,
               session_id=a.session, workspace=a.workspace, tasks=a.tasks, lease_ttl=a.lease_ttl, claim_wait=5.0,
               mcp_config=a.mcp_config, max_turns=a.max_turns, park_waits=not a.no_park,
               shutdown_timeout=a.shutdown_timeout)
    print(f"worker {w.worker_id} claiming", flush=True)
    await w.run()
    print(f"worker {w.worker_id} stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
