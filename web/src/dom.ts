// A few DOM helpers: the console has no framework, only these.

type Child = Node | string | number | bigint | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | undefined | null | ((e: any) => void)>;

/** h builds an element: attributes (on* are listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** svg builds an SVG element. */
export function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

/** mount replaces the children of el. */
export function mount(el: Element, ...children: Child[]) {
  el.replaceChildren();
  append(el, children);
}

export function fmtTime(ts?: { seconds: bigint; nanos: number }): string {
  if (!ts || ts.seconds === 0n) return "—";
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toLocaleString();
}

/** Nanos of a currency unit (the API's cost unit) as a short amount. */
export function fmtCost(nanos: bigint | number): string {
  const v = Number(nanos) / 1e9;
  return v === 0 ? "0" : v < 0.01 ? v.toExponential(2) : v.toFixed(4);
}

/** download saves bytes as a file. */
export function download(name: string, data: Uint8Array | string, type = "application/octet-stream") {
  const blob = new Blob([data as BlobPart], { type });
  const url = URL.createObjectURL(blob);
  const a = h("a", { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
