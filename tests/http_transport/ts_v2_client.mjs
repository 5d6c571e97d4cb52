// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4) against our server at the
// stateless revision 2026-07-28: versionNegotiation "auto" (probes with server/discover) or a
// pin. Prints one JSON line of what it saw.
//
//   node ts_v2_client.mjs URL MODE        (MODE: auto | pin; MCP_TEST_NODE_MODULES names node_modules)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, mode] = process.argv.slice(2);
const modules = process.env.MCP_TEST_NODE_MODULES;
const entry = join(modules, "@modelcontextprotocol/client/dist/index.mjs");
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(entry).href);

const out = { progress: [], sampled: [], elicited: [] };
const client = new Client(
  { name: "ts-v2-interop", version: "1.0.0" },
  {
    capabilities: { sampling: {}, elicitation: { form: {} } },
    versionNegotiation: { mode: mode === "pin" ? { pin: "2026-07-28" } : "auto" },
  },
);
client.setRequestHandler("sampling/createMessage", async (request) => {
  out.sampled.push(request.params.messages[0].content.text);
  return { role: "assistant", content: { type: "text", text: "forty-two" }, model: "m" };
});
client.setRequestHandler("elicitation/create", async (request) => {
  out.elicited.push(request.params.message);
  return { action: "accept", content: { name: "Grace" } };
});

await client.connect(new StreamableHTTPClientTransport(new URL(url)));
out.protocolVersion = client.getNegotiatedProtocolVersion();
out.tools = (await client.listTools()).tools.map((tool) => tool.name);
out.add = await client.callTool({ name: "add", arguments: { a: 20, b: 22 } });
out.hello = await client.readResource({ uri: "test://hello" });
out.prompt = await client.getPrompt({ name: "greet", arguments: { name: "Grace" } });
out.chatty = await client.callTool(
  { name: "chatty", arguments: {} },
  { onprogress: (progress) => out.progress.push([progress.progress, progress.total, progress.message]) },
);
out.sample = await client.callTool({ name: "sample", arguments: { prompt: "meaning of life?" } });
out.elicit = await client.callTool({ name: "elicit", arguments: {} });
await client.close();
console.log(JSON.stringify(out));
