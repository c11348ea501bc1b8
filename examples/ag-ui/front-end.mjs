// A minimal AG-UI front end: @ag-ui/client's HttpAgent against agentruntime's
// POST /ag-ui. It sends a message, prints the streamed answer and the
// runtime's tool calls, and answers an approval (an AG-UI interrupt) from
// the terminal, then resumes the run. It offers the model one front-end
// tool, browser_time, which it runs itself when the model calls it and
// answers with a tool message.
//
//   agentruntime dev                      # in one terminal
//   npm ci && node front-end.mjs "take notes on the README"
//   node front-end.mjs "what time is it?" # the demo calls browser_time
//
// AG_UI_URL (default http://127.0.0.1:7070/ag-ui) and AR_API_KEY (for a
// server with --auth) configure it; --yes approves without asking.
import { createInterface } from "node:readline/promises";

import { HttpAgent } from "@ag-ui/client";

const args = process.argv.slice(2);
const yes = args.includes("--yes");
const message = args.filter((a) => a !== "--yes").join(" ") || "hello";

const agent = new HttpAgent({
  url: process.env.AG_UI_URL ?? "http://127.0.0.1:7070/ag-ui",
  headers: process.env.AR_API_KEY ? { Authorization: `Bearer ${process.env.AR_API_KEY}` } : {},
});
agent.addMessage({ id: crypto.randomUUID(), role: "user", content: message });

// The front end's own tools: offered to the model with every run, run here.
const tools = [
  {
    name: "browser_time",
    description: "The current time where the user is",
    parameters: { type: "object", properties: {} },
  },
];
const run = { browser_time: () => new Date().toString() };

let pendingCalls = [];
const print = {
  onRunFinishedEvent: ({ pendingToolCallIds }) => {
    pendingCalls = pendingToolCallIds ?? [];
  },
  onTextMessageContentEvent: ({ event }) => process.stdout.write(event.delta),
  onTextMessageEndEvent: () => process.stdout.write("\n"),
  onToolCallStartEvent: ({ event }) => process.stdout.write(`[tool ${event.toolCallName}] `),
  onToolCallEndEvent: ({ toolCallArgs }) => process.stdout.write(`${JSON.stringify(toolCallArgs)}\n`),
  onToolCallResultEvent: ({ event }) => process.stdout.write(`[result] ${event.content.split("\n")[0]}\n`),
  onRunErrorEvent: ({ event }) => process.stdout.write(`[error ${event.code ?? ""}] ${event.message}\n`),
};

let params = { tools };
for (;;) {
  pendingCalls = [];
  await agent.runAgent(params, print);
  if (pendingCalls.length > 0) {
    // The model called front-end tools: run them and answer with tool
    // messages; the next run carries them and the turn goes on.
    for (const id of pendingCalls) {
      const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === id);
      const content = run[call?.function.name]?.() ?? `no tool ${call?.function.name} here`;
      process.stdout.write(`[front-end ${call?.function.name}] ${content}\n`);
      agent.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: id, content });
    }
    params = { tools };
    continue;
  }
  if (agent.pendingInterrupts.length === 0) break;
  // Each interrupt is a runtime action: its id is the action id, its
  // metadata lists the decisions it offers.
  const resume = [];
  for (const interrupt of agent.pendingInterrupts) {
    const decisions = interrupt.metadata?.agentruntime?.decisions ?? ["allow_once", "deny"];
    process.stdout.write(`\n[approval] ${interrupt.message}\n`);
    let decision = decisions[0];
    if (!yes) {
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      const answer = (await rl.question(`decision (${decisions.join(", ")}) [${decision}]: `)).trim();
      rl.close();
      decision = answer || decision;
    }
    resume.push({ interruptId: interrupt.id, status: "resolved", payload: { decision } });
  }
  params = { tools, resume };
}
