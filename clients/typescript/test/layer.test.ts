// The client layer over an in-memory Connect router: retries and
// idempotency keys, error details, endpoints. No server needed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { createRuntimeClient, resolveEndpoints, AbortedError, InvalidArgumentError, UnavailableError, RuntimeError, StartFrom, enumWord, TurnStatus, TurnAttemptStatus, FactState } from "../src/index.js";
import { ControlService } from "../src/gen/agentruntime/control/v1/control_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";

function retryIn(ms: number) {
  return { desc: RetryInfoSchema, value: { retryDelay: { seconds: 0n, nanos: ms * 1e6 } } };
}

test("ABORTED and UNAVAILABLE are retried as RetryInfo says, with the same idempotency key", async () => {
  const keys: string[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(ControlService, {
      submitTurn(req) {
        keys.push(req.idempotencyKey);
        if (keys.length === 1) throw new ConnectError("conflict", Code.Aborted, undefined, [retryIn(10)]);
        if (keys.length === 2) throw new ConnectError("leader election", Code.Unavailable, undefined, [retryIn(10)]);
        return { turn: { turnId: "turn_1" }, sequence: 7n };
      },
    });
  });
  const client = createRuntimeClient({ baseUrl: "http://unused", transport });
  const res = await client.submitTurn({ sessionId: "s", threadId: "t", text: "hi" });
  assert.equal(res.turn?.turnId, "turn_1");
  assert.equal(keys.length, 3);
  assert.ok(keys[0].length > 0, "a key was generated");
  assert.deepEqual(new Set(keys).size, 1, "every attempt carried the same key");
  assert.equal(res.idempotencyKey, keys[0]);

  // The raw generated client gets a key too, when its request has the field.
  keys.length = 0;
  keys.push("", ""); // the next attempt succeeds
  await client.control.submitTurn({ sessionId: "s", threadId: "t" });
  assert.ok(keys[2].length > 0);
});

test("retries stop after maxAttempts with the typed error and its details", async () => {
  let calls = 0;
  const transport = createRouterTransport(({ service }) => {
    service(ControlService, {
      getSession() {
        calls++;
        throw new ConnectError("down", Code.Unavailable, undefined, [
          retryIn(1),
          { desc: ErrorInfoSchema, value: { reason: "NATS_DOWN", domain: "agentruntime.dev", metadata: { dependency: "nats" } } },
        ]);
      },
      respondAction() {
        calls++;
        throw new ConnectError("no", Code.FailedPrecondition);
      },
    });
  });
  const client = createRuntimeClient({ baseUrl: "http://unused", transport, retry: { maxAttempts: 3 } });
  await assert.rejects(client.control.getSession({ sessionId: "s" }), (e: unknown) => {
    assert.ok(e instanceof UnavailableError);
    assert.ok(e instanceof RuntimeError);
    assert.ok(e instanceof ConnectError, "still a ConnectError for Connect-aware code");
    assert.equal(e.reason, "NATS_DOWN");
    assert.deepEqual(e.errorMetadata, { dependency: "nats" });
    assert.equal(e.retryDelayMs, 1);
    return true;
  });
  assert.equal(calls, 3);
  calls = 0;
  await assert.rejects(client.respondAction("a", "deny"), (e: unknown) => e instanceof RuntimeError && !(e instanceof UnavailableError));
  assert.equal(calls, 1, "other codes are not retried");
});

test("endpoints: one address, or a per-service map over it", () => {
  assert.deepEqual(resolveEndpoints("127.0.0.1:7070", undefined).tasks, "http://127.0.0.1:7070");
  const m = resolveEndpoints("http://front:80", "control=ctl:7070, routing=https://rt:443/");
  assert.equal(m.control, "http://ctl:7070");
  assert.equal(m.routing, "https://rt:443");
  assert.equal(m.evidence, "http://front:80");
  assert.equal(resolveEndpoints(undefined, { control: "a:1", tasks: "b:2", routing: "c:3", permission: "d:4", evidence: "e:5" }).permission, "http://d:4");
  assert.throws(() => resolveEndpoints("x:1", "billing=a:1"), /unknown service "billing"/);
  assert.throws(() => resolveEndpoints("x:1", "control"), /want name=host:port/);
  assert.throws(() => resolveEndpoints("x:1", "control=a:1,control=b:2"), /named twice/);
  assert.throws(() => resolveEndpoints(undefined, "control=a:1"), /no address for tasks/);
});

test("subscribe resumes after a break from the last delivered sequence, drops duplicates, surfaces gaps, heartbeats and snapshot.repaired, and stops on abort", async () => {
  const requests: { start: StartFrom; fromSequence: bigint }[] = [];
  const ev = (sequence: bigint, type = "turn.progress") => ({ item: { case: "event" as const, value: { sequence, type } } });
  const transport = createRouterTransport(({ service }) => {
    service(ControlService, {
      async *subscribeEvents(req) {
        requests.push({ start: req.start, fromSequence: req.fromSequence });
        if (requests.length === 1) {
          yield { item: { case: "gap" as const, value: { requestedSequence: 1n, firstAvailableSequence: 5n } } };
          yield ev(5n);
          yield ev(6n);
          throw new ConnectError("connection reset", Code.Unavailable);
        }
        if (requests.length === 2) {
          yield ev(6n); // already delivered
          yield ev(7n, "snapshot.repaired");
          yield { item: { case: "heartbeat" as const, value: { sequence: 7n } } };
          return; // the server ended the stream (a restart)
        }
        yield ev(8n);
        await new Promise(() => undefined); // then nothing, until the client aborts
      },
    });
  });
  const client = createRuntimeClient({ baseUrl: "http://unused", transport });
  const ac = new AbortController();
  const got: string[] = [];
  for await (const item of client.subscribe({ sessionId: "s" }, { fromSequence: 1n, signal: ac.signal })) {
    got.push(`${item.kind}@${item.sequence}`);
    if (item.sequence === 8n) ac.abort();
  }
  assert.deepEqual(got, ["gap@4", "event@5", "event@6", "snapshot_repaired@7", "heartbeat@7", "event@8"]);
  assert.deepEqual(requests, [
    { start: StartFrom.SEQUENCE, fromSequence: 1n },
    { start: StartFrom.SEQUENCE, fromSequence: 7n },
    { start: StartFrom.SEQUENCE, fromSequence: 8n },
  ]);
});

test("a subscription across sessions resumes after the last cursor, keeping events whose sequences are out of order", async () => {
  const requests: { start: StartFrom; fromSequence: bigint; resumeCursor: string }[] = [];
  // Positions of three partitions: 7 (partition 1) comes after 9 and 11.
  const ev = (sequence: bigint, cursor: string) => ({ item: { case: "event" as const, value: { sequence, type: "turn.progress" } }, cursor });
  const transport = createRouterTransport(({ service }) => {
    service(ControlService, {
      async *subscribeEvents(req) {
        requests.push({ start: req.start, fromSequence: req.fromSequence, resumeCursor: req.resumeCursor });
        if (requests.length === 1) {
          yield ev(9n, "c9");
          yield ev(11n, "c11");
          yield ev(7n, "c7");
          throw new ConnectError("connection reset", Code.Unavailable);
        }
        if (requests.length === 2) {
          yield { item: { case: "heartbeat" as const, value: { sequence: 0n } }, cursor: "c-hb" };
          return; // the server ended the stream (a restart)
        }
        yield ev(4n, "c4");
        await new Promise(() => undefined); // then nothing, until the client aborts
      },
    });
  });
  const client = createRuntimeClient({ baseUrl: "http://unused", transport });
  const ac = new AbortController();
  const got: string[] = [];
  const reconnects: (string | undefined)[] = [];
  for await (const item of client.subscribe({}, { resumeCursor: "c0", signal: ac.signal, onReconnect: (r) => reconnects.push(r.cursor) })) {
    got.push(`${item.kind}@${item.kind === "event" ? item.sequence : ""}:${item.cursor}`);
    if (item.cursor === "c4") ac.abort();
  }
  assert.deepEqual(got, ["event@9:c9", "event@11:c11", "event@7:c7", "heartbeat@:c-hb", "event@4:c4"]);
  assert.deepEqual(requests, [
    { start: StartFrom.SEQUENCE, fromSequence: 0n, resumeCursor: "c0" },
    { start: StartFrom.SEQUENCE, fromSequence: 0n, resumeCursor: "c7" },
    { start: StartFrom.SEQUENCE, fromSequence: 0n, resumeCursor: "c-hb" },
  ]);
  assert.deepEqual(reconnects, ["c7", "c-hb"]);
  await assert.rejects(client.subscribe({}, { resumeCursor: "c0", fromSequence: 1n }).next(), /one of fromSequence, snapshotFirst and resumeCursor/);
});

test("subscribe does not retry what cannot succeed", async () => {
  const transport = createRouterTransport(({ service }) => {
    service(ControlService, {
      // eslint-disable-next-line require-yield
      async *subscribeEvents() {
        throw new ConnectError("session_id: required to start from a snapshot", Code.InvalidArgument);
      },
    });
  });
  const client = createRuntimeClient({ baseUrl: "http://unused", transport });
  await assert.rejects(async () => {
    for await (const _ of client.subscribe({}, { snapshotFirst: true })) {
      /* nothing */
    }
  }, InvalidArgumentError);
});

test("enumWord names statuses with the spec's words", () => {
  assert.equal(enumWord(TurnStatus, TurnStatus.WAITING_PERMISSION), "waiting_permission");
  assert.equal(enumWord(TurnAttemptStatus, TurnAttemptStatus.TIMED_OUT), "timed_out");
  assert.equal(enumWord(FactState, FactState.NOT_APPLICABLE), "not_applicable");
  assert.equal(enumWord(TurnStatus, TurnStatus.UNSPECIFIED), "unspecified");
  assert.equal(enumWord(TurnStatus, 99), "99");
});
