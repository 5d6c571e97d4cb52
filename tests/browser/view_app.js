// The view built on the official App class (@modelcontextprotocol/ext-apps/app-with-deps, every
// dependency inside): the same behaviour as view_plain.js through the SDK. build.mjs bundles it
// into one IIFE that the server inlines into view.html.
import { App } from "@modelcontextprotocol/ext-apps/app-with-deps";

const show = (id, text) => {
  document.getElementById(id).textContent = text;
};
const text = (result) =>
  result.content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join(" ");

const app = new App({ name: "app-view", version: "1.0.0" }, {}, { autoResize: true });
// Handlers before connect(): tool-input and tool-result come once, right after the handshake.
app.ontoolinput = (params) => show("input", JSON.stringify(params.arguments));
app.ontoolresult = (result) => show("result", text(result));
document.getElementById("add").onclick = async () => {
  try {
    show("answer", text(await app.callServerTool({ name: "add", arguments: { a: 20, b: 22 } })));
  } catch (error) {
    show("answer", `error: ${error.message}`);
  }
};
document.getElementById("secret").onclick = async () => {
  try {
    show("refused", `ran: ${text(await app.callServerTool({ name: "secret", arguments: {} }))}`);
  } catch (error) {
    show("refused", `refused: ${error.message}`);
  }
};
(async () => {
  await app.connect();
  await app.sendLog({ level: "info", data: "App view ready" });
})();
