// A remote channel (an app, a UI, a bridge) that follows a session and
// acknowledges what it has processed, so that after a reconnect it resumes
// where it left off: ReconnectChannel says where to resume, the events come
// from there (or from a snapshot when the channel has no state to resume
// on: the snapshot first, then only events after the sequence it covers),
// and ack records progress, never backwards and never twice.
import type { Client } from "@connectrpc/connect";
import type { Channel, ControlService } from "./gen/agentruntime/control/v1/control_pb.js";
import { subscribeEvents, type SubscribeFilters, type SubscribeOptions, type SubscriptionItem } from "./subscribe.js";

export interface ConnectChannelOptions {
  channelId: string;
  sessionId: string;
  /** Who is on the other end, for the record (e.g. "web:alice"). */
  peer?: string;
  resumeToken?: string;
}

export interface ChannelEventsOptions extends Omit<SubscribeOptions, "fromSequence"> {
  /** Filters within the session (thread, task, type prefixes). */
  filters?: Omit<SubscribeFilters, "sessionId" | "channelId">;
}

export class RemoteChannel {
  private acked: bigint;
  private acking: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly control: Client<typeof ControlService>,
    readonly channel: Channel,
    /** The first sequence not yet acknowledged: where events() resumes. */
    readonly resumeFromSequence: bigint,
  ) {
    this.acked = resumeFromSequence > 0n ? resumeFromSequence - 1n : 0n;
  }

  get channelId(): string {
    return this.channel.channelId;
  }

  get sessionId(): string {
    return this.channel.sessionId;
  }

  /** The highest sequence acknowledged so far. */
  get lastAcked(): bigint {
    return this.acked;
  }

  /**
   * events follows the session from the first unacknowledged sequence, or,
   * with snapshotFirst, from a snapshot and then the events after it.
   */
  events(opts: ChannelEventsOptions = {}): AsyncGenerator<SubscriptionItem, void, undefined> {
    const { filters, ...rest } = opts;
    const sub: SubscribeOptions = rest.snapshotFirst ? rest : { ...rest, fromSequence: this.resumeFromSequence };
    return subscribeEvents(
      this.control,
      { ...filters, sessionId: this.sessionId, channelId: this.channelId },
      sub,
    );
  }

  /**
   * ack records that everything up to sequence is processed. Acks are sent
   * in order; one at or below what is already acknowledged sends nothing.
   */
  ack(sequence: bigint): Promise<void> {
    const next = this.acking.then(async () => {
      if (sequence <= this.acked) return;
      const res = await this.control.ackEvents({ channelId: this.channelId, sessionId: this.sessionId, sequence });
      const recorded = res.channel?.lastAckedSequence ?? sequence;
      if (recorded > this.acked) this.acked = recorded;
    });
    this.acking = next.catch(() => undefined);
    return next;
  }
}

export async function connectChannel(control: Client<typeof ControlService>, opts: ConnectChannelOptions): Promise<RemoteChannel> {
  const res = await control.reconnectChannel({
    channelId: opts.channelId,
    sessionId: opts.sessionId,
    peer: opts.peer ?? "",
    resumeToken: opts.resumeToken ?? "",
  });
  if (!res.channel) {
    throw new Error(`ReconnectChannel answered no channel for ${opts.channelId}`);
  }
  return new RemoteChannel(control, res.channel, res.resumeFromSequence);
}
