// Where each service is: one base URL for all five (`agentruntime dev`, or a
// front door that routes by gRPC service name), or a per-service map, the
// same convention as the Go client's --endpoints / AR_ENDPOINTS
// ("control=HOST:PORT,tasks=...,routing=...,permission=...,evidence=...");
// a service the map does not name falls back to the base URL.

export const serviceNames = ["control", "tasks", "routing", "permission", "evidence"] as const;
export type ServiceName = (typeof serviceNames)[number];

export type Endpoints = string | Partial<Record<ServiceName, string>>;

/**
 * resolveEndpoints returns the base URL of every service. Addresses without
 * a scheme ("host:port") get "http://". An unknown service name, an entry
 * without "=" or a name given twice is an error naming the entry.
 */
export function resolveEndpoints(baseUrl: string | undefined, endpoints: Endpoints | undefined): Record<ServiceName, string> {
  const map: Partial<Record<ServiceName, string>> = {};
  if (typeof endpoints === "string") {
    for (const raw of endpoints.split(",")) {
      const item = raw.trim();
      if (item === "") continue;
      const eq = item.indexOf("=");
      const name = eq < 0 ? "" : item.slice(0, eq).trim();
      const addr = eq < 0 ? "" : item.slice(eq + 1).trim();
      if (name === "" || addr === "") {
        throw new Error(`endpoint "${item}": want name=host:port`);
      }
      if (!isServiceName(name)) {
        throw new Error(`endpoint "${item}": unknown service "${name}" (want one of ${serviceNames.join(", ")})`);
      }
      if (map[name] !== undefined) {
        throw new Error(`endpoint "${item}": ${name} is named twice`);
      }
      map[name] = addr;
    }
  } else if (endpoints) {
    for (const [name, addr] of Object.entries(endpoints)) {
      if (!isServiceName(name)) {
        throw new Error(`endpoints: unknown service "${name}" (want one of ${serviceNames.join(", ")})`);
      }
      if (addr) map[name] = addr;
    }
  }
  const out = {} as Record<ServiceName, string>;
  for (const name of serviceNames) {
    const addr = map[name] ?? baseUrl;
    if (!addr) {
      throw new Error(`no address for ${name}: give baseUrl or endpoints.${name}`);
    }
    out[name] = withScheme(addr);
  }
  return out;
}

function isServiceName(s: string): s is ServiceName {
  return (serviceNames as readonly string[]).includes(s);
}

function withScheme(addr: string): string {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(addr) ? addr : `http://${addr}`;
  return url.replace(/\/+$/, "");
}
