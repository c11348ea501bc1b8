"""TLS: against `agentruntime dev --tls-cert --tls-key` the client connects
with ``root_certificates`` (the test's CA) and not in clear."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from agentruntime import Client, RetryPolicy, Unavailable

from conftest import start_dev


def make_certs(d: Path) -> None:
    """A CA and a server certificate it signed for 127.0.0.1 and localhost."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test CA")
    openssl("req", *ec, "-keyout", "server-key.pem", "-out", "server.csr", "-subj", "/CN=localhost")
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
            "-out", "server.pem", "-days", "1", "-extfile", "san.cnf")


def test_client_over_tls_with_root_certificates(binary, tmp_path, procs):
    make_certs(tmp_path)
    addr = start_dev(binary, tmp_path / "data", procs,
                     "--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server-key.pem"))
    ca = (tmp_path / "ca.pem").read_bytes()

    async def main():
        async with await Client.connect(addr, root_certificates=ca) as c:
            assert await c.health("control") == "SERVING"
            turn = await c.submit_turn("s-tls", "hello over TLS")
            assert turn.turn.turn_id
        async with await Client.connect(addr, retry=RetryPolicy(max_attempts=1)) as plain:
            with pytest.raises(Unavailable):
                await plain.health("control", timeout=3.0)

    asyncio.run(asyncio.wait_for(main(), 60))
