// The session timeline: events folded into items (model deltas joined into
// one text, reasoning folded, a tool call with its arguments and result) and
// drawn as a virtualized list of fixed-height rows, so a session of tens of
// thousands of events scrolls as smoothly as one of ten.
import { toJson } from "./protobuf.js";
import type { RuntimeEvent } from "../../clients/typescript/src/index.js";
import { RuntimeEventSchema } from "../../clients/typescript/src/gen/agentruntime/events/v1/envelope_pb.js";
import { Decision, DecisionSource, NetworkMode, PermissionResolution, SandboxMode, ViolationKind } from "../../clients/typescript/src/gen/agentruntime/events/v1/permission_pb.js";
import { fmtCost, h } from "./dom.js";

/** name reads an enum value as its lower-case name without the enum's prefix. */
const name = (e: Record<number, string>, v: number) => (e[v] ?? String(v)).toLowerCase();

export type Kind = "turn" | "text" | "reasoning" | "tool" | "action" | "output" | "permission" | "sandbox" | "subagent" | "queue" | "cost" | "error" | "event";

export interface Item {
  kind: Kind;
  type: string; // the type of the event that opened it
  seq: bigint; // the first event's sequence
  lastSeq: bigint;
  turnId: string;
  stepId: string;
  title: string;
  text: string;
  events: RuntimeEvent[]; // every event folded into it, in order
  downloads: { name: string; uri: string }[];
  link?: string;
}

export const rowHeight = 28;

export class Timeline {
  items: Item[] = [];
  /** Every sequence folded in, in order: the view's proof of no gap or duplicate. */
  sequences: bigint[] = [];
  types: string[] = [];
  private tools = new Map<string, Item>();
  private lastSeq = 0n;

  /** add folds one event; false when it is at or below what was seen (a duplicate). */
  add(ev: RuntimeEvent, sessionId: string): boolean {
    if (ev.sequence <= this.lastSeq) return false;
    this.lastSeq = ev.sequence;
    this.sequences.push(ev.sequence);
    this.types.push(ev.type);
    const p = ev.payload;
    const last = this.items[this.items.length - 1];
    const joinable = (kind: Kind) => last && last.kind === kind && last.turnId === ev.turnId && last.stepId === ev.stepId;
    switch (p.case) {
      case "modelDelta":
        if (joinable("text")) return this.extend(last, ev, p.value.text);
        return this.push(ev, "text", "model", p.value.text);
      case "reasoningDelta":
        if (joinable("reasoning")) return this.extend(last, ev, p.value.text);
        return this.push(ev, "reasoning", "reasoning", p.value.text);
    }
    if (ev.toolCallId && ev.type.startsWith("tool.")) {
      let item = this.tools.get(ev.toolCallId);
      if (!item) {
        item = this.push0(ev, "tool", "tool " + ev.toolCallId, "");
        this.tools.set(ev.toolCallId, item);
      }
      item.events.push(ev);
      item.lastSeq = ev.sequence;
      if (p.case === "toolStarted") item.title = "tool " + p.value.toolName;
      if (p.case === "toolArgs") item.text = "args " + p.value.safeArgsJson + item.text;
      if (p.case === "toolResult") {
        item.text += (p.value.isError ? " → error: " : " → ") + p.value.preview;
        if (p.value.output?.uri) item.downloads.push({ name: ev.toolCallId + ".out", uri: p.value.output.uri });
      }
      if (p.case === "toolFailed") item.text += ` → failed (${p.value.category}): ${p.value.message}`;
      return true;
    }
    const kind = kindOf(ev.type);
    const item = this.push0(ev, kind, ev.type, summary(ev));
    for (const [role, ref] of Object.entries(ev.refs)) {
      if (ref.includes("://")) item.downloads.push({ name: `${ev.type}-${role}`, uri: ref });
    }
    if (p.case === "outputSpilled") {
      if (p.value.output?.uri) item.downloads.push({ name: "output-" + ev.sequence, uri: p.value.output.uri });
    }
    if (p.case === "subagentSpawned") item.link = `#/session/${encodeURIComponent(sessionId)}?thread=${encodeURIComponent(p.value.childThreadId)}`;
    return true;
  }

  private extend(item: Item, ev: RuntimeEvent, text: string): boolean {
    item.text += text;
    item.lastSeq = ev.sequence;
    item.events.push(ev);
    return true;
  }

  private push(ev: RuntimeEvent, kind: Kind, title: string, text: string): boolean {
    this.push0(ev, kind, title, text);
    return true;
  }

  private push0(ev: RuntimeEvent, kind: Kind, title: string, text: string): Item {
    const item: Item = { kind, type: ev.type, seq: ev.sequence, lastSeq: ev.sequence, turnId: ev.turnId, stepId: ev.stepId, title, text, events: [ev], downloads: [] };
    this.items.push(item);
    return item;
  }
}

function kindOf(type: string): Kind {
  if (type.startsWith("turn.")) return "turn";
  if (type.startsWith("action.")) return "action";
  if (type.startsWith("output.")) return "output";
  if (type.startsWith("permission.")) return "permission";
  if (type.startsWith("sandbox.")) return "sandbox";
  if (type.startsWith("subagent.")) return "subagent";
  if (type.startsWith("queue.")) return "queue";
  if (type.startsWith("cost.") || type.startsWith("routing.") || type.startsWith("quota.") || type.startsWith("rate_limit.")) return "cost";
  if (type.endsWith(".failed") || type.endsWith(".error") || type.endsWith(".violation")) return "error";
  return "event";
}

/** summary is a one-line reading of an event's payload. */
function summary(ev: RuntimeEvent): string {
  const p = ev.payload;
  switch (p.case) {
    case "turnSubmitted":
      // How it is claimed first (a fact without them: priority 3, the session's key).
      return `priority ${p.value.priority || 3} · key ${p.value.fairnessKey || ev.sessionId} · ${JSON.stringify(payloadJson(ev)).slice(0, 300)}`;
    case "turnCompleted":
      return [p.value.stopReason, p.value.summary].filter(Boolean).join(": ");
    case "actionRequired":
      return `${p.value.prompt} [${p.value.decisions.join(", ")}]`;
    case "subagentSpawned":
      return `${p.value.role} → thread ${p.value.childThreadId}: ${p.value.objective}`;
    case "queueChanged":
      // A delta: the queue itself is on the thread read model.
      return `${p.value.change} ${p.value.turnId}${p.value.position === undefined ? "" : ` at position ${p.value.position}`}${p.value.queueLength === undefined ? "" : ` (${p.value.queueLength} queued)`}`;
    case "permissionEvaluated":
      return `${p.value.name}: ${name(Decision, p.value.decision)} by ${name(DecisionSource, p.value.decisionSource)}${p.value.decisionReason ? ` (${p.value.decisionReason})` : ""}${p.value.destructive ? ", destructive" : ""}`;
    case "permissionRequested":
      return `${p.value.name}: ${p.value.prompt}`;
    case "permissionResolved":
      return `${name(PermissionResolution, p.value.resolution)}: ${p.value.decision} by ${p.value.responder}${p.value.allowed ? " (allowed)" : " (not allowed)"}`;
    case "sandboxApplied": {
      const pr = p.value.profile;
      return `${p.value.name}: ${pr ? `${name(SandboxMode, pr.mode)}, network ${name(NetworkMode, pr.network)}, writes ${pr.writeRoots.join(", ") || "none"}` : "no profile"}`;
    }
    case "sandboxViolation":
      return `${name(ViolationKind, p.value.kind)} ${p.value.target}${p.value.blocked ? " (blocked)" : ""}: ${p.value.reason}`;
    case "costRecorded":
      return `${p.value.providerId}/${p.value.modelId}: ${fmtCost(p.value.cost?.totalNanos ?? 0n)} (${p.value.usage?.inputTokens ?? 0n} in, ${p.value.usage?.outputTokens ?? 0n} out)`;
  }
  const j = payloadJson(ev);
  return j && Object.keys(j).length ? JSON.stringify(j) : "";
}

export function payloadJson(ev: RuntimeEvent): Record<string, unknown> {
  try {
    const all = toJson(RuntimeEventSchema, ev, { alwaysEmitImplicit: false }) as Record<string, unknown>;
    // The payload is the one field named after the event type.
    const key = Object.keys(all).find((k) => !envelopeKeys.has(k));
    return (key ? (all[key] as Record<string, unknown>) : {}) ?? {};
  } catch {
    return {};
  }
}

const envelopeKeys = new Set([
  "type", "eventId", "timestamp", "sequence", "schemaVersion", "runtimeId", "tenantId", "sessionId", "threadId", "turnId", "taskId", "runId",
  "attemptId", "stepId", "toolCallId", "actionId", "subagentId", "processId", "jobId", "channelId", "evidenceId", "traceId", "spanId", "refs",
  "requestId", "artifactId", "jobItemId",
]);

/**
 * VirtualList draws only the rows in view (plus a margin) of a list whose
 * rows all have one height; it follows the end while the user is there.
 */
export class VirtualList {
  readonly el: HTMLDivElement;
  private spacer: HTMLDivElement;
  private rows: HTMLDivElement;
  private follow = true;
  private scheduled = false;

  constructor(private count: () => number, private row: (i: number) => HTMLElement) {
    this.spacer = h("div", { class: "vspacer" });
    this.rows = h("div", { class: "vrows" });
    this.el = h("div", { class: "vlist", id: "timeline", tabindex: 0 }, this.spacer, this.rows);
    this.el.addEventListener("scroll", () => {
      this.follow = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - rowHeight;
      this.schedule();
    }, { passive: true });
  }

  /** schedule redraws on the next frame (many events in one frame draw once). */
  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.draw();
    });
  }

  private draw() {
    const n = this.count();
    this.spacer.style.height = `${n * rowHeight}px`;
    if (this.follow) this.el.scrollTop = this.el.scrollHeight;
    const first = Math.max(0, Math.floor(this.el.scrollTop / rowHeight) - 10);
    const last = Math.min(n, Math.ceil((this.el.scrollTop + this.el.clientHeight) / rowHeight) + 10);
    const out: HTMLElement[] = [];
    for (let i = first; i < last; i++) {
      const r = this.row(i);
      r.style.top = `${i * rowHeight}px`;
      out.push(r);
    }
    this.rows.replaceChildren(...out);
    this.el.dataset.rows = String(n);
  }
}
