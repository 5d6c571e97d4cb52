// A peer server of the client matrix (tests/client/test_peer_matrix.py), written with the
// TypeScript SDK v2 (@modelcontextprotocol/server 2.4) and nothing of ours, so the matrix
// compares our client with the official Python one against a server neither of them wrote.
//
//   node matrix_ts_peer.mjs MODE      (MCP_TEST_NODE_MODULES names node_modules)
//
// MODE:
//   stateful    WebStandardStreamableHTTPServerTransport with sessionIdGenerator, one server and
//               transport per session (the SDK's stateful setup), SSE replies; 2025 era only
//   json        the same with enableJsonResponse: true
//   stateless   createMcpHandler(factory): 2026-07-28 per request, and 2025-era requests through
//               its default stateless legacy fallback (legacy: "stateless")
//   2026-07-28  createMcpHandler(factory, { legacy: "reject" }): 2026-07-28 only
//
// Binds 127.0.0.1 on a free port, prints "PORT <n>", serves /mcp. The surface every matrix peer
// offers: tools echo(text), sample(prompt), elicit(question) (one string field "answer"), roots()
// (URIs joined by commas), resource memo://note ("a note"), prompt greet(name).
//
// sample, elicit and roots ask the way the SDK documents for a factory that serves both eras:
// inputRequired(...) on a 2026-07-28 instance (the factory's ctx.era is "modern"), the push
// APIs (ctx.mcpReq.requestSampling / elicitInput, server.listRoots) on a 2025-era one.
// sample_push, elicit_push and roots_push always push: the SDK refuses that on a 2026-07-28
// instance, and those tools show what it answers then.
import { randomUUID } from "node:crypto";
import { serveFetch } from "./fetch_bridge.mjs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const mode = process.argv[2] ?? "stateful";
const modes = ["stateful", "json", "stateless", "2026-07-28"];
if (!modes.includes(mode)) {
  console.error(`usage: node matrix_ts_peer.mjs ${modes.join("|")}`);
  process.exit(2);
}
const modules = process.env.MCP_TEST_NODE_MODULES;
const entry = join(modules, "@modelcontextprotocol/server/dist/index.mjs");
const { McpServer, WebStandardStreamableHTTPServerTransport, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } =
  await import(pathToFileURL(entry).href);

const object = (properties, required = []) => fromJsonSchema({ type: "object", properties, required });
const text = (value) => ({ content: [{ type: "text", text: String(value) }] });
const messages = (prompt) => [{ role: "user", content: { type: "text", text: prompt } }];
const answerSchema = { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] };
const sampled = (result) => (Array.isArray(result.content) ? result.content[0] : result.content).text;
const joined = (roots) => roots.map((root) => root.uri).join(",");

function build(era) {
  const server = new McpServer({ name: "matrix-ts-peer", version: "2.4.0" });
  const pushSample = async (prompt, ctx) => sampled(await ctx.mcpReq.requestSampling({ messages: messages(prompt), maxTokens: 50 }));
  const pushElicit = async (question, ctx) => {
    const result = await ctx.mcpReq.elicitInput({ mode: "form", message: question, requestedSchema: answerSchema });
    return result.action === "accept" ? result.content.answer : result.action;
  };
  const pushRoots = async () => joined((await server.server.listRoots()).roots);

  server.registerTool("echo", { description: "answers its text", inputSchema: object({ text: { type: "string" } }, ["text"]) }, async ({ text: value }) =>
    text(value),
  );
  server.registerTool(
    "sample",
    { description: "samples the client's model", inputSchema: object({ prompt: { type: "string" } }, ["prompt"]) },
    async ({ prompt }, ctx) => {
      if (era !== "modern") return text(await pushSample(prompt, ctx));
      const answer = inputResponse(ctx.mcpReq.inputResponses, "model");
      if (answer.kind !== "sampling") {
        return inputRequired({ inputRequests: { model: inputRequired.createMessage({ messages: messages(prompt), maxTokens: 50 }) } });
      }
      return text(sampled(answer.result));
    },
  );
  server.registerTool(
    "elicit",
    { description: "asks the user", inputSchema: object({ question: { type: "string" } }, ["question"]) },
    async ({ question }, ctx) => {
      if (era !== "modern") return text(await pushElicit(question, ctx));
      const answer = inputResponse(ctx.mcpReq.inputResponses, "answer");
      if (answer.kind !== "elicit") {
        return inputRequired({ inputRequests: { answer: inputRequired.elicit({ message: question, requestedSchema: answerSchema }) } });
      }
      return text(answer.action === "accept" ? answer.content.answer : answer.action);
    },
  );
  server.registerTool("roots", { description: "lists the client's roots", inputSchema: object({}) }, async (_args, ctx) => {
    if (era !== "modern") return text(await pushRoots());
    const answer = inputResponse(ctx.mcpReq.inputResponses, "roots");
    if (answer.kind !== "roots") return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    return text(joined(answer.roots));
  });
  server.registerTool(
    "sample_push",
    { description: "samples with a pushed request", inputSchema: object({ prompt: { type: "string" } }, ["prompt"]) },
    async ({ prompt }, ctx) => text(await pushSample(prompt, ctx)),
  );
  server.registerTool(
    "elicit_push",
    { description: "elicits with a pushed request", inputSchema: object({ question: { type: "string" } }, ["question"]) },
    async ({ question }, ctx) => text(await pushElicit(question, ctx)),
  );
  server.registerTool("roots_push", { description: "lists roots with a pushed request", inputSchema: object({}) }, async () =>
    text(await pushRoots()),
  );
  server.registerResource("note", "memo://note", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "a note" }],
  }));
  server.registerPrompt(
    "greet",
    { description: "a greeting", argsSchema: object({ name: { type: "string" } }, ["name"]) },
    async ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}!` } }] }),
  );
  return server;
}

const onerror = (error) => console.error(`ERROR ${error}`);
let fetchHandler;
if (mode === "stateless" || mode === "2026-07-28") {
  const options = mode === "2026-07-28" ? { legacy: "reject", onerror } : { onerror };
  const handler = createMcpHandler((ctx) => build(ctx.era), options);
  fetchHandler = (request) => handler.fetch(request);
} else {
  // The SDK's stateful setup: a transport (and its server) per session, found by Mcp-Session-Id.
  const sessions = new Map();
  fetchHandler = async (request) => {
    const id = request.headers.get("mcp-session-id");
    if (id) {
      const transport = sessions.get(id);
      if (!transport) return new Response("unknown session", { status: 404 });
      return transport.handleRequest(request);
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: mode === "json",
      onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
      onsessionclosed: (sessionId) => sessions.delete(sessionId),
    });
    await build("legacy").connect(transport);
    return transport.handleRequest(request);
  };
}

serveFetch((request) => fetchHandler(request));
