// Web Crypto in browsers and every Node from 18 (where it is not yet a
// global): random ids and SHA-256 without a dependency.

async function webCrypto(): Promise<Crypto> {
  if (globalThis.crypto?.subtle) {
    return globalThis.crypto;
  }
  // Node 18 keeps Web Crypto in node:crypto. A computed specifier keeps
  // browser bundlers from trying to resolve it.
  const specifier = "node:crypto";
  const mod = (await import(/* @vite-ignore */ specifier)) as { webcrypto: Crypto };
  return mod.webcrypto;
}

/** randomId is a random UUID (v4). */
export async function randomId(): Promise<string> {
  return (await webCrypto()).randomUUID();
}

/** sha256Hex is the lowercase hex SHA-256 of data. */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = await (await webCrypto()).subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
