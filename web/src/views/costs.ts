// Routing and cost: per session (each thread's routing decision, cost,
// quota and rate-limit state, budgets) and per model (cost.recorded facts
// of the tenant, or of one session, summed by model).
import { FactState } from "../../../clients/typescript/src/gen/agentruntime/common/v1/common_pb.js";
import { client, noteTenant } from "../api.js";
import { fmtCost, h, mount } from "../dom.js";
import { go, type Route } from "../main.js";

const fact = (s?: FactState) => (s === undefined ? "unknown" : (FactState[s] ?? String(s)).toLowerCase());

export async function costsView(view: HTMLElement, r: Route, signal: AbortSignal) {
  const sessionId = r.params.get("session") ?? "";
  const input = h("input", { id: "cost-session", placeholder: "session id (empty: the whole tenant)", value: sessionId, size: 36 });
  const perSession = h("section", { id: "cost-session-summary" });
  const perModel = h("tbody");
  const budgets = h("section", { id: "budgets" });
  mount(view, h("h1", null, "Routing & cost"),
    h("form", { class: "bar", onsubmit: (e: Event) => { e.preventDefault(); go(`#/costs?session=${encodeURIComponent(input.value.trim())}`); } }, input, h("button", null, "Show")),
    perSession,
    h("h2", null, "Per model", sessionId ? ` (session ${sessionId})` : " (tenant)"),
    h("table", { class: "list", id: "cost-models" }, h("thead", null, h("tr", null, ["Provider", "Model", "Calls", "Input tokens", "Output tokens", "Cost"].map((x) => h("th", null, x)))), perModel),
    budgets);
  const c = client();
  let summarySeq = 0n;
  if (sessionId) {
    const sum = await c.routing.getRoutingLimitSummary({ sessionId }, { signal });
    summarySeq = sum.sequence;
    mount(perSession, h("h2", null, "Session ", h("a", { href: `#/session/${encodeURIComponent(sessionId)}` }, sessionId)),
      h("table", { class: "list" }, h("thead", null, h("tr", null, ["Thread", "Turn", "Routing", "Model", "Candidates", "Fallbacks", "Cost recorded", "Calls", "Quota", "Rate limit"].map((x) => h("th", null, x)))),
        h("tbody", null, sum.threads.length ? sum.threads.map((t) => h("tr", null,
          h("td", null, t.threadId), h("td", null, t.turnId), h("td", null, fact(t.routingState)),
          h("td", null, t.decision ? `${t.decision.selectedProviderId}/${t.decision.selectedModelId}` : t.notPossible ? "not possible" : "—"),
          h("td", { class: "num" }, String(t.candidateCount)), h("td", { class: "num" }, String(t.fallbackCount)),
          h("td", { class: "num" }, t.cost ? fmtCost(t.cost.recordedNanos) : "—"), h("td", { class: "num" }, String(t.cost?.recordedCalls ?? 0)),
          h("td", null, fact(t.quotaState), t.lastQuotaBlocked ? " (blocked)" : t.lastQuotaLow ? " (low)" : ""),
          h("td", null, fact(t.rateLimitState)))) : h("tr", null, h("td", { colspan: 10, class: "muted" }, "No routed turn yet.")))));
  }
  const b = await c.routing.getBudgets({ sessionId }, { signal });
  mount(budgets, h("h2", null, "Budgets"), b.budgets.length ? h("table", { class: "list" },
    h("thead", null, h("tr", null, ["Budget", "Target", "Spent", "Limit", "Used"].map((x) => h("th", null, x)))),
    h("tbody", null, b.budgets.map((x) => h("tr", null, h("td", null, x.budgetId), h("td", null, x.targetId), h("td", { class: "num" }, fmtCost(x.spentNanos)),
      h("td", { class: "num" }, fmtCost(x.limitNanos)), h("td", null, h("meter", { min: 0, max: Number(x.limitNanos) || 1, value: Number(x.spentNanos) })))))) : h("p", { class: "muted" }, "No budgets configured."));

  // Sum cost.recorded facts from the start of the log up to the head the
  // reads above saw: a heartbeat at or past it says the subscription has
  // looked at everything up to there.
  const head = b.sequence > summarySeq ? b.sequence : summarySeq;
  const models = new Map<string, { provider: string; model: string; calls: number; input: bigint; output: bigint; nanos: bigint }>();
  const stop = new AbortController();
  signal.addEventListener("abort", () => stop.abort());
  for await (const item of c.subscribe({ sessionId, typePrefixes: ["cost.recorded"] }, { fromSequence: 1n, heartbeatMs: 200, signal: stop.signal })) {
    if (item.kind === "heartbeat" && item.sequence >= head) break;
    if (item.kind !== "event" || item.event.payload.case !== "costRecorded") continue;
    noteTenant(item.event.tenantId);
    const v = item.event.payload.value;
    const k = `${v.providerId}/${v.modelId}`;
    const m = models.get(k) ?? { provider: v.providerId, model: v.modelId, calls: 0, input: 0n, output: 0n, nanos: 0n };
    m.calls++;
    m.input += v.usage?.inputTokens ?? 0n;
    m.output += v.usage?.outputTokens ?? 0n;
    m.nanos += v.cost?.totalNanos ?? 0n;
    models.set(k, m);
  }
  stop.abort();
  mount(perModel, models.size ? [...models.values()].map((m) => h("tr", null, h("td", null, m.provider), h("td", null, m.model), h("td", { class: "num" }, String(m.calls)),
    h("td", { class: "num" }, String(m.input)), h("td", { class: "num" }, String(m.output)), h("td", { class: "num" }, fmtCost(m.nanos)))) : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No cost recorded.")));
}
