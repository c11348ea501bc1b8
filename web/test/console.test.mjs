// The console in a real browser: Debian's Chromium driven by playwright-core
// against the real `agentruntime dev` binary (AGENTRUNTIME_BIN, built by
// scripts/test-web). Screenshots of every screen go to
// $CONSOLE_ARTIFACTS (default web/test-artifacts/).
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const bin = process.env.AGENTRUNTIME_BIN;
if (!bin) throw new Error("AGENTRUNTIME_BIN names the agentruntime binary (scripts/test-web builds it)");
const artifacts = process.env.CONSOLE_ARTIFACTS ?? new URL("../test-artifacts/", import.meta.url).pathname;
mkdirSync(artifacts, { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), "console-test-"));

/** dev starts `agentruntime dev` on a free port and resolves its address from the banner. */
async function dev(name, { listen = "127.0.0.1:0", extra = [] } = {}) {
  const ws = join(tmp, name + "-ws");
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, "README.md"), "# A project\nIt says hello.\n");
  const proc = spawn(bin, ["dev", "--listen", listen, "--data-dir", join(tmp, name + "-data"), "--workspace", ws, ...extra], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  proc.stderr.on("data", (d) => (err += d));
  const addr = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`dev did not start:\n${out}\n${err.slice(-2000)}`)), 30_000);
    proc.stdout.on("data", (d) => {
      out += d;
      const m = /listening\s+(\S+)/.exec(out);
      if (m && out.includes("Ctrl-C")) { clearTimeout(t); resolve(m[1]); }
    });
    proc.on("exit", (code) => reject(new Error(`dev exited ${code}:\n${out}\n${err.slice(-2000)}`)));
  });
  const exited = new Promise((resolve) => proc.on("exit", resolve));
  return { proc, addr, url: `http://${addr}/`, out: () => out, err: () => err, stop: () => { proc.kill("SIGTERM"); return exited; } };
}

async function rpc(base, method, body, headers = {}) {
  const res = await fetch(base + method, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, `${method}: ${text}`);
  return JSON.parse(text);
}

let browser;
let server;
const errors = [];
// While a test has stopped the server on purpose, the browser's failed
// connections are that test's doing.
let serverDown = false;

before(async () => {
  server = await dev("main");
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    // playwright-core gives every launch a fresh --user-data-dir of its own
    // (it refuses one in args).
  });
});

after(async () => {
  await browser?.close();
  server?.proc.kill("SIGTERM");
  rmSync(tmp, { recursive: true, force: true });
});

async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 860 }, acceptDownloads: true });
  const page = await ctx.newPage();
  // Aborted streams on navigation are the page's own doing, not errors.
  page.on("console", (m) => {
    if (m.type() === "error" && !(serverDown && m.text().includes("ERR_CONNECTION_REFUSED"))) errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`${page.url()}: ${e.message}`));
  return page;
}

const shot = (page, name) => page.screenshot({ path: join(artifacts, `${name}.png`) });
const timeline = (page) => page.evaluate(() => window.agentruntimeTimeline());

test("the demo turn: submit, approve in the page, turn.completed; reloads mid-stream lose and repeat nothing", async () => {
  const page = await newPage();
  await page.goto(server.url);
  await page.locator("h1", { hasText: "Sessions" }).waitFor();
  await page.locator("#session-search").waitFor();
  await shot(page, "sessions-empty");

  await page.goto(server.url + "#/session/default?thread=main");
  await page.locator("#turn-text").fill("write notes about this project");
  await page.locator("#submit-turn").click();
  const approve = page.locator('#session-approvals button[data-decision="allow_once"]');
  await approve.waitFor({ timeout: 30_000 });
  await page.locator('.row[data-type="action.required"]').first().waitFor();
  const before1 = await timeline(page);
  await shot(page, "session-waiting");
  // Statuses are enums in the API, shown with the spec's words.
  await page.locator("#thread-state .status", { hasText: "waiting_permission" }).waitFor();

  // The approvals screen shows it too, keyboard first.
  await page.goto(server.url + "#/approvals");
  const card = page.locator("#approvals article.action").first();
  await card.waitFor();
  assert.match(await card.innerText(), /Approve/);
  await shot(page, "approvals");

  // Reload while the turn waits: the timeline is rebuilt from the log, no gap, no duplicate.
  await page.goto(server.url + "#/session/default?thread=main");
  await page.reload();
  await approve.waitFor();
  await page.waitForFunction((n) => window.agentruntimeTimeline?.().sequences.length >= n, before1.sequences.length);
  const after1 = await timeline(page);
  assert.deepEqual(after1.sequences.slice(0, before1.sequences.length), before1.sequences, "the reloaded timeline starts with what was shown");

  await approve.click();
  await approve.waitFor({ state: "detached" });
  // Reload right after the decision, while the worker streams the rest.
  await page.reload();
  await page.locator('.row[data-type="turn.completed"]').waitFor({ timeout: 30_000 });
  await shot(page, "session-completed");
  await page.locator("#thread-state .status", { hasText: "idle" }).waitFor({ timeout: 30_000 });
  await page.locator("#thread-state p.muted", { hasText: "last outcome: completed" }).waitFor();
  assert.match(await page.locator("#thread-state p.muted").first().innerText(), /permission (known|unknown) · routing (known|unknown)/);
  const final = await timeline(page);
  assert.ok(final.types.includes("turn.completed"));
  for (let i = 1; i < final.sequences.length; i++) {
    assert.ok(BigInt(final.sequences[i]) > BigInt(final.sequences[i - 1]), `sequence ${final.sequences[i]} after ${final.sequences[i - 1]}`);
  }
  // The same events as the log holds for the session, read by the CLI.
  const exported = execFileSync(bin, ["export", "events", "--addr", server.addr, "--session", "default"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
    .trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.threadId === "main").map((e) => String(e.sequence));
  const upTo = final.sequences[final.sequences.length - 1];
  assert.deepEqual(final.sequences, exported.filter((s) => BigInt(s) <= BigInt(upTo)), "the timeline is the session's log: no gap, no duplicate");

  // A tool call row joins its arguments and result; model text is joined.
  const kinds = await page.$$eval(".row", (rows) => rows.map((r) => r.className));
  assert.ok(kinds.some((k) => k.includes("k-tool")), `tool rows: ${kinds.join(" ")}`);
  await page.locator(".row.k-tool").first().click();
  await page.locator("#detail details").first().waitFor();
  await shot(page, "session-tool-detail");
  await page.close();
});

test("tasks: the list by status and a small graph's nodes and edges", async () => {
  const base = server.url;
  for (const [id, title] of [["plan", "plan the work"], ["build", "build it"], ["test", "test it"], ["ship", "ship it"]]) {
    await rpc(base, "agentruntime.tasks.v1.TasksService/CreateTask", { taskId: id, sessionId: "graph", spec: { title } });
  }
  for (const [from, to] of [["plan", "build"], ["plan", "test"], ["build", "ship"], ["test", "ship"]]) {
    await rpc(base, "agentruntime.tasks.v1.TasksService/LinkTasks", { taskId: from, relation: "EDGE_RELATION_BLOCKS", targetId: to });
  }
  const page = await newPage();
  await page.goto(base + "#/tasks?session=graph");
  await page.locator('#task-graph svg a.node[data-task="ship"]').waitFor();
  const nodes = await page.$$eval("#task-graph svg a.node", (ns) => ns.map((n) => n.getAttribute("data-task")).sort());
  assert.deepEqual(nodes, ["build", "plan", "ship", "test"]);
  const edges = await page.$$eval("#task-graph svg line.edge", (es) => es.map((e) => `${e.getAttribute("data-from")}>${e.getAttribute("data-to")}`).sort());
  assert.deepEqual(edges, ["build>ship", "plan>build", "plan>test", "test>ship"]);
  // Layers: plan left of build and test, ship right of both.
  const x = async (id) => Number(await page.locator(`#task-graph a.node[data-task="${id}"] rect`).getAttribute("x"));
  assert.ok((await x("plan")) < (await x("build")) && (await x("build")) < (await x("ship")));
  await shot(page, "tasks");

  await page.locator("#task-status").selectOption("QUEUED");
  await page.waitForURL(/status=QUEUED/);
  await page.locator('tr[data-task="plan"]').waitFor();
  await page.goto(base + "#/task/plan");
  await page.locator("#attempts").waitFor();
  // How PollTask hands it out: the defaults (priority 3, its session's key).
  await page.locator("p", { hasText: "priority 3 · key graph" }).waitFor();
  await page.locator('#task-graph a.node[data-task="build"]').waitFor();
  await shot(page, "task");
  page.once("dialog", (d) => d.accept("not needed"));
  await page.locator("#task-cancel").click();
  await page.locator("h1 .status", { hasText: "cancel" }).waitFor({ timeout: 10_000 });
  await page.close();
});

test("routing and cost, and the evidence pack as a download", async () => {
  const page = await newPage();
  await page.goto(server.url + "#/costs?session=default");
  await page.locator("#cost-session-summary table").waitFor();
  // The demo's scripted model records its cost: one row per model.
  await page.locator("#cost-models tbody tr", { hasText: "scripted" }).waitFor();
  await shot(page, "costs");
  await page.goto(server.url + "#/session/default");
  await page.locator('.row[data-type="turn.completed"]').waitFor();
  const [dl] = await Promise.all([page.waitForEvent("download"), page.locator("#export-evidence").click()]);
  assert.match(dl.suggestedFilename(), /default-evidence\.json/);
  const [replay] = await Promise.all([page.waitForEvent("download"), page.locator("#export-replay").click()]);
  assert.match(replay.suggestedFilename(), /default-replay\.json/);
  await page.goto(server.url + "#/sessions");
  await page.locator('tr[data-session="default"] .status').first().waitFor();
  await shot(page, "sessions");
  await page.close();
});

async function demoTurn(page, url, session) {
  await page.locator("#turn-text").fill("write notes about this project");
  await page.locator("#submit-turn").click();
  const approve = page.locator('#session-approvals button[data-decision="allow_once"]');
  await approve.click({ timeout: 30_000 });
  await approve.waitFor({ state: "detached" });
}

const completedTurns = (page) => page.evaluate(() => window.agentruntimeTimeline().types.filter((t) => t === "turn.completed").length);

test("the timeline survives a restart of the server: it resumes by cursor, no gap, no duplicate", async () => {
  let srv = await dev("restart");
  const page = await newPage();
  await page.goto(srv.url + "#/session/r1?thread=main");
  // The first approval from the keyboard on the approvals screen.
  await page.locator("#turn-text").fill("write notes about this project");
  await page.locator("#submit-turn").click();
  await page.locator('#session-approvals button[data-decision="allow_once"]').waitFor({ timeout: 30_000 });
  await page.goto(srv.url + "#/approvals");
  await page.locator("#approvals article.action.selected").waitFor();
  await page.keyboard.press("a");
  await page.locator("#no-approvals").waitFor();
  await page.goto(srv.url + "#/session/r1?thread=main");
  await page.waitForFunction(() => window.agentruntimeTimeline().types.includes("turn.completed"), null, { timeout: 30_000 });
  const before = await timeline(page);

  serverDown = true;
  await srv.stop();
  await page.locator("#live .warn").waitFor(); // "reconnecting from #N…"
  srv = await dev("restart", { listen: srv.addr });
  try {
    await page.locator("#live .ok").waitFor({ timeout: 30_000 });
    serverDown = false;
    await demoTurn(page, srv.url, "r1");
    await page.waitForFunction(() => window.agentruntimeTimeline().types.filter((t) => t === "turn.completed").length === 2, null, { timeout: 30_000 });
    await shot(page, "session-after-restart");
    const final = await timeline(page);
    assert.deepEqual(final.sequences.slice(0, before.sequences.length), before.sequences);
    const exported = execFileSync(bin, ["export", "events", "--addr", srv.addr, "--session", "r1"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
      .trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.threadId === "main").map((e) => String(e.sequence));
    const upTo = BigInt(final.sequences[final.sequences.length - 1]);
    assert.deepEqual(final.sequences, exported.filter((x) => BigInt(x) <= upTo), "no gap, no duplicate across the restart");
    assert.equal(await completedTurns(page), 2);
  } finally {
    await page.close();
    await srv.stop();
  }
});

test("with --auth nothing works without a credential; an API key entered once is kept for the tab", async () => {
  const authFile = join(tmp, "auth.yaml");
  writeFileSync(authFile, "api_keys:\n  - {name: console, tenant: acme, role: operator, key: console-test-key}\n");
  const srv = await dev("auth", { extra: ["--auth", authFile] });
  const page = await newPage();
  try {
    await page.goto(srv.url + "#/sessions");
    await page.locator("#credential").waitFor();
    await shot(page, "sign-in");
    await page.locator("#credential").fill("not-the-key");
    await page.locator("form.login button").click();
    await page.locator("form.login + p.error", { hasText: "Unauthenticated" }).waitFor();
    await page.locator("#credential").fill("console-test-key");
    await page.locator("form.login button").click();
    await page.locator("h1", { hasText: "Sessions" }).waitFor();
    // Kept for the tab: a reload and another screen need no sign-in.
    await page.goto(srv.url + "#/session/a1?thread=main");
    await page.reload();
    await page.locator("#turn-text").fill("hello");
    await page.locator("#submit-turn").click();
    await page.locator('.row[data-type="turn.submitted"]').waitFor();
    await page.locator("#tenant", { hasText: "acme" }).waitFor();
    // A new tab has no credential.
    const other = await newPage();
    await other.goto(srv.url + "#/tasks");
    await other.locator("#credential").waitFor();
    await other.close();
  } finally {
    await page.close();
    await srv.stop();
  }
});

test("a 10,000-event session: every event folded, a bounded DOM wherever the timeline is scrolled", async () => {
  const srv = await dev("big", { extra: ["--no-worker"] });
  const page = await newPage();
  try {
    const base = srv.url;
    const submitted = await rpc(base, "agentruntime.control.v1.ControlService/SubmitTurn", { sessionId: "big", threadId: "main", input: [{ text: "many events" }], idempotencyKey: "big-1" });
    const turnId = submitted.turn.turnId;
    // The claim waits: the claims read model may not have folded the submit yet.
    const claim = await rpc(base, "agentruntime.control.v1.ControlService/ClaimTurn", { workerId: "wkr_test", sessionId: "big", leaseTtl: "600s", wait: "30s" });
    assert.equal(claim.turn.turnId, turnId);
    const total = 10_000;
    for (let i = 0; i < total; i += 250) {
      const events = Array.from({ length: Math.min(250, total - i) }, (_, j) => ({
        type: "model.delta", sessionId: "big", threadId: "main", turnId, runId: claim.runId, stepId: `step_${i + j}`,
        modelDelta: { text: `delta ${i + j}` },
      }));
      await rpc(base, "agentruntime.control.v1.ControlService/ReportEvents", { events, runId: claim.runId, leaseToken: claim.leaseToken });
    }
    await page.goto(base + "#/session/big?thread=main");
    await page.waitForFunction((n) => window.agentruntimeTimeline?.().types.filter((t) => t === "model.delta").length === n, total, { timeout: 120_000 });
    const list = page.locator("#timeline");
    await page.waitForFunction(() => Number(document.querySelector("#timeline")?.dataset.rows) > 10_000);
    const rowsAt = async (fraction) => {
      await list.evaluate((el, f) => { el.scrollTop = f * (el.scrollHeight - el.clientHeight); }, fraction);
      // Drawn when the rows in the DOM cover the viewport at the new position.
      await page.waitForFunction(() => {
        const el = document.querySelector("#timeline");
        const rows = [...el.querySelectorAll(".row")];
        if (rows.length === 0) return false;
        const top = parseFloat(rows[0].style.top), bottom = parseFloat(rows[rows.length - 1].style.top) + 28;
        return top <= el.scrollTop && bottom >= Math.min(el.scrollTop + el.clientHeight, el.scrollHeight);
      });
      return page.$$eval("#timeline .row", (rows) => rows.map((r) => r.querySelector(".line").textContent));
    };
    for (const f of [0, 0.5, 1]) {
      const rows = await rowsAt(f);
      assert.ok(rows.length > 10 && rows.length < 100, `${rows.length} rows in the DOM at ${f}`);
      if (f === 0.5) assert.ok(rows.some((t) => /^delta 4\d\d\d$|^delta 5\d\d\d$/.test(t)), `middle rows: ${rows.slice(0, 3)}`);
      if (f === 1) assert.ok(rows.includes(`delta ${total - 1}`), "the last event is drawn at the end");
    }
    await rowsAt(0.5);
    await shot(page, "session-10k");
    // Interrupt the running turn from the page.
    await page.locator("#interrupt").click();
    await page.locator("#thread-state .status", { hasText: /interrupting|idle/ }).waitFor({ timeout: 30_000 });
  } finally {
    await page.close();
    await srv.stop();
  }
});

test("webhooks: a subscription and its deliveries under the approvals", async () => {
  const base = server.url;
  // A receiver that answers each delivery's first attempt with 503.
  const attempts = new Map();
  const rx = createServer((req, res) => {
    const id = req.headers["webhook-id"];
    attempts.set(id, (attempts.get(id) ?? 0) + 1);
    req.resume();
    res.writeHead(attempts.get(id) === 1 ? 503 : 204).end();
  });
  await new Promise((resolve) => rx.listen(0, "127.0.0.1", resolve));
  const page = await newPage();
  try {
    const url = `http://127.0.0.1:${rx.address().port}/hook`;
    const created = await rpc(base, "agentruntime.control.v1.ControlService/CreateWebhook", { url, description: "pager" });
    assert.match(created.secret, /^whsec_/);
    const id = created.webhook.webhookId;
    const sub = await rpc(base, "agentruntime.control.v1.ControlService/SubmitTurn", { sessionId: "hooks", threadId: "hooks-main", input: [{ text: "wait for me" }] });
    await rpc(base, "agentruntime.control.v1.ControlService/RequestAction", { sessionId: "hooks", threadId: "hooks-main", turnId: sub.turn.turnId,
      actionId: "act_hook", actionType: "input", prompt: "Which branch?", decisions: ["main", "dev"] });
    await page.goto(base + "#/approvals");
    const delivered = page.locator(`#webhook-list tr[data-webhook="${id}"] li[data-outcome="delivered"]`).first();
    await delivered.waitFor({ timeout: 30_000 });
    assert.match(await delivered.innerText(), /action\.required · attempt 2 · HTTP 204/);
    assert.ok(!(await page.locator("#webhooks").innerText()).includes(created.secret.slice(6)), "the page shows the secret");
    await shot(page, "webhooks");
  } finally {
    await page.close();
    rx.close();
  }
});

test("an action that takes an answer is answered in the page: a question as text, a form as JSON", async () => {
  const base = server.url;
  const page = await newPage();
  try {
    // A turn that waits (the demo model asks before it writes), and two
    // actions on it that take answers.
    const sub = await rpc(base, "agentruntime.control.v1.ControlService/SubmitTurn", { sessionId: "ask", threadId: "ask-main", input: [{ text: "write notes about this project" }] });
    await page.goto(base + "#/approvals");
    await page.locator('#approvals article.action button[data-decision="allow_once"]').first().waitFor({ timeout: 30_000 });
    const on = { sessionId: "ask", threadId: "ask-main", turnId: sub.turn.turnId };
    await rpc(base, "agentruntime.control.v1.ControlService/RequestAction", { ...on, actionId: "act_ask", actionType: "input",
      prompt: "Which color?", decisions: ["answer", "no_answer"], jsonSchema: '{"type":["string","null"]}' });
    await rpc(base, "agentruntime.control.v1.ControlService/RequestAction", { ...on, actionId: "act_form", actionType: "elicitation",
      prompt: "The MCP server asks for a color", decisions: ["accept", "decline"],
      jsonSchema: '{"type":["object","null"],"properties":{"color":{"type":"string"}},"required":["color"]}' });
    const ask = page.locator('article[data-action="act_ask"]');
    const form = page.locator('article[data-action="act_form"]');
    // Half an answer typed in one card survives the list being drawn
    // again when another action is answered.
    await form.locator("textarea.answer").fill('{"colour":"teal"}');
    await ask.locator("textarea.answer").fill("teal, please");
    await ask.locator('button[data-decision="answer"]').click();
    await ask.locator('[role="alert"]', { hasText: "recorded" }).waitFor();
    await ask.waitFor({ state: "detached", timeout: 30_000 });
    assert.equal(await form.locator("textarea.answer").inputValue(), '{"colour":"teal"}');
    // A payload the form's schema refuses is refused, and the card says why.
    await form.locator('button[data-decision="accept"]').click();
    await form.locator('[role="alert"]', { hasText: /payload/ }).waitFor();
    await form.locator("textarea.answer").fill('{"color":"teal"}');
    await form.locator('button[data-decision="accept"]').click();
    await form.locator('[role="alert"]', { hasText: "recorded" }).waitFor();
    await shot(page, "answers");
    // What was recorded: each action.resolved carries the answer typed.
    await page.goto(base + "#/session/ask?thread=ask-main");
    const resolved = page.locator('.row[data-type="action.resolved"]');
    await resolved.nth(1).waitFor({ timeout: 30_000 });
    const payloads = [];
    for (let i = 0; i < await resolved.count(); i++) {
      await resolved.nth(i).click();
      payloads.push(await page.locator("#detail pre").first().innerText());
    }
    assert.ok(payloads.some((p) => p.includes('"payloadJson": "\\"teal, please\\""')), payloads.join("\n"));
    assert.ok(payloads.some((p) => p.includes('"payloadJson": "{\\"color\\":\\"teal\\"}"')), payloads.join("\n"));
  } finally {
    await page.close();
  }
});

test("no console errors on any screen", () => {
  assert.deepEqual(errors, []);
});
