// An action waiting for a person: its prompt, what it would do (the
// context the asker attached), why it was asked, its decisions as
// buttons, and, for an action that takes an answer (a question, an
// elicitation), a field for it. Shared by the approvals screen and a
// session's screen.
import type { Action } from "../../../clients/typescript/src/gen/agentruntime/control/v1/control_pb.js";
import { client, errorText } from "../api.js";
import { fmtTime, h, mount } from "../dom.js";

const labels: Record<string, [string, string]> = {
  allow_once: ["Approve", "a"],
  allow: ["Approve", "a"],
  approve: ["Approve", "a"],
  deny: ["Deny", "d"],
  reject: ["Deny", "d"],
  allow_session: ["Allow for this session", "s"],
};

/** label is a decision's button text and its key. */
export function label(decision: string): [string, string] {
  return labels[decision] ?? [decision, ""];
}

/**
 * answerField is where a person types the payload of an action that takes
 * one (it has a json_schema): text for a question (a schema that allows a
 * string: request_user_input, an A2A peer's question), JSON otherwise (an
 * MCP server's elicitation form). payload reads it as payload_json.
 */
// drafts keeps what was typed per action: the approvals screen redraws
// its cards whenever any action changes, and a typed answer must survive.
const drafts = new Map<string, string>();

function answerField(a: Action): { field: HTMLTextAreaElement; payload: () => string } | null {
  if (!a.jsonSchema) return null;
  let text = false;
  try {
    const t = JSON.parse(a.jsonSchema).type;
    text = t === "string" || (Array.isArray(t) && t.includes("string"));
  } catch {
    // control checked the schema; an unreadable one takes JSON
  }
  const field = h("textarea", {
    class: "answer", rows: 2, "aria-label": text ? "answer" : "answer (JSON)",
    placeholder: text ? "Your answer" : `JSON matching ${a.jsonSchema.slice(0, 200)}`,
    oninput: (e: Event) => drafts.set(a.actionId, (e.target as HTMLTextAreaElement).value),
  }) as HTMLTextAreaElement;
  field.value = drafts.get(a.actionId) ?? "";
  const payload = () => {
    const v = field.value.trim();
    if (!v) return "";
    return text ? JSON.stringify(field.value) : v;
  };
  return { field, payload };
}

export function actionCard(a: Action, onDone: () => void): HTMLElement {
  const msg = h("span", { class: "error", role: "alert" });
  const answer = answerField(a);
  const why = a.context["reason"] ?? a.context["decision_reason"] ?? a.context["why"] ?? "";
  const would = Object.entries(a.context).filter(([k]) => !["reason", "decision_reason", "why"].includes(k));
  const decisions = a.decisions.length ? a.decisions : ["allow_once", "deny"];
  const card = h("article", { class: "action", tabindex: 0, "data-action": a.actionId },
    h("header", null,
      h("strong", null, a.prompt || a.actionType),
      h("span", { class: "muted" }, ` ${a.actionType} · `, h("a", { href: `#/session/${encodeURIComponent(a.sessionId)}?thread=${encodeURIComponent(a.threadId)}` }, `${a.sessionId}/${a.threadId}`),
        a.turnId ? ` · turn ${a.turnId}` : "", ` · asked ${fmtTime(a.requestedAt)} by ${a.requestedBy || "?"}`)),
    would.length ? h("dl", { class: "would" }, would.map(([k, v]) => [h("dt", null, k), h("dd", null, h("code", null, v))])) : null,
    why ? h("p", { class: "why" }, "Why: ", why) : null,
    answer ? answer.field : null,
    h("div", { class: "decide" },
      decisions.map((d) => {
        const [text, key] = label(d);
        return h("button", {
          class: d.startsWith("deny") || d === "reject" ? "deny" : "allow",
          "data-decision": d,
          title: key ? `${d} (${key})` : d,
          onclick: async (e: Event) => {
            const b = e.currentTarget as HTMLButtonElement;
            card.querySelectorAll("button").forEach((x) => (x.disabled = true));
            try {
              await client().respondAction(a.actionId, d, answer?.payload() ?? "");
              drafts.delete(a.actionId);
              card.classList.add("done");
              mount(msg, `${text}: recorded`);
              b.classList.add("chosen");
              onDone();
            } catch (err) {
              card.querySelectorAll("button").forEach((x) => (x.disabled = false));
              mount(msg, errorText(err));
            }
          },
        }, text, key ? h("kbd", null, key) : null);
      }),
      msg));
  return card;
}

/** decideByKey presses the button of the card whose key was typed. */
export function decideByKey(card: HTMLElement, key: string): boolean {
  for (const b of card.querySelectorAll<HTMLButtonElement>("button[data-decision]")) {
    if (label(b.dataset.decision!)[1] === key && !b.disabled) {
      b.click();
      return true;
    }
  }
  return false;
}
