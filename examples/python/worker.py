"""A Python worker with two tools: it claims turns, runs the model (the
scripted demo by default, or any OpenAI-compatible server) and reports
every step to the runtime.

    agentruntime dev --no-worker                         # terminal 1
    PYTHONPATH=clients/python/src python3 examples/python/worker.py --workspace .
    PYTHONPATH=clients/python/src python3 examples/python/client.py "write notes about this project"
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os

from agentruntime import Endpoints, OpenAICompatible, ScriptedModel, ToolError, Worker, tool

DEMO = {  # cmd/agentruntime/demo.yaml
    "model": "scripted",
    "turns": [{"steps": [
        {"reasoning": "Start from what the workspace says about itself.", "text": "I'll read the README first.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md", "limit": 40}}]},
        {"text": "I'll write my notes to NOTES.md.",
         "tool_calls": [{"name": "write_file", "arguments": {
             "path": "NOTES.md", "content": "# Notes\nWritten by the Python example worker after an approval.\n"}}]},
        {"text": "Done: NOTES.md holds my notes on the README."},
    ]}],
}


def make_tools(root: str):
    root = os.path.realpath(root)

    def inside(path: str) -> str:
        full = os.path.realpath(os.path.join(root, path))
        if full != root and not full.startswith(root + os.sep):
            raise ToolError("sandbox_violation", f"{path} is outside the workspace")
        return full

    @tool(read_only=True, concurrency_safe=True)
    def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
        """Reads lines of a text file of the workspace.

        Args:
            path: the file, relative to the workspace.
            offset: the first line to read (0-based).
            limit: at most this many lines.
        """
        try:
            with open(inside(path), encoding="utf-8") as f:
                return "\n".join(f.read().splitlines()[offset:offset + limit])
        except FileNotFoundError:
            raise ToolError("not_found", f"{path} does not exist") from None

    @tool(destructive=True, interrupt="finish")
    def write_file(path: str, content: str) -> str:
        """Writes a text file of the workspace, replacing it.

        Args:
            path: the file, relative to the workspace.
            content: the whole new content.
        """
        full = inside(path)
        with open(full + ".tmp", "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(full + ".tmp", full)
        return f"wrote {len(content.encode())} bytes to {path}"

    return [read_file, write_file]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--addr", default=os.environ.get("AR_ADDR", "127.0.0.1:7070"))
    ap.add_argument("--endpoints", default=os.environ.get("AR_ENDPOINTS", ""), help="control=HOST:PORT,...")
    ap.add_argument("--token", default=os.environ.get("AR_TOKEN"), help="API key or JWT")
    ap.add_argument("--workspace", default=".")
    ap.add_argument("--openai-base-url", default="")
    ap.add_argument("--openai-api-key", default=os.environ.get("OPENAI_API_KEY", ""))
    ap.add_argument("--model", default="", help="model when routing makes no decision")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    model = OpenAICompatible(a.openai_base_url, a.openai_api_key) if a.openai_base_url else ScriptedModel(DEMO)
    worker = Worker(Endpoints.parse(a.endpoints, a.addr), token=a.token, tools=make_tools(a.workspace),
                    model=model, default_model=a.model, workspace=a.workspace)
    print(f"worker {worker.worker_id}: claiming turns from {a.endpoints or a.addr}")
    await worker.run()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
