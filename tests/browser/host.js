// The host page's script (bundled by build.mjs): renders one tool's MCP App the way a web host
// must (the extension's spec, "Host rules"): our server's tool is called through the official
// TypeScript Client, its ui:// resource is read, and the HTML goes to a sandbox proxy on ANOTHER
// origin, which writes it into an inner frame under the CSP built from the resource's _meta.ui.
// The official AppBridge speaks the view-host protocol with that frame.
//
// With &bridge=python the page speaks no protocol itself: our Python AppHostSession does, behind
// the routes of tests/browser/python_host.py, and the page only carries the frame's messages.
//
// Query: ?tool=NAME (the tool to render), &era=2026-07-28 (pin the stateless revision; default: a
// 2025-11-25 session), &sandbox=ORIGIN (the proxy's origin), &bridge=python. Everything the page
// saw goes to window.__host (events in order, the tool result, errors) for drive.mjs to read.
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const UI_EXTENSION = "io.modelcontextprotocol/ui";
const PROXY_SANDBOX = "allow-scripts allow-same-origin"; // the spec's outer frame

const host = { events: [], errors: [], done: false };
window.__host = host;
const note = (event, detail) => host.events.push(detail === undefined ? { event } : { event, detail });
const status = (text) => {
  document.getElementById("status").textContent = text;
};

// A tool's visibility (_meta.ui.visibility, default both): the host's to enforce, because
// AppBridge 2.0.4 forwards a view's tools/call without looking at it.
const visibility = (tool) => tool._meta?.ui?.visibility ?? ["model", "app"];

// The outer frame: the sandbox proxy, on its own origin, serving the view's CSP as a header.
function proxyFrame(title) {
  const frame = document.createElement("iframe");
  frame.id = "app-frame";
  frame.title = title;
  frame.setAttribute("sandbox", PROXY_SANDBOX);
  document.getElementById("frame-box").appendChild(frame);
  return frame;
}

function proxyUrl(sandboxOrigin, csp) {
  const proxy = new URL("/sandbox.html", sandboxOrigin);
  proxy.searchParams.set("csp", JSON.stringify(csp ?? null));
  return proxy.href;
}

async function main() {
  const query = new URLSearchParams(location.search);
  const toolName = query.get("tool");
  const era = query.get("era") ?? "2025-11-25";
  const sandboxOrigin = query.get("sandbox");
  if (query.get("bridge") === "python") return viaPython(toolName, era, sandboxOrigin);

  const client = new Client(
    { name: "browser-test-host", version: "1.0.0" },
    {
      capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
      ...(era === "2026-07-28" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {}),
    },
  );
  // The trailing slash: Starlette's Mount redirects /mcp, and the client follows no redirect.
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp/", location.origin)));
  host.protocolVersion = client.getNegotiatedProtocolVersion();
  host.serverExtensions = client.getServerCapabilities()?.extensions ?? {};
  note("connected", host.protocolVersion);

  const { tools } = await client.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const tool = byName.get(toolName);
  if (!tool) throw new Error(`no tool ${toolName}`);
  // What an agent would be offered: the tools the model may see.
  host.modelTools = tools.filter((t) => visibility(t).includes("model")).map((t) => t.name);
  const uri = getToolUiResourceUri(tool);
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} is ${content.mimeType}`);
  const ui = content._meta?.ui ?? {};
  note("resource read", uri);

  const frame = proxyFrame(tool.title ?? tool.name);

  // No client given to the bridge: with one, connect() installs a tools/call forwarder that
  // checks no visibility; every handler here is ours.
  const bridge = new AppBridge(
    null,
    { name: "browser-test-host", version: "1.0.0" },
    { serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { theme: "light", platform: "web", displayMode: "inline" } },
  );
  bridge.oncalltool = async (params) => {
    const target = byName.get(params.name);
    if (!target || !visibility(target).includes("app")) {
      note("call refused", params.name);
      throw new Error(`${params.name} is not available to apps`);
    }
    note("call forwarded", params.name);
    return client.callTool(params);
  };
  bridge.onreadresource = async (params) => client.readResource(params);
  bridge.onlistresources = async (params) => client.listResources(params);
  bridge.onloggingmessage = (params) => note("view log", params.data);
  bridge.onsizechange = ({ height }) => {
    note("size changed", height);
    if (height) frame.style.height = `${Math.ceil(height)}px`;
  };
  bridge.onsandboxready = () => {
    note("sandbox ready");
    bridge.sendSandboxResourceReady({ html: content.text, csp: ui.csp, permissions: ui.permissions });
  };
  bridge.oninitialized = async () => {
    note("view initialized");
    const args = { a: 2, b: 3 };
    await bridge.sendToolInput({ arguments: args });
    note("tool input sent");
    const result = await client.callTool({ name: tool.name, arguments: args });
    host.result = result;
    await bridge.sendToolResult(result);
    note("tool result sent");
    status(`rendered ${tool.name} (${host.protocolVersion})`);
    host.done = true;
  };
  // The bridge listens before the frame loads: the proxy's ready message would be lost otherwise.
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.src = proxyUrl(sandboxOrigin, ui.csp);
}

// Our Python host bridge: the page hands the proxy its HTML and relays everything else, in order.
async function viaPython(toolName, era, sandboxOrigin) {
  const reply = await fetch(`/bridge/start?tool=${encodeURIComponent(toolName)}&era=${era}`, { method: "POST" });
  if (!reply.ok) throw new Error(`bridge/start: ${reply.status} ${await reply.text()}`);
  const app = await reply.json();
  host.protocolVersion = app.protocolVersion;
  host.modelTools = app.modelTools;
  note("resource read", toolName);
  const frame = proxyFrame(toolName);
  const out = new EventSource("/bridge/out");
  out.onmessage = (event) => {
    const message = JSON.parse(event.data);
    frame.contentWindow.postMessage(message, sandboxOrigin);
    if (message.method === "ui/notifications/tool-result") {
      host.result = message.params;
      note("tool result sent");
      status(`rendered ${toolName} (${host.protocolVersion}, Python host)`);
      host.done = true;
    }
  };
  let relayed = Promise.resolve(); // one POST at a time: the session sees the view's order
  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== sandboxOrigin) return;
    const message = event.data;
    if (message?.method === "ui/notifications/sandbox-proxy-ready") {
      note("sandbox ready");
      const params = { html: app.html, csp: app.csp ?? undefined, permissions: app.permissions ?? undefined };
      const ready = { jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready", params };
      frame.contentWindow.postMessage(ready, sandboxOrigin);
      return;
    }
    if (message?.method === "ui/notifications/size-changed" && message.params?.height) {
      note("size changed", message.params.height); // the frame is the page's to size
      frame.style.height = `${Math.ceil(message.params.height)}px`;
    }
    const body = JSON.stringify(message);
    relayed = relayed.then(async () => {
      const sent = await fetch("/bridge/in", { method: "POST", body });
      if (!sent.ok) host.errors.push(`bridge/in: ${sent.status}`);
    });
  });
  frame.src = proxyUrl(sandboxOrigin, app.csp);
}

main().catch((error) => {
  host.errors.push(String(error?.stack ?? error));
  status(`failed: ${error}`);
  host.done = true;
});
