"""examples/python run as documented: the worker with two tools, the
client that submits, watches and approves."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, SRC, Proc


def test_the_examples_run_a_turn_that_asks_and_is_approved(dev, tmp_path, procs):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# A project\n")
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONUNBUFFERED="1")
    examples = REPO / "examples" / "python"
    procs.append(Proc([sys.executable, str(examples / "worker.py"), "--addr", dev, "--workspace", str(ws)], env=env))
    out = subprocess.run([sys.executable, str(examples / "client.py"), "--addr", dev, "write notes about this project"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "approved perm_" in out.stdout and out.stdout.rstrip().endswith("turn.completed"), out.stdout
    assert "after an approval" in (ws / "NOTES.md").read_text()
