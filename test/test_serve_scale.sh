#!/usr/bin/env bash
# Connections that cost no thread while they wait (issue 11):
#   - a 5,000-member gang binds whole in `muster serve --offline`: every member's bind is held
#     on its own connection at once, and all 5,000 are answered OK by one commit;
#   - /healthz answers while 2,000 idle connections are open, with the default settings;
#   - with server.maxConnections reached by idle connections, /healthz still answers and a verb
#     is refused with 503 and a reason instead of hanging.
#   test_serve_scale.sh MUSTER_BIN TEST_DIR
set -uo pipefail
exec python3 - "$@" <<'PY'
import json, selectors, socket, sys, time
sys.path.insert(0, sys.argv[2])
from serve_harness import Harness, pod

muster = sys.argv[1]
MEMBERS = 5000
NODES = 50

cluster = "".join(
    f"""---
apiVersion: v1
kind: Node
metadata: {{name: n{i:03d}}}
status: {{allocatable: {{cpu: "200", memory: 1Ti, pods: "200"}}}}
""" for i in range(NODES))
cluster += f"""---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: big, namespace: lab}}
spec:
  headGroupSpec: {{template: {{spec: {{containers: [{{name: head}}]}}}}}}
  workerGroupSpecs: [{{groupName: w, replicas: {MEMBERS - 1}, template: {{spec: {{containers: [{{name: w}}]}}}}}}]
"""
config = "bindWait: 120s\nplanTTL: 300s\nlog: {format: json, level: warn}\n"
h = Harness(muster, "test_serve_scale", config, cluster)

def names_body(p):
    return {"Pod": p, "Nodes": None, "NodeNames": [f"n{i:03d}" for i in range(NODES)]}

# Every member is filtered once (the gang plans when the last one exists).
import http.client
conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=60)
members = ["big-head"] + [f"big-w-{i}" for i in range(MEMBERS - 1)]
planned = 0
for i, name in enumerate(members):
    body = json.dumps(names_body(pod(name, cluster="big", head=(i == 0)))).encode()
    conn.request("POST", "/filter", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    ans = json.loads(r.read())
    planned += bool(ans.get("NodeNames"))
conn.close()
h.check("the last member plans the gang", planned >= 1, planned)
st, body = h.state()
nodes = {p["pod"].split("/")[1]: p.get("node") for p in json.loads(body)["pods"]}
h.check("every member has a planned node", sum(1 for m in members if nodes.get(m)) == MEMBERS,
        sum(1 for m in members if nodes.get(m)))

class Many:
    """One connection per request, all open at once; pump() collects each answer's status
    and body into .out."""
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.out = {}

    def add(self, requests):
        for key, data in requests:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", h.port))
            self.sel.register(s, selectors.EVENT_WRITE, [key, data, b""])

    def pending(self):
        return len(self.sel.get_map())

    def pump(self, seconds, until_done=True):
        deadline = time.monotonic() + seconds
        while self.sel.get_map() and time.monotonic() < deadline:
            for k, ev in self.sel.select(timeout=0.5):
                self.step(k, ev)

    def step(self, k, ev):
        s, st = k.fileobj, k.data
        try:
            if ev & selectors.EVENT_WRITE:
                n = s.send(st[1])
                st[1] = st[1][n:]
                if not st[1]:
                    self.sel.modify(s, selectors.EVENT_READ, st)
                return
            chunk = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            chunk = b""
            st[2] += f"[{e.__class__.__name__}]".encode()
        st[2] += chunk
        head, _, rest = st[2].partition(b"\r\n\r\n")
        clen = None
        for line in head.split(b"\r\n")[1:]:
            if line.lower().startswith(b"content-length:"):
                clen = int(line.split(b":")[1])
        if not chunk or (clen is not None and len(rest) >= clen):
            self.out[st[0]] = (head.split(b" ")[1].decode() if head.startswith(b"HTTP/") else "none",
                               rest.decode(errors="replace"))
            self.sel.unregister(s)
            s.close()

    def close(self):
        for k in list(self.sel.get_map().values()):
            self.out[k.data[0]] = ("timeout", k.data[2][:200].decode(errors="replace"))
            k.fileobj.close()

def bind_req(name, node):
    body = json.dumps({"PodName": name, "PodNamespace": "lab", "PodUID": "uid-" + name,
                       "Node": node}).encode()
    return (b"POST /bind HTTP/1.1\r\nHost: muster\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body

# 4,999 binds held at once, each on its own connection; then the last member commits them all.
many = Many()
many.add([(m, bind_req(m, nodes.get(m) or "n000")) for m in members[:-1]])
many.pump(5)
h.check("4,999 binds are held, none answered before the gang is whole",
        many.pending() == MEMBERS - 1 and not many.out, (many.pending(), list(many.out.items())[:3]))
h.check("held binds cost no thread each (threads stay under 64 while 4,999 are held)",
        h.proc_status("Threads") < 64, h.proc_status("Threads"))
many.add([(members[-1], bind_req(members[-1], nodes.get(members[-1]) or "n000"))])
many.pump(150)
many.close()
answers = many.out
def bound_ok(v):
    try:
        return v[0] == "200" and json.loads(v[1]).get("Error") == ""
    except ValueError:
        return False
ok = sum(1 for v in answers.values() if bound_ok(v))
bad = [v for v in answers.values() if not bound_ok(v)][:3]
h.check("all 5,000 held binds answered OK by one commit", ok == MEMBERS, f"{ok} ok; e.g. {bad}")
st, body = h.state()
gang = {g["gang"]: g for g in json.loads(body)["gangs"]}.get("lab/big", {})
h.check("the gang is bound whole", gang.get("state") == "Bound" and gang.get("bound") == MEMBERS,
        gang)

# /healthz while 2,000 idle connections are open (default limits).
idle = []
for _ in range(2000):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", h.port))
    idle.append(s)
time.sleep(1)
try:
    st = h.call("/healthz", timeout=5)[0]
except OSError as e:
    st = repr(e)
h.check("/healthz answers during 2,000 idle connections", st == 200, st)
try:
    st, body, _ = h.call("/filter", names_body(pod("solo")), timeout=5)
except OSError as e:
    st = repr(e)
h.check("/filter answers during 2,000 idle connections", st == 200, st)
for s in idle:
    s.close()
h.stop()

# At the limit: server.maxConnections idle connections, then /healthz and a verb.
h2 = Harness(muster, "test_serve_scale", config + "server: {maxConnections: 300}\n", cluster)
h2.passed, h2.failed = h.passed, h.failed
idle = []
for _ in range(300):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", h2.port))
    idle.append(s)
time.sleep(1)
try:
    st = h2.call("/healthz", timeout=5)[0]
except OSError as e:
    st = repr(e)
h2.check("/healthz answers with maxConnections reached", st == 200, st)
try:
    st, body, _ = h2.call("/filter", names_body(pod("solo")), timeout=5)
except OSError as e:
    st, body = repr(e), ""
h2.check("a verb at the limit is refused with a reason", st == 503 and "connection" in body, (st, body))
for s in idle:
    s.close()
time.sleep(0.5)
st, body, _ = h2.call("/filter", names_body(pod("solo")), timeout=5)
h2.check("below the limit again, verbs are served", st == 200, (st, body[:200]))
h2.finish()
PY
