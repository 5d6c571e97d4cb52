// Bundles the browser pieces of the MCP Apps tests with esbuild (tests/node/package.json pins it):
//   host.bundle.js  the host page's script: the official AppBridge (@modelcontextprotocol/ext-apps
//                   2.0.4) and the TypeScript Client (@modelcontextprotocol/client 2.4.0), ES module;
//   view_app.js     the view built on the official App class (ext-apps/app-with-deps), one IIFE the
//                   server inlines into its HTML (an app is one document: nothing loads from elsewhere).
// Built at test time into OUT_DIR, never committed. Prints one JSON line: what it wrote, in bytes.
//
//   node build.mjs OUT_DIR        (MCP_TEST_NODE_MODULES names node_modules)
import { mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [outDir] = process.argv.slice(2);
const modules = process.env.MCP_TEST_NODE_MODULES;
if (!outDir || !modules) {
  console.error("usage: MCP_TEST_NODE_MODULES=... node build.mjs OUT_DIR");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const esbuild = await import(pathToFileURL(join(modules, "esbuild/lib/main.js")).href);

mkdirSync(outDir, { recursive: true });
const common = {
  bundle: true,
  platform: "browser",
  target: "chrome120",
  nodePaths: [modules], // the packages live outside this tree
  logLevel: "warning",
  legalComments: "none",
};
await esbuild.build({
  ...common,
  entryPoints: [join(here, "host.js")],
  format: "esm",
  outfile: join(outDir, "host.bundle.js"),
});
await esbuild.build({
  ...common,
  entryPoints: [join(here, "view_app.js")],
  format: "iife",
  minify: true, // it rides inside the HTML of every resources/read
  outfile: join(outDir, "view_app.js"),
});
const sizes = {};
for (const name of ["host.bundle.js", "view_app.js"]) sizes[name] = statSync(join(outDir, name)).size;
console.log(JSON.stringify(sizes));
