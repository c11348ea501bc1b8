// A resumable event subscription: SubscribeEvents as an async iterator that
// survives dropped connections. It remembers the last sequence it delivered
// (an event's, or the snapshot's) and, when the stream breaks or ends,
// subscribes again from the next one, dropping anything at or below it: no
// gap, no duplicate. A subscription across sessions (no sessionId) keeps the
// last cursor the server sent instead and resumes right after it: the log's
// partitions have no order between them, so no single sequence can say
// where such a subscription is. It stops cleanly (no error) when the signal
// aborts or the loop breaks.
import { Code, type Client } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  StartFrom,
  type ControlService,
  type SubscribeEventsRequestSchema,
  type SubscribeEventsResponse,
  type Snapshot,
} from "./gen/agentruntime/control/v1/control_pb.js";
import type { RuntimeEvent } from "./gen/agentruntime/events/v1/envelope_pb.js";
import { RuntimeError, toRuntimeError } from "./errors.js";
import { sleep } from "./transport.js";

export interface SubscribeFilters {
  sessionId?: string;
  threadId?: string;
  taskId?: string;
  /** Event type prefixes, e.g. ["turn.", "action."]. */
  typePrefixes?: string[];
  /** The remote channel whose acknowledgements this subscription serves. */
  channelId?: string;
}

export interface SubscribeOptions {
  /** Start at this stream sequence (inclusive). Neither this nor snapshotFirst: events from now on. */
  fromSequence?: bigint;
  /**
   * Resume a subscription across sessions (no sessionId) right after this
   * cursor: an item's `cursor`, kept as it was received.
   */
  resumeCursor?: string;
  /**
   * Start with the read model (the thread's when threadId is set, else the
   * session's), then every event after the sequence it covers. Needs
   * sessionId.
   */
  snapshotFirst?: boolean;
  /** Heartbeat interval the server uses on an idle stream (default 15 s). */
  heartbeatMs?: number;
  /** Ends the subscription; the iterator then returns without an error. */
  signal?: AbortSignal;
  /** Reconnect attempts in a row without a delivered item before giving up (default: no limit). */
  maxReconnects?: number;
  /**
   * Called before each reconnect, with the error that broke the stream
   * (undefined: it ended). `cursor` is set when it resumes from a cursor.
   */
  onReconnect?: (info: { attempt: number; fromSequence: bigint; cursor?: string; error?: RuntimeError }) => void;
}

/**
 * What a subscription yields. `sequence` is the resume point each item
 * leaves behind on a session's subscription (an event's own sequence,
 * else the last one delivered). `cursor` is where a subscription across
 * sessions is, sent with each event and heartbeat ("" otherwise): an
 * opaque string to keep and give back as `resumeCursor`, never to parse
 * or compare.
 */
export type SubscriptionItem =
  | { kind: "event"; event: RuntimeEvent; sequence: bigint; cursor: string }
  /** A snapshot.repaired fact: the read model was rebuilt; refresh any state derived from it. */
  | { kind: "snapshot_repaired"; event: RuntimeEvent; sequence: bigint; cursor: string }
  | { kind: "snapshot"; snapshot: Snapshot; sequence: bigint; cursor: string }
  /** Events requestedSequence..firstAvailableSequence-1 are gone (retention): repair from a snapshot. */
  | { kind: "gap"; requestedSequence: bigint; firstAvailableSequence: bigint; sequence: bigint; cursor: string }
  | { kind: "heartbeat"; time?: Timestamp; sequence: bigint; cursor: string };

// Errors after which subscribing again cannot help.
const fatal = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.FailedPrecondition,
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.Unimplemented,
  Code.OutOfRange,
  Code.AlreadyExists,
]);

export async function* subscribeEvents(
  control: Client<typeof ControlService>,
  filters: SubscribeFilters,
  opts: SubscribeOptions = {},
): AsyncGenerator<SubscriptionItem, void, undefined> {
  if ([opts.fromSequence !== undefined, opts.snapshotFirst, opts.resumeCursor !== undefined].filter(Boolean).length > 1) {
    throw new Error("subscribe: give one of fromSequence, snapshotFirst and resumeCursor");
  }
  // last: the highest sequence delivered (0n: none yet). Until something is
  // delivered a reconnect repeats the original request.
  let last = 0n;
  // cursor: the last cursor of a subscription across sessions, which a
  // reconnect resumes after.
  let cursor = opts.resumeCursor ?? "";
  let delivered = false;
  let failures = 0;
  const outer = opts.signal;

  for (;;) {
    if (outer?.aborted) return;
    const req: MessageInitShape<typeof SubscribeEventsRequestSchema> = {
      sessionId: filters.sessionId ?? "",
      threadId: filters.threadId ?? "",
      taskId: filters.taskId ?? "",
      typePrefixes: filters.typePrefixes ?? [],
      channelId: filters.channelId ?? "",
    };
    if (opts.heartbeatMs !== undefined) {
      req.heartbeat = {
        seconds: BigInt(Math.floor(opts.heartbeatMs / 1000)),
        nanos: (opts.heartbeatMs % 1000) * 1e6,
      };
    }
    if (cursor !== "") {
      req.start = StartFrom.SEQUENCE;
      req.resumeCursor = cursor;
    } else if (delivered) {
      req.start = StartFrom.SEQUENCE;
      req.fromSequence = last + 1n;
    } else if (opts.snapshotFirst) {
      req.start = StartFrom.SNAPSHOT;
    } else if (opts.fromSequence !== undefined) {
      req.start = StartFrom.SEQUENCE;
      req.fromSequence = opts.fromSequence;
    } else {
      req.start = StartFrom.NOW;
    }

    // Our own controller, so breaking out of the loop cancels the call.
    const call = new AbortController();
    const onAbort = () => call.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    let error: RuntimeError | undefined;
    try {
      for await (const res of control.subscribeEvents(req, { signal: call.signal })) {
        // With a cursor the server resumes each partition exactly: events
        // of different partitions come in no sequence order.
        const item = toItem(res.item, res.cursor === "" ? last : -1n, res.cursor);
        if (item === undefined) continue; // at or below the cursor: a duplicate
        if (res.cursor !== "") cursor = res.cursor;
        if (item.kind !== "heartbeat" && item.kind !== "gap") {
          last = item.sequence;
          delivered = true;
        } else if (item.kind === "gap") {
          // The server resumes at firstAvailable; so do we after a break.
          if (item.firstAvailableSequence - 1n > last) {
            last = item.firstAvailableSequence - 1n;
            delivered = true;
          }
          item.sequence = last;
        } else {
          item.sequence = last;
        }
        failures = 0;
        yield item;
      }
    } catch (e) {
      if (outer?.aborted) return;
      error = toRuntimeError(e);
      if (fatal.has(error.code)) throw error;
      if (error.code === Code.ResourceExhausted && error.reason !== "SUBSCRIBER_TOO_SLOW") throw error;
    } finally {
      outer?.removeEventListener("abort", onAbort);
      call.abort();
    }
    if (outer?.aborted) return;
    failures++;
    if (opts.maxReconnects !== undefined && failures > opts.maxReconnects) {
      throw error ?? new Error("subscribe: the stream kept ending");
    }
    const fromSequence = delivered ? last + 1n : (opts.fromSequence ?? 0n);
    opts.onReconnect?.({ attempt: failures, fromSequence, cursor: cursor === "" ? undefined : cursor, error });
    try {
      await sleep(Math.min(100 * 2 ** (failures - 1), 5000) * (0.5 + Math.random() / 2), outer);
    } catch {
      return; // aborted while waiting
    }
  }
}

// toItem drops an event at or below last (a duplicate); last -1n keeps all.
function toItem(item: SubscribeEventsResponse["item"], last: bigint, cursor: string): SubscriptionItem | undefined {
  switch (item.case) {
    case "event": {
      const ev = item.value;
      if (ev.sequence <= last) return undefined;
      if (ev.type === "snapshot.repaired") {
        return { kind: "snapshot_repaired", event: ev, sequence: ev.sequence, cursor };
      }
      return { kind: "event", event: ev, sequence: ev.sequence, cursor };
    }
    case "snapshot":
      return { kind: "snapshot", snapshot: item.value, sequence: item.value.sequence, cursor };
    case "gap":
      return {
        kind: "gap",
        requestedSequence: item.value.requestedSequence,
        firstAvailableSequence: item.value.firstAvailableSequence,
        sequence: last,
        cursor,
      };
    case "heartbeat":
      return { kind: "heartbeat", time: item.value.time, sequence: last, cursor };
    default:
      return undefined;
  }
}
