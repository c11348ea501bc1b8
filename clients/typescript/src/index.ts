/**
 * @agentruntime/client: the agentruntime API for browsers and Node.
 *
 * createRuntimeClient talks the Connect protocol over fetch by default,
 * which the runtime serves on its gRPC port; pass `transport` for gRPC-Web
 * (createGrpcWebTransport) or import from "@agentruntime/client/node" for
 * native gRPC. The generated messages and services are under
 * "@agentruntime/client/gen/...".
 */
import { createConnectTransport } from "@connectrpc/connect-web";
import { newRuntimeClient, type RuntimeClient, type RuntimeClientOptions } from "./client.js";

export function createRuntimeClient(opts: RuntimeClientOptions): RuntimeClient {
  return newRuntimeClient(opts, (baseUrl) => createConnectTransport({ baseUrl, useBinaryFormat: true }));
}

export type { RuntimeClient, RuntimeClientOptions, SubmitTurnOptions, TransportFactory } from "./client.js";
export * from "./errors.js";
export { resolveEndpoints, serviceNames, type Endpoints, type ServiceName } from "./endpoints.js";
export type { SubscribeFilters, SubscribeOptions, SubscriptionItem } from "./subscribe.js";
export { OutputIntegrityError, type ReadOutputOptions } from "./output.js";
export { RemoteChannel, type ConnectChannelOptions, type ChannelEventsOptions } from "./channel.js";
export type { Credential, RetryOptions } from "./transport.js";
export { StartFrom } from "./gen/agentruntime/control/v1/control_pb.js";
export { enumWord } from "./enums.js";
export {
  ActionStatus, ChannelStatus, ProcessStatus, SubagentStatus, ThreadStatus, TurnAttemptStatus, TurnStatus,
} from "./gen/agentruntime/control/v1/status_pb.js";
export { FactState } from "./gen/agentruntime/common/v1/common_pb.js";
export type { RuntimeEvent } from "./gen/agentruntime/events/v1/envelope_pb.js";
