// The official TypeScript SDK client against our server, for interop tests.
// Usage: node ts_client.mjs URL   (MCP_TEST_NODE_MODULES names node_modules)
// Prints one JSON object with what every step returned; the Python test checks it.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_TEST_NODE_MODULES;
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } = await sdk("types.js");

const url = new URL(process.argv[2]);
const out = { logs: [], progress: [], sampled: [], elicited: [] };
const client = new Client(
  { name: "ts-interop", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } },
);
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  out.sampled.push(request.params.messages[0].content.text);
  return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "m" };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  out.elicited.push(request.params.message);
  return { action: "accept", content: { name: "Grace" } };
});
let onWaiting = () => {};
client.setNotificationHandler(LoggingMessageNotificationSchema, async (note) => {
  if (note.params.data === "waiting") onWaiting();
  else out.logs.push(note.params.data);
});

const transport = new StreamableHTTPClientTransport(url);
await client.connect(transport);
out.sessionId = transport.sessionId;
out.protocolVersion = transport.protocolVersion;
out.serverVersion = client.getServerVersion();
out.tools = (await client.listTools()).tools.map((tool) => tool.name);
out.add = await client.callTool({ name: "add", arguments: { a: 20, b: 22 } });
out.resources = (await client.listResources()).resources.map((r) => r.uri);
out.hello = await client.readResource({ uri: "test://hello" });
out.templates = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate);
out.item = await client.readResource({ uri: "test://items/9" });
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
out.prompt = await client.getPrompt({ name: "greet", arguments: { name: "Grace" } });
out.completion = await client.complete({
  ref: { type: "ref/prompt", name: "greet" },
  argument: { name: "name", value: "al" },
});
await client.setLoggingLevel("debug");
out.chatty = await client.callTool(
  { name: "chatty", arguments: {} },
  undefined,
  { onprogress: (progress) => out.progress.push([progress.progress, progress.total, progress.message]) },
);
out.sample = await client.callTool({ name: "sample", arguments: { prompt: "meaning of life?" } });
out.elicit = await client.callTool({ name: "elicit", arguments: {} });

// Cancellation: abort a call the server holds; the SDK sends notifications/cancelled.
const controller = new AbortController();
const started = new Promise((resolve) => { onWaiting = resolve; });
const held = client.callTool({ name: "wait", arguments: {} }, undefined, { signal: controller.signal });
await started; // the server logs "waiting" once the handler runs
controller.abort("changed my mind");
try {
  await held;
  out.cancelled = "not cancelled";
} catch (error) {
  out.cancelled = String(error);
}
out.pingAfterCancel = await client.ping();

await transport.terminateSession();
out.terminated = transport.sessionId === undefined;
await client.close();
console.log(JSON.stringify(out));
