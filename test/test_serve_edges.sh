#!/usr/bin/env bash
# The wire's edges and the cluster's word over the request's (issue 11), against
# `muster serve --offline`:
#   - HTTP pipelining answers every request; /healthz%00/x is not /healthz; conflicting
#     Content-Length headers are refused;
#   - a filter body's spec.nodeName does not make a pod bound, nor charge its node;
#   - a second bind of a held member to another node is refused with a reason;
#   - names are checked as Kubernetes checks them: \u0000, invalid UTF-8, a bad DNS-1123 name
#     are refused with a reason, and /debug/state stays valid JSON;
#   - --check-config on a FIFO does not hang; a 100,000-character listen host is refused;
#   - server.maxConnectionsPerClient refuses a client over its cap while another is served, and
#     server.idleTimeout closes idle connections.
#   test_serve_edges.sh MUSTER_BIN TEST_DIR
set -uo pipefail
exec python3 - "$@" <<'PY'
import json, os, socket, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[2])
from serve_harness import Harness, pod

muster = sys.argv[1]
cluster = """---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "4"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-2}
status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "4"}}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: pair, namespace: lab}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head}]}}}
  workerGroupSpecs: [{groupName: w, replicas: 1, template: {spec: {containers: [{name: w}]}}}]
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: five, namespace: lab}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head}]}}}
  workerGroupSpecs: [{groupName: w, replicas: 4, template: {spec: {containers: [{name: w}]}}}]
"""
h = Harness(muster, "test_serve_edges", "bindWait: 20s\nlog: {format: json, level: info}\n", cluster)
NODES = ["gpu-1", "gpu-2"]

def filt(p, nodes=NODES):
    st, body, _ = h.call("/filter", {"Pod": p, "Nodes": None, "NodeNames": nodes})
    try:
        return st, json.loads(body)
    except ValueError:
        return st, body

def state():
    st, body = h.state()
    try:
        return json.loads(body)
    except ValueError as e:
        h.check("/debug/state is valid JSON", False, f"{e}: {body[:300]!r}")
        return {"pods": [], "gangs": []}

def pod_state(key):
    return {p["pod"]: p for p in state()["pods"]}.get(key, {})

# ---- the wire's edges -------------------------------------------------------------------
got = h.raw(b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\nGET /readyz HTTP/1.1\r\nHost: m\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\n", want=3)
# Pipelined requests are answered in order on the same connection (issue 21 chose this over a
# close after the first: libmicrohttpd reads the next request once an answer is sent).
answers = got.count(b"HTTP/1.1 ")
h.check("pipelined requests are all answered, the connection kept",
        answers == 3 and b"connection: close" not in got.lower(), got[:400])
for first in [b"GET /nope HTTP/1.1\r\nHost: m\r\n\r\n",
              b"POST /healthz HTTP/1.1\r\nHost: m\r\nContent-Length: 2\r\n\r\n{}",
              b"POST /bind HTTP/1.1\r\nHost: m\r\nContent-Length: 2\r\n\r\n{}"]:
    got = h.raw(first + b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\n", want=2)
    h.check(f"pipelined after {first.split(b' ')[1].decode()}: both answered, the health check last",
            got.count(b"HTTP/1.1 ") == 2 and got.endswith(b"ok\n"), got[:300])
body = json.dumps({"Pod": pod("pipe-a"), "Nodes": None, "NodeNames": NODES}).encode()
post = (b"POST /filter HTTP/1.1\r\nHost: m\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)) + body
got = h.raw(post + post, want=2)
h.check("two pipelined filters both answered", got.count(b"HTTP/1.1 200") == 2, got[:300])

got = h.raw(b"GET /healthz%00/x HTTP/1.1\r\nHost: m\r\n\r\n")
h.check("/healthz%00/x is not /healthz", got.startswith(b"HTTP/1.1 404"), got[:200])
got = h.raw(b"GET /healthz%2f HTTP/1.1\r\nHost: m\r\n\r\n")
h.check("an escaped path is not a route", got.startswith(b"HTTP/1.1 404"), got[:200])

got = h.raw(b"POST /bind HTTP/1.1\r\nHost: m\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}")
h.check("conflicting Content-Length refused", got.startswith(b"HTTP/1.1 400") and
        b"Content-Length" in got, got[:300])
got = h.raw(b"POST /bind HTTP/1.1\r\nHost: m\r\nContent-Length: 2\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
h.check("Content-Length with Transfer-Encoding refused", got.startswith(b"HTTP/1.1 400"), got[:300])

# ---- the request's nodeName is not the cluster's -----------------------------------------
st, r = filt(pod("liar", gpus=100, node="gpu-1"))
p = pod_state("lab/liar")
h.check("a filter body's nodeName does not bind the pod", p.get("phase") != "Bound", p)
# A pod that needs the whole of gpu-1, offered gpu-1 alone: had the liar's word been taken, its
# 100 GPUs would be charged there and nothing would fit.
st, r = filt(pod("honest", gpus=4), nodes=["gpu-1"])
h.check("the node the liar named is not charged", st == 200 and r.get("NodeNames") == ["gpu-1"],
        (st, r))
for i in range(4):
    filt(pod(f"five-w-{i}", cluster="five", node="gpu-2"))
g = {x["gang"]: x for x in state()["gangs"]}.get("lab/five", {})
h.check("gang members are not marked bound by filter bodies", g.get("bound", 0) == 0, g)

# ---- a held member's second bind, to another node ------------------------------------------
filt(pod("pair-head", cluster="pair", head=True))
st, r = filt(pod("pair-w-0", cluster="pair"))
node_w = (r.get("NodeNames") or [None])[0]
st, r = filt(pod("pair-head", cluster="pair", head=True))
node_h = (r.get("NodeNames") or [None])[0]
held = {}
def bind(tag, name, node):
    held[tag] = h.call("/bind", {"PodName": name, "PodNamespace": "lab", "PodUID": "uid-" + name,
                                 "Node": node})
t = threading.Thread(target=bind, args=("first", "pair-head", node_h))
t.start()
time.sleep(0.5)
other = [n for n in NODES if n != node_h][0]
bind("second", "pair-head", other)
second = held.get("second", (0, "", {}))[1]
h.check("a second bind of a held member to another node is refused with a reason",
        "held" in second and node_h in second, second)
bind("worker", "pair-w-0", node_w)
t.join(20)
h.check("the first bind is answered OK", held.get("first", (0, ""))[1] == '{"Error":""}', held)
h.check("the member is bound where it was first held",
        pod_state("lab/pair-head").get("node") == node_h, pod_state("lab/pair-head"))

# ---- names as Kubernetes checks them -----------------------------------------------------
st, body, _ = h.call("/filter", raw=json.dumps(
    {"Pod": pod("victim\u0000evil"), "Nodes": None, "NodeNames": NODES}).encode())
h.check("\\u0000 in a name refused with a reason", st == 400 and "NUL" in body, (st, body))
bad_utf8 = json.dumps({"Pod": pod("utf8-BADNAME"), "Nodes": None, "NodeNames": NODES}).encode()
bad_utf8 = bad_utf8.replace(b"BADNAME", b"\xff\xfe")
st, body, _ = h.call("/filter", raw=bad_utf8)
h.check("invalid UTF-8 refused with a reason", st == 400 and "UTF-8" in body, (st, body))
for bad in ["Upper-Case", "a" * 254, "dots..double", "-leading"]:
    st, body, _ = h.call("/filter", {"Pod": pod(bad), "Nodes": None, "NodeNames": NODES})
    h.check(f"pod name {bad[:20]!r} refused", st == 400 and "metadata.name" in body, (st, body))
st, body, _ = h.call("/filter", {"Pod": pod("ok", ns="Bad_NS"), "Nodes": None, "NodeNames": NODES})
h.check("a namespace that is not a DNS-1123 label refused", st == 400 and "namespace" in body,
        (st, body))
st, body, _ = h.call("/filter", {"Pod": pod("ok", ns="a" * 64), "Nodes": None, "NodeNames": NODES})
h.check("a 64-character namespace refused", st == 400 and "namespace" in body, (st, body))
for field, value in [("PodName", "../../nodes/x"), ("PodNamespace", "lab/x"), ("Node", "gpu-1?x=1")]:
    args = {"PodName": "pair-head", "PodNamespace": "lab", "PodUID": "u", "Node": "gpu-1"}
    args[field] = value
    st, body, _ = h.call("/bind", args)
    h.check(f"bind {field} {value!r} refused", st == 400 and field in body, (st, body))
st, body = h.state()
try:
    json.loads(body)
    valid = True
except ValueError:
    valid = False
h.check("/debug/state is valid JSON after bad names", valid, body[:300])
h.check("still healthy", h.call("/healthz")[0] == 200)

# ---- --check-config edges ------------------------------------------------------------------
fifo = os.path.join(h.dir, "fifo.yaml")
os.mkfifo(fifo)
try:
    r = subprocess.run([muster, "serve", "--check-config", "--config", fifo], capture_output=True,
                       text=True, timeout=10)
    h.check("--check-config on a FIFO is refused", r.returncode == 2 and "regular file" in r.stderr,
            (r.returncode, r.stderr))
except subprocess.TimeoutExpired:
    h.check("--check-config on a FIFO does not hang", False, "still running after 10 s")
long_host = h.write("long.yaml", "listen: \"" + "a" * 100000 + ":8888\"\n")
r = subprocess.run([muster, "serve", "--check-config", "--config", long_host], capture_output=True,
                   text=True, timeout=30)
h.check("a 100,000-character listen host is refused", r.returncode == 2 and
        "long.yaml:1" in r.stderr and len(r.stderr) < 1000, (r.returncode, r.stderr[:300]))
r = subprocess.run([muster, "serve", "--check-config", "--listen", "b" * 300 + ":1"],
                   capture_output=True, text=True, timeout=30)
h.check("a 300-character --listen host is refused", r.returncode == 2, (r.returncode, r.stderr[:200]))

# ---- server.maxConnectionsPerClient and server.idleTimeout, as muster.yaml sets them -------
c = Harness(muster, "test_serve_edges_connections",
            "server: {maxConnectionsPerClient: 2, idleTimeout: 2s}\n", cluster)

def connect_from(addr):
    s = socket.socket()
    s.bind((addr, 0))
    s.connect(("127.0.0.1", c.port))
    s.settimeout(10)
    return s

def healthz_on(s):
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: m\r\n\r\n")
        return s.recv(4096).startswith(b"HTTP/1.1 200")
    except OSError:
        return False

kept = [connect_from("127.0.0.1") for _ in range(2)]
h.check("a client's connections up to its cap are served", all(healthz_on(s) for s in kept))
over = connect_from("127.0.0.1")
h.check("a client's connection over its cap is refused", not healthz_on(over))
over.close()
other = connect_from("127.0.0.2")
h.check("another client is served while one is at its cap", healthz_on(other))
t0 = time.monotonic()
def closed(s):
    try:
        return s.recv(1) == b""
    except OSError as e:
        return isinstance(e, ConnectionResetError)
gone = all(closed(s) for s in kept + [other])
took = time.monotonic() - t0
h.check("idle connections are closed after idleTimeout (2s)", gone and 0.5 < took < 10,
        f"closed {gone} after {took:.2f} s")
for s in kept + [other]:
    s.close()
c.stop()
h.passed += c.passed
h.failed += c.failed
h.finish()
PY
