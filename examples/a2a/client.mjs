// Another agent's side of A2A, in a few lines: @a2a-js/sdk's client sends a
// message to agentruntime, prints the task's updates as they stream, and
// asks you on the terminal when the task needs input (an approval).
//
//   agentruntime dev            # in another terminal
//   npm ci && node client.mjs "take notes on the README"
//
// AGENTRUNTIME_URL (default http://127.0.0.1:7070) is the runtime;
// AGENTRUNTIME_API_KEY, when set, is sent as a bearer token.
import { createInterface } from "node:readline/promises";

import { Role, TaskState } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";

const url = process.env.AGENTRUNTIME_URL ?? "http://127.0.0.1:7070";
const key = process.env.AGENTRUNTIME_API_KEY;
const options = key ? { serviceParameters: { Authorization: `Bearer ${key}` } } : undefined;
const text = process.argv.slice(2).join(" ") || "take notes on the README";

const client = await new ClientFactory().createFromUrl(url);
const card = await client.getAgentCard();
console.log(`agent: ${card.name} — ${card.description}`);

const says = (parts) =>
  (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("\n");
const stateName = (s) => (TaskState[s] ?? String(s)).replace("TASK_STATE_", "").toLowerCase();
const message = (value, ids = {}) => ({
  messageId: crypto.randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value } }],
  ...ids,
});

const terminal = createInterface({ input: process.stdin, output: process.stdout });
let next = message(text);
for (;;) {
  let task;
  let status;
  for await (const { payload } of client.sendMessageStream({ message: next }, options)) {
    const v = payload.value;
    if (payload.$case === "task") task = v;
    if (payload.$case === "statusUpdate") {
      status = v.status;
      console.log(`[${stateName(status.state)}] ${says(status.message?.parts)}`.trim());
    }
    if (payload.$case === "artifactUpdate") console.log(`answer: ${says(v.artifact.parts)}`);
  }
  if (status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) break;
  const answer = await terminal.question("your answer (yes, no, or one of the decisions): ");
  next = message(answer, { taskId: task?.id ?? next.taskId, contextId: task?.contextId ?? next.contextId });
}
terminal.close();
