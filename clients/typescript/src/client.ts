import { createClient, type Client, type Transport } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  ControlService,
  type RespondActionResponse,
  type SubmitTurnRequestSchema,
  type SubmitTurnResponse,
} from "./gen/agentruntime/control/v1/control_pb.js";
import { TasksService } from "./gen/agentruntime/tasks/v1/tasks_pb.js";
import { RoutingService } from "./gen/agentruntime/routing/v1/routing_pb.js";
import { PermissionService } from "./gen/agentruntime/permission/v1/permission_pb.js";
import { EvidenceService } from "./gen/agentruntime/evidence/v1/evidence_pb.js";
import { connectChannel, type ConnectChannelOptions, type RemoteChannel } from "./channel.js";
import { randomId } from "./crypto.js";
import { resolveEndpoints, type Endpoints, type ServiceName } from "./endpoints.js";
import { readOutput, type ReadOutputOptions } from "./output.js";
import { subscribeEvents, type SubscribeFilters, type SubscribeOptions, type SubscriptionItem } from "./subscribe.js";
import { wrapTransport, type Credential, type RetryOptions } from "./transport.js";

type SubmitTurnInit = Exclude<MessageInitShape<typeof SubmitTurnRequestSchema>, { $typeName: string }>;

/** Makes the transport to one base URL (all services, or one service of an endpoints map). */
export type TransportFactory = (baseUrl: string) => Transport;

export interface RuntimeClientOptions {
  /** Where all services are, e.g. "http://127.0.0.1:7070". */
  baseUrl?: string;
  /**
   * Per-service addresses: "control=host:port,tasks=..." (as --endpoints /
   * AR_ENDPOINTS) or { control: "http://...", ... }; services not named
   * use baseUrl.
   */
  endpoints?: Endpoints;
  /** An API key, sent as "authorization: Bearer <key>". */
  apiKey?: string;
  /** A JWT (or a function returning a fresh one), sent as a bearer token. */
  token?: Credential;
  /**
   * A transport for every service, or a factory called once per distinct
   * base URL. Default: the Connect protocol over fetch (browsers, Node 18+);
   * `@agentruntime/client/node` defaults to native gRPC over HTTP/2.
   */
  transport?: Transport | TransportFactory;
  retry?: RetryOptions;
}

export interface SubmitTurnOptions extends Omit<SubmitTurnInit, "input" | "$typeName"> {
  sessionId: string;
  threadId: string;
  /** The turn's text input; or give `input` parts. */
  text?: string;
  input?: SubmitTurnInit["input"];
}

export interface RuntimeClient {
  /** Every RPC of each service, typed from the protos, through the client layer. */
  readonly control: Client<typeof ControlService>;
  readonly tasks: Client<typeof TasksService>;
  readonly routing: Client<typeof RoutingService>;
  readonly permission: Client<typeof PermissionService>;
  readonly evidence: Client<typeof EvidenceService>;
  /** The base URL each service is called at. */
  readonly endpoints: Readonly<Record<ServiceName, string>>;

  /**
   * Submits a turn. Without idempotencyKey one is generated, so the
   * client's own retries (and yours, if you pass the returned key back)
   * never create a second turn.
   */
  submitTurn(opts: SubmitTurnOptions, signal?: AbortSignal): Promise<SubmitTurnResponse & { idempotencyKey: string }>;
  /** Records a decision on an action ("allow_once", "deny", ...); exactly once. */
  respondAction(actionId: string, decision: string, payloadJson?: string): Promise<RespondActionResponse>;
  /** The live timeline: see subscribeEvents. */
  subscribe(filters: SubscribeFilters, opts?: SubscribeOptions): AsyncGenerator<SubscriptionItem, void, undefined>;
  /** Reads a stored output by its uri in pages, checking size and SHA-256. */
  readOutput(uri: string, opts?: ReadOutputOptions): Promise<{ data: Uint8Array; sha256: string; sizeBytes: bigint }>;
  /** Reconnects a remote channel: where to resume, its events, its acks. */
  connectChannel(opts: ConnectChannelOptions): Promise<RemoteChannel>;
}

/**
 * newRuntimeClient builds the client over defaultTransport (the entry
 * points choose it: Connect over fetch, or native gRPC in Node).
 */
export function newRuntimeClient(opts: RuntimeClientOptions, defaultTransport: TransportFactory): RuntimeClient {
  if (opts.apiKey !== undefined && opts.token !== undefined) {
    throw new Error("createRuntimeClient: give apiKey or token, not both");
  }
  const credential = opts.apiKey ?? opts.token;
  const endpoints = resolveEndpoints(opts.baseUrl ?? (isTransport(opts.transport) ? "http://in-transport" : undefined), opts.endpoints);
  const byUrl = new Map<string, Transport>();
  const transportFor = (service: ServiceName): Transport => {
    const url = endpoints[service];
    let t = byUrl.get(url);
    if (!t) {
      const inner = isTransport(opts.transport) ? opts.transport : (opts.transport ?? defaultTransport)(url);
      t = wrapTransport(inner, { credential, retry: opts.retry });
      byUrl.set(url, t);
    }
    return t;
  };
  const control = createClient(ControlService, transportFor("control"));
  return {
    control,
    tasks: createClient(TasksService, transportFor("tasks")),
    routing: createClient(RoutingService, transportFor("routing")),
    permission: createClient(PermissionService, transportFor("permission")),
    evidence: createClient(EvidenceService, transportFor("evidence")),
    endpoints,

    async submitTurn(o, signal) {
      const { text, input, ...rest } = o;
      const idempotencyKey = rest.idempotencyKey || (await randomId());
      const parts = input ?? (text !== undefined ? [{ content: { case: "text" as const, value: text } }] : []);
      const res = await control.submitTurn({ ...rest, idempotencyKey, input: parts }, { signal });
      return Object.assign(res, { idempotencyKey });
    },
    respondAction(actionId, decision, payloadJson = "") {
      return control.respondAction({ actionId, decision, payloadJson });
    },
    subscribe(filters, sopts) {
      return subscribeEvents(control, filters, sopts);
    },
    readOutput(uri, ropts) {
      return readOutput(control, uri, ropts);
    },
    connectChannel(copts) {
      return connectChannel(control, copts);
    },
  };
}

function isTransport(t: RuntimeClientOptions["transport"]): t is Transport {
  return typeof t === "object" && t !== null && typeof (t as Transport).unary === "function";
}
