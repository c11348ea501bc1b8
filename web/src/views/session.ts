// A session: the live timeline of its events (from the start of the log,
// then live; the client resumes by cursor after a dropped connection or a
// server restart, so nothing is missed or shown twice), the thread's state
// (active turn, queue, pending approvals), submit and interrupt, exports.
import { FactState } from "../../../clients/typescript/src/gen/agentruntime/common/v1/common_pb.js";
import { ActionStatus, ThreadStatus, TurnStatus } from "../../../clients/typescript/src/gen/agentruntime/control/v1/status_pb.js";
import { enumWord } from "../../../clients/typescript/src/enums.js";
import { ScopeKind } from "../../../clients/typescript/src/gen/agentruntime/evidence/v1/evidence_pb.js";
import { client, errorText, noteTenant } from "../api.js";
import { download, fmtTime, h, mount } from "../dom.js";
import type { Route } from "../main.js";
import { payloadJson, Timeline, VirtualList, type Item } from "../timeline.js";
import { actionCard } from "./actions.js";

declare global {
  interface Window {
    /** The timeline's folded sequences and types (the browser test reads them). */
    agentruntimeTimeline?: () => { sequences: string[]; types: string[] };
  }
}

export async function sessionView(view: HTMLElement, r: Route, signal: AbortSignal) {
  const sessionId = r.path[1] ?? "";
  const threadId = r.params.get("thread") ?? "";
  const submitThread = threadId || "main";
  const c = client();
  const tl = new Timeline();
  window.agentruntimeTimeline = () => ({ sequences: tl.sequences.map(String), types: tl.types });

  let selected: Item | undefined;
  const detail = h("aside", { class: "detail", id: "detail" }, h("p", { class: "muted" }, "Select a row to see it whole."));
  const list = new VirtualList(() => tl.items.length, (i) => row(tl.items[i]));
  const live = h("span", { class: "live", id: "live" }, "connecting…");
  const state = h("section", { class: "state", id: "thread-state" });
  const pending = h("section", { class: "actions", id: "session-approvals" });
  const text = h("textarea", { id: "turn-text", rows: 2, placeholder: `Submit a turn to ${sessionId}/${submitThread} (Ctrl+Enter)` });
  const submitMsg = h("span", { class: "muted" });
  const submit = async () => {
    if (!text.value.trim()) return;
    try {
      const res = await c.submitTurn({ sessionId, threadId: submitThread, text: text.value });
      mount(submitMsg, `turn ${res.turn?.turnId} ${res.turn ? enumWord(TurnStatus, res.turn.admission) : ""}`);
      text.value = "";
    } catch (e) {
      mount(submitMsg, h("span", { class: "error" }, errorText(e)));
    }
  };
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) submit();
  });
  const exporter = (what: "evidence" | "replay") => async () => {
    try {
      const scope = { sessionId, kind: ScopeKind.SESSION };
      const res = what === "evidence" ? await c.evidence.exportEvidence({ scope }) : await c.evidence.exportReplay({ scope });
      const uri = res.result?.pack?.uri;
      if (!uri) throw new Error("the export named no pack");
      const { data } = await c.readOutput(uri);
      download(`${sessionId}-${what}.json`, data, "application/json");
    } catch (e) {
      mount(submitMsg, h("span", { class: "error" }, errorText(e)));
    }
  };

  mount(view,
    h("div", { class: "title" },
      h("h1", null, "Session ", h("code", null, sessionId), threadId ? [" thread ", h("code", null, threadId)] : null),
      live,
      h("span", { class: "tools" },
        h("a", { href: `#/costs?session=${encodeURIComponent(sessionId)}` }, "Routing & cost"), " ",
        h("a", { href: `#/tasks?session=${encodeURIComponent(sessionId)}` }, "Tasks"), " ",
        h("button", { id: "export-evidence", onclick: exporter("evidence") }, "Evidence pack ⤓"),
        h("button", { id: "export-replay", onclick: exporter("replay") }, "Replay case ⤓"))),
    h("div", { class: "session" },
      h("div", { class: "main" },
        list.el,
        h("form", { class: "submit", onsubmit: (e: Event) => { e.preventDefault(); submit(); } }, text, h("button", { id: "submit-turn" }, "Submit"), submitMsg)),
      h("div", { class: "side" }, state, pending, detail)));

  function row(item: Item): HTMLElement {
    const folded = item.kind === "reasoning";
    const line = folded ? `▸ reasoning (${item.text.length} chars, folded)` : item.text;
    const el = h("div", { class: `row k-${item.kind}${item === selected ? " selected" : ""}`, "data-seq": String(item.seq), "data-type": item.type, onclick: () => { selected = item; showDetail(item); list.schedule(); } },
      h("span", { class: "seq" }, String(item.seq)),
      h("span", { class: "type" }, item.kind === "text" || item.kind === "tool" || folded ? item.title : item.type),
      h("span", { class: "line" }, item.link ? h("a", { href: item.link }, line) : line),
      item.downloads.length ? h("span", { class: "dl" }, "⤓") : null);
    return el;
  }

  function showDetail(item: Item) {
    mount(detail,
      h("h2", null, item.title, " ", h("span", { class: "muted" }, `#${item.seq}${item.lastSeq !== item.seq ? `–${item.lastSeq}` : ""}`)),
      item.turnId ? h("p", null, "turn ", h("code", null, item.turnId), item.stepId ? [" step ", h("code", null, item.stepId)] : null) : null,
      item.link ? h("p", null, h("a", { href: item.link }, "Open the subagent's thread")) : null,
      item.kind === "text" || item.kind === "reasoning" ? h("pre", { class: "text" }, item.text)
        : item.events.map((ev) => h("details", { open: item.events.length < 4 },
          h("summary", null, `${ev.type} #${ev.sequence} · ${fmtTime(ev.timestamp)}`),
          h("pre", null, JSON.stringify(payloadJson(ev), null, 2)))),
      item.downloads.map((d) => h("button", { class: "download", onclick: async () => {
        try {
          const { data } = await c.readOutput(d.uri);
          download(d.name, data);
        } catch (e) {
          alert(errorText(e));
        }
      } }, `Download ${d.name}`)));
  }

  // The read model is read at least as new as the last control fact that
  // asked for the refresh: a subscriber can see a fact before the
  // projection has applied it.
  let refreshing: Promise<void> | undefined;
  let again = false;
  let minSequence = 0n;
  const refresh = async (seq = 0n) => {
    if (seq > minSequence) minSequence = seq;
    if (refreshing) { again = true; return; }
    refreshing = (async () => {
      try {
        const got = await c.control.getSession({ sessionId, historyLimit: 5, minSequence }, { signal });
        const threads = got.threads.filter((t) => !threadId || t.threadId === threadId);
        mount(state, threads.length === 0 ? h("p", { class: "muted" }, "No thread yet: submit a turn.") : threads.map((t) => h("div", { class: "thread" },
          h("h2", null, "thread ", h("a", { href: `#/session/${encodeURIComponent(sessionId)}?thread=${encodeURIComponent(t.threadId)}` }, t.threadId), " ", h("span", { class: `status ${enumWord(ThreadStatus, t.status)}` }, enumWord(ThreadStatus, t.status))),
          t.parentThreadId ? h("p", null, "subagent of ", h("a", { href: `#/session/${encodeURIComponent(sessionId)}?thread=${encodeURIComponent(t.parentThreadId)}` }, t.parentThreadId)) : null,
          h("p", null, "active turn: ", t.activeTurnId ? [h("code", null, t.activeTurnId), " ", h("button", { class: "deny", id: "interrupt", onclick: async () => {
            try {
              await c.control.interruptTurn({ sessionId, threadId: t.threadId, turnId: t.activeTurnId, reason: "interrupted from the console" });
            } catch (e) {
              mount(submitMsg, h("span", { class: "error" }, errorText(e)));
            }
          } }, "Interrupt")] : "none"),
          h("p", null, "queue: ", t.queuedTurnIds.length ? t.queuedTurnIds.map((q) => h("code", null, q + " ")) : "empty"),
          h("p", { class: "muted" }, `last outcome: ${t.lastOutcome ? enumWord(TurnStatus, t.lastOutcome) : "—"} · turns ${t.turnCount} · permission ${t.permission ? enumWord(FactState, t.permission.state) : "?"} · routing ${t.routing ? enumWord(FactState, t.routing.state) : "?"}`))));
        const acts = threads.flatMap((t) => t.pendingActions.filter((a) => a.status === ActionStatus.PENDING));
        mount(pending, acts.length ? [h("h2", null, "Waiting for you"), acts.map((a) => actionCard(a, () => void refresh()))] : null);
      } catch (e) {
        if (!signal.aborted) mount(state, h("p", { class: "error" }, errorText(e)));
      } finally {
        refreshing = undefined;
        if (again) { again = false; void refresh(); }
      }
    })();
  };
  await refresh();

  let shown = 0;
  for await (const item of c.subscribe({ sessionId, threadId }, {
    fromSequence: 1n,
    signal,
    onReconnect: ({ fromSequence }) => mount(live, h("span", { class: "warn" }, `reconnecting from #${fromSequence}…`)),
  })) {
    switch (item.kind) {
      case "event":
        noteTenant(item.event.tenantId);
        if (tl.add(item.event, sessionId)) list.schedule();
        if (/^(turn|queue|action|thread|permission\.(requested|resolved)|subagent)\./.test(item.event.type)) void refresh(/^(turn|queue|action|thread|subagent)\./.test(item.event.type) ? item.sequence : 0n);
        break;
      case "snapshot_repaired":
        void refresh();
        break;
      case "gap":
        mount(live, h("span", { class: "warn" }, `events #${item.requestedSequence}–#${item.firstAvailableSequence - 1n} are gone (retention)`));
        continue;
      case "heartbeat":
        break;
    }
    if (tl.sequences.length !== shown || item.kind === "heartbeat") {
      shown = tl.sequences.length;
      mount(live, h("span", { class: "ok" }, `live · ${shown} events · #${item.sequence}`));
    }
  }
}
