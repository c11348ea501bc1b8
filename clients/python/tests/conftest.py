"""Fixtures: the real agentruntime binary (AR_BINARY, else built once from
the repository), `agentruntime dev --no-worker` on a free port with its own
data dir, and worker processes (Go and Python)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
REPO = HERE.parents[2]
sys.path.insert(0, str(SRC))

LISTEN = re.compile(r"listening\s+(\S+)")


class Proc:
    """A child process whose output is kept (and shown when a test fails)."""

    def __init__(self, args: List[str], env: Optional[dict] = None, cwd: Optional[str] = None) -> None:
        self.args = args
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd, text=True)
        self.lines: List[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_line(self, pattern: "re.Pattern[str]", timeout: float) -> "re.Match[str]":
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for line in self.lines[seen:]:
                    m = pattern.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.p.poll() is not None and seen == len(self.lines):
                    raise AssertionError(f"{self.args[:2]} did not print {pattern.pattern!r}:\n" + self.output())
                self.cond.wait(min(left, 0.5))

    def output(self) -> str:
        with self.cond:
            return "\n".join(self.lines)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


@pytest.fixture(scope="session")
def binary(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = os.environ.get("AR_BINARY")
    if path:
        return path
    out = tmp_path_factory.mktemp("bin") / "agentruntime"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/agentruntime"], cwd=REPO, check=True)
    return str(out)


@pytest.fixture
def procs(request: pytest.FixtureRequest):
    started: List[Proc] = []
    yield started
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for p in started:
        p.kill()
        if failed:
            print(f"--- {' '.join(p.args[:3])} output:\n{p.output()}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def start_dev(binary: str, data: Path, procs: List[Proc], *extra: str) -> str:
    p = Proc([binary, "dev", "--listen", "127.0.0.1:0", "--data-dir", str(data), "--no-worker", *extra])
    procs.append(p)
    return p.wait_line(LISTEN, 60).group(1)


@pytest.fixture
def dev(binary: str, tmp_path: Path, procs: List[Proc]) -> str:
    """`agentruntime dev --no-worker` on a free port; its address."""
    return start_dev(binary, tmp_path / "data", procs)


def python_worker(procs: List[Proc], addr: str, workspace: Path, session: str, worker_id: str,
                  script: Path, lease_ttl: float = 1.5, token: str = "", endpoints: str = "",
                  extra: tuple = ()) -> Proc:
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONUNBUFFERED="1", AR_TOKEN=token)
    p = Proc([sys.executable, str(HERE / "worker_main.py"), "--addr", addr, "--workspace", str(workspace),
              "--session", session, "--worker-id", worker_id, "--script", str(script), "--lease-ttl", str(lease_ttl),
              "--endpoints", endpoints, *extra],
             env=env)
    procs.append(p)
    return p


def go_worker(procs: List[Proc], binary: str, addr: str, workspace: Path, session: str, worker_id: str,
              script: Path, lease_ttl: float = 1.5) -> Proc:
    p = Proc([binary, "worker", "--addr", addr, "--workspace", str(workspace), "--worker-session", session,
              "--worker-id", worker_id, "--script", str(script), "--lease-ttl", f"{int(lease_ttl * 1000)}ms"])
    procs.append(p)
    return p
