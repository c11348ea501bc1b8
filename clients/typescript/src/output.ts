// Stored output (evidence packs, spilled tool and process output) read a
// page at a time with ReadOutput, the reassembled bytes checked against the
// size and SHA-256 the server announces.
import type { Client } from "@connectrpc/connect";
import type { ControlService } from "./gen/agentruntime/control/v1/control_pb.js";
import { sha256Hex } from "./crypto.js";

export interface ReadOutputOptions {
  /** Bytes per page (default and maximum 1 MiB). */
  pageSize?: number;
  signal?: AbortSignal;
}

/** The bytes read do not match the size or SHA-256 the server announced. */
export class OutputIntegrityError extends Error {
  override name = "OutputIntegrityError";
  constructor(
    message: string,
    readonly uri: string,
  ) {
    super(message);
  }
}

export async function readOutput(
  control: Client<typeof ControlService>,
  uri: string,
  opts: ReadOutputOptions = {},
): Promise<{ data: Uint8Array; sha256: string; sizeBytes: bigint }> {
  const pages: Uint8Array[] = [];
  let offset = 0n;
  let size = -1n;
  let sha = "";
  for (;;) {
    const res = await control.readOutput({ uri, offset, limit: opts.pageSize ?? 0 }, { signal: opts.signal });
    if (size >= 0n && (res.sizeBytes !== size || res.sha256 !== sha)) {
      throw new OutputIntegrityError(`${uri} changed while it was read`, uri);
    }
    size = res.sizeBytes;
    sha = res.sha256;
    pages.push(res.data);
    if (res.nextOffset >= size || res.nextOffset <= offset) {
      if (res.nextOffset < size) {
        throw new OutputIntegrityError(`${uri}: the read stopped at ${res.nextOffset} of ${size} bytes`, uri);
      }
      break;
    }
    offset = res.nextOffset;
  }
  const data = concat(pages);
  if (BigInt(data.length) !== size) {
    throw new OutputIntegrityError(`${uri}: read ${data.length} bytes, the server announced ${size}`, uri);
  }
  const got = await sha256Hex(data);
  if (got !== sha) {
    throw new OutputIntegrityError(`${uri}: sha256 ${got} does not match the announced ${sha}`, uri);
  }
  return { data, sha256: sha, sizeBytes: size };
}

function concat(pages: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pages.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pages) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
