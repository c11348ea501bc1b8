/**
 * @agentruntime/client/node: the same client, native gRPC over HTTP/2 by
 * default (@connectrpc/connect-node).
 */
import { createGrpcTransport } from "@connectrpc/connect-node";
import { newRuntimeClient, type RuntimeClient, type RuntimeClientOptions } from "./client.js";

export function createRuntimeClient(opts: RuntimeClientOptions): RuntimeClient {
  return newRuntimeClient(opts, (baseUrl) => createGrpcTransport({ baseUrl }));
}

export * from "./index.js";
