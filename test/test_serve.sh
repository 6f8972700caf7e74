#!/usr/bin/env bash
# The daemon's HTTP face, end to end in one process: `muster serve --offline` with two fake
# nodes, driven with kube-scheduler's exact payloads (test/fixtures/extender/) in both node
# modes, the gang bind barrier with concurrent binds, every bad-input case, metrics, the
# config check, and a graceful stop while a bind is held.
#   test_serve.sh MUSTER_BIN TEST_DIR
set -uo pipefail
exec python3 - "$@" <<'PY'
import atexit, json, os, re, socket, subprocess, sys, threading, time, urllib.request, urllib.error

muster, tdir = sys.argv[1], sys.argv[2]
fx = f"{tdir}/fixtures"
passed = failed = 0

def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

port = free_port()
base = f"http://127.0.0.1:{port}"
proc = subprocess.Popen([muster, "serve", "--offline", "--config", f"{fx}/serve/muster.yaml",
                         "--listen", f"127.0.0.1:{port}", "-f", f"{fx}/serve/cluster.yaml"],
                        stderr=subprocess.PIPE, text=True)
# A check that raises must not leave the daemon behind: ctest waits for its output pipe.
atexit.register(lambda: proc.poll() is None and proc.kill())
log_lines = []
threading.Thread(target=lambda: log_lines.extend(proc.stderr), daemon=True).start()

def call(path, body=None, method=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method or ("POST" if data is not None else "GET"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)

for _ in range(100):
    try:
        if call("/readyz")[0] == 200: break
    except OSError:
        time.sleep(0.05)

def pod(name, cluster=None, head=False, gpus=1, share=None):
    labels = {}
    if cluster:
        # As KubeRay labels them: the node type, and the group ("headgroup" for the head).
        labels = {"ray.io/cluster": cluster, "ray.io/node-type": "head" if head else "worker",
                  "ray.io/group": "headgroup" if head else "w"}
    ann = {"gpu-fraction": share} if share else {}
    res = {"cpu": "1"}
    if gpus: res["nvidia.com/gpu"] = str(gpus)
    return {"metadata": {"name": name, "namespace": "lab", "uid": "uid-" + name, "labels": labels,
                         "annotations": ann},
            "spec": {"schedulerName": "muster", "containers": [{"name": "c", "resources": {"requests": res}}]}}

names = {"Pod": None, "Nodes": None, "NodeNames": ["gpu-1", "gpu-2"]}
def filt(p, nodes=None):
    b = dict(names, Pod=p)
    st, body, _ = call("/filter", b)
    return st, json.loads(body)

# 1. filter, NodeNames mode: a gang of one goes to one planned node, the other says why not.
st, r = filt(pod("single"))
check("filter names status", st == 200, st)
check("filter names one node", r["NodeNames"] and len(r["NodeNames"]) == 1 and r["Nodes"] is None, r)
other = ({"gpu-1", "gpu-2"} - set(r["NodeNames"] or [])).pop()
# kube-scheduler reads why a node failed only when none passes: the others are left out.
check("filter names others left out", other not in json.dumps(r) and r["FailedNodes"] == {}, r)

# 2. filter, full Nodes mode (nodeCacheCapable: false): the answer is Nodes, with full objects.
full = json.load(open(f"{fx}/extender/filter_nodes.json"))
st, body, _ = call("/filter", full)
r = json.loads(body)
check("filter nodes status", st == 200, body)
check("filter nodes form", r["NodeNames"] is None and isinstance(r["Nodes"], dict) and
      len(r["Nodes"]["items"]) == 1 and "status" in r["Nodes"]["items"][0], body[:300])

# 3. prioritize: the planned node scores 10; hosts scoring 0 are left out.
st, body, _ = call("/prioritize", dict(names, Pod=pod("single")))
scores = {h["Host"]: h["Score"] for h in json.loads(body)}
check("prioritize", st == 200 and list(scores.values()) == [10] and other not in scores, body)

# 4. the gang barrier: lab/pair needs 2 (head + 1 worker). The head alone waits whole.
st, r = filt(pod("pair-head", "pair", head=True))
check("gang waits for members", r["NodeNames"] in (None, []) and
      "gang lab/pair: worker group w has 0 of 1 pods" in json.dumps(r), r)
st, r = filt(pod("pair-w-0", "pair"))
node_w = (r["NodeNames"] or [None])[0]
st, r = filt(pod("pair-head", "pair", head=True))
node_h = (r["NodeNames"] or [None])[0]
check("gang planned", node_w and node_h, r)
held = {}
def bind(name, node):
    held[name] = call("/bind", {"PodName": name, "PodNamespace": "lab", "PodUID": "uid-" + name, "Node": node})
t = threading.Thread(target=bind, args=("pair-head", node_h)); t.start()
time.sleep(0.5)
check("head held at the barrier", t.is_alive(), held)
bind("pair-w-0", node_w); t.join(10)
check("gang committed", held.get("pair-head", (0, ""))[1] == '{"Error":""}' and
      held.get("pair-w-0", (0, ""))[1] == '{"Error":""}', held)
st, body, _ = call("/bind", {"PodName": "pair-w-0", "PodNamespace": "lab", "PodUID": "uid-pair-w-0", "Node": node_w})
check("bind already bound succeeds", body == '{"Error":""}', body)

# 5. the barrier's time-out: lab/lonely's head binds alone; after bindWait it fails naming who is missing.
filt(pod("lonely-head", "lonely", head=True)); filt(pod("lonely-w-0", "lonely"))
st, r = filt(pod("lonely-head", "lonely", head=True))
st, body, _ = call("/bind", {"PodName": "lonely-head", "PodNamespace": "lab", "PodUID": "uid-lonely-head",
                             "Node": r["NodeNames"][0]})
check("barrier time-out names the missing member", "waiting for lonely-w-0" in body, body)
state = json.loads(call("/debug/state")[1])
g = {x["gang"]: x for x in state["gangs"]}
check("debug state", g["lab/pair"]["state"] == "Bound" and g["lab/lonely"]["bound"] == 0, g)
check("debug state: gang priority, composition, conflict, subgroups",
      all(k in g["lab/pair"] for k in ("priority", "preemptible", "composition", "conflict"))
      and isinstance(g["lab/pair"].get("subgroups"), list), g["lab/pair"])
check("debug state: queue fair share and demand",
      state["queues"] and all(set(q.get("fairShare", {})) == set(q.get("demand", {})) == {"cpu", "memory", "gpu"}
                              for q in state["queues"]), state["queues"])
check("debug state: evictions (none offline)", state.get("evictions") == [], state.get("evictions"))
whys = [x for x in state["gangs"] + state["pods"] if x.get("reason")]
check("debug state: every reason with its figures (issue 21)",
      whys and all(isinstance(x.get("why"), dict) and x["why"].get("kind") for x in whys) and
      all(x.get("why") is None for x in state["gangs"] if not x.get("reason")), whys)

# 6. bad input: answered with a reason, and the daemon keeps serving.
bad = {
    "malformed": (f"{fx}/extender/bad_malformed.json", 400, "malformed JSON"),
    "missing pod": (f"{fx}/extender/bad_missing_pod.json", 400, "Pod"),
    "depth bomb": (f"{fx}/extender/bad_depth_bomb.json", 413, "nested deeper"),
    "names not array": (f"{fx}/extender/bad_nodenames_not_array.json", 400, "NodeNames"),
}
for name, (path, code, word) in bad.items():
    st, body, _ = call("/filter", raw=open(path, "rb").read())
    check(f"bad input {name}", st == code and word.lower() in body.lower(), (st, body[:200]))
st, body, _ = call("/filter", raw=b"x" * (300 * 1024))
check("oversized body 413", st == 413, st)
st, body, hdr = call("/filter", method="GET")
check("wrong method 405", st == 405 and "POST" in hdr.get("Allow", ""), (st, hdr))
st, body, _ = call("/nope", {})
check("unknown path 404", st == 404 and "/nope" in body, body)
check("still healthy", call("/healthz")[0] == 200)

# 7. metrics: per verb, per code; bind outcomes; gangs by state.
metrics = call("/metrics")[1]
for m in ['muster_extender_requests_total{verb="filter",code="400"}',
          'muster_bind_outcomes_total{outcome="commit"}', 'muster_bind_outcomes_total{outcome="timeout"}',
          'muster_gangs{state="Bound"}', "muster_extender_request_duration_seconds_bucket",
          'muster_evictions_total{kind="reclaim",result="evicted"} 0',
          'muster_evictions_total{kind="preempt",result="refused"} 0',
          'muster_queue_fair_share{queue="', 'muster_queue_demand{queue="']:
    check(f"metric {m}", m in metrics, "")

# 8. one log line per decision, naming the pod.
check("decision logs", any('"msg":"filter"' in l and '"pod":"lab/pair-head"' in l for l in log_lines), log_lines[-3:])

# 9. graceful stop: a held bind is answered, the process exits 0.
filt(pod("pair2", None))
t = threading.Thread(target=bind, args=("lonely-head", g and "gpu-1")); t.start()
time.sleep(0.5)
proc.terminate()
rc = proc.wait(15)
t.join(15)
check("graceful stop exit 0", rc == 0, rc)
check("held bind answered on stop", "shutting down" in held.get("lonely-head", (0, ""))[1], held.get("lonely-head"))

# 10. config checks: ok, and a typo named with file:line.
r = subprocess.run([muster, "serve", "--check-config", "--config", f"{fx}/serve/muster.yaml"], capture_output=True, text=True)
check("check-config ok", r.returncode == 0 and "ok" in r.stdout, r)
r = subprocess.run([muster, "serve", "--check-config", "--config", f"{fx}/serve/typo.yaml"], capture_output=True, text=True)
check("check-config typo", r.returncode == 2 and re.search(r"typo\.yaml:2: unknown key \"bindwait\"", r.stderr), r.stderr)
r = subprocess.run([muster, "--version"], capture_output=True, text=True)
check("version", r.returncode == 0 and r.stdout.startswith("muster "), r.stdout)

print(f"test_serve: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
