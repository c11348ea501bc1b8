// End to end against the real `agentruntime dev` binary and a real worker:
// native gRPC (the Node entry point) unless a test says otherwise.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { createRuntimeClient } from "../src/node.js";
import { createRuntimeClient as createBrowserClient } from "../src/index.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  UnauthenticatedError,
  type RuntimeClient,
  type SubscriptionItem,
  TurnStatus,
  enumWord,
} from "../src/index.js";
import { ScopeKind } from "../src/gen/agentruntime/evidence/v1/evidence_pb.js";
import { CuttableProxy, mintJwt, operatorKey, startRuntime, tenant, type Runtime } from "./harness.js";

let rt: Runtime;
let client: RuntimeClient;

before(async () => {
  rt = await startRuntime();
  client = createRuntimeClient({ baseUrl: rt.baseUrl, apiKey: operatorKey });
});

after(async () => {
  await rt?.stop();
});

let sessions = 0;
function newSession(): string {
  return `ts_${process.pid}_${++sessions}`;
}

// Thread ids are unique in the tenant.
function thread(sessionId: string): string {
  return `th_${sessionId}`;
}

/**
 * driveTurn submits the demo turn, follows the session from the start,
 * approves the write it asks for and returns every event item up to
 * turn.completed. onActionRequired runs before the approval.
 */
async function driveTurn(
  c: RuntimeClient,
  sessionId: string,
  opts: { approver?: RuntimeClient; onActionRequired?: () => void; items?: AsyncIterable<SubscriptionItem> } = {},
): Promise<SubscriptionItem[]> {
  const ac = new AbortController();
  const items = opts.items ?? c.subscribe({ sessionId }, { fromSequence: 1n, signal: ac.signal });
  const submitted = await c.submitTurn({ sessionId, threadId: thread(sessionId), text: "write notes about this project" });
  const turnId = submitted.turn?.turnId;
  assert.ok(turnId, "submit answers the turn");
  const seen: SubscriptionItem[] = [];
  try {
    for await (const item of items) {
      if (item.kind !== "event") continue;
      seen.push(item);
      const ev = item.event;
      if (ev.type === "action.required" && ev.turnId === turnId) {
        opts.onActionRequired?.();
        const res = await (opts.approver ?? c).respondAction(ev.actionId, "allow_once");
        assert.equal(res.action?.decision, "allow_once");
      }
      if (ev.type === "turn.failed") assert.fail(`the turn failed: ${JSON.stringify(ev.payload)}`);
      if (ev.type === "turn.completed" && ev.turnId === turnId) break;
    }
  } finally {
    ac.abort();
  }
  return seen;
}

function types(items: SubscriptionItem[]): string[] {
  return items.flatMap((i) => (i.kind === "event" ? [i.event.type] : []));
}

function sequences(items: SubscriptionItem[]): bigint[] {
  return items.map((i) => i.sequence);
}

describe("agentruntime dev, native gRPC", { timeout: 120_000 }, () => {
  test("submit a turn, follow the live timeline, approve the write; the turn completes", async () => {
    const items = await driveTurn(client, newSession());
    const t = types(items);
    for (const want of ["turn.submitted", "action.required", "action.resolved", "turn.completed"]) {
      assert.ok(t.includes(want), `timeline has ${want}: ${t.join(", ")}`);
    }
    assert.ok(t.indexOf("action.required") < t.indexOf("action.resolved"));
    const seqs = sequences(items);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), "in sequence order");
  });

  test("a connection cut mid-stream resumes from the last delivered sequence: no gap, no duplicate", async () => {
    const proxy = await CuttableProxy.start(rt.addr);
    try {
      const viaProxy = createRuntimeClient({ baseUrl: proxy.baseUrl, apiKey: operatorKey });
      const sessionId = newSession();
      const reconnects: bigint[] = [];
      const ac = new AbortController();
      const items = viaProxy.subscribe(
        { sessionId },
        { fromSequence: 1n, signal: ac.signal, onReconnect: (r) => reconnects.push(r.fromSequence) },
      );
      const got = await driveTurn(viaProxy, sessionId, {
        items,
        // The approval goes around the proxy while the stream is down, so
        // events happen while the subscriber is disconnected.
        approver: client,
        onActionRequired: () => proxy.cut(),
      });
      ac.abort();
      assert.ok(reconnects.length >= 1, "the subscription reconnected");
      assert.ok(proxy.connections >= 2, "through a new connection");

      // The whole story, read in one piece directly.
      const last = got[got.length - 1].sequence;
      const whole: SubscriptionItem[] = [];
      const ac2 = new AbortController();
      for await (const item of client.subscribe({ sessionId }, { fromSequence: 1n, signal: ac2.signal })) {
        if (item.kind !== "event") continue;
        whole.push(item);
        if (item.sequence >= last) break;
      }
      assert.deepEqual(sequences(got), sequences(whole), "the resumed stream is exactly the log: no gap, no duplicate");
      assert.deepEqual(types(got), types(whole));
    } finally {
      await proxy.close();
    }
  });

  test("a subscription across sessions cut mid-stream resumes from its last cursor: no gap, no duplicate", async () => {
    const proxy = await CuttableProxy.start(rt.addr);
    try {
      const viaProxy = createRuntimeClient({ baseUrl: proxy.baseUrl, apiKey: operatorKey });
      const sessionId = newSession();
      const reconnects: (string | undefined)[] = [];
      const ac = new AbortController();
      const all: SubscriptionItem[] = [];
      // The tenant's whole story; the turn is driven on its session's events.
      async function* mine(items: AsyncIterable<SubscriptionItem>): AsyncGenerator<SubscriptionItem> {
        for await (const item of items) {
          if (item.kind === "event") all.push(item);
          if (item.kind !== "event" || item.event.sessionId === sessionId) yield item;
        }
      }
      const items = viaProxy.subscribe({}, { fromSequence: 1n, signal: ac.signal, onReconnect: (r) => reconnects.push(r.cursor) });
      const got = await driveTurn(viaProxy, sessionId, {
        items: mine(items),
        approver: client,
        onActionRequired: () => proxy.cut(),
      });
      ac.abort();
      assert.ok(reconnects.length >= 1, "the subscription reconnected");
      assert.ok(reconnects.every((c) => c !== undefined && c !== ""), `from a cursor each time: ${reconnects}`);
      assert.ok(all.every((i) => i.cursor !== ""), "every event comes with a cursor");
      const seqs = sequences(all);
      assert.equal(new Set(seqs).size, seqs.length, "no duplicate");

      const last = got[got.length - 1].sequence;
      const whole: SubscriptionItem[] = [];
      const ac2 = new AbortController();
      for await (const item of client.subscribe({ sessionId }, { fromSequence: 1n, signal: ac2.signal })) {
        if (item.kind !== "event") continue;
        whole.push(item);
        if (item.sequence >= last) break;
      }
      assert.deepEqual(sequences(got), sequences(whole), "the session's part of the resumed stream is exactly the log: no gap, no duplicate");
    } finally {
      await proxy.close();
    }
  });

  test("a field violation decodes into InvalidArgumentError with the field", async () => {
    await assert.rejects(
      client.submitTurn({ sessionId: "not a valid id", threadId: "main", text: "x" }),
      (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError, `got ${e}`);
        assert.equal(e.codeName, "INVALID_ARGUMENT");
        assert.equal(e.fieldViolations[0]?.field, "session_id");
        assert.match(e.fieldViolations[0]?.reason ?? "", /STRING_PATTERN/);
        return true;
      },
    );
  });

  test("an illegal transition carries its ErrorInfo reason and metadata", async () => {
    const taskId = `task_${process.pid}_${Date.now()}`;
    await client.tasks.createTask({ taskId, spec: { title: "pinned" } });
    await client.tasks.cancelTask({ taskId, reason: "test" });
    await assert.rejects(client.tasks.pauseTask({ taskId }), (e: unknown) => {
      assert.ok(e instanceof FailedPreconditionError, `got ${e}`);
      assert.equal(e.reason, "ILLEGAL_TRANSITION");
      assert.equal(e.errorMetadata.status, "cancelled");
      assert.equal(e.errorMetadata.command, "pause");
      assert.ok(e.preconditionViolations.length > 0);
      return true;
    });
    await assert.rejects(client.respondAction("act_missing", "allow_once"), NotFoundError);
  });

  test("submitTurn with the same idempotency key does not create a second turn", async () => {
    const sessionId = newSession();
    const first = await client.submitTurn({ sessionId, threadId: thread(sessionId), text: "write notes about this project" });
    assert.ok(first.idempotencyKey.length > 0, "a key was generated");
    assert.equal(first.turn?.status, TurnStatus.ACCEPTED, "statuses are enums");
    assert.equal(enumWord(TurnStatus, first.turn?.admission ?? 0), "accepted");
    const again = await client.submitTurn({ sessionId, threadId: thread(sessionId), text: "write notes about this project", idempotencyKey: first.idempotencyKey });
    assert.equal(again.turn?.turnId, first.turn?.turnId);
    assert.equal(again.deduplicated, true);
    await client.control.interruptTurn({ sessionId, threadId: thread(sessionId) }).catch(() => undefined);
  });

  test("authenticates with an API key and with a JWT; a bad credential is UnauthenticatedError", async () => {
    const sessionId = newSession();
    await client.submitTurn({ sessionId, threadId: thread(sessionId), text: "hello" });

    const token = mintJwt(rt.jwtSecret, { sub: "alice", tenant, role: "operator" });
    const withJwt = createRuntimeClient({ baseUrl: rt.baseUrl, token: () => token });
    const got = await withJwt.control.getSession({ sessionId });
    assert.equal(got.session?.sessionId, sessionId, "the JWT's tenant sees the session");

    const otherTenant = createRuntimeClient({ baseUrl: rt.baseUrl, token: mintJwt(rt.jwtSecret, { sub: "bob", tenant: "other", role: "operator" }) });
    await assert.rejects(otherTenant.control.getSession({ sessionId }), NotFoundError, "tenants are apart");

    const badKey = createRuntimeClient({ baseUrl: rt.baseUrl, apiKey: "ar_wrong_key_0123456789" });
    await assert.rejects(badKey.control.getSession({ sessionId }), UnauthenticatedError);
    const forged = createRuntimeClient({ baseUrl: rt.baseUrl, token: mintJwt(Buffer.from("not the secret, 32 bytes or more!!"), { sub: "eve", tenant, role: "admin" }) });
    await assert.rejects(forged.control.getSession({ sessionId }), UnauthenticatedError);
    await client.control.interruptTurn({ sessionId, threadId: thread(sessionId) }).catch(() => undefined);
  });

  test("reads an evidence pack in pages with its sha256 checked", async () => {
    const sessionId = newSession();
    await driveTurn(client, sessionId);
    const res = await client.evidence.exportEvidence({ scope: { sessionId, kind: ScopeKind.SESSION } });
    const pack = res.result?.pack;
    assert.ok(pack?.uri, "the export answers the pack's ref");
    const read = await client.readOutput(pack.uri, { pageSize: 1024 });
    assert.ok(read.data.length > 1024, `more than one page (${read.data.length} bytes)`);
    assert.equal(read.sha256, pack.sha256);
    const json = JSON.parse(new TextDecoder().decode(read.data));
    assert.ok(json, "the pack is JSON");
  });

  test("a remote channel resumes after its last ack; snapshot-first merges with the replay", async () => {
    const sessionId = newSession();
    const items = await driveTurn(client, sessionId);
    const ch = await client.connectChannel({ channelId: `ch_${sessionId}`, sessionId, peer: "test" });
    assert.equal(ch.resumeFromSequence, 1n, "a new channel resumes from the start");

    // Follow from the start, ack the first half.
    const half = items[Math.floor(items.length / 2)].sequence;
    const ac = new AbortController();
    for await (const item of ch.events({ signal: ac.signal })) {
      if (item.kind !== "event") continue;
      if (item.sequence >= half) {
        await ch.ack(item.sequence);
        break;
      }
    }
    await ch.ack(1n); // behind the ack: sends nothing, never moves it back
    assert.equal(ch.lastAcked, half);

    const again = await client.connectChannel({ channelId: `ch_${sessionId}`, sessionId, peer: "test" });
    assert.equal(again.resumeFromSequence, half + 1n, "resumes right after the last ack");
    const ac2 = new AbortController();
    const resumed: bigint[] = [];
    const last = items[items.length - 1].sequence;
    for await (const item of again.events({ signal: ac2.signal })) {
      if (item.kind !== "event") continue;
      resumed.push(item.sequence);
      if (item.sequence >= last) break;
    }
    assert.equal(resumed[0] > half, true, "nothing at or before the ack comes again");
    assert.deepEqual(resumed, items.filter((i) => i.sequence > half && i.kind === "event").map((i) => i.sequence).filter((s) => resumed.includes(s)));

    // Snapshot first: the read model, then only events after what it covers.
    const ac3 = new AbortController();
    let snapshotSeq = -1n;
    for await (const item of again.events({ snapshotFirst: true, filters: { threadId: thread(sessionId) }, signal: ac3.signal, heartbeatMs: 200 })) {
      if (item.kind === "snapshot") {
        snapshotSeq = item.sequence;
        assert.ok(item.snapshot.thread, "the thread read model comes first");
        continue;
      }
      if (item.kind === "event") assert.ok(item.sequence > snapshotSeq, "only events after the snapshot");
      if (item.kind === "heartbeat") break; // caught up
    }
    assert.ok(snapshotSeq >= last, "the snapshot covers the finished turn");
  });
});

describe("agentruntime dev, browser protocols over HTTP/1.1", { timeout: 120_000 }, () => {
  test("Connect (fetch, JSON): submit, subscribe, approve, field violation", async () => {
    const web = createBrowserClient({ baseUrl: rt.baseUrl, apiKey: operatorKey, transport: (baseUrl) => createConnectTransport({ baseUrl }) });
    const items = await driveTurn(web, newSession());
    assert.ok(types(items).includes("turn.completed"));
    await assert.rejects(web.control.getSession({ sessionId: "bad.id" }), (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentError);
      assert.equal(e.fieldViolations[0]?.field, "session_id");
      return true;
    });
  });

  test("Connect streaming over fetch resumes after a cut connection with no gap and no duplicate", async () => {
    const proxy = await CuttableProxy.start(rt.addr);
    try {
      const web = createBrowserClient({ baseUrl: proxy.baseUrl, apiKey: operatorKey });
      const sessionId = newSession();
      let reconnects = 0;
      const ac = new AbortController();
      const items = web.subscribe({ sessionId }, { fromSequence: 1n, signal: ac.signal, onReconnect: () => reconnects++ });
      const got = await driveTurn(web, sessionId, { items, approver: client, onActionRequired: () => proxy.cut() });
      ac.abort();
      assert.ok(reconnects >= 1, "the subscription reconnected");
      const last = got[got.length - 1].sequence;
      const whole: bigint[] = [];
      for await (const item of client.subscribe({ sessionId }, { fromSequence: 1n })) {
        if (item.kind !== "event") continue;
        whole.push(item.sequence);
        if (item.sequence >= last) break;
      }
      assert.deepEqual(sequences(got), whole);
    } finally {
      await proxy.close();
    }
  });

  test("gRPC-Web: unary and a server stream", async () => {
    const web = createBrowserClient({ baseUrl: rt.baseUrl, apiKey: operatorKey, transport: (baseUrl) => createGrpcWebTransport({ baseUrl }) });
    const sessionId = newSession();
    const sub = await web.submitTurn({ sessionId, threadId: thread(sessionId), text: "hello" });
    const ac = new AbortController();
    for await (const item of web.subscribe({ sessionId }, { fromSequence: 1n, signal: ac.signal })) {
      if (item.kind === "event" && item.event.type === "turn.submitted") {
        assert.equal(item.event.turnId, sub.turn?.turnId);
        break;
      }
    }
    await assert.rejects(web.control.getSession({ sessionId: "bad.id" }), InvalidArgumentError);
    await web.control.interruptTurn({ sessionId, threadId: thread(sessionId) }).catch(() => undefined);
  });
});

