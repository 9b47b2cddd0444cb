-- wrk script for scripts/bench-proxy.sh: every request is an MCP `tools/call` of an echo tool
-- with arguments unique to the request, sent in the MCP session(s) named by MCP_SESSIONS
-- (space-separated; wrk thread i uses session i, round robin; empty for a stateless server).
-- An answer counts as wrong unless it is HTTP 200, answers a request of its wrk thread that is
-- still waiting, and carries the text that request sent, so a crossed or repeated answer is
-- counted, not just an error status. (wrk builds one request it never sends; it stays waiting.)
--
-- Environment: MCP_PATH (e.g. /mcp/all), MCP_TOOL (e.g. fixture__echo), MCP_SESSIONS.

local threads = {}
local next_index = 0

function setup(thread)
  next_index = next_index + 1
  thread:set("index", next_index)
  table.insert(threads, thread)
end

function init(args)
  local sessions = {}
  for s in string.gmatch(os.getenv("MCP_SESSIONS") or "", "%S+") do
    table.insert(sessions, s)
  end
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-06-18",
  }
  if #sessions > 0 then
    headers["Mcp-Session-Id"] = sessions[((index - 1) % #sessions) + 1]
  end
  path = os.getenv("MCP_PATH") or "/mcp"
  tool = os.getenv("MCP_TOOL") or "echo"
  request_headers = headers
  sent = 0
  outstanding = {}
  wrong = 0
end

function request()
  sent = sent + 1
  -- Ids are unique across threads: the proxies refuse an id already in flight in a session.
  local id = index * 1000000000 + sent
  local text = string.format("t%d", id)
  outstanding[id] = true
  local body = string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"text":"%s"}}}',
    id, tool, text)
  return wrk.format("POST", path, request_headers, body)
end

function response(status, headers, body)
  -- The answer must name a request of this thread still waiting, and carry that request's text.
  local id = tonumber(string.match(body, '"id":(%d+)') or "")
  if status ~= 200 or id == nil or not outstanding[id]
      or not string.find(body, string.format('"t%d"', id), 1, true) then
    wrong = wrong + 1
  end
  if id ~= nil then
    outstanding[id] = nil
  end
end

function done(summary, latency, requests)
  local total_wrong = 0
  for _, thread in ipairs(threads) do
    total_wrong = total_wrong + (thread:get("wrong") or 0)
  end
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT calls=%d calls_per_s=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f wrong=%d errors=%d\n",
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    total_wrong,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout))
end
