-- wrk_extender.lua - POST kube-scheduler's ExtenderArgs to an extender verb.
--
--   wrk -t2 -c16 -d10s --latency -s wrk_extender.lua http://127.0.0.1:8888 -- filter 100
--
-- Arguments after "--": the verb (filter | prioritize) and the number of NodeNames.
-- The body is what kube-scheduler sends with nodeCacheCapable: true (PascalCase keys,
-- "Nodes":null), around a KubeRay worker pod. done() prints one machine-readable line:
--   RESULT requests=... rps=... p50_ms=... p99_ms=... errors=...

local verb, names = "filter", 100

local pod = [[{"metadata":{"name":"rc-a-gpu-worker-x7k2p","generateName":"rc-a-gpu-worker-",]] ..
  [["namespace":"team-a","uid":"5f0c1b9e-2d3a-4c1e-9b7a-0d1e2f3a4b5c","resourceVersion":"48211",]] ..
  [["labels":{"ray.io/cluster":"rc-a","ray.io/node-type":"worker","ray.io/group":"gpu",]] ..
  [["ray.io/is-ray-node":"yes","app.kubernetes.io/created-by":"kuberay-operator"},]] ..
  [["annotations":{"gpu-fraction":"0.5"}},"spec":{"schedulerName":"muster",]] ..
  [["containers":[{"name":"ray-worker","image":"rayproject/ray:2.41.0","resources":]] ..
  [[{"requests":{"cpu":"2","memory":"8Gi"},"limits":{"cpu":"2","memory":"8Gi"}}}],]] ..
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
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
                 summary.errors.timeout + summary.errors.status
  io.write(string.format(
    "RESULT requests=%d rps=%.0f p50_ms=%.3f p99_ms=%.3f errors=%d\n",
    summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, errors))
end
