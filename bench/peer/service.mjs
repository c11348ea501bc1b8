// The peer's unit of work: a Restate service (its TypeScript SDK) whose
// handler takes three durable steps (ctx.run), the counterpart of the
// runtime's turn in bench.mjs (two read_file calls and an answer): read
// README.md, read NOTES.md, then compose the answer from both. Restate
// journals each step's result before the handler goes on, as the runtime
// records each tool result and model answer.
//
//   WORKSPACE=dir node service.mjs      # prints "listening PORT"
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import * as restate from "@restatedev/restate-sdk";

const workspace = process.env.WORKSPACE ?? ".";

const steps = restate.service({
  name: "steps",
  handlers: {
    run: async (ctx, question) => {
      const readme = await ctx.run("read README.md", () => readFile(join(workspace, "README.md"), "utf8"));
      const notes = await ctx.run("read NOTES.md", () => readFile(join(workspace, "NOTES.md"), "utf8"));
      return ctx.run("answer", () => `${question}: README.md has ${readme.length} characters, NOTES.md ${notes.length}.`);
    },
  },
});

const port = await restate.serve({ services: [steps], port: Number(process.env.PORT ?? 0) });
console.log(`listening ${port}`);
