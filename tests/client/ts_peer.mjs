// A stdio MCP server written with the official TypeScript SDK's low-level
// Server, for interop tests of StdioClient. Its add and divide tools answer
// like our math server; slow reports progress and says on stderr when it is
// cancelled. Run: node ts_peer.mjs (MCP_TEST_NODE_MODULES names node_modules).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_TEST_NODE_MODULES;
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Server } = await sdk("server/index.js");
const { StdioServerTransport } = await sdk("server/stdio.js");
const { CallToolRequestSchema, ListToolsRequestSchema } = await sdk("types.js");

const number = { type: "number" };
const pair = { type: "object", properties: { a: number, b: number }, required: ["a", "b"] };
const tools = [
  { name: "add", description: "a + b", inputSchema: pair },
  { name: "divide", description: "a / b", inputSchema: pair },
  { name: "slow", description: "progress per step", inputSchema: { type: "object", properties: { steps: { type: "integer" } } } },
];
const value = (v) => ({ content: [{ type: "text", text: String(v) }], structuredContent: { result: v } });

const server = new Server({ name: "ts-peer", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
  const { name, arguments: args } = request.params;
  if (name === "add") return value(args.a + args.b);
  if (name === "divide") {
    if (args.b === 0) return { content: [{ type: "text", text: "Cannot divide by zero: 'b' must not be 0" }], isError: true };
    return value(args.a / args.b);
  }
  if (name === "slow") {
    extra.signal.addEventListener("abort", () => console.error("SLOW-CANCELLED"));
    const token = request.params._meta?.progressToken;
    for (let step = 1; step <= args.steps && !extra.signal.aborted; step++) {
      if (token !== undefined) {
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: step, total: args.steps } });
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return { content: [{ type: "text", text: `done ${args.steps}` }] };
  }
  throw new Error(`unknown tool ${name}`);
});
console.error("ts-peer: ready");
await server.connect(new StdioServerTransport());
