#!/usr/bin/env python3
"""fake_apiserver.py - just enough of a Kubernetes API server to make muster list and relist.

  fake_apiserver.py PORT NODES PODS [GPUS]

Serves /api/v1/nodes and /api/v1/pods as paged lists (limit/continue, pages built once at start:
NODES nodes named node-00001..., GPUS each (default 8), and PODS bound CPU-only pods spread over
them, shaped like real ones, managedFields included) and 404 for every CRD muster looks for.
Watches:
  quiet (the default)  a pods or nodes watch is held open, silent, until timeoutSeconds
  relist               a pods watch answers at once with an ERROR event 410 (Gone), so the
                       reflector lists again, and again
GET /control/relist and /control/quiet switch; GET /control/stats answers
{"pod_lists": full pod lists served, "mode": ...}.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PAGE = 500
STATE = {"mode": "quiet", "pod_lists": 0, "rv": 1000}
LOCK = threading.Lock()


def node(i, gpus):
    name = "node-%05d" % i
    res = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"metadata": {"name": name, "resourceVersion": "1", "uid": "node-uid-%d" % i,
                         "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
                                    "nvidia.com/gpu.memory": "81920"}},
            "spec": {}, "status": {"capacity": res, "allocatable": res,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(i, nodes):
    name = "w-%06d" % i
    node_name = "node-%05d" % (i % nodes + 1)
    return {
        "metadata": {
            "name": name, "namespace": "team-%d" % (i % 20), "uid": "pod-uid-%08d" % i,
            "resourceVersion": str(1000 + i), "creationTimestamp": "2026-11-30T10:00:00Z",
            "labels": {"app": "worker", "pod-template-hash": "5f7d9c6b8", "team": "t%d" % (i % 20)},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "worker-5f7d9c6b8",
                                 "uid": "rs-uid", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-11-30T10:00:00Z",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {
                                   "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                                   "f:ownerReferences": {".": {}}},
                                   "f:spec": {"f:containers": {"k:{\"name\":\"worker\"}": {
                                       ".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}],
        },
        "spec": {"nodeName": node_name, "schedulerName": "default-scheduler", "priority": 0,
                 "containers": [{"name": "worker", "image": "registry.example/worker:1.2.3",
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                               "limits": {"cpu": "1", "memory": "1Gi"}}}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                  "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": "Running", "podIP": "10.1.%d.%d" % (i // 250 % 250, i % 250),
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pages(kind, items):
    out = []
    for start in range(0, max(len(items), 1), PAGE):
        chunk = items[start:start + PAGE]
        more = start + PAGE < len(items)
        meta = {"resourceVersion": str(STATE["rv"])}
        if more:
            meta["continue"] = "%s-%d" % (kind, start + PAGE)
        out.append(json.dumps({"kind": kind + "List", "apiVersion": "v1", "metadata": meta,
                               "items": chunk}).encode())
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        if u.path.startswith("/control/"):
            what = u.path.rsplit("/", 1)[1]
            with LOCK:
                if what in ("relist", "quiet"):
                    STATE["mode"] = what
                body = json.dumps({"pod_lists": STATE["pod_lists"], "mode": STATE["mode"]})
            return self.send(200, body.encode())
        lists = {"/api/v1/nodes": NODE_PAGES, "/api/v1/pods": POD_PAGES}
        if u.path not in lists:
            return self.send(404, b"404 page not found", "text/plain")
        if "watch" in q:
            return self.watch(u.path, int(q.get("timeoutSeconds", ["300"])[0]))
        cont = q.get("continue", [""])[0]
        index = int(cont.rsplit("-", 1)[1]) // PAGE if cont else 0
        if u.path == "/api/v1/pods" and index == len(POD_PAGES) - 1:
            with LOCK:
                STATE["pod_lists"] += 1
        self.send(200, lists[u.path][index])

    def watch(self, path, timeout):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if path == "/api/v1/pods" and STATE["mode"] == "relist":
            ev = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                         "message": "too old resource version"}})
            data = (ev + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        end = time.time() + min(timeout, 30)
        while time.time() < end and not (path == "/api/v1/pods" and STATE["mode"] == "relist"):
            time.sleep(0.2)
        self.wfile.write(b"0\r\n\r\n")


def main():
    global NODE_PAGES, POD_PAGES
    port, nodes, pods = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    gpus = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    NODE_PAGES = pages("Node", [node(i, gpus) for i in range(1, nodes + 1)])
    POD_PAGES = pages("Pod", [pod(i, nodes) for i in range(pods)])
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    print("fake_apiserver: %d nodes, %d pods on 127.0.0.1:%d" % (nodes, pods, port), flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
