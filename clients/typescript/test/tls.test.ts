// TLS: `agentruntime dev --tls-cert --tls-key` with the native gRPC client
// of the Node entry point, trusting the test's CA through `ca`.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRuntimeClient } from "../src/node.js";
import { binary, stopProcess, waitForLine } from "./harness.js";

const dir = mkdtempSync(join(tmpdir(), "agentruntime-ts-tls-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A CA and a server certificate it signed for 127.0.0.1 and localhost. */
function makeCerts(): void {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "ignore" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test CA");
  openssl("req", ...ec, "-keyout", "server-key.pem", "-out", "server.csr", "-subj", "/CN=localhost");
  writeFileSync(join(dir, "san.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
    "-out", "server.pem", "-days", "1", "-extfile", "san.cnf");
}

test("native gRPC over TLS with the CA given as ca; nothing in clear", async () => {
  makeCerts();
  const dev = spawn(binary(), ["dev", "--listen", "127.0.0.1:0", "--data-dir", join(dir, "data"), "--no-worker",
    "--tls-cert", join(dir, "server.pem"), "--tls-key", join(dir, "server-key.pem")], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    const addr = await waitForLine(dev, /listening\s+(\S+)/);
    const client = createRuntimeClient({ baseUrl: `https://${addr}`, ca: readFileSync(join(dir, "ca.pem"), "utf8") });
    const { sessions } = await client.control.listSessions({});
    assert.deepEqual(sessions, []);
    const plain = createRuntimeClient({ baseUrl: `http://${addr}`, retry: { maxAttempts: 1 } });
    await assert.rejects(plain.control.listSessions({}, { timeoutMs: 5000 }));
  } finally {
    await stopProcess(dev);
  }
});
