-- wrk_extender.lua - POST kube-scheduler's ExtenderArgs to an extender verb.
--
--   wrk -t2 -c16 -d10s --latency -s wrk_extender.lua http://127.0.0.1:8888 -- filter 100
--
-- Arguments after "--": the verb (filter | prioritize) and the number of NodeNames, which are
-- node-00001 ... (the names bench/nodes_gen.sh gives). The body is what kube-scheduler sends
-- with nodeCacheCapable: true (PascalCase keys, "Nodes":null), around a pod muster manages
-- (schedulerName muster) asking for one whole GPU; the same pod every call, so after the first
-- call the engine answers from the plan it keeps. done() prints one machine-readable line:
--   RESULT requests=... rps=... p50_ms=... p99_ms=... max_ms=... errors=...

local verb, names = "filter", 100

local pod = [[{"metadata":{"name":"bench-gpu-worker-x7k2p","generateName":"bench-gpu-worker-",]] ..
  [["namespace":"team-a","uid":"5f0c1b9e-2d3a-4c1e-9b7a-0d1e2f3a4b5c","resourceVersion":"48211",]] ..
  [["labels":{"app":"bench"}},"spec":{"schedulerName":"muster",]] ..
  [["containers":[{"name":"worker","image":"rayproject/ray:2.41.0","resources":]] ..
  [[{"requests":{"cpu":"2","memory":"8Gi","nvidia.com/gpu":"1"},]] ..
  [["limits":{"cpu":"2","memory":"8Gi","nvidia.com/gpu":"1"}}}],]] ..
  [["tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists",]] ..
  [["effect":"NoExecute","tolerationSeconds":300}],"priority":0},"status":{"phase":"Pending"}}]]

local function body(n)
  local list = {}
  for i = 1, n do
    list[i] = string.format('"node-%05d"', i)
  end
  return '{"Pod":' .. pod .. ',"Nodes":null,"NodeNames":[' .. table.concat(list, ",") .. ']}'
end

function init(args)
  verb = args[1] or verb
  names = tonumber(args[2] or names)
  wrk.method = "POST"
  wrk.path = "/" .. verb
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = body(names)
  local out = os.getenv("WRK_BODY_OUT") -- bench_http.sh checks one answer with curl
  if out then
    local f = assert(io.open(out, "w"))
    f:write(wrk.body)
    f:close()
  end
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
                 summary.errors.timeout + summary.errors.status
  io.write(string.format(
    "RESULT requests=%d rps=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%d\n",
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000, errors))
end
