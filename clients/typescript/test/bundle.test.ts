// The package is usable from a browser bundle: the main entry point and
// the generated code bundle for the browser platform with no Node
// built-in, and the bundle stays small.
import assert from "node:assert/strict";
import { test } from "node:test";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

test("the main entry bundles for browsers without Node built-ins", async () => {
  const result = await build({
    stdin: {
      contents: [
        `import { createRuntimeClient } from "./src/index.ts";`,
        `import { createGrpcWebTransport } from "@connectrpc/connect-web";`,
        `export const c = createRuntimeClient({ baseUrl: location.origin, transport: (baseUrl) => createGrpcWebTransport({ baseUrl }) });`,
      ].join("\n"),
      resolveDir: pkgDir,
      loader: "ts",
    },
    bundle: true,
    platform: "browser",
    format: "esm",
    minify: true,
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(!inputs.some((i) => i.startsWith("node:") || i.includes("connect-node")), `no Node code: ${inputs.filter((i) => i.includes("node")).join(", ")}`);
  const bytes = result.outputFiles[0].contents.length;
  assert.ok(bytes < 1_500_000, `bundle is ${bytes} bytes`);
  console.log(`browser bundle (minified, every service and message): ${bytes} bytes`);
});
