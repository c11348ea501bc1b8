"""A pre_tool_use hook's rewritten input is what the Python worker runs:
the permission decision judged the rewrite."""

from __future__ import annotations

import asyncio
import json

import grpc

from conftest import python_worker
from test_worker_e2e import run_turn, script_file, workspace

from agentruntime import Client
from agentruntime.events.v1 import permission_pb2 as ev_permission
from agentruntime.permission.v1 import hook_handler_pb2, hook_handler_pb2_grpc, permission_pb2


class _RewritingHook(hook_handler_pb2_grpc.HookHandlerServicer):
    """Moves every write_file to REVIEWED.md."""

    async def HandleHook(self, request, context):
        if request.tool_name != "write_file":
            return hook_handler_pb2.HandleHookResponse(decision=ev_permission.HOOK_OUTCOME_CONTINUE)
        return hook_handler_pb2.HandleHookResponse(
            decision=ev_permission.HOOK_OUTCOME_CONTINUE,
            updated_input_json=json.dumps({"path": "REVIEWED.md", "content": "reviewed by the hook\n"}))


def test_a_hooks_rewritten_input_is_what_the_python_worker_runs(dev, tmp_path, procs):
    ws = workspace(tmp_path, "ws")
    python_worker(procs, dev, ws, "hook", "py-h", script_file(tmp_path), lease_ttl=5)

    async def main():
        server = grpc.aio.server()
        hook_handler_pb2_grpc.add_HookHandlerServicer_to_server(_RewritingHook(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with await Client.connect(dev) as c:
                reg = await c.permission.RegisterHook(permission_pb2.RegisterHookRequest(hook=ev_permission.Hook(
                    hook_id="reviewer", point=ev_permission.HOOK_POINT_PRE_TOOL_USE, grpc_target=f"127.0.0.1:{port}")))
                # The worker's decisions come after the hook is in the read model.
                await c.permission.ListHooks(permission_pb2.ListHooksRequest(min_sequence=reg.write.sequence))
                return await run_turn(c, "hook", "write notes about this project")
        finally:
            await server.stop(None)

    _, events = asyncio.run(main())
    judged = [e.permission_evaluated for e in events
              if e.type == "permission.evaluated" and e.permission_evaluated.name == "write_file"]
    assert judged and judged[0].HasField("updated_input_ref") and any("REVIEWED.md" in p for p in judged[0].paths)
    assert events[-1].type == "turn.completed"
    assert (ws / "REVIEWED.md").read_text() == "reviewed by the hook\n"
    assert not (ws / "NOTES.md").exists(), "the model's original path was written"
