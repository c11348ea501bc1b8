// A small A2A peer agent built with @a2a-js/sdk's server classes
// (DefaultRequestHandler, an AgentExecutor, the express handlers): the
// remote subagent of the runtime's end-to-end tests (docs/a2a.md,
// "Calling a peer"). It streams: a task, "working", an artifact, then
// "completed" with its answer. A message that says "ask" makes it ask for
// input first (input-required); the next message in the same task is the
// answer it completes with. A message that says "hang" keeps it working
// until the task is cancelled.
//
// With a token (PEER_TOKEN) it is a peer that asks for credentials: its
// card declares a bearer scheme, and its JSON-RPC binding answers 401 to a
// call without "Authorization: Bearer <token>" (the card stays public).
//
// Usage: node peer.mjs  — it prints "peer listening http://127.0.0.1:PORT"
// and serves the card at /.well-known/agent-card.json. PEER_PORT sets the
// port (default: a free one); PEER_TOKEN the token it requires.
import express from "express";

import { Role, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const text = (parts) =>
  (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("");

const agentMessage = (taskId, contextId, value) => ({
  messageId: crypto.randomUUID(),
  role: Role.ROLE_AGENT,
  parts: [{ content: { $case: "text", value } }],
  taskId,
  contextId,
  extensions: [],
  referenceTaskIds: [],
});

const status = (taskId, contextId, state, message) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, message: message ? agentMessage(taskId, contextId, message) : undefined, timestamp: new Date().toISOString() },
    metadata: {},
  });

class PeerExecutor {
  constructor() {
    this.hanging = new Map();
    this.contexts = new Map();
  }

  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const said = text(ctx.userMessage.parts);
    this.contexts.set(taskId, contextId);
    // Every execution starts with the task (the SDK refuses a stream
    // that starts with a status update), a follow-up's as it stands.
    bus.publish(
      AgentEvent.task(
        ctx.task ?? { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED }, history: [ctx.userMessage], artifacts: [], metadata: {} },
      ),
    );
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING, "Looking into it."));
    const asked = ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    if (!asked && /\bask\b/i.test(said)) {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, "Which colour should it be?"));
      bus.finished();
      return;
    }
    if (!asked && /\bhang\b/i.test(said)) {
      // Until cancelTask publishes the end.
      await new Promise((resolve) => this.hanging.set(taskId, resolve));
      bus.finished();
      return;
    }
    const answer = asked ? `Painted it ${said}.` : `Peer answer to: ${said}`;
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: "answer", name: "answer", parts: [{ content: { $case: "text", value: answer } }], extensions: [], metadata: {} },
        append: false,
        lastChunk: true,
        metadata: {},
      }),
    );
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, "Done."));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, this.contexts.get(taskId) ?? "", TaskState.TASK_STATE_CANCELED, "Cancelled."));
    this.hanging.get(taskId)?.();
    this.hanging.delete(taskId);
  }
}

/**
 * startPeer serves the peer on a loopback port (port, or a free one); with
 * token, calls must carry it as a bearer token. It answers its base URL
 * and a stop function.
 */
export async function startPeer({ port = 0, token = "" } = {}) {
  const app = express();
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const card = {
    name: "paint-peer",
    description: "A test peer that answers, and asks for a colour when told to ask.",
    version: "1.0.0",
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "paint", name: "paint", description: "Paints things.", tags: ["test"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    securitySchemes: token
      ? { bearer: { scheme: { $case: "httpAuthSecurityScheme", value: { description: "A bearer token.", scheme: "Bearer", bearerFormat: "" } } } }
      : {},
    securityRequirements: token ? [{ schemes: { bearer: { list: [] } } }] : [],
    signatures: [],
  };
  const executor = new PeerExecutor();
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
  if (token) {
    app.use("/a2a/jsonrpc", (req, res, next) => {
      if (req.headers.authorization === `Bearer ${token}`) {
        return next();
      }
      res.status(401).set("WWW-Authenticate", "Bearer").json({ error: "a bearer token is required" });
    });
  }
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  const stop = () => new Promise((resolve) => server.close(() => resolve()));
  server.closeAllConnections && process.once("exit", () => server.closeAllConnections());
  return { base, card: `${base}/.well-known/agent-card.json`, stop, server };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const peer = await startPeer({ port: Number(process.env.PEER_PORT ?? 0), token: process.env.PEER_TOKEN ?? "" });
  console.log(`peer listening ${peer.base}`);
}
