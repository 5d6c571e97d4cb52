"""The demo's MCP App: ``calculator``, a tool whose result a host renders as a small calculator.

Any client gets the answer as text ("20 + 22 = 42") and as structured content; a host with the
MCP Apps extension also renders ``ui://demo/calculator.html``, which shows the call's result and
lets the user compute again from inside the view (its buttons call ``calculator`` through the
host). The page is one inline HTML document speaking the view-host protocol as plain JSON-RPC
over ``postMessage``: no script from anywhere else, so it needs no CSP entries.

>>> server = McpServer("calc")
>>> add_calculator_app(server)
>>> server.tools[0].meta["ui"]
{'resourceUri': 'ui://demo/calculator.html'}
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Final, Literal

from ..engine.server import McpServer
from ..engine.types import CallToolResult, ToolAnnotations

__all__ = ["CALCULATOR_HTML", "CALCULATOR_URI", "add_calculator_app"]

CALCULATOR_URI: Final = "ui://demo/calculator.html"

Operation = Literal["add", "subtract", "multiply", "divide"]
_OPERATIONS: Final[dict[str, tuple[str, Callable[[float, float], float]]]] = {
    "add": ("+", operator.add),
    "subtract": ("-", operator.sub),
    "multiply": ("*", operator.mul),
    "divide": ("/", operator.truediv),
}

CALCULATOR_HTML: Final = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Calculator</title>
<style>
  body { font: 15px system-ui, sans-serif; margin: 0; padding: 12px; color: #1d2330; background: #fff; }
  body.dark { color: #e8eaf0; background: #1d2330; }
  #answer { font-size: 28px; font-weight: 600; margin: 4px 0 12px; min-height: 34px; }
  input { width: 6em; font: inherit; padding: 4px; }
  button { font: inherit; min-width: 2.4em; padding: 4px 8px; margin-left: 2px; cursor: pointer; }
  #status { color: #7a8194; font-size: 13px; margin-top: 8px; min-height: 1em; }
</style>
</head>
<body>
<div id="answer">…</div>
<form id="form">
  <input id="a" type="number" step="any" value="0" aria-label="a">
  <input id="b" type="number" step="any" value="0" aria-label="b">
  <button data-op="add">+</button><button data-op="subtract">-</button>
  <button data-op="multiply">&times;</button><button data-op="divide">&divide;</button>
</form>
<div id="status">waiting for the host</div>
<script>
"use strict";
const pending = new Map();
let nextId = 1;
const $ = (id) => document.getElementById(id);
const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function show(result) {
  const data = result.structuredContent;
  const text = (result.content || []).filter((block) => block.type === "text").map((block) => block.text).join(" ");
  $("answer").textContent = data && "result" in data ? `${data.a} ${data.symbol} ${data.b} = ${data.result}` : text;
  $("status").textContent = result.isError ? "the server says: " + text : "";
}
function fill(args) {
  if (args && "a" in args) $("a").value = args.a;
  if (args && "b" in args) $("b").value = args.b;
}
function resized() {
  send({ method: "ui/notifications/size-changed", params: { height: document.documentElement.scrollHeight } });
}
window.addEventListener("message", (event) => {
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined && pending.has(message.id)) {
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiting.reject(message.error); else waiting.resolve(message.result);
  } else if (message.method === "ui/notifications/tool-input") {
    fill(message.params.arguments);
  } else if (message.method === "ui/notifications/tool-result") {
    show(message.params);
    resized();
  } else if (message.method === "ui/notifications/host-context-changed") {
    document.body.classList.toggle("dark", message.params.theme === "dark");
  } else if (message.method === "ui/resource-teardown") {
    send({ id: message.id, result: {} });
  }
});
$("form").addEventListener("click", (event) => {
  const operation = event.target.dataset && event.target.dataset.op;
  if (!operation) return;
  event.preventDefault();
  $("status").textContent = "computing…";
  const args = { a: Number($("a").value), b: Number($("b").value), operation };
  request("tools/call", { name: "calculator", arguments: args })
    .then(show, (error) => { $("status").textContent = "refused: " + error.message; });
});
request("ui/initialize", {
  appInfo: { name: "demo-calculator", version: "1.0.0" }, appCapabilities: {}, protocolVersion: "2026-01-26",
}).then((answer) => {
  document.body.classList.toggle("dark", (answer.hostContext || {}).theme === "dark");
  send({ method: "ui/notifications/initialized", params: {} });
  $("status").textContent = "";
  resized();
});
</script>
</body>
</html>
"""


def add_calculator_app(server: McpServer) -> None:
    """Register the calculator app and its tool on ``server``."""
    server.add_app(
        CALCULATOR_URI,
        html=CALCULATOR_HTML,
        name="calculator",
        title="Calculator",
        description="Shows a calculation and computes again from the view.",
        prefers_border=True,
    )

    @server.tool(
        title="Calculator",
        app=CALCULATOR_URI,
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
    )
    def calculator(a: float, b: float, operation: Operation = "add") -> CallToolResult:
        """Compute a op b; a host with MCP Apps shows the answer in an interactive calculator.

        Args:
            a: The first number.
            b: The second number.
            operation: add, subtract, multiply or divide.
        """
        symbol, apply = _OPERATIONS[operation]
        try:
            result = apply(a, b)
        except ZeroDivisionError:
            return CallToolResult.error(f"{_number(a)} {symbol} {_number(b)}: division by zero")
        data = {"a": _number(a), "b": _number(b), "operation": operation, "symbol": symbol, "result": _number(result)}
        return CallToolResult.structured(data, text=f"{data['a']} {symbol} {data['b']} = {data['result']}")


def _number(value: float) -> float | int:
    """``42`` rather than ``42.0`` where the value is whole (the view shows what the text says)."""
    return int(value) if float(value).is_integer() else value
