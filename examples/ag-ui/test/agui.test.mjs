// POST /ag-ui against the real binary, through @ag-ui/client's HttpAgent:
// every run goes through the client's own pipeline, its event verifier
// included, so an event out of order fails the run.
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { HttpAgent } from "@ag-ui/client";

import { startDev } from "./harness.mjs";

/** ProtoAgent asks for AG-UI's binary protobuf encoding. */
class ProtoAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: "application/vnd.ag-ui.event+proto" } };
  }
}

/** run runs the agent once and returns what it saw. */
async function run(agent, params) {
  const events = [];
  let failed;
  const result = await agent.runAgent(params, {
    onEvent: ({ event }) => {
      events.push(event);
    },
    onRunFailed: ({ error }) => {
      failed = error;
    },
  });
  assert.equal(failed, undefined, `the run failed: ${failed}`);
  return { events, result, types: events.map((e) => e.type) };
}

function say(agent, text) {
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
}

const text = (events) =>
  events
    .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
    .map((e) => e.delta)
    .join("");

for (const [encoding, BaseAgent, mediaType] of [
  ["SSE", HttpAgent, "text/event-stream"],
  ["protobuf", ProtoAgent, "application/vnd.ag-ui.event+proto"],
]) {
  // Agent checks that every answer comes in the encoding asked for.
  class Agent extends BaseAgent {
    constructor(config) {
      super({
        ...config,
        fetch: async (url, init) => {
          const resp = await fetch(url, init);
          assert.equal(resp.headers.get("content-type"), mediaType);
          return resp;
        },
      });
    }
  }
  describe(`AG-UI over ${encoding}`, () => {
    let dev;
    before(async () => {
      dev = await startDev();
    });
    after(async () => {
      await dev?.stop();
    });

    test("a plain answer, then runtime tools and an approval as an interrupt resumed to completion", async () => {
      const agent = new Agent({ url: dev.url, threadId: crypto.randomUUID() });

      say(agent, "hello there");
      const plain = await run(agent);
      assert.equal(plain.types[0], "RUN_STARTED");
      assert.equal(plain.types.at(-1), "RUN_FINISHED");
      assert.ok(plain.types.includes("STATE_SNAPSHOT"), plain.types.join(" "));
      assert.equal(text(plain.events), "Hello from agentruntime.");
      assert.equal(plain.events.at(-1).outcome?.type ?? "success", "success");
      // Runtime ids and the cursor ride in each event's metadata.
      const content = plain.events.find((e) => e.type === "TEXT_MESSAGE_CONTENT");
      assert.equal(content.metadata.agentruntime.type, "model.delta");
      assert.match(content.metadata.agentruntime.cursor, /^turn_/);
      assert.ok(plain.events[0].metadata.agentruntime.extensions.reconnect, "RUN_STARTED declares the reconnect extension");
      assert.ok(agent.messages.some((m) => m.role === "assistant" && m.content === "Hello from agentruntime."));

      say(agent, "take notes on the README");
      // A front-end tool the model does not call changes nothing.
      const tools = [{ name: "confirm", description: "Ask the user", parameters: { type: "object", properties: {} } }];
      const first = await run(agent, { tools });
      const read = first.events.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "read_file");
      assert.ok(read, first.types.join(" "));
      const readResult = first.events.find((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === read.toolCallId);
      assert.match(readResult.content, /agentruntime/);
      assert.ok(first.types.includes("STEP_STARTED") && first.types.includes("REASONING_MESSAGE_CONTENT"));
      // The write waits for a person: the run ends with an interrupt.
      const finished = first.events.at(-1);
      assert.equal(finished.type, "RUN_FINISHED");
      assert.equal(finished.outcome.type, "interrupt");
      const [interrupt] = finished.outcome.interrupts;
      assert.equal(interrupt.reason, "permission");
      assert.match(interrupt.message, /write_file/);
      assert.deepEqual(interrupt.metadata.agentruntime.decisions, ["allow_once", "allow_session", "deny"]);
      assert.deepEqual(agent.pendingInterrupts.map((i) => i.id), [interrupt.id]);
      const write = first.events.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "write_file");
      assert.equal(interrupt.toolCallId, write.toolCallId);
      assert.ok(!first.events.some((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === write.toolCallId));

      const resume = [{ interruptId: interrupt.id, status: "resolved", payload: { decision: "allow_once" } }];
      const rest = await run(agent, { resume });
      assert.equal(rest.types[0], "RUN_STARTED");
      const written = rest.events.filter((e) => e.type === "TOOL_CALL_RESULT" && e.toolCallId === write.toolCallId);
      assert.equal(written.length, 1, rest.types.join(" "));
      assert.match(written[0].content, /wrote/);
      assert.match(text(rest.events), /^Done: NOTES.md/);
      assert.equal(rest.events.at(-1).type, "RUN_FINISHED");
      assert.equal(rest.events.at(-1).outcome.type, "success");
      assert.equal(rest.events.at(-1).result.summary, "Done: NOTES.md holds my notes on the README.");
      assert.deepEqual(agent.pendingInterrupts, []);
      const notes = join(dev.workspace, "NOTES.md");
      assert.equal(readFileSync(notes, "utf8"), "# Notes\nWritten through AG-UI, after an approval.\n");

      // A repeated resume is harmless: the first answer stands and the
      // write is not done again.
      const mtime = statSync(notes).mtimeMs;
      const again = await run(new Agent({ url: dev.url, threadId: agent.threadId }), { resume });
      assert.equal(again.events.at(-1).type, "RUN_FINISHED");
      assert.equal(statSync(notes).mtimeMs, mtime);
    });

    test("a front-end tool: the run ends with its call pending, the tool message resumes the turn", async () => {
      const agent = new Agent({ url: dev.url, threadId: crypto.randomUUID() });
      const tools = [
        {
          name: "browser_time",
          description: "The time in the user's browser",
          parameters: { type: "object", properties: { zone: { type: "string" } } },
        },
      ];
      say(agent, "what time is it?");
      const first = await run(agent, { tools });
      const call = first.events.find((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "browser_time");
      assert.ok(call, first.types.join(" "));
      const args = first.events.filter((e) => e.type === "TOOL_CALL_ARGS" && e.toolCallId === call.toolCallId);
      assert.deepEqual(JSON.parse(args.map((e) => e.delta).join("")), { zone: "UTC" });
      assert.ok(first.events.some((e) => e.type === "TOOL_CALL_END" && e.toolCallId === call.toolCallId));
      // The front end runs it: the runtime sends no result of its own.
      assert.ok(!first.types.includes("TOOL_CALL_RESULT"), first.types.join(" "));
      const finished = first.events.at(-1);
      assert.equal(finished.type, "RUN_FINISHED");
      assert.equal(finished.outcome.type, "success");
      assert.deepEqual(finished.outcome.pendingToolCallIds, [call.toolCallId]);
      assert.deepEqual(agent.pendingInterrupts, []);

      agent.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: call.toolCallId, content: "23:59 UTC" });
      const answered = agent.messages.slice();
      const rest = await run(agent, { tools });
      assert.ok(!rest.types.includes("TOOL_CALL_RESULT"), rest.types.join(" "));
      assert.equal(text(rest.events), "Your browser says what time it is.");
      assert.equal(rest.events.at(-1).type, "RUN_FINISHED");
      assert.equal(rest.events.at(-1).outcome.type, "success");
      assert.equal(rest.events.at(-1).result.summary, "Your browser says what time it is.");
      assert.equal(agent.messages.filter((m) => m.role === "tool" && m.toolCallId === call.toolCallId).length, 1);

      // The same answer again is harmless: the first stands, the turn's
      // rest is streamed from it, and nothing new runs.
      const again = await run(new Agent({ url: dev.url, threadId: agent.threadId, initialMessages: answered }), { tools });
      assert.equal(again.events.at(-1).type, "RUN_FINISHED");
      assert.equal(again.events.at(-1).result.summary, "Your browser says what time it is.");
      assert.equal(text(again.events), "Your browser says what time it is.");
    });
  });
}

describe("the example front end", () => {
  let dev;
  before(async () => {
    dev = await startDev();
  });
  after(async () => {
    await dev?.stop();
  });

  test("runs a turn with an approval to its end", async () => {
    const { execFile } = await import("node:child_process");
    const { promisify } = await import("node:util");
    const { stdout } = await promisify(execFile)(process.execPath, ["front-end.mjs", "--yes", "take notes"], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, AG_UI_URL: dev.url },
    });
    assert.match(stdout, /\[tool read_file\]/);
    assert.match(stdout, /\[approval\] Allow tool "write_file"/);
    assert.match(stdout, /Done: NOTES.md holds my notes on the README./);
    assert.ok(statSync(join(dev.workspace, "NOTES.md")).isFile());
  });

  test("runs its front-end tool when the model calls it", async () => {
    const { execFile } = await import("node:child_process");
    const { promisify } = await import("node:util");
    const { stdout } = await promisify(execFile)(process.execPath, ["front-end.mjs", "what time is it?"], {
      cwd: join(import.meta.dirname, ".."),
      env: { ...process.env, AG_UI_URL: dev.url },
    });
    assert.match(stdout, /\[tool browser_time\]/);
    assert.match(stdout, /\[front-end browser_time\] \S/);
    assert.match(stdout, /Your browser says what time it is./);
  });
});
