// Submit a turn, print the live timeline, approve from the terminal.
//
//   go run ./cmd/agentruntime dev            # in another terminal
//   node dist/timeline.js "write notes about this project"
//
// AR_ADDR (default 127.0.0.1:7070), AR_ENDPOINTS (control=HOST:PORT,...) and
// AR_API_KEY are read as the CLI reads them. Ctrl-C stops following.
import { createInterface } from "node:readline";
import { createRuntimeClient, enumWord, RuntimeError, TurnStatus, type RuntimeEvent } from "@agentruntime/client/node";

const objective = process.argv.slice(2).join(" ") || "write notes about this project";
const sessionId = process.env.AR_SESSION ?? "default";
const threadId = process.env.AR_THREAD ?? "main";

const client = createRuntimeClient({
  baseUrl: process.env.AR_ADDR ?? "127.0.0.1:7070",
  endpoints: process.env.AR_ENDPOINTS,
  apiKey: process.env.AR_API_KEY || undefined,
});
const terminal = createInterface({ input: process.stdin });
const answers = terminal[Symbol.asyncIterator]();
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());

try {
  const { turn } = await client.submitTurn({ sessionId, threadId, text: objective });
  console.log(`turn ${turn?.turnId} ${enumWord(TurnStatus, turn?.status ?? TurnStatus.UNSPECIFIED)} in session ${sessionId}, thread ${threadId}`);

  // From the session's start, so nothing between the submit and the
  // subscription is missed; a dropped connection resumes where it stopped.
  for await (const item of client.subscribe({ sessionId, threadId }, { fromSequence: 1n, signal: stop.signal })) {
    if (item.kind === "gap") console.log(`(events ${item.requestedSequence}..${item.firstAvailableSequence - 1n} are gone)`);
    if (item.kind !== "event" && item.kind !== "snapshot_repaired") continue;
    const ev = item.event;
    if (ev.turnId !== turn?.turnId) continue;
    console.log(`#${String(ev.sequence).padEnd(5)} ${ev.type.padEnd(24)} ${describe(ev)}`);

    if (ev.payload.case === "actionRequired") {
      process.stdout.write(`  ${ev.payload.value.prompt}\n  approve? [y/N] `);
      const answer = String((await answers.next()).value ?? "");
      const decision = /^y(es)?$/i.test(answer.trim()) ? "allow_once" : "deny";
      const res = await client.respondAction(ev.actionId, decision);
      console.log(`  action ${ev.actionId}: ${res.action?.decision}`);
    }
    if (ev.type === "turn.completed" || ev.type === "turn.failed" || ev.type === "turn.cancelled") break;
  }
} catch (e) {
  if (e instanceof RuntimeError) {
    console.error(`${e.codeName}: ${e.rawMessage}`);
    for (const v of e.fieldViolations) console.error(`  ${v.field}: ${v.description}`);
    process.exitCode = 1;
  } else {
    throw e;
  }
} finally {
  terminal.close();
}

function describe(ev: RuntimeEvent): string {
  switch (ev.payload.case) {
    case "toolStarted":
      return ev.payload.value.toolName;
    case "modelCompleted":
      return ev.payload.value.model;
    default:
      return ev.actionId || ev.toolCallId || "";
  }
}
