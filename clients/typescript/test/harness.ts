// Runs the real `agentruntime dev` binary (with authentication on) and a
// real `agentruntime worker` against it, on free loopback ports with their
// own data directory, for the end-to-end tests.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const repoDir = resolve(pkgDir, "..", "..");

export const operatorKey = "ar_ts_operator_key_0123456789";
const workerKey = "ar_ts_worker_key_0123456789";
export const tenant = "acme";

/** The binary: $AGENTRUNTIME_BIN, else built once into build/. */
export function binary(): string {
  if (process.env.AGENTRUNTIME_BIN) {
    return process.env.AGENTRUNTIME_BIN;
  }
  const bin = join(pkgDir, "build", "agentruntime");
  if (!existsSync(bin)) {
    execFileSync("go", ["build", "-o", bin, "./cmd/agentruntime"], { cwd: repoDir, stdio: "inherit" });
  }
  return bin;
}

export interface Runtime {
  addr: string;
  baseUrl: string;
  jwtSecret: Buffer;
  stop(): Promise<void>;
}

export async function startRuntime(): Promise<Runtime> {
  const dir = mkdtempSync(join(tmpdir(), "agentruntime-ts-"));
  const workspace = join(dir, "workspace");
  execFileSync("mkdir", ["-p", workspace]);
  // The demo agent reads README.md, then asks to write NOTES.md.
  copyFileSync(join(repoDir, "README.md"), join(workspace, "README.md"));
  const jwtSecret = randomBytes(32);
  writeFileSync(join(dir, "jwt.secret"), jwtSecret.toString("base64"));
  writeFileSync(
    join(dir, "auth.yaml"),
    [
      "api_keys:",
      `  - {name: ts-operator, tenant: ${tenant}, role: operator, key: ${operatorKey}}`,
      `  - {name: ts-worker, tenant: ${tenant}, role: worker, key: ${workerKey}}`,
      "jwt:",
      "  hs256_secret_file: jwt.secret",
      "",
    ].join("\n"),
  );
  const bin = binary();
  const procs: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(procs.reverse().map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const dev = spawn(bin, ["dev", "--listen", "127.0.0.1:0", "--data-dir", join(dir, "data"), "--auth", join(dir, "auth.yaml")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    procs.push(dev);
    const addr = await waitForLine(dev, /listening\s+(\S+)/);
    const worker = spawn(bin, ["worker", "--addr", addr, "--api-key", workerKey, "--workspace", workspace], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    procs.push(worker);
    worker.stderr?.resume();
    return { addr, baseUrl: `http://${addr}`, jwtSecret: Buffer.from(jwtSecret.toString("base64")), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

export function waitForLine(p: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`agentruntime dev did not report its address in 60s\n${out}\n${err}`)), 60_000);
    p.stderr?.on("data", (b: Buffer) => {
      err += b.toString();
    });
    p.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      const m = re.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1]);
      }
    });
    p.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`agentruntime dev exited (${code})\n${out}\n${err}`));
    });
  });
}

export function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((res) => {
    const kill = setTimeout(() => p.kill("SIGKILL"), 10_000);
    p.once("exit", () => {
      clearTimeout(kill);
      res();
    });
    p.kill("SIGTERM");
  });
}

/** mintJwt signs an HS256 token the runtime's jwt config accepts. */
export function mintJwt(secret: Buffer, claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ exp: Math.floor(Date.now() / 1000) + 600, ...claims })}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}

/**
 * A TCP proxy in front of the runtime whose connections the test can cut,
 * as a network failure would.
 */
export class CuttableProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  connections = 0;

  private constructor(server: Server) {
    this.server = server;
  }

  static async start(target: string): Promise<CuttableProxy> {
    const [host, port] = splitHostPort(target);
    const server = createServer();
    const proxy = new CuttableProxy(server);
    server.on("connection", (client) => {
      proxy.connections++;
      const upstream = connect(port, host);
      for (const s of [client, upstream]) {
        proxy.sockets.add(s);
        s.on("close", () => proxy.sockets.delete(s));
        s.on("error", () => s.destroy());
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
    return proxy;
  }

  get baseUrl(): string {
    const a = this.server.address();
    if (a === null || typeof a === "string") throw new Error("proxy has no address");
    return `http://127.0.0.1:${a.port}`;
  }

  /** cut resets every open connection. */
  cut(): void {
    for (const s of this.sockets) s.resetAndDestroy?.() ?? s.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((res) => this.server.close(() => res()));
  }
}

function splitHostPort(addr: string): [string, number] {
  const i = addr.lastIndexOf(":");
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}
