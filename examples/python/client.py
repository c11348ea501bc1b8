"""Submits a turn, watches its timeline and approves what it asks.

    PYTHONPATH=clients/python/src python3 examples/python/client.py "write notes about this project"
"""

from __future__ import annotations

import argparse
import asyncio
import os

from agentruntime import Client, Endpoints, enum_word
from agentruntime.control.v1 import status_pb2


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--addr", default=os.environ.get("AR_ADDR", "127.0.0.1:7070"))
    ap.add_argument("--endpoints", default=os.environ.get("AR_ENDPOINTS", ""))
    ap.add_argument("--token", default=os.environ.get("AR_TOKEN"))
    ap.add_argument("--session", default="default")
    ap.add_argument("--thread", default="main")
    ap.add_argument("--deny", action="store_true", help="deny instead of approving")
    a = ap.parse_args()
    async with await Client.connect(Endpoints.parse(a.endpoints, a.addr), token=a.token) as c:
        turn = (await c.submit_turn(a.session, a.text, thread_id=a.thread)).turn
        print(f"submitted {turn.turn_id} ({enum_word(status_pb2.TurnStatus, turn.admission)})")
        # From the turn's own turn.submitted: nothing of it is missed, and a
        # dropped connection resumes where it was.
        async for ev in c.subscribe(session_id=a.session, thread_id=a.thread, start=turn.submitted_sequence):
            if ev.turn_id != turn.turn_id:
                continue
            print(f"{ev.sequence:>6}  {ev.type:<24} {ev.step_id or '':<32} {ev.tool_call_id or ''}")
            if ev.type == "action.required":
                r = await (c.deny(ev.action_id) if a.deny else c.approve(ev.action_id))
                print(f"        {'denied' if a.deny else 'approved'} {r.action.action_id}")
            if ev.type in ("turn.completed", "turn.failed"):
                break


if __name__ == "__main__":
    asyncio.run(main())
