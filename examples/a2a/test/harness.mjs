// Starts the real `agentruntime dev` (its in-process worker playing
// test/script.yaml) for the end-to-end tests of the A2A endpoints (pkg/a2a): the shared
// harness of examples/testkit/dev.mjs, with this suite's script and URL.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { startDev as start } from "../../testkit/dev.mjs";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * startDev runs `agentruntime dev`; with apiKey, authentication is on and
 * that key is an operator's of tenant acme.
 */
export async function startDev({ apiKey } = {}) {
  const dev = await start({ script: join(here, "script.yaml"), apiKey, name: "a2a" });
  return { url: `http://${dev.addr}`, workspace: dev.workspace, stop: dev.stop };
}
