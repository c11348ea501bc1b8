// The one client of the console: the same @agentruntime/client the apps
// use, over gRPC-Web on this page's origin (the console is
// served on the API's own port), with the credential kept for the tab.
import { createRuntimeClient, type RuntimeClient, RuntimeError, UnauthenticatedError } from "../../clients/typescript/src/index.js";
import { createGrpcWebTransport } from "./protobuf.js";

const key = "agentruntime.credential";

export function credential(): string {
  return sessionStorage.getItem(key) ?? "";
}

export function setCredential(v: string) {
  if (v) sessionStorage.setItem(key, v);
  else sessionStorage.removeItem(key);
  sessionStorage.removeItem(tenantKey);
  current = undefined;
}

let current: RuntimeClient | undefined;

export function client(): RuntimeClient {
  const token = credential();
  current ??= createRuntimeClient({
    baseUrl: location.origin,
    token: token || undefined,
    transport: (baseUrl) => createGrpcWebTransport({ baseUrl, useBinaryFormat: true }),
  });
  return current;
}

/** The tenant the credential names when it is a JWT (its claims), else "". */
export function jwtTenant(): string {
  const parts = credential().split(".");
  if (parts.length !== 3) return "";
  try {
    const claims = JSON.parse(atob(parts[1].replace(/-/g, "+").replace(/_/g, "/")));
    return String(claims.tenant ?? claims.tenant_id ?? claims.tid ?? "");
  } catch {
    return "";
  }
}

const tenantKey = "agentruntime.tenant";
/**
 * Remembers the tenant events carry (for the tab): with an API key they are
 * the only way to know it.
 */
export function noteTenant(t: string) {
  if (t && t !== sessionStorage.getItem(tenantKey)) {
    sessionStorage.setItem(tenantKey, t);
    document.dispatchEvent(new CustomEvent("tenant"));
  }
}
export function tenant(): string {
  return jwtTenant() || (sessionStorage.getItem(tenantKey) ?? "");
}

export function isAuthError(e: unknown): boolean {
  return e instanceof UnauthenticatedError;
}

export function errorText(e: unknown): string {
  if (e instanceof RuntimeError) return `${e.codeName}: ${e.rawMessage}`;
  return e instanceof Error ? e.message : String(e);
}

export { RuntimeError };
