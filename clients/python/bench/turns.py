"""Turn overhead of the Python worker next to the Go worker, same script,
same server, same run (the machine is noisy: compare ratios, not
absolutes). Raw block: one unary gRPC round trip from Python
(ListSessions) measured in the same run.

    AR_BINARY=.bin/agentruntime-pytest /usr/bin/python3 clients/python/bench/turns.py [--turns 30] [--count 3]

Each turn reads a file and answers (two model calls, one tool call, no
approval): wall time from SubmitTurn to turn.completed, as the client sees
it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import LISTEN, Proc, go_worker, python_worker  # noqa: E402

from agentruntime import Client  # noqa: E402
from agentruntime.control.v1 import control_pb2  # noqa: E402

SCRIPT = {"model": "scripted", "turns": [{"steps": [
    {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
     "usage": {"input_tokens": 10, "output_tokens": 2}},
    {"text": "Done.", "usage": {"input_tokens": 20, "output_tokens": 1}},
]}]}


async def turns(c: Client, session: str, n: int) -> list:
    # One subscription for all the turns, live before the first submit.
    it = c.subscribe(session_id=session, thread_id=session, types=["turn."], start="now", heartbeats=True)
    first = await it.__anext__()
    assert isinstance(first, control_pb2.Heartbeat), first
    out = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            sub = await c.submit_turn(session, f"turn {i}", thread_id=session)
            async for ev in it:
                if getattr(ev, "turn_id", "") == sub.turn.turn_id and ev.type in ("turn.completed", "turn.failed"):
                    assert ev.type == "turn.completed", ev
                    break
            out.append((time.perf_counter() - t0) * 1000)
    finally:
        await it.aclose()
    return out


async def rpc(c: Client, n: int) -> list:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await c.control.ListSessions(control_pb2.ListSessionsRequest())
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=30)
    ap.add_argument("--count", type=int, default=3)
    a = ap.parse_args()
    binary = os.environ.get("AR_BINARY", ".bin/agentruntime-pytest")
    tmp = Path(tempfile.mkdtemp())
    (tmp / "ws").mkdir()
    (tmp / "ws" / "README.md").write_text("# bench\n")
    (tmp / "script.json").write_text(json.dumps(SCRIPT))
    procs: list = []
    try:
        dev = Proc([binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", str(tmp / "data"), "--no-worker"])
        procs.append(dev)
        addr = dev.wait_line(LISTEN, 60).group(1)
        go_worker(procs, binary, addr, tmp / "ws", "bench-go", "go-b", tmp / "script.json", lease_ttl=15)
        python_worker(procs, addr, tmp / "ws", "bench-py", "py-b", tmp / "script.json", lease_ttl=15)

        async def run() -> None:
            async with await Client.connect(addr) as c:
                await turns(c, "bench-go", 3)  # warm up both
                await turns(c, "bench-py", 3)
                print(f"{'run':>3} {'go ms/turn':>11} {'py ms/turn':>11} {'rpc ms':>7} {'py/go':>6} {'py/rpc':>7}")
                for r in range(1, a.count + 1):
                    go = statistics.median(await turns(c, "bench-go", a.turns))
                    py = statistics.median(await turns(c, "bench-py", a.turns))
                    raw = statistics.median(await rpc(c, a.turns * 10))
                    print(f"{r:>3} {go:>11.1f} {py:>11.1f} {raw:>7.2f} {py / go:>6.2f} {py / raw:>7.1f}")

        asyncio.run(run())
    finally:
        for p in procs:
            p.kill()


if __name__ == "__main__":
    main()
