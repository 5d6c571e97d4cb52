-- wrk script for bench/tasks.py: tasks started and read until they end, or one task polled.
--   MCP_TASKS=extension  2026-07-28 requests declaring the Tasks extension: tools/call `done`
--                        (a task), then tasks/get of it until "completed"
--   MCP_TASKS=core       a 2025-11-25 session (MCP_SESSION): tools/call `done` with
--                        params.task, then tasks/result of it
--   MCP_TASKS=poll       tasks/get of the task MCP_TASK (2026-07-28), every request
-- Tasks waiting for their next request are shared by the thread's connections (a queue):
-- a reply's task id goes in, the next request takes one out, else starts a new task.
-- `done` prints "tasks=N requests=N errors=N" (tasks: ended ones), read by tasks.py.
local mode = os.getenv("MCP_TASKS") or "extension"
local session = os.getenv("MCP_SESSION") or ""
local polled = os.getenv("MCP_TASK") or ""
local stateless = mode ~= "core"
local envelope = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
  '"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},' ..
  '"io.modelcontextprotocol/clientInfo":{"name":"bench-tasks","version":"1"}}'
local threads = {}
waiting, head, tail, n, ended, bad = {}, 1, 0, 0, 0, 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = stateless and "2026-07-28" or "2025-11-25"
if session ~= "" then wrk.headers["Mcp-Session-Id"] = session end

function setup(thread) table.insert(threads, thread) end

local function post(method, name, params)
  n = n + 1
  local headers = nil
  local meta = ""
  if stateless then
    headers = {}  -- (wrk.format sends these instead of wrk.headers: all of them)
    for key, value in pairs(wrk.headers) do headers[key] = value end
    headers["Mcp-Method"], headers["Mcp-Name"] = method, name
    meta = "," .. envelope
  end
  return wrk.format(nil, nil, headers, '{"jsonrpc":"2.0","id":' .. n .. ',"method":"' .. method ..
    '","params":{' .. params .. meta .. '}}')
end

function request()
  if mode == "poll" then
    return post("tasks/get", polled, '"taskId":"' .. polled .. '"')
  end
  if head <= tail then
    local id = waiting[head]
    waiting[head] = nil
    head = head + 1
    if mode == "core" then return post("tasks/result", id, '"taskId":"' .. id .. '"') end
    return post("tasks/get", id, '"taskId":"' .. id .. '"')
  end
  local task = mode == "core" and ',"task":{}' or ""
  return post("tools/call", "done", '"name":"done","arguments":{}' .. task)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) then
    bad = bad + 1
    return
  end
  if mode == "poll" then return end
  local id = string.match(body, '"taskId":"([^"]+)"')
  if mode == "core" then
    if string.find(body, '"task":{', 1, true) and id then
      tail = tail + 1
      waiting[tail] = id
    else
      ended = ended + 1  -- (the tasks/result reply)
    end
  elseif string.find(body, '"status":"completed"', 1, true) then
    ended = ended + 1
  elseif id then
    tail = tail + 1
    waiting[tail] = id
  else
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total, errors = 0, 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("ended")
    errors = errors + thread:get("bad")
  end
  io.write(string.format("tasks=%d requests=%d errors=%d\n", total, summary.requests, errors))
end
