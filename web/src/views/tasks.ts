// Tasks: the list by status, the graph of their edges drawn, one task's
// attempts with their errors, retry and cancel.
import type { Task } from "../../../clients/typescript/src/gen/agentruntime/tasks/v1/types_pb.js";
import { EdgeRelation, RunStatus, TaskStatus } from "../../../clients/typescript/src/gen/agentruntime/tasks/v1/types_pb.js";
import { client, errorText } from "../api.js";
import { fmtTime, h, mount, svg } from "../dom.js";
import { go, type Route } from "../main.js";

const statusName = (s: TaskStatus) => (TaskStatus[s] ?? String(s)).toLowerCase();
const runName = (s: RunStatus) => (RunStatus[s] ?? String(s)).toLowerCase();

export async function tasksView(view: HTMLElement, r: Route, signal: AbortSignal) {
  const status = r.params.get("status") ?? "";
  const sessionId = r.params.get("session") ?? "";
  const select = h("select", { id: "task-status", "aria-label": "Status", onchange: () => go(`#/tasks?status=${select.value}${sessionId ? `&session=${encodeURIComponent(sessionId)}` : ""}`) },
    h("option", { value: "" }, "any status"),
    Object.entries(TaskStatus).filter(([k, v]) => typeof v === "number" && v !== 0).map(([k, v]) => h("option", { value: k, selected: k === status }, statusName(v as TaskStatus))));
  const graph = h("div", { class: "graph", id: "task-graph" });
  const body = h("tbody");
  mount(view, h("h1", null, "Tasks", sessionId ? [" of session ", h("code", null, sessionId)] : null), h("div", { class: "bar" }, select),
    h("div", { class: "split" },
      h("table", { class: "list" }, h("thead", null, h("tr", null, ["Task", "Title", "Status", "Attempts", "Last error", "Updated"].map((c) => h("th", null, c)))), body),
      graph));
  const c = client();
  const tasks: Task[] = [];
  let token = "";
  do {
    const page = await c.tasks.listTasks({ status: status ? TaskStatus[status as keyof typeof TaskStatus] : TaskStatus.UNSPECIFIED, sessionId, pageSize: 500, pageToken: token }, { signal });
    tasks.push(...page.tasks);
    token = page.nextPageToken;
  } while (token && tasks.length < 5000);
  mount(body, tasks.length ? tasks.map((t) => h("tr", { "data-task": t.taskId },
    h("td", null, h("a", { href: `#/task/${encodeURIComponent(t.taskId)}` }, t.taskId)),
    h("td", null, t.spec?.title ?? ""),
    h("td", null, h("span", { class: `status ${statusName(t.status)}` }, statusName(t.status))),
    h("td", { class: "num" }, String(t.attempts.length)),
    h("td", null, t.lastError ? `${t.lastError.category}: ${t.lastError.message}` : ""),
    h("td", null, fmtTime(t.updatedAt)))) : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No tasks.")));
  mount(graph, drawGraph(tasks.slice(0, 200)));
}

export async function taskView(view: HTMLElement, r: Route, signal: AbortSignal) {
  const taskId = r.path[1] ?? "";
  const c = client();
  const got = await c.tasks.getTask({ taskId }, { signal });
  const t = got.task!;
  const msg = h("span", { role: "alert" });
  const act = (what: "retry" | "cancel") => async () => {
    const reason = prompt(`Why ${what} ${taskId}?`, `${what} from the console`);
    if (reason === null) return;
    try {
      if (what === "retry") await c.tasks.retryTask({ taskId, reason: reason || "retry from the console" });
      else await c.tasks.cancelTask({ taskId, reason });
      mount(msg, `${what}: recorded`);
      setTimeout(() => window.dispatchEvent(new HashChangeEvent("hashchange")), 300);
    } catch (e) {
      mount(msg, h("span", { class: "error" }, errorText(e)));
    }
  };
  // The task's neighbourhood: it and the tasks its edges name.
  const ids = new Set([t.taskId, ...t.edges.map((e) => e.targetId), ...got.reverseEdges.map((e) => e.sourceTaskId), t.parentTaskId].filter(Boolean));
  const near = await Promise.all([...ids].map((id) => (id === t.taskId ? Promise.resolve(t) : c.tasks.getTask({ taskId: id }, { signal }).then((x) => x.task!).catch(() => undefined))));
  mount(view,
    h("h1", null, "Task ", h("code", null, t.taskId), " ", h("span", { class: `status ${statusName(t.status)}` }, statusName(t.status))),
    h("p", null, t.spec?.title ?? "", t.sessionId ? [" · session ", h("a", { href: `#/session/${encodeURIComponent(t.sessionId)}?thread=${encodeURIComponent(t.threadId)}` }, t.sessionId)] : null,
      ` · priority ${t.priority || 3} · key ${t.fairnessKey || t.sessionId || "—"}`,
      t.statusReason ? ` · ${t.statusReason}` : ""),
    h("div", { class: "bar" }, h("button", { id: "task-retry", onclick: act("retry") }, "Retry"), h("button", { id: "task-cancel", class: "deny", onclick: act("cancel") }, "Cancel"), msg),
    h("h2", null, "Attempts"),
    h("table", { class: "list", id: "attempts" },
      h("thead", null, h("tr", null, ["#", "Run", "Status", "Worker", "Started", "Ended", "Error"].map((x) => h("th", null, x)))),
      h("tbody", null, t.attempts.length ? t.attempts.map((a) => h("tr", null,
        h("td", { class: "num" }, String(a.ordinal)), h("td", null, a.runId), h("td", null, runName(a.status)), h("td", null, a.worker?.workerId ?? ""),
        h("td", null, fmtTime(a.startedAt)), h("td", null, fmtTime(a.endedAt)),
        h("td", { class: a.error ? "error" : "" }, a.error ? `${a.error.category}${a.error.code ? "/" + a.error.code : ""}: ${a.error.message}` : ""))) : h("tr", null, h("td", { colspan: 7, class: "muted" }, "No attempts yet.")))),
    h("h2", null, "Graph"),
    h("div", { class: "graph", id: "task-graph" }, drawGraph(near.filter((x): x is Task => !!x))));
}

interface GEdge { from: string; to: string; rel: string }

/** graphEdges are the task-to-task edges among tasks, each once, drawn from blocker (or parent) to blocked (or child). */
export function graphEdges(tasks: Task[]): GEdge[] {
  const ids = new Set(tasks.map((t) => t.taskId));
  const out = new Map<string, GEdge>();
  const add = (from: string, to: string, rel: string) => {
    if (ids.has(from) && ids.has(to) && from !== to) out.set(`${from}>${to}`, { from, to, rel });
  };
  for (const t of tasks) {
    if (t.parentTaskId) add(t.parentTaskId, t.taskId, "child");
    for (const e of t.edges) {
      switch (e.relation) {
        case EdgeRelation.BLOCKS: add(t.taskId, e.targetId, "blocks"); break;
        case EdgeRelation.BLOCKED_BY: add(e.targetId, t.taskId, "blocks"); break;
        case EdgeRelation.CHILD: add(t.taskId, e.targetId, "child"); break;
        case EdgeRelation.PARENT: add(e.targetId, t.taskId, "child"); break;
        case EdgeRelation.SOURCE_TASK: add(e.targetId, t.taskId, "source"); break;
      }
    }
  }
  return [...out.values()];
}

/** drawGraph lays tasks out in layers by their longest path from a root and draws the edges between them. */
export function drawGraph(tasks: Task[]): Element {
  if (tasks.length === 0) return h("p", { class: "muted" }, "No tasks to draw.");
  const edges = graphEdges(tasks);
  const layer = new Map<string, number>(tasks.map((t) => [t.taskId, 0]));
  for (let i = 0; i < tasks.length; i++) {
    let changed = false;
    for (const e of edges) {
      const want = layer.get(e.from)! + 1;
      if (want > layer.get(e.to)! && want < tasks.length) { layer.set(e.to, want); changed = true; }
    }
    if (!changed) break;
  }
  const byLayer = new Map<number, Task[]>();
  for (const t of tasks) byLayer.set(layer.get(t.taskId)!, [...(byLayer.get(layer.get(t.taskId)!) ?? []), t]);
  const W = 170, H = 44, GX = 50, GY = 24;
  const pos = new Map<string, { x: number; y: number }>();
  let rows = 0;
  for (const [l, ts] of byLayer) {
    ts.forEach((t, i) => pos.set(t.taskId, { x: 10 + l * (W + GX), y: 10 + i * (H + GY) }));
    rows = Math.max(rows, ts.length);
  }
  const width = 20 + byLayer.size * (W + GX), height = 20 + rows * (H + GY);
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `task graph: ${tasks.length} tasks, ${edges.length} edges` },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z" }))));
  for (const e of edges) {
    const a = pos.get(e.from)!, b = pos.get(e.to)!;
    root.append(svg("line", { class: `edge ${e.rel}`, "data-from": e.from, "data-to": e.to, x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, "marker-end": "url(#arrow)" }));
  }
  for (const t of tasks) {
    const p = pos.get(t.taskId)!;
    const a = svg("a", { href: `#/task/${encodeURIComponent(t.taskId)}`, class: "node", "data-task": t.taskId },
      svg("rect", { x: p.x, y: p.y, width: W, height: H, rx: 6, class: `st-${statusName(t.status)}` }),
      svg("text", { x: p.x + 8, y: p.y + 18 }, t.taskId.slice(0, 22)),
      svg("text", { x: p.x + 8, y: p.y + 35, class: "sub" }, statusName(t.status).replace("task_status_", "")));
    root.append(a);
  }
  return root;
}
