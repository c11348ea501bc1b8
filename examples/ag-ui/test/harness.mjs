// Starts the real `agentruntime dev` (its in-process worker playing
// test/script.yaml) for the end-to-end tests of POST /ag-ui: the shared
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
  const dev = await start({ script: join(here, "script.yaml"), apiKey, name: "ag-ui" });
  return { url: `http://${dev.addr}/ag-ui`, workspace: dev.workspace, stop: dev.stop };
}
