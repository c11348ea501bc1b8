// The side-by-side benchmark against a durable-execution engine: a turn of
// agentruntime beside a Restate handler of three durable steps, both driven
// from this one Node process with each side's own client, measured
// interleaved (run 1 of every side, then run 2, ...) so the ratios hold on
// a noisy machine. scripts/bench runs it (BENCH=peer); docs/performance.md
// has the figures and what the two units do.
//
// The units:
//   - agentruntime: a turn the scripted provider plays (the script below:
//     two read_file calls, then the answer), submitted with SubmitTurn over
//     gRPC (@agentruntime/client, HTTP/2) and waited for as turn.completed
//     on the client's session subscription, after both reads' tool.result;
//   - Restate: service.mjs's handler (ctx.run three times: read README.md,
//     read NOTES.md, answer), called over Restate's ingress HTTP and
//     waited for (request/response).
//
// Per side and run: p50/p90 latency of a unit at 1 client, units/s at 8
// clients, and the CPU seconds the side's server processes spent per unit
// at 1 and at 8 clients (/proc/<pid>/stat utime+stime before and after),
// and per second at 8 clients (the share of the machine it got). Beside
// them, in the same run, the raw block each side's unit is built on: a
// bare round trip of the same client to the same server (ListSessions;
// GET /restate/health on the ingress), and the driver's own CPU per unit,
// to show the client is not the bottleneck.
//
// Environment: AGENTRUNTIME_BIN (required), NATS_SERVER_BIN and
// REDIS_SERVER_BIN (the serve shape; without them it is skipped),
// PEER_RUNS (default 3), PEER_UNITS1 (units at 1 client, default 60),
// PEER_UNITS8 (units at 8 clients, default 240), PEER_SIDES (a regexp of
// side names, default all), PEER_KEEP=1 keeps the temporary directory.
import { spawn } from "node:child_process";
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRuntimeClient } from "@agentruntime/client/node";

const here = dirname(fileURLToPath(import.meta.url));
const repoDir = resolve(here, "..", "..");
const runs = Number(process.env.PEER_RUNS ?? 3);
const units1 = Number(process.env.PEER_UNITS1 ?? 60);
const units8 = Number(process.env.PEER_UNITS8 ?? 240);
const sideFilter = new RegExp(process.env.PEER_SIDES ?? ".");
const clkTck = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

// The turn: one model call asking for both reads, the tool results, then
// the answer (two model calls, two tool calls, no approval: reads inside
// the workspace are allowed by the default policy).
const script = `model: scripted
turns:
  - steps:
      - text: "Reading both files."
        tool_calls:
          - {name: read_file, arguments: {path: README.md}}
          - {name: read_file, arguments: {path: NOTES.md}}
        usage: {input_tokens: 120, output_tokens: 24}
      - text: "Both read: the README introduces the project, the notes add to it."
        usage: {input_tokens: 900, output_tokens: 18}
`;

const dir = mkdtempSync(join(tmpdir(), "agentruntime-bench-peer-"));
const procs = [];
let cleaned = false;
function cleanup() {
  if (cleaned) return;
  cleaned = true;
  for (const p of procs) {
    if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  }
  if (process.env.PEER_KEEP !== "1") rmSync(dir, { recursive: true, force: true });
  else console.error(`kept ${dir}`);
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

const workspace = join(dir, "workspace");
mkdirSync(workspace);
// The files both sides read: the project's README and 8 KiB of notes.
copyFileSync(join(repoDir, "README.md"), join(workspace, "README.md"));
writeFileSync(join(workspace, "NOTES.md"), Array.from({ length: 128 }, (_, i) => `note ${String(i).padStart(3, "0")}: ${"x".repeat(53)}\n`).join(""));
writeFileSync(join(dir, "script.yaml"), script);

/** A free loopback port (the listener is closed before the server binds it). */
function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** Starts a server process, its output into dir/<name>.log. */
function start(name, bin, args, env = {}) {
  const log = openSync(join(dir, `${name}.log`), "a");
  const p = spawn(bin, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", log, log] });
  closeSync(log); // the child has its own
  p.name = name;
  procs.push(p);
  p.once("exit", (code, sig) => {
    if (!cleaned && !p.stopping) {
      console.error(`${name} exited (${code ?? sig}):\n${readFileSync(join(dir, `${name}.log`), "utf8").slice(-4000)}`);
      process.exit(1);
    }
  });
  return p;
}

/** Stops a server process and waits for it to go. */
function stop(p) {
  p.stopping = true;
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

/** Polls probe until it answers true or 60 s pass (a process starting: nothing to wait on but its port). */
async function until(what, probe) {
  const end = Date.now() + 60_000;
  let last;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`${what} not ready in 60 s: ${last?.message ?? last}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** p, or an error when it has not settled in 30 s (a unit that hangs fails the run instead of stalling it). */
function deadline(p, what) {
  let timer;
  const late = new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`${what} took over 30 s`)), 30_000)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** CPU seconds (utime+stime) of the processes so far. */
function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces), from state on:
    // utime and stime are fields 14 and 15 of the line.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / clkTck;
}

function driverCPU() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The agentruntime side: units are turns, waited for on a session subscription per client. */
function agentruntimeSide(name, clientOptions, pids) {
  const client = createRuntimeClient(clientOptions);
  let seq = 0;
  return {
    name,
    pids,
    async ready() {
      await until(name, async () => (await client.control.listSessions({}), true));
    },
    raw: () => client.control.listSessions({}),
    // A client: its own session, subscribed to before its first submit
    // (the first heartbeat says the subscription is live), a new thread
    // per unit.
    async client() {
      const sessionId = `bench-${name.replace(/[^A-Za-z0-9]/g, "")}-${++seq}`;
      const abort = new AbortController();
      const waiting = new Map(); // turn id -> resolve
      const ended = new Map(); // turn id -> how it ended, when it ended before its submit answered
      const reads = new Map(); // turn id -> the reads that succeeded
      let live;
      const isLive = new Promise((r) => (live = r));
      const prefixes = ["tool.result", "tool.failed", "turn.completed", "turn.failed"];
      const loop = (async () => {
        for await (const item of client.subscribe({ sessionId, typePrefixes: prefixes }, { signal: abort.signal })) {
          if (item.kind === "heartbeat") live();
          if (item.kind !== "event") continue;
          const { turnId, type, payload } = item.event;
          if (type === "tool.result" && payload.case === "toolResult" && !payload.value.isError) {
            reads.set(turnId, (reads.get(turnId) ?? 0) + 1);
          }
          if (!type.startsWith("turn.")) continue;
          // The unit is done when the turn completed after both reads.
          const how = type === "turn.completed" && reads.get(turnId) === 2 ? "done" : `${type} after ${reads.get(turnId) ?? 0} reads`;
          reads.delete(turnId);
          const w = waiting.get(turnId);
          if (w) {
            waiting.delete(turnId);
            w(how);
          } else ended.set(turnId, how);
        }
      })();
      await isLive;
      let n = 0;
      return {
        async unit() {
          const { turn } = await client.submitTurn({ sessionId, threadId: `${sessionId}-t${++n}`, text: "what do the README and the notes say?" });
          const turnId = turn.turnId;
          const how = ended.get(turnId) ?? (await new Promise((r) => waiting.set(turnId, r)));
          ended.delete(turnId);
          if (how !== "done") throw new Error(`${name}: turn ${turnId}: ${how}`);
        },
        async close() {
          abort.abort();
          await loop;
        },
      };
    },
  };
}

/** The Restate side: units are calls of steps/run through the ingress. */
function restateSide(name, ingress, pids) {
  const url = `http://${ingress}/steps/run`;
  let seq = 0;
  const call = async (q) => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(q) });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body}`);
    if (!/NOTES\.md \d+/.test(body)) throw new Error(`${name}: unexpected answer ${body}`);
  };
  return {
    name,
    pids,
    async ready() {
      // The deployment is registered; the ingress learns of it a moment later.
      await until(name, async () => (await deadline(call("ready?"), `${name}: the first call`), true));
    },
    raw: async () => {
      const res = await fetch(`http://${ingress}/restate/health`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${name}: /restate/health ${res.status}`);
    },
    async client() {
      const c = ++seq;
      let n = 0;
      return { unit: () => call(`question ${c}.${++n}`), close: async () => {} };
    },
  };
}

async function startDev(name, extra) {
  const port = await freePort();
  const addr = `127.0.0.1:${port}`;
  const p = start(name, process.env.AGENTRUNTIME_BIN, [
    "dev", "--listen", addr, "--data-dir", join(dir, `${name}-data`), "--workspace", workspace,
    "--script", join(dir, "script.yaml"), "--console=false", ...extra,
  ]);
  return agentruntimeSide(name, { baseUrl: `http://${addr}` }, [p.pid]);
}

/** Resolves once something accepts TCP connections on port. */
function accepts(port) {
  return new Promise((res, rej) => {
    const c = connect(port, "127.0.0.1", () => {
      c.destroy();
      res(true);
    });
    c.once("error", rej);
  });
}

// The serve shape (docs/configuration.md, "Five services and a worker on
// one machine"): nats-server and redis-server as their own processes, the
// five services each in its own `agentruntime serve`, and a worker.
async function startServe(name) {
  const bin = process.env.AGENTRUNTIME_BIN;
  const [natsPort, redisPort] = [await freePort(), await freePort()];
  mkdirSync(join(dir, `${name}-redis`));
  const nats = start(`${name}-nats`, process.env.NATS_SERVER_BIN, ["-a", "127.0.0.1", "-p", String(natsPort), "-js", "-sd", join(dir, `${name}-js`)]);
  const redis = start(`${name}-redis`, process.env.REDIS_SERVER_BIN, [
    "--port", String(redisPort), "--bind", "127.0.0.1", "--dir", join(dir, `${name}-redis`), "--appendonly", "yes", "--save", "",
  ]);
  await until(`${name} nats-server`, () => accepts(natsPort));
  await until(`${name} redis-server`, () => accepts(redisPort));
  const auth = join(dir, `${name}-auth.yaml`);
  writeFileSync(auth, "api_keys:\n  - {name: bench, tenant: acme, role: admin, key: bench-operator-key}\n  - {name: worker, tenant: acme, role: worker, key: bench-worker-key}\n");
  const ports = {};
  const pids = [nats.pid, redis.pid];
  for (const svc of ["control", "tasks", "routing", "permission", "evidence"]) {
    ports[svc] = await freePort();
    const args = ["serve", svc, "--listen", `127.0.0.1:${ports[svc]}`, "--nats", `nats://127.0.0.1:${natsPort}`,
      "--redis", `redis://127.0.0.1:${redisPort}/0`, "--auth", auth];
    if (svc === "routing") args.push("--models", join(repoDir, "cmd", "agentruntime", "demo-models.yaml"));
    pids.push(start(`${name}-${svc}`, bin, args).pid);
  }
  const endpoints = Object.entries(ports).map(([svc, port]) => `${svc}=127.0.0.1:${port}`).join(",");
  const worker = start(`${name}-worker`, bin, [
    "worker", "--endpoints", endpoints, "--addr", "127.0.0.1:1", "--api-key", "bench-worker-key", "--workspace", workspace,
    "--script", join(dir, "script.yaml"), "--max-turns", "8",
  ]);
  pids.push(worker.pid);
  return agentruntimeSide(name, { baseUrl: `http://127.0.0.1:${ports.control}`, endpoints, apiKey: "bench-operator-key" }, pids);
}

async function startRestate(name) {
  const [ingress, admin, fabric, svcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const serverBin = join(here, "node_modules", "@restatedev", `restate-server-linux-${process.arch}`, "bin", "restate-server");
  const server = start(`${name}-server`, serverBin, ["--base-dir", join(dir, `${name}-data`), "--no-logo"], {
    RESTATE_LISTEN_MODE: "tcp",
    RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
    RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${admin}`,
    RESTATE_BIND_ADDRESS: `127.0.0.1:${fabric}`,
    RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabric}/`,
    RESTATE_DISABLE_TELEMETRY: "true",
  });
  const service = start(`${name}-service`, process.execPath, [join(here, "service.mjs")], { WORKSPACE: workspace, PORT: String(svcPort) });
  await until(`${name} admin`, async () => (await fetch(`http://127.0.0.1:${admin}/health`)).ok);
  await until(`${name} registration`, async () => {
    const res = await fetch(`http://127.0.0.1:${admin}/deployments`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ uri: `http://127.0.0.1:${svcPort}` }),
    });
    const body = await res.text();
    if (!res.ok) throw new Error(`POST /deployments ${res.status} ${body}`);
    return true;
  });
  return restateSide(name, `127.0.0.1:${ingress}`, [server.pid, service.pid]);
}

/** units spread over `clients` concurrent clients; latencies in ms, wall time in s. */
async function measure(side, clients, units) {
  const cs = await Promise.all(Array.from({ length: clients }, () => side.client()));
  const lat = [];
  let next = 0;
  const cpu0 = cpuSeconds(side.pids);
  const drv0 = driverCPU();
  const t0 = performance.now();
  await Promise.all(
    cs.map(async (c) => {
      while (next < units) {
        next++;
        const s = performance.now();
        await deadline(c.unit(), `${side.name}: a unit`);
        lat.push(performance.now() - s);
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(side.pids) - cpu0;
  const drv = driverCPU() - drv0;
  await Promise.all(cs.map((c) => c.close()));
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.ceil(p * lat.length) - 1)];
  return { units, wall, p50: q(0.5), p90: q(0.9), rate: units / wall, cpuPerUnit: cpu / units, driverPerUnit: drv / units };
}

async function rawRoundTrip(side, n = 200) {
  const lat = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await side.raw();
    lat.push(performance.now() - s);
  }
  lat.sort((a, b) => a - b);
  return lat[Math.ceil(0.5 * n) - 1];
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const f = (x, d = 1) => x.toFixed(d);

const sides = [];
if (!process.env.AGENTRUNTIME_BIN) throw new Error("AGENTRUNTIME_BIN: the agentruntime binary to run");
const want = [
  ["agentruntime dev", () => startDev("agentruntime dev", ["--max-turns", "8"])],
  ["agentruntime dev --sync-always", () => startDev("agentruntime dev --sync-always", ["--max-turns", "8", "--sync-always"])],
  ["agentruntime serve", () => startServe("agentruntime serve")],
  ["restate", () => startRestate("restate")],
];
for (const [name, make] of want) {
  if (!sideFilter.test(name)) continue;
  if (name.endsWith("serve") && !(process.env.NATS_SERVER_BIN && process.env.REDIS_SERVER_BIN)) {
    console.error(`${name}: skipped (NATS_SERVER_BIN and REDIS_SERVER_BIN not set)`);
    continue;
  }
  const side = await make();
  await side.ready();
  sides.push(side);
}
// Warm up: connections, caches, JIT, the first pages of each store.
for (const side of sides) await measure(side, 8, 40);

const version = (pkg) => JSON.parse(readFileSync(join(here, "node_modules", pkg, "package.json"), "utf8")).version;
console.log(`node ${process.version}, @restatedev/restate-server ${version("@restatedev/restate-server")}, @restatedev/restate-sdk ${version("@restatedev/restate-sdk")}`);
console.log(`units per run: ${units1} at 1 client, ${units8} at 8 clients; latency in ms, CPU in ms per unit (servers at 1 and at 8 clients; the driver at 8); cores@8: the servers' CPU seconds per second at 8 clients`);
console.log(`${"side".padEnd(32)} run  p50@1  p90@1  cpu@1  units/s@8  p50@8  cpu@8  cores@8  driver@8  raw-rtt  p50/raw`);
const results = new Map(sides.map((s) => [s.name, []]));
for (let r = 1; r <= runs; r++) {
  console.log(`run ${r}: load average ${loadavg().map((x) => f(x, 2)).join(" ")}`);
  for (const side of sides) {
    const one = await measure(side, 1, units1);
    const eight = await measure(side, 8, units8);
    const raw = await rawRoundTrip(side);
    const row = {
      p50: one.p50, p90: one.p90, cpu1: one.cpuPerUnit * 1000,
      rate: eight.rate, p50x8: eight.p50, cpu: eight.cpuPerUnit * 1000, driver: eight.driverPerUnit * 1000, raw,
    };
    results.get(side.name).push(row);
    console.log(
      `${side.name.padEnd(32)} ${String(r).padStart(3)} ${f(row.p50).padStart(6)} ${f(row.p90).padStart(6)} ${f(row.cpu1, 2).padStart(6)} ${f(row.rate).padStart(10)} ${f(row.p50x8).padStart(6)} ${f(row.cpu, 2).padStart(6)} ${f((row.cpu * row.rate) / 1000, 2).padStart(8)} ${f(row.driver, 2).padStart(9)} ${f(row.raw, 3).padStart(8)} ${f(row.p50 / row.raw).padStart(8)}`,
    );
  }
}

// The medians over the runs, and each agentruntime side over Restate's.
const med = (name, k) => median(results.get(name).map((x) => x[k]));
console.log(`\nmedian of ${runs} runs         p50@1 ms  p90@1 ms  cpu@1 ms  units/s@8  cpu@8 ms`);
for (const side of sides) {
  const m = (k, d = 1, w = 9) => f(med(side.name, k), d).padStart(w);
  console.log(`${side.name.padEnd(32)} ${m("p50", 1, 8)} ${m("p90")} ${m("cpu1", 2)} ${m("rate", 1, 10)} ${m("cpu", 2)}`);
}
const peer = sides.find((s) => s.name === "restate");
if (peer) {
  console.log(`\nratio to restate (median of per-run ratios; >1: more time, more throughput, more CPU)`);
  for (const side of sides) {
    if (side === peer) continue;
    const ratio = (k) => median(results.get(side.name).map((x, i) => x[k] / results.get(peer.name)[i][k]));
    console.log(
      `${side.name.padEnd(32)} p50@1 ${f(ratio("p50"), 2)}x  p90@1 ${f(ratio("p90"), 2)}x  cpu@1 ${f(ratio("cpu1"), 2)}x  units/s@8 ${f(ratio("rate"), 2)}x  cpu@8 ${f(ratio("cpu"), 2)}x`,
    );
  }
}

for (const p of [...procs].reverse()) await stop(p);
