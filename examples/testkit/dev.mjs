// Starts the real `agentruntime dev` (its in-process worker playing a
// script) on a free loopback port with its own data directory and
// workspace: the harness of the examples' end-to-end tests
// (examples/a2a/test, examples/ag-ui/test).
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repoDir = resolve(here, "..", "..");

/** The binary: $AGENTRUNTIME_BIN, else built once into a temporary directory. */
function binary(dir) {
  if (process.env.AGENTRUNTIME_BIN) return process.env.AGENTRUNTIME_BIN;
  const bin = join(dir, "agentruntime");
  execFileSync("go", ["build", "-o", bin, "./cmd/agentruntime"], { cwd: repoDir, stdio: "inherit" });
  return bin;
}

/**
 * startDev runs `agentruntime dev` with the scripted provider playing
 * script; with apiKey, authentication is on and that key is an operator's
 * of tenant acme. It answers where dev listens (host:port).
 */
export async function startDev({ script, apiKey, name = "dev" }) {
  const dir = mkdtempSync(join(tmpdir(), `agentruntime-${name}-`));
  const workspace = join(dir, "workspace");
  mkdirSync(workspace);
  // The demo turn reads README.md, then asks to write NOTES.md.
  copyFileSync(join(repoDir, "README.md"), join(workspace, "README.md"));
  const args = ["dev", "--listen", "127.0.0.1:0", "--data-dir", join(dir, "data"), "--workspace", workspace,
    "--script", script, "--console=false"];
  if (apiKey) {
    const auth = join(dir, "auth.yaml");
    writeFileSync(auth, `api_keys:\n  - {name: front-end, tenant: acme, role: operator, key: ${apiKey}}\n`);
    args.push("--auth", auth);
  }
  const dev = spawn(binary(dir), args, { stdio: ["ignore", "pipe", "pipe"] });
  const stop = () =>
    new Promise((res) => {
      const done = () => {
        rmSync(dir, { recursive: true, force: true });
        res();
      };
      if (dev.exitCode !== null || dev.signalCode !== null) return done();
      const kill = setTimeout(() => dev.kill("SIGKILL"), 10_000);
      dev.once("exit", () => {
        clearTimeout(kill);
        done();
      });
      dev.kill("SIGTERM");
    });
  try {
    const addr = await new Promise((res, rej) => {
      let out = "";
      let err = "";
      const timer = setTimeout(() => rej(new Error(`agentruntime dev did not report its address in 60s\n${out}\n${err}`)), 60_000);
      dev.stderr.on("data", (b) => (err += b));
      dev.stdout.on("data", (b) => {
        out += b;
        const m = /listening\s+(\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          res(m[1]);
        }
      });
      dev.on("exit", (code) => {
        clearTimeout(timer);
        rej(new Error(`agentruntime dev exited (${code})\n${out}\n${err}`));
      });
    });
    return { addr, workspace, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
