// The official TypeScript SDK client (1.x, whose experimental tasks are the 2025-11-25 core tasks)
// against our server's task tools. Usage: node ts_core_tasks.mjs URL (MCP_TEST_NODE_MODULES names
// node_modules). Prints one JSON object with what every step returned; the Python test checks it.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_TEST_NODE_MODULES;
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema, CallToolResultSchema } = await sdk("types.js");

const out = { elicited: [], streams: {} };
const client = new Client({ name: "ts-core-tasks", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  out.elicited.push({ message: request.params.message, meta: request.params._meta ?? null });
  return { action: "accept", content: { ok: true } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
out.protocolVersion = client.getServerCapabilities() && client.transport?.protocolVersion;
out.capabilities = client.getServerCapabilities();
out.tools = Object.fromEntries((await client.listTools()).tools.map((tool) => [tool.name, tool.execution ?? null]));

// callToolStream: creates the task (the tool is a task tool), polls tasks/get, then tasks/result.
async function stream(name, args) {
  const seen = [];
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema)) {
    if (message.type === "taskCreated") seen.push(["taskCreated", message.task.status, typeof message.task.taskId]);
    else if (message.type === "taskStatus") seen.push(["taskStatus", message.task.status]);
    else if (message.type === "result") seen.push(["result", message.result]);
    else seen.push(["error", String(message.error?.message ?? message.error)]);
  }
  return seen;
}
out.streams.slow = await stream("slow", { n: 5 });
out.streams.broken = await stream("broken", {});
out.streams.ask = await stream("ask", { count: 1 });

// The task methods one by one.
const created = await client.request(
  { method: "tools/call", params: { name: "slow", arguments: { n: 6 }, task: { ttl: 30000 } } },
  (await sdk("types.js")).CreateTaskResultSchema,
);
out.created = created.task;
out.got = await client.experimental.tasks.getTask(created.task.taskId);
out.result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
out.listed = (await client.experimental.tasks.listTasks()).tasks.map((task) => task.taskId);
try {
  await client.experimental.tasks.cancelTask(created.task.taskId);
  out.cancelTerminal = "accepted";
} catch (error) {
  out.cancelTerminal = error.code;
}
await client.close();
console.log(JSON.stringify(out));
