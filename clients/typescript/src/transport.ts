// The layer every call goes through, whatever the transport (native gRPC
// in Node, Connect or gRPC-Web in browsers): credentials, a generated
// idempotency key for requests that take one, retries of ABORTED and
// UNAVAILABLE as the server's RetryInfo says (same request, same key), and
// typed errors.
import { create, isMessage, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, type Transport } from "@connectrpc/connect";
import { randomId } from "./crypto.js";
import { toRuntimeError } from "./errors.js";

/** A bearer credential: an API key or JWT, or a function that returns a fresh one. */
export type Credential = string | (() => string | Promise<string>);

export interface RetryOptions {
  /** Attempts in all, the first included (default 5; 1 disables retries). */
  maxAttempts?: number;
  /** Backoff when the server gave no RetryInfo: first delay (default 100 ms), doubling. */
  initialDelayMs?: number;
  /** Upper bound of any one delay, RetryInfo's included (default 5000 ms). */
  maxDelayMs?: number;
}

export interface LayerOptions {
  credential?: Credential;
  retry?: RetryOptions;
}

const retryable = new Set([Code.Aborted, Code.Unavailable]);

/** wrapTransport puts the client layer around inner. */
export function wrapTransport(inner: Transport, opts: LayerOptions): Transport {
  const maxAttempts = Math.max(1, opts.retry?.maxAttempts ?? 5);
  const initialDelay = opts.retry?.initialDelayMs ?? 100;
  const maxDelay = opts.retry?.maxDelayMs ?? 5000;

  async function headers(header: HeadersInit | undefined): Promise<Headers> {
    const h = new Headers(header);
    if (opts.credential !== undefined && !h.has("authorization")) {
      const token = typeof opts.credential === "function" ? await opts.credential() : opts.credential;
      h.set("authorization", `Bearer ${token}`);
    }
    return h;
  }

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const message = await withIdempotencyKey(method.input, input);
      for (let attempt = 1; ; attempt++) {
        try {
          return await inner.unary(method, signal, timeoutMs, await headers(header), message, contextValues);
        } catch (e) {
          const err = toRuntimeError(e);
          if (!retryable.has(err.code) || attempt >= maxAttempts || signal?.aborted) {
            throw err;
          }
          const backoff = initialDelay * 2 ** (attempt - 1);
          await sleep(Math.min(err.retryDelayMs ?? jitter(backoff), maxDelay), signal);
        }
      }
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      let res;
      try {
        res = await inner.stream(method, signal, timeoutMs, await headers(header), input, contextValues);
      } catch (e) {
        throw toRuntimeError(e);
      }
      const messages = res.message;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* messages;
          } catch (e) {
            throw toRuntimeError(e);
          }
        })(),
      };
    },
  };
}

/**
 * withIdempotencyKey fills an empty idempotency_key with a random one, once:
 * every retry of the call then carries the same key, so the server applies
 * the command at most once.
 */
async function withIdempotencyKey<I extends DescMessage>(schema: I, input: MessageInitShape<I>): Promise<MessageInitShape<I>> {
  const field = schema.fields.find((f) => f.name === "idempotency_key" && f.fieldKind === "scalar");
  if (!field) {
    return input;
  }
  const msg = isMessage(input, schema) ? input : create(schema, input);
  const rec = msg as unknown as Record<string, unknown>;
  if (!rec[field.localName]) {
    rec[field.localName] = await randomId();
  }
  return msg as MessageInitShape<I>;
}

function jitter(ms: number): number {
  return ms / 2 + Math.random() * (ms / 2);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

export { sleep };
