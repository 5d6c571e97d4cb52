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
-- An empty value means a stateless server (the bare ASGI ceiling).
local one = os.getenv("MCP_SESSION") or ""
local many = {}
for sid in string.gmatch(os.getenv("MCP_SESSIONS") or "", "[^,]+") do table.insert(many, sid) end
local threads = {}
bad, n, tid, session = 0, 0, 0, ""

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"

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
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":' .. (tid * 1000000000 + n) ..
    ',"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}')
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true)
      or string.find(body, '"isError":%s*true') then
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
