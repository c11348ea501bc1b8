// The agentruntime console: every screen is a view of the public API
// through @agentruntime/client, its state is in the URL fragment (a link
// can be shared), and live views follow SubscribeEvents, resuming by
// cursor. Screens: sessions, a session, approvals, tasks, a task, costs.
import { client, credential, errorText, isAuthError, setCredential, tenant } from "./api.js";
import { h, mount } from "./dom.js";
import { approvalsView } from "./views/approvals.js";
import { costsView } from "./views/costs.js";
import { sessionView } from "./views/session.js";
import { sessionsView } from "./views/sessions.js";
import { taskView, tasksView } from "./views/tasks.js";

export interface Route {
  path: string[];
  params: URLSearchParams;
}

function route(): Route {
  const raw = location.hash.replace(/^#\/?/, "");
  const [p, q] = raw.split("?", 2);
  return { path: p ? p.split("/").map(decodeURIComponent) : [], params: new URLSearchParams(q ?? "") };
}

/** go changes the URL (and so the screen). */
export function go(hash: string) {
  location.hash = hash;
}

let stop: AbortController | undefined;

async function render() {
  stop?.abort();
  stop = new AbortController();
  const signal = stop.signal;
  const r = route();
  const view = document.getElementById("view")!;
  header(r);
  try {
    switch (r.path[0] ?? "sessions") {
      case "sessions":
        return await sessionsView(view, r, signal);
      case "session":
        return await sessionView(view, r, signal);
      case "approvals":
        return await approvalsView(view, r, signal);
      case "tasks":
        return await tasksView(view, r, signal);
      case "task":
        return await taskView(view, r, signal);
      case "costs":
        return await costsView(view, r, signal);
      case "login":
        return login(view);
      default:
        mount(view, h("p", null, "No such screen. ", h("a", { href: "#/sessions" }, "Sessions")));
    }
  } catch (e) {
    if (signal.aborted) return;
    if (isAuthError(e)) return login(view, errorText(e));
    mount(view, h("p", { class: "error", role: "alert" }, errorText(e)));
  }
}

function header(r: Route) {
  const here = r.path[0] ?? "sessions";
  const link = (name: string, label: string, key: string) =>
    h("a", { href: `#/${name}`, class: here === name || here === name.replace(/s$/, "") ? "here" : "", title: `${label} (g ${key})` }, label);
  mount(
    document.getElementById("top")!,
    h("strong", null, "agentruntime"),
    h("nav", null, link("sessions", "Sessions", "s"), link("approvals", "Approvals", "a"), link("tasks", "Tasks", "t"), link("costs", "Routing & cost", "c")),
    h("span", { class: "who" },
      h("span", { id: "tenant" }, "tenant: ", tenant() || "—"),
      credential() ? h("button", { class: "link", onclick: () => { setCredential(""); go("#/login"); } }, "Sign out")
        : h("a", { href: "#/login" }, "Sign in")),
  );
}

function login(view: HTMLElement, why = "") {
  const input = h("input", { type: "password", id: "credential", placeholder: "API key or JWT", autocomplete: "off", size: 60 });
  const form = h("form", { class: "login", onsubmit: async (e: Event) => {
    e.preventDefault();
    setCredential(input.value.trim());
    try {
      await client().control.listSessions({ pageSize: 1 });
      // Back to the screen that asked, or to sessions from #/login.
      if (route().path[0] === "login") go("#/sessions");
      else render();
    } catch (err) {
      mount(msg, errorText(err));
    }
  } }, h("label", { for: "credential" }, "Credential"), input, h("button", { type: "submit" }, "Sign in"));
  const msg = h("p", { class: "error", role: "alert" }, why);
  mount(view, h("h1", null, "Sign in"),
    h("p", null, "The runtime asks for credentials. The API key or JWT is kept for this tab only (sessionStorage) and sent as a bearer token on every call."),
    form, msg);
  input.focus();
}

// g then a letter moves between screens; typing in a field does not.
let pendingG = false;
document.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (pendingG) {
    pendingG = false;
    const to = { s: "#/sessions", a: "#/approvals", t: "#/tasks", c: "#/costs" }[e.key];
    if (to) go(to);
    return;
  }
  if (e.key === "g") pendingG = true;
});
document.addEventListener("tenant", () => header(route()));
window.addEventListener("hashchange", render);
render();
