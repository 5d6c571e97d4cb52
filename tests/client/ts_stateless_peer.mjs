// A Streamable HTTP MCP server written with the TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4) that speaks only 2026-07-28: createMcpHandler({ legacy: "reject" }) refuses handshake
// clients. For interop tests of StreamableHttpClient's stateless mode.
//
//   node ts_stateless_peer.mjs [--legacy stateless]   (MCP_TEST_NODE_MODULES names node_modules)
//
// --legacy stateless serves handshake clients too (each of their requests on its own).
// Binds 127.0.0.1 on a free port, prints "PORT <n>", serves /mcp. Tools: add, slow (progress
// per step), confirm (elicitation through input_required), ask_model (sampling), roots
// (roots/list), direct_sample (sampling asked directly, which 2026-07-28 cannot carry),
// headed (x-mcp-header: echoes the Mcp-Param-Region header it got), bump (tells listeners
// the tool list changed); a prompt "greet" and a resource "memo://note".
import { serveFetch } from "./fetch_bridge.mjs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_TEST_NODE_MODULES;
const entry = join(modules, "@modelcontextprotocol/server/dist/index.mjs");
const { McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } = await import(
  pathToFileURL(entry).href
);

const object = (properties, required = []) => fromJsonSchema({ type: "object", properties, required });
const text = (value) => ({ content: [{ type: "text", text: String(value) }] });
let handler;

function build() {
  const server = new McpServer({ name: "ts-stateless-peer", version: "2.4.0" }, { capabilities: { logging: {} } });
  server.registerTool(
    "add",
    { description: "a + b", inputSchema: object({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]) },
    async ({ a, b }) => ({ ...text(a + b), structuredContent: { result: a + b } }),
  );
  server.registerTool(
    "slow",
    { description: "progress per step", inputSchema: object({ steps: { type: "integer" } }, ["steps"]) },
    async ({ steps }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= steps; step++) {
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: steps, message: `step ${step}` },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return text(`done ${steps}`);
    },
  );
  server.registerTool("confirm", { description: "asks the user", inputSchema: object({}) }, async (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, "colour");
    if (answer.kind !== "elicit") {
      return inputRequired({
        inputRequests: {
          colour: inputRequired.elicit({
            message: "Favourite colour?",
            requestedSchema: {
              type: "object",
              properties: { colour: { type: "string" }, shade: { type: "string", default: "dark" } },
              required: ["colour"],
            },
          }),
        },
        requestState: "round-1",
      });
    }
    const state = ctx.mcpReq.requestState();
    return text(`${answer.action}: ${JSON.stringify(answer.content ?? {})} (state ${state})`);
  });
  server.registerTool("ask_model", { description: "samples", inputSchema: object({}) }, async (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, "model");
    if (answer.kind !== "sampling") {
      return inputRequired({
        inputRequests: {
          model: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: "Capital of France?" } }],
            maxTokens: 20,
          }),
        },
      });
    }
    return text(`model said: ${answer.result.content.text}`);
  });
  // Asks the client directly, the session way: at 2026-07-28 the SDK refuses to send it.
  server.registerTool("direct_sample", { description: "samples directly", inputSchema: object({}) }, async (_args, ctx) => {
    const answer = await ctx.mcpReq.requestSampling({
      messages: [{ role: "user", content: { type: "text", text: "Capital of France?" } }],
      maxTokens: 20,
    });
    return text(`model said: ${answer.content.text}`);
  });
  server.registerTool("roots", { description: "lists roots", inputSchema: object({}) }, async (_args, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, "roots");
    if (answer.kind !== "roots") {
      return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    }
    return text(answer.roots.map((root) => root.uri).join(","));
  });
  server.registerTool(
    "headed",
    {
      description: "echoes its routing header",
      inputSchema: object({ region: { type: "string", "x-mcp-header": "Region" } }, ["region"]),
    },
    async ({ region }, ctx) => text(`${region} via ${ctx.http?.req?.headers.get("mcp-param-region")}`),
  );
  server.registerTool("bump", { description: "tool list changed", inputSchema: object({}) }, async () => {
    handler.notify.toolsChanged();
    return text("bumped");
  });
  server.registerPrompt("greet", { description: "a greeting" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "Hello!" } }],
  }));
  server.registerResource("note", "memo://note", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "a note" }],
  }));
  return server;
}

const legacy = process.argv.includes("--legacy") ? process.argv[process.argv.indexOf("--legacy") + 1] : "reject";
handler = createMcpHandler(() => build(), { legacy, onerror: (error) => console.error(`ERROR ${error}`) });

serveFetch((request) => handler.fetch(request));
