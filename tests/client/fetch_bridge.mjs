// node:http in front of a web-standard fetch handler (what the TypeScript SDK v2 serves with),
// streaming each response body as it comes: the test peers' HTTP server.
//
//   import { serveFetch } from "./fetch_bridge.mjs";
//   serveFetch((request) => handler.fetch(request));   // binds 127.0.0.1:0, prints "PORT <n>"
import { createServer } from "node:http";

const NO_BODY = new Set(["GET", "HEAD", "DELETE"]);

export function serveFetch(fetchHandler) {
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    const body = NO_BODY.has(req.method) ? undefined : Buffer.concat(chunks);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body,
      signal: controller.signal,
    });
    let response;
    try {
      response = await fetchHandler(request);
    } catch (error) {
      console.error(`HANDLER-FAILED ${error}`);
      res.writeHead(500).end();
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) {
      res.end();
      return;
    }
    try {
      for await (const chunk of response.body) res.write(chunk);
    } catch {
      // the client went away
    }
    res.end();
  });
  http.listen(0, "127.0.0.1", () => console.log(`PORT ${http.address().port}`));
  return http;
}
