// Builds the console into dist/: one minified ES module bundle of src/main.ts
// (with the TypeScript client from ../clients/typescript/src and its locked
// dependencies), index.html and style.css. The output is byte-for-byte
// reproducible from the two lockfiles, so dist/ is committed, embedded by
// embed.go, and scripts/test-web fails when a rebuild differs.
// `node build.mjs OUTDIR` builds elsewhere (the drift check).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] ?? "dist";
// The first-load budget (docs/console.md): everything the browser fetches
// for the first screen, uncompressed.
const budgetBytes = 400 * 1024;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: ["src/main.ts"],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2022",
  platform: "browser",
  legalComments: "none",
  charset: "utf8",
  nodePaths: ["../clients/typescript/node_modules"],
  logLevel: "warning",
});
for (const f of ["index.html", "style.css"]) copyFileSync(join("src", f), join(out, f));
let total = 0;
for (const f of readdirSync(out)) total += statSync(join(out, f)).size;
console.log(`console: ${out}/ is ${(total / 1024).toFixed(1)} KiB (budget ${budgetBytes / 1024} KiB)`);
if (total > budgetBytes) {
  console.error(`console: first load ${total} bytes exceeds the budget of ${budgetBytes}`);
  process.exit(1);
}
