// The protobuf runtime the TypeScript client is built on, from the client's
// own locked install (one copy in the bundle, not two).
export { toJson } from "../../clients/typescript/node_modules/@bufbuild/protobuf/dist/esm/index.js";
// gRPC-Web answers every call with HTTP 200 and its status in trailers, so
// an expected error (a session not created yet: NotFound) is the app's to
// show, not a failed resource load the browser logs.
export { createGrpcWebTransport } from "../../clients/typescript/node_modules/@connectrpc/connect-web/dist/esm/index.js";
