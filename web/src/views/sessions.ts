// Sessions: every session of the tenant with its status, last activity,
// active turn, pending approvals and cost so far; search by id.
import { ActionStatus, ThreadStatus } from "../../../clients/typescript/src/gen/agentruntime/control/v1/status_pb.js";
import { enumWord } from "../../../clients/typescript/src/enums.js";
import { client, errorText } from "../api.js";
import { fmtCost, fmtTime, h, mount } from "../dom.js";
import { go, type Route } from "../main.js";

export async function sessionsView(view: HTMLElement, r: Route, signal: AbortSignal) {
  const q = r.params.get("q") ?? "";
  const search = h("input", { type: "search", id: "session-search", placeholder: "session id", value: q, "aria-label": "Search sessions by id" });
  const table = h("tbody");
  const newSession = h("input", { id: "new-session", placeholder: "new session id", pattern: "[A-Za-z0-9][A-Za-z0-9_-]*" });
  mount(view,
    h("h1", null, "Sessions"),
    h("div", { class: "bar" },
      h("form", { onsubmit: (e: Event) => { e.preventDefault(); go(`#/sessions?q=${encodeURIComponent(search.value.trim())}`); } }, search, h("button", null, "Search")),
      h("form", { onsubmit: (e: Event) => { e.preventDefault(); if (newSession.value) go(`#/session/${encodeURIComponent(newSession.value)}?thread=main`); } }, newSession, h("button", null, "Open"))),
    h("table", { class: "list" },
      h("thead", null, h("tr", null, ["Session", "Status", "Last activity", "Active turn", "Pending approvals", "Turns", "Cost"].map((c) => h("th", null, c)))),
      table));
  search.focus();

  const c = client();
  const sessions = [];
  let token = "";
  do {
    const page = await c.control.listSessions({ pageSize: 200, pageToken: token }, { signal });
    sessions.push(...page.sessions);
    token = page.nextPageToken;
  } while (token && sessions.length < 2000);
  const shown = sessions.filter((s) => !q || s.sessionId.includes(q));
  if (shown.length === 0) {
    mount(table, h("tr", null, h("td", { colspan: 7, class: "muted" }, q ? `No session id contains "${q}".` : "No sessions yet: open one and submit a turn.")));
    return;
  }
  shown.sort((a, b) => Number((b.updatedAt?.seconds ?? 0n) - (a.updatedAt?.seconds ?? 0n)));
  const rows = shown.map((s) => {
    const cells = { status: h("td", null, "…"), active: h("td", null, "…"), pending: h("td", null, "…"), cost: h("td", { class: "num" }, "…") };
    const tr = h("tr", { "data-session": s.sessionId },
      h("td", null, h("a", { href: `#/session/${encodeURIComponent(s.sessionId)}` }, s.sessionId), s.title ? h("div", { class: "muted" }, s.title) : null),
      cells.status, h("td", null, fmtTime(s.updatedAt)), cells.active, cells.pending, h("td", { class: "num" }, String(s.turnCount)), cells.cost);
    return { s, tr, cells };
  });
  mount(table, rows.map((x) => x.tr));
  // The joined columns come from each session's read models, a few at a time.
  for (let i = 0; i < rows.length; i += 8) {
    await Promise.all(rows.slice(i, i + 8).map(async ({ s, cells }) => {
      try {
        const [got, routing] = await Promise.all([
          c.control.getSession({ sessionId: s.sessionId, historyLimit: 1 }, { signal }),
          c.routing.getRoutingLimitSummary({ sessionId: s.sessionId }, { signal }).catch(() => undefined),
        ]);
        const busy = got.threads.filter((t) => t.status !== ThreadStatus.IDLE);
        mount(cells.status, busy.length ? busy.map((t) => h("span", { class: `status ${enumWord(ThreadStatus, t.status)}` }, enumWord(ThreadStatus, t.status))) : h("span", { class: "status idle" }, "idle"));
        const active = got.threads.filter((t) => t.activeTurnId);
        mount(cells.active, active.length ? active.map((t) => h("div", null, t.activeTurnId, h("span", { class: "muted" }, ` (${t.threadId})`))) : "—");
        const pending = got.threads.reduce((n, t) => n + t.pendingActions.filter((a) => a.status === ActionStatus.PENDING).length, 0);
        mount(cells.pending, pending ? h("a", { href: "#/approvals", class: "badge" }, String(pending)) : "0");
        const nanos = (routing?.threads ?? []).reduce((n, t) => n + (t.cost?.recordedNanos ?? 0n), 0n);
        mount(cells.cost, routing ? h("a", { href: `#/costs?session=${encodeURIComponent(s.sessionId)}` }, fmtCost(nanos)) : "unknown");
      } catch (e) {
        if (!signal.aborted) mount(cells.status, h("span", { class: "error" }, errorText(e)));
      }
    }));
  }
}
