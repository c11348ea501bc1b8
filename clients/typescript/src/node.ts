/**
 * @agentruntime/client/node: the same client, native gRPC over HTTP/2 by
 * default (@connectrpc/connect-node).
 */
import { createGrpcTransport } from "@connectrpc/connect-node";
import { newRuntimeClient, type RuntimeClient, type RuntimeClientOptions } from "./client.js";

export interface NodeRuntimeClientOptions extends RuntimeClientOptions {
  /**
   * For https:// base URLs: the CA certificates (PEM text) to trust
   * instead of Node's roots, e.g. readFileSync("ca.pem", "utf8"). Ignored
   * by a `transport` you give.
   */
  ca?: string | string[];
}

export function createRuntimeClient(opts: NodeRuntimeClientOptions): RuntimeClient {
  const { ca } = opts;
  return newRuntimeClient(opts, (baseUrl) =>
    createGrpcTransport(ca === undefined ? { baseUrl } : { baseUrl, nodeOptions: { ca } }),
  );
}

export * from "./index.js";
