// The plain view's script: the view-host protocol as raw JSON-RPC over postMessage, no SDK.
// ui/initialize, then ui/notifications/initialized; renders tool-input and tool-result; its
// buttons call the app-only tool add and the model-only tool secret (which the host refuses).
// The server inlines it into view.html.
const show = (id, text) => { document.getElementById(id).textContent = text; };
const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join(" ");
let nextId = 0;
const pending = new Map();
const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
const request = (method, params) =>
  new Promise((resolve, reject) => {
    const id = ++nextId;
    pending.set(id, { resolve, reject });
    send({ id, method, params });
  });
window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (message?.jsonrpc !== "2.0") return;
  if (message.id !== undefined && !message.method) {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (!waiter) return;
    if (message.error) waiter.reject(new Error(message.error.message));
    else waiter.resolve(message.result);
  } else if (message.method === "ui/notifications/tool-input") {
    show("input", JSON.stringify(message.params.arguments));
  } else if (message.method === "ui/notifications/tool-result") {
    show("result", text(message.params));
  } else if (message.id !== undefined) {
    // ping, ui/resource-teardown: nothing to clean up, answer at once
    send({ id: message.id, result: {} });
  }
});
document.getElementById("add").onclick = async () => {
  try {
    show("answer", text(await request("tools/call", { name: "add", arguments: { a: 20, b: 22 } })));
  } catch (error) {
    show("answer", `error: ${error.message}`);
  }
};
document.getElementById("secret").onclick = async () => {
  try {
    show("refused", `ran: ${text(await request("tools/call", { name: "secret", arguments: {} }))}`);
  } catch (error) {
    show("refused", `refused: ${error.message}`);
  }
};
(async () => {
  await request("ui/initialize", {
    appInfo: { name: "plain-view", version: "1.0.0" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  });
  send({ method: "ui/notifications/initialized", params: {} });
  send({ method: "ui/notifications/size-changed", params: { height: document.documentElement.scrollHeight } });
  send({ method: "notifications/message", params: { level: "info", data: "plain view ready" } });
})();
