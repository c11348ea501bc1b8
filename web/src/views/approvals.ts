// Approvals: every pending action across the tenant's sessions, live.
// Keyboard first: j/k (or arrows) move, a approves, d denies, s allows for
// the session.
import { ActionStatus } from "../../../clients/typescript/src/gen/agentruntime/control/v1/status_pb.js";
import type { Action } from "../../../clients/typescript/src/gen/agentruntime/control/v1/control_pb.js";
import { client, noteTenant } from "../api.js";
import { h, mount } from "../dom.js";
import type { Route } from "../main.js";
import { actionCard, decideByKey } from "./actions.js";
import { webhooksSection } from "./webhooks.js";

export async function approvalsView(view: HTMLElement, _r: Route, signal: AbortSignal) {
  const list = h("div", { class: "actions", id: "approvals" });
  const hooks = h("section", { id: "webhooks" });
  mount(view, h("h1", null, "Approvals"),
    h("p", { class: "muted" }, "Every action waiting for a person, across sessions. Keys: ", h("kbd", null, "j"), "/", h("kbd", null, "k"), " move, ",
      h("kbd", null, "a"), " approve, ", h("kbd", null, "d"), " deny, ", h("kbd", null, "s"), " allow for this session."),
    list, hooks);
  const c = client();
  let selected = 0;
  const cards = () => [...list.querySelectorAll<HTMLElement>("article.action:not(.done)")];
  const select = (i: number) => {
    const all = cards();
    if (!all.length) return;
    selected = Math.max(0, Math.min(i, all.length - 1));
    all.forEach((x, j) => x.classList.toggle("selected", j === selected));
    all[selected].focus();
  };
  // Reads wait for the read model to have applied the fact that asked for
  // them (a subscriber can see it first): the last one seen per session (a
  // session's positions are of its partition; another session's may be of
  // another).
  const seen = new Map<string, bigint>();
  const load = async () => {
    const pending: Action[] = [];
    let token = "";
    do {
      const page = await c.control.listSessions({ pageSize: 200, pageToken: token }, { signal });
      const got = await Promise.all(page.sessions.map((s) => c.control.getSession({ sessionId: s.sessionId, historyLimit: 0, minSequence: seen.get(s.sessionId) ?? 0n }, { signal })));
      for (const g of got) for (const t of g.threads) pending.push(...t.pendingActions.filter((a) => a.status === ActionStatus.PENDING));
      token = page.nextPageToken;
    } while (token);
    pending.sort((a, b) => Number(a.sequence - b.sequence));
    mount(list, pending.length ? pending.map((a) => actionCard(a, () => setTimeout(() => select(selected), 0))) : h("p", { class: "muted", id: "no-approvals" }, "Nothing is waiting for a decision."));
    select(selected);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.ctrlKey || e.metaKey || e.altKey) return;
    const all = cards();
    if (e.key === "j" || e.key === "ArrowDown") select(selected + 1);
    else if (e.key === "k" || e.key === "ArrowUp") select(selected - 1);
    else if (all[selected] && decideByKey(all[selected], e.key)) e.preventDefault();
  };
  document.addEventListener("keydown", onKey);
  signal.addEventListener("abort", () => document.removeEventListener("keydown", onKey));
  await Promise.all([load(), webhooksSection(hooks, signal)]);
  // Live: any action fact of the tenant reloads the list; a channel fact
  // (a webhook's delivery among them) the webhooks.
  let timer: ReturnType<typeof setTimeout> | undefined;
  let hooksTimer: ReturnType<typeof setTimeout> | undefined;
  for await (const item of c.subscribe({ typePrefixes: ["action.", "channel."] }, { signal })) {
    if (item.kind !== "event") continue;
    noteTenant(item.event.tenantId);
    if (item.event.type.startsWith("channel.")) {
      clearTimeout(hooksTimer);
      hooksTimer = setTimeout(() => webhooksSection(hooks, signal).catch(() => {}), 100);
      continue;
    }
    const session = item.event.sessionId;
    if (item.sequence > (seen.get(session) ?? 0n)) seen.set(session, item.sequence);
    clearTimeout(timer);
    timer = setTimeout(() => load().catch(() => {}), 100);
  }
}
