-- wrk script: POST tools/call `add` on MCP sessions. Every request gets its
-- own JSON-RPC id (MCP forbids reusing an id within a session), and any reply
-- that is not HTTP 200 with a JSON-RPC result (tool errors included) counts
-- as an error, which makes the whole run invalid.
--
-- Sessions come from the environment:
--   MCP_SESSION=ID          every connection uses this one session
--                           (mcp_load.sh, 16 connections on one session);
--   MCP_SESSIONS=ID,ID,...  thread i uses the i-th session; run wrk with
--                           -tN -cN so each connection is one client with its
--                           own session and one request in flight
--                           (run.py's "many sessions" point).
-- An empty value means no session: the bare ASGI ceiling, or a modern
-- revision (MCP_ENVELOPE). And how to call (run.py's points on each protocol
-- revision):
--   MCP_REVISION=REV        the MCP-Protocol-Version header, the revision the
--                           sessions were negotiated at (2025-06-18 if unset);
--   MCP_ENVELOPE=1          REV is a modern revision (2026-07-28): no session;
--                           every request carries params._meta's envelope
--                           (protocolVersion REV, clientCapabilities {},
--                           clientInfo) and the headers Mcp-Method: tools/call
--                           and Mcp-Name: add, and a reply without
--                           "resultType":"complete" is an error;
--   MCP_PROGRESS=1          streamed calls: each carries params._meta.progressToken
--                           (its JSON-RPC id, so unique too), and a reply whose
--                           stream holds no notifications/progress is an error;
--   MCP_HEADER="Name: value" one more header on every request (several: one
--                           per line), e.g. "Authorization: Bearer <token>"
--                           (run.py's ours-jwt); unset or empty: none.
local one = os.getenv("MCP_SESSION") or ""
local revision = os.getenv("MCP_REVISION") or ""
if revision == "" then revision = "2025-06-18" end
local envelope = (os.getenv("MCP_ENVELOPE") or "") ~= ""
local progress = (os.getenv("MCP_PROGRESS") or "") ~= ""
local stamp = envelope and ('"io.modelcontextprotocol/protocolVersion":"' .. revision ..
  '","io.modelcontextprotocol/clientCapabilities":{},' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"bench-wrk","version":"1.0.0"}') or ""
local many = {}
for sid in string.gmatch(os.getenv("MCP_SESSIONS") or "", "[^,]+") do table.insert(many, sid) end
local threads = {}
bad, n, tid, session = 0, 0, 0, ""

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = revision
if envelope then
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = "add"
end
for line in string.gmatch(os.getenv("MCP_HEADER") or "", "[^\n]+") do
  local name, value = string.match(line, "^%s*([^:]-)%s*:%s*(.-)%s*$")
  if name and name ~= "" then wrk.headers[name] = value end
end

function setup(thread)
  table.insert(threads, thread)
  local i = #threads
  thread:set("tid", i)
  if #many > 0 then
    thread:set("session", many[(i - 1) % #many + 1])
  else
    thread:set("session", one)
  end
end

function init(args)
  if session ~= "" then wrk.headers["Mcp-Session-Id"] = session end
end

function request()
  n = n + 1
  local id = tid * 1000000000 + n
  local meta = progress and (',"_meta":{"progressToken":' .. id .. (envelope and "," or "") .. stamp .. '}')
    or (envelope and (',"_meta":{' .. stamp .. '}')) or ""
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. id ..
    ',"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}' .. meta .. '}}')
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true)
      or string.find(body, '"isError":%s*true')
      or (progress and not string.find(body, 'notifications/progress', 1, true))
      or (envelope and not string.find(body, '"resultType":%s*"complete"')) then
    bad = bad + 1
    if bad <= 3 then io.stderr:write("bad reply: ", status, " ", string.sub(body, 1, 200), "\n") end
  end
end

function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  local e = summary.errors
  io.write(string.format("requests=%d errors=%d rps=%.0f p50_us=%d p99_us=%d\n",
    summary.requests, b + e.connect + e.read + e.write + e.timeout,
    summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99)))
end
