// Drives Debian's Chromium with playwright-core (no browser download) through one MCP Apps case:
// opens the host page, waits for the view in the inner frame (host page > sandbox proxy > view),
// clicks what the case needs, and prints one JSON line of everything seen: the host's record
// (window.__host), the view's outputs, console messages, page errors, the MCP requests' headers
// and bodies. The assertions are pytest's (test_apps_browser.py). A screenshot of the page goes
// to SCREENSHOT whatever happened; every wait is bounded and the browser is always closed.
//
//   node drive.mjs HOST_URL CASE SCREENSHOT CHROMIUM   (CASE: view | fetch | demo; CHROMIUM: the binary;
//                                                       MCP_TEST_NODE_MODULES names node_modules)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [hostUrl, kind, screenshot, executablePath] = process.argv.slice(2);
const modules = process.env.MCP_TEST_NODE_MODULES;
const { chromium } = await import(pathToFileURL(join(modules, "playwright-core/index.mjs")).href);

const WAIT = 20_000; // each wait; only a broken case takes this long
const out = { console: [], pageErrors: [], requests: [], view: {}, ms: {} };
const started = Date.now();
const mark = (name) => (out.ms[name] = Date.now() - started);
// Whatever hangs, the process ends: the browser is a child of this process and dies with it.
const watchdog = setTimeout(() => {
  console.error("drive.mjs: watchdog fired");
  process.exit(3);
}, 90_000);

const browser = await chromium.launch({
  executablePath,
  headless: true,
  // --no-sandbox: CI runs as root, where Chromium's own sandbox cannot start.
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  timeout: WAIT,
});
mark("launched");
let failure = null;
try {
  const page = await browser.newPage({ viewport: { width: 680, height: 320 } });
  page.setDefaultTimeout(WAIT);
  page.on("console", (message) => {
    const type = message.type();
    if (type === "error" || type === "warning") out.console.push({ type, text: message.text(), url: message.location().url });
  });
  page.on("pageerror", (error) => out.pageErrors.push(String(error)));
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.startsWith("/mcp"))
      out.requests.push({ method: request.method(), headers: request.headers(), body: request.postData() });
  });
  await page.goto(hostUrl);
  await page.waitForFunction(() => window.__host?.done === true);
  mark("rendered");
  const view = page.frameLocator("#app-frame").frameLocator("iframe");
  const text = async (id) => (await view.locator(`#${id}`).textContent()).trim();
  const until = async (id, pending) => {
    await view.locator(`#${id}`).filter({ hasNotText: pending }).waitFor();
    out.view[id] = await text(id);
  };
  if (kind === "view") {
    await until("result", /^…$/);
    await until("input", /^…$/);
    await view.locator("#add").click();
    await until("answer", /^$/);
    await view.locator("#secret").click();
    await until("refused", /^$/);
    // The size-changed notification of an auto-resizing view may trail the first render.
    await page.waitForFunction(() => window.__host.events.some((e) => e.event === "size changed"));
  } else if (kind === "demo") {
    // The demo's calculator (servers/demo_app.py): its first answer, then the view computes again.
    await until("answer", /^…$/);
    await view.locator('button[data-op="multiply"]').click();
    await view.locator("#answer").filter({ hasText: "*" }).waitFor();
    out.view.computed = await text("answer");
    await page.waitForFunction(() => window.__host.events.some((e) => e.event === "size changed"));
  } else {
    await until("declared", /^…$/);
    await until("undeclared", /^…$/);
  }
  mark("clicked");
} catch (error) {
  failure = String(error?.stack ?? error);
} finally {
  const page = browser.contexts()[0]?.pages()[0];
  if (page) {
    out.host = await page.evaluate(() => window.__host).catch(() => null);
    await page.screenshot({ path: screenshot, timeout: WAIT }).catch((e) => (out.screenshotError = String(e)));
  }
  await browser.close();
  clearTimeout(watchdog);
}
out.failure = failure;
mark("closed");
console.log(JSON.stringify(out));
