// Webhooks: the tenant's subscriptions (ListWebhooks, never a secret) and
// their latest delivery outcomes, shown under the approvals: a webhook is
// how a person who is not looking at the console hears that something
// waits for them.
import type { Webhook } from "../../../clients/typescript/src/gen/agentruntime/control/v1/webhooks_pb.js";
import { client, errorText } from "../api.js";
import { h, mount } from "../dom.js";

const outcomeClass: Record<string, string> = { delivered: "completed", retrying: "running", failed: "failed", cancelled: "cancelled" };

function row(w: Webhook) {
  const recent = w.recentDeliveries.slice(0, 5);
  return h("tr", { "data-webhook": w.webhookId },
    h("td", null, h("code", null, w.webhookId), w.description ? h("div", { class: "muted" }, w.description) : null),
    h("td", null, w.url),
    h("td", null, (w.eventTypes.length ? w.eventTypes : ["action.required"]).join(", "), w.sessionIds.length ? h("div", { class: "muted" }, "sessions: ", w.sessionIds.join(", ")) : null),
    h("td", { class: "num" }, String(w.delivered)),
    h("td", { class: "num" }, String(w.failed)),
    h("td", null, recent.length ? h("ul", { class: "deliveries" }, recent.map((d) => h("li", { "data-outcome": d.outcome },
      h("span", { class: `status ${outcomeClass[d.outcome] ?? ""}` }, d.outcome), " ", d.eventType,
      ` · attempt ${d.attempts}`, d.statusCode ? ` · HTTP ${d.statusCode}` : "", d.error ? h("span", { class: "muted" }, ` · ${d.error}`) : null,
      d.at ? h("span", { class: "muted" }, ` · ${new Date(Number(d.at.seconds) * 1000).toLocaleTimeString()}`) : null)))
      : h("span", { class: "muted" }, "nothing delivered yet")));
}

/** webhooksSection fills section with the tenant's webhooks; call it again to refresh. */
export async function webhooksSection(section: HTMLElement, signal: AbortSignal) {
  let body;
  try {
    const res = await client().control.listWebhooks({}, { signal });
    body = res.webhooks.length
      ? h("table", { class: "list", id: "webhook-list" },
        h("thead", null, h("tr", null, ["Webhook", "URL", "Events", "Delivered", "Failed", "Latest deliveries"].map((x) => h("th", null, x)))),
        h("tbody", null, res.webhooks.map(row)))
      : h("p", { class: "muted", id: "no-webhooks" }, "No webhooks: `agentruntime webhooks create URL` subscribes one.");
  } catch (e) {
    if (signal.aborted) return;
    body = h("p", { class: "error" }, errorText(e));
  }
  mount(section, h("h2", null, "Webhooks"),
    h("p", { class: "muted" }, "Who hears of a waiting action without the console open: each subscription's latest deliveries, signed and retried (docs/services/control.md)."),
    body);
}
