// The runtime as an A2A agent, against the real binary, through
// @a2a-js/sdk's client: the card is read by ClientFactory.createFromUrl,
// and every call goes through the client's own transport and parsing.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTasksRequest,
  Role,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
  TaskState,
} from "@a2a-js/sdk";
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";

import { startDev } from "./harness.mjs";

const CURSOR_HEADER = "A2A-Agentruntime-Cursor";

/**
 * complete makes each call's params a whole message of its type (every
 * field, defaults included): the gRPC transport encodes them as they are
 * and needs them whole; the JSON transports do not mind.
 */
function complete(client) {
  const whole = (T) => (p) => T.fromJSON(T.toJSON(p));
  return {
    transport: client.transport,
    getAgentCard: () => client.getAgentCard(),
    sendMessage: (p, o) => client.sendMessage(whole(SendMessageRequest)(p), o),
    sendMessageStream: (p, o) => client.sendMessageStream(whole(SendMessageRequest)(p), o),
    getTask: (p, o) => client.getTask(whole(GetTaskRequest)(p), o),
    cancelTask: (p, o) => client.cancelTask(whole(CancelTaskRequest)(p), o),
    listTasks: (p, o) => client.listTasks(whole(ListTasksRequest)({ status: TaskState.TASK_STATE_UNSPECIFIED, ...p }), o),
    resubscribeTask: (p, o) => client.resubscribeTask(whole(SubscribeToTaskRequest)(p), o),
    createTaskPushNotificationConfig: (p, o) => client.createTaskPushNotificationConfig(whole(TaskPushNotificationConfig)(p), o),
    getTaskPushNotificationConfig: (p, o) => client.getTaskPushNotificationConfig(whole(GetTaskPushNotificationConfigRequest)(p), o),
    listTaskPushNotificationConfig: (p, o) => client.listTaskPushNotificationConfig(whole(ListTaskPushNotificationConfigsRequest)({ pageSize: 100, ...p }), o),
    deleteTaskPushNotificationConfig: (p, o) => client.deleteTaskPushNotificationConfig(whole(DeleteTaskPushNotificationConfigRequest)(p), o),
  };
}

/**
 * pushReceiver is an A2A push notification endpoint on loopback: it
 * records every request (headers, the StreamResponse, the status it
 * answered) and answers 500 to the first one when failFirst.
 */
async function pushReceiver({ failFirst }) {
  const received = [];
  const waiters = new Set();
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const status = failFirst && received.length === 0 ? 500 : 200;
      received.push({ headers: req.headers, body: JSON.parse(body), status });
      res.writeHead(status).end();
      for (const w of waiters) w();
    });
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  return {
    url: `http://127.0.0.1:${server.address().port}/a2a-push`,
    received,
    /** until resolves when cond() holds, checked at each request; it fails after 20 s. */
    until: (cond, what) =>
      new Promise((res, rej) => {
        const check = () => {
          if (!cond()) return;
          waiters.delete(check);
          clearTimeout(timer);
          res();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          rej(new Error(`the receiver waited 20 s for ${what}: ${JSON.stringify(received.map((r) => [r.status, r.body.task?.status?.state]))}`));
        }, 20_000);
        waiters.add(check);
        check();
      }),
    // The runtime's sender keeps its connections alive: close them too,
    // or close waits for them to idle out.
    close: () => new Promise((res) => { server.close(res); server.closeAllConnections(); }),
  };
}

function message(text, { contextId, taskId } = {}) {
  return {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text } }],
    ...(contextId ? { contextId } : {}),
    ...(taskId ? { taskId } : {}),
  };
}

const textOf = (parts) =>
  (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("");

/** collect drains a stream, returning its items as { case, value, cursor }. */
async function collect(stream, { until } = {}) {
  const items = [];
  for await (const ev of stream) {
    const { $case, value } = ev.payload;
    const meta = value.metadata?.agentruntime;
    items.push({ case: $case, value, cursor: meta?.cursor });
    if (until?.(items.at(-1))) break;
  }
  return items;
}

const states = (items) => items.filter((i) => i.case === "statusUpdate").map((i) => i.value.status.state);

for (const [binding, path] of [
  ["JSONRPC", "/a2a/jsonrpc"],
  ["HTTP+JSON", "/a2a/rest/"],
  // gRPC on the API port: no HTTP call at all after the card.
  ["GRPC", null],
]) {
  describe(`A2A over ${binding}`, () => {
    let dev;
    let client;
    // Every call after the card's goes to the binding's path.
    const calls = [];
    const fetchImpl = (url, init) => {
      calls.push(String(url));
      return fetch(url, init);
    };
    before(async () => {
      dev = await startDev();
      const factory = new ClientFactory({
        transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl }), new GrpcTransportFactory()],
        preferredTransports: [binding],
      });
      client = complete(await factory.createFromUrl(dev.url));
    });
    after(async () => {
      await dev?.stop();
    });

    test("the card says streaming, push notifications, the binding and the cursor extension", async () => {
      const card = await client.getAgentCard();
      assert.equal(card.capabilities.streaming, true);
      assert.equal(card.capabilities.pushNotifications, true);
      const iface = card.supportedInterfaces.find((i) => i.protocolBinding === binding);
      assert.ok(iface, JSON.stringify(card.supportedInterfaces));
      assert.equal(iface.protocolVersion, "1.0");
      assert.ok(card.capabilities.extensions.some((e) => e.uri.endsWith("#the-cursor-extension")));
    });

    test("a message is a turn: the answer is the completed task's artifact; a stream in the same context sees working then completed", async () => {
      const task = await client.sendMessage({ message: message("hello there") });
      assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(task.status));
      assert.equal(textOf(task.artifacts[0].parts), "Hello from agentruntime.");
      assert.equal(textOf(task.status.message.parts), "Hello from agentruntime.");
      assert.ok(task.id.startsWith("turn_"), task.id);

      const items = await collect(client.sendMessageStream({ message: message("hello again", { contextId: task.contextId }) }));
      assert.equal(items[0].case, "task");
      assert.equal(items[0].value.status.state, TaskState.TASK_STATE_SUBMITTED);
      const second = items[0].value.id;
      assert.notEqual(second, task.id);
      for (const i of items) {
        assert.equal(i.value.contextId, task.contextId);
        if (i.case !== "task") assert.equal(i.value.taskId, second);
      }
      assert.deepEqual(states(items), [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
      const art = items.find((i) => i.case === "artifactUpdate");
      assert.equal(textOf(art.value.artifact.parts), "Hello from agentruntime.");

      const got = await client.getTask({ id: second });
      assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(got.contextId, task.contextId);

      // The context's tasks, newest first.
      const list = await client.listTasks({ contextId: task.contextId, includeArtifacts: true });
      assert.deepEqual(list.tasks.map((t) => t.id), [second, task.id]);
      assert.equal(list.totalSize, 2);
      assert.equal(textOf(list.tasks[1].artifacts[0].parts), "Hello from agentruntime.");
      const page = await client.listTasks({ contextId: task.contextId, pageSize: 1 });
      assert.deepEqual(page.tasks.map((t) => t.id), [second]);
      assert.equal(page.tasks[0].artifacts.length, 0);
      const next = await client.listTasks({ contextId: task.contextId, pageSize: 1, pageToken: page.nextPageToken });
      assert.deepEqual(next.tasks.map((t) => t.id), [task.id]);
      assert.equal(next.nextPageToken, "");
    });

    test("an approval is input-required with the action's prompt; a message with the task id answers it; a cut stream resumes by cursor with nothing missed or repeated", async () => {
      // The stream is cut after its first status update.
      const cut = new AbortController();
      const first = await collect(client.sendMessageStream({ message: message("do the demo") }, { signal: cut.signal }), {
        until: (i) => i.case === "statusUpdate",
      });
      cut.abort();
      const taskId = first[0].value.id;
      const contextId = first[0].value.contextId;
      const last = first.at(-1);
      assert.equal(last.value.status.state, TaskState.TASK_STATE_WORKING);
      assert.match(last.cursor, /^\d+\.\d+$/);

      // Meanwhile the task comes to wait for the approval: a
      // subscription from the cursor ends there.
      const waiting = await collect(client.resubscribeTask({ id: taskId }, { serviceParameters: { [CURSOR_HEADER]: last.cursor } }));
      assert.deepEqual(states(waiting), [TaskState.TASK_STATE_INPUT_REQUIRED]);
      const task = await client.getTask({ id: taskId });
      assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.match(textOf(task.status.message.parts), /write_file/);
      const action = task.status.message.parts.find((p) => p.content.$case === "data").content.value;
      assert.deepEqual(action.decisions, ["allow_once", "allow_session", "deny"]);

      // A word the action does not offer is refused, naming the field.
      await assert.rejects(client.sendMessage({ message: message("perhaps", { contextId, taskId }) }), /params\.message\.parts/);

      const answered = await client.sendMessage({ message: message("yes", { contextId, taskId }) });
      assert.equal(answered.id, taskId);
      assert.equal(answered.status.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(answered.status));
      assert.equal(textOf(answered.artifacts[0].parts), "Done: NOTES.md holds my notes on the README.");
      assert.ok(existsSync(join(dev.workspace, "NOTES.md")));

      // The cut stream resumed from its last cursor, beside the whole
      // task replayed from its start ("0.0").
      const rest = await collect(client.resubscribeTask({ id: taskId }, { serviceParameters: { [CURSOR_HEADER]: last.cursor } }));
      const all = await collect(client.resubscribeTask({ id: taskId }, { serviceParameters: { [CURSOR_HEADER]: "0.0" } }));
      const seen = [...first.filter((i) => i.cursor), ...rest].map((i) => i.cursor);
      assert.deepEqual(seen, all.map((i) => i.cursor));
      assert.equal(new Set(seen).size, seen.length);
      assert.deepEqual(states(all), [
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_COMPLETED,
      ]);

      // Without a cursor, a finished task's subscription is the task.
      const done = await collect(client.resubscribeTask({ id: taskId }));
      assert.equal(done.length, 1);
      assert.equal(done[0].case, "task");
      assert.equal(done[0].value.status.state, TaskState.TASK_STATE_COMPLETED);
    });

    test("cancel interrupts the turn: the task is canceled, and cannot be canceled again", async () => {
      const items = await collect(client.sendMessageStream({ message: message("do the demo again") }));
      assert.equal(states(items).at(-1), TaskState.TASK_STATE_INPUT_REQUIRED);
      const id = items[0].value.id;
      const canceled = await client.cancelTask({ id });
      assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
      assert.equal((await client.getTask({ id })).status.state, TaskState.TASK_STATE_CANCELED);
      await assert.rejects(client.cancelTask({ id }), (e) => /has ended/.test(e.message));
    });

    test("a push notification config gets the task's updates with its token, retried through a 5xx; a send's configuration makes one", async () => {
      // The retry (2.5 to 5 s after the 500) is waited for over one binding only.
      const rx = await pushReceiver({ failFirst: binding === "JSONRPC" });
      try {
        const first = await collect(client.sendMessageStream({ message: message("do the demo") }));
        assert.equal(states(first).at(-1), TaskState.TASK_STATE_INPUT_REQUIRED);
        const { id: taskId, contextId } = first[0].value;
        const token = `tok-${binding}`;
        const cfg = await client.createTaskPushNotificationConfig({ taskId, id: "cfg-1", url: rx.url, token });
        assert.deepEqual([cfg.id, cfg.taskId, cfg.url, cfg.token], ["cfg-1", taskId, rx.url, token]);
        assert.equal((await client.getTaskPushNotificationConfig({ taskId, id: "cfg-1" })).token, token);
        assert.deepEqual((await client.listTaskPushNotificationConfig({ taskId })).configs.map((c) => c.id), ["cfg-1"]);
        // A URL outside --hook-allow-hosts is refused, naming the field.
        await assert.rejects(client.createTaskPushNotificationConfig({ taskId, url: "http://169.254.169.254/latest" }), /url/);

        const answered = await client.sendMessage({ message: message("yes", { contextId, taskId }) });
        assert.equal(answered.status.state, TaskState.TASK_STATE_COMPLETED);
        const completed = (r) => r.status === 200 && r.body.task?.status?.state === "TASK_STATE_COMPLETED";
        await rx.until(() => rx.received.some(completed), "the task completed");
        if (binding === "JSONRPC") {
          // The first request failed; the same delivery (webhook-id) came again.
          const failed = rx.received[0];
          assert.equal(failed.status, 500);
          await rx.until(
            () => rx.received.some((r) => r.status === 200 && r.headers["webhook-id"] === failed.headers["webhook-id"]),
            "the retry of the delivery answered 500",
          );
        }
        for (const r of rx.received) {
          assert.equal(r.headers["x-a2a-notification-token"], token);
          assert.match(r.headers["content-type"], /^application\/a2a\+json/);
          assert.equal(r.body.task.id, taskId);
          assert.equal(r.body.task.contextId, contextId);
        }
        const done = rx.received.find(completed).body.task;
        assert.equal(textOf([{ content: { $case: "text", value: done.artifacts[0].parts[0].text } }]), "Done: NOTES.md holds my notes on the README.");

        await client.deleteTaskPushNotificationConfig({ taskId, id: "cfg-1" });
        assert.deepEqual((await client.listTaskPushNotificationConfig({ taskId })).configs, []);
        await assert.rejects(client.getTaskPushNotificationConfig({ taskId, id: "cfg-1" }), /not found|no push notification config/);

        // A send's configuration: the receiver gets the task made for it.
        const sent = await client.sendMessage({
          message: message("hello with push"),
          configuration: { taskPushNotificationConfig: { url: rx.url, token: "tok-send" } },
        });
        await rx.until(() => rx.received.some((r) => r.body.task?.id === sent.id && r.headers["x-a2a-notification-token"] === "tok-send"), "the sent task");
        const configs = (await client.listTaskPushNotificationConfig({ taskId: sent.id })).configs;
        assert.equal(configs.length, 1);
        assert.equal(configs[0].url, rx.url);
      } finally {
        await rx.close();
      }
    });

    test("without a contextId, the tenant's tasks across contexts, newest first, paged with nothing missed or repeated; the status filter is the task's state", async () => {
      const t1 = await client.sendMessage({ message: message("hello there") });
      const t2 = await client.sendMessage({ message: message("hello again", { contextId: t1.contextId }) });
      const t3 = await client.sendMessage({ message: message("do the demo") });
      assert.notEqual(t3.contextId, t1.contextId);
      assert.equal(t3.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);

      const all = await client.listTasks({ pageSize: 100 });
      assert.deepEqual(all.tasks.slice(0, 3).map((t) => [t.id, t.contextId]), [[t3.id, t3.contextId], [t2.id, t1.contextId], [t1.id, t1.contextId]]);
      assert.equal(all.totalSize, all.tasks.length);
      assert.equal(all.nextPageToken, "");
      assert.equal(all.tasks[0].status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      assert.equal(all.tasks[1].status.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(all.tasks[1].artifacts.length, 0);
      // Pages of two: the same tasks in the same order.
      const paged = [];
      let pageToken = "";
      do {
        const page = await client.listTasks({ pageSize: 2, pageToken });
        assert.ok(page.tasks.length <= 2 && page.tasks.length > 0, JSON.stringify(page));
        assert.equal(page.totalSize, all.totalSize);
        paged.push(...page.tasks.map((t) => t.id));
        pageToken = page.nextPageToken;
      } while (pageToken && paged.length <= all.tasks.length);
      assert.deepEqual(paged, all.tasks.map((t) => t.id));

      // The filter is the fold's state: t3 waits for its approval.
      const waiting = await client.listTasks({ status: TaskState.TASK_STATE_INPUT_REQUIRED, pageSize: 1 });
      assert.deepEqual(waiting.tasks.map((t) => t.id), [t3.id]);
      const completed = await client.listTasks({ status: TaskState.TASK_STATE_COMPLETED, pageSize: 1, includeArtifacts: true });
      assert.deepEqual(completed.tasks.map((t) => t.id), [t2.id]);
      assert.equal(textOf(completed.tasks[0].artifacts[0].parts), "Hello from agentruntime.");
      const older = await client.listTasks({ status: TaskState.TASK_STATE_COMPLETED, pageSize: 1, pageToken: completed.nextPageToken });
      assert.deepEqual(older.tasks.map((t) => t.id), [t1.id]);
      const everyCompleted = await client.listTasks({ status: TaskState.TASK_STATE_COMPLETED });
      assert.ok(everyCompleted.tasks.every((t) => t.status.state === TaskState.TASK_STATE_COMPLETED));
      assert.deepEqual(everyCompleted.tasks.map((t) => t.id), all.tasks.filter((t) => t.status.state === TaskState.TASK_STATE_COMPLETED).map((t) => t.id));
      assert.equal(everyCompleted.totalSize, everyCompleted.tasks.length);

      // Bad input names its field.
      await assert.rejects(client.listTasks({ pageSize: 101 }), /params\.pageSize/);
      await assert.rejects(client.listTasks({ pageToken: "nope" }), /params\.pageToken/);

      const answered = await client.sendMessage({ message: message("yes", { contextId: t3.contextId, taskId: t3.id }) });
      assert.equal(answered.status.state, TaskState.TASK_STATE_COMPLETED);
    });

    test("an unknown task is not found", async () => {
      await assert.rejects(client.getTask({ id: "turn_nope" }), (e) => /not found/.test(e.message));
    });

    test("every call went through the binding", () => {
      assert.equal(client.transport.protocolName, binding);
      if (path === null) {
        assert.deepEqual(calls, []);
        return;
      }
      assert.ok(calls.length > 10, calls.join(" "));
      for (const url of calls) assert.ok(new URL(url).pathname.startsWith(path), url);
    });
  });
}
