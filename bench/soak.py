#!/usr/bin/env python3
"""soak.py - muster serve for a long while under steady load; do its RSS, threads and open
file descriptors stay where they settled?

    bench/soak.py [--minutes 30] [--sample 10] [--relist 180] [--muster build/extender/muster]

No cluster is needed: this script is the API server (list and watch of Nodes, Pods and
RayClusters; Bindings, patches and Events taken) and kube-scheduler (each pending pod
filtered, then every member of a gang bound at once, one connection each). Gangs of 1 to 24
members churn: about 30 live at a time, a new one every second, the oldest deleted. Every
--relist seconds every watch stream ends with 410 Gone, so muster lists everything again.

Every --sample seconds VmRSS, Threads and the number of open descriptors of muster are
sampled. Where they settled is the median over minutes 5 to 10 (or the second sixth of a
shorter run); where they ended, the median of the last six samples. The last lines say, for
each, whether the end is within 10% of the settled value, and "soak: ok" or "soak: FAILED"
(exit 1), along with gangs bound whole, binds refused and partial gangs seen (must be 0).
"""
import argparse, json, os, random, socket, statistics, subprocess, sys, tempfile, threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODES = 50
NS = "soak"


class Cluster:
    """The objects and their watchers; every change gets the next resourceVersion."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rv = 1
        self.objects = {"nodes": {}, "pods": {}, "rayclusters": {}}
        self.watchers = {k: [] for k in self.objects}  # lists of (cond, queue)
        self.generation = 0  # bumped to end every watch with 410

    def put(self, kind, key, obj, event):
        with self.lock:
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            if event == "DELETED":
                self.objects[kind].pop(key, None)
            else:
                self.objects[kind][key] = obj
            line = json.dumps({"type": event, "object": obj}) + "\n"
            for q in self.watchers[kind]:
                q.append(line)

    def get(self, kind, key):
        with self.lock:
            o = self.objects[kind].get(key)
            return json.loads(json.dumps(o)) if o else None


cluster = Cluster()
stats = {"gangs": 0, "unplaced": 0, "bound_whole": 0, "refused": 0, "filters": 0, "binds": 0, "relists": 0,
         "partial": 0, "errors": 0}


def node(i):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": f"n{i:03d}", "labels": {"kubernetes.io/hostname": f"n{i:03d}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}


KINDS = {"/api/v1/nodes": "nodes", "/api/v1/pods": "pods", "/apis/ray.io/v1/rayclusters": "rayclusters"}


class API(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        kind = KINDS.get(u.path)
        if kind is None:
            return self.reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        if "watch" in q:
            return self.watch(kind, int(q.get("timeoutSeconds", ["300"])[0]))
        with cluster.lock:
            items = list(cluster.objects[kind].values())
            rv = str(cluster.rv)
        self.reply(200, {"kind": "List", "metadata": {"resourceVersion": rv}, "items": items})

    def watch(self, kind, timeout):
        lines, gen = [], cluster.generation
        with cluster.lock:
            cluster.watchers[kind].append(lines)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        end = time.monotonic() + min(timeout, 60)
        try:
            while time.monotonic() < end:
                if cluster.generation != gen:
                    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410,
                                                         "message": "too old resource version"}}
                    self.chunk(json.dumps(gone) + "\n")
                    break
                with cluster.lock:
                    batch, lines[:] = lines[:], []
                for line in batch:
                    self.chunk(line)
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        finally:
            with cluster.lock:
                cluster.watchers[kind].remove(lines)
        self.close_connection = True

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(n) or b"{}")

    def do_POST(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        b = self.body()
        if len(parts) == 7 and parts[6] == "binding":  # api v1 namespaces ns pods name binding
            key = f"{parts[3]}/{parts[5]}"
            p = cluster.get("pods", key)
            if p is None:
                return self.reply(404, {"kind": "Status", "code": 404})
            if p["spec"].get("nodeName"):
                return self.reply(409, {"kind": "Status", "code": 409, "message": "already bound"})
            p["spec"]["nodeName"] = b["target"]["name"]
            p["status"] = {"phase": "Running"}
            cluster.put("pods", key, p, "MODIFIED")
            return self.reply(201, b)
        self.reply(201, b)  # Events

    def do_PATCH(self):
        self.body()
        self.reply(200, {})


def pod(gang, i, size):
    name = f"{gang}-head" if i == 0 else f"{gang}-w-{i}"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "labels": {"ray.io/cluster": gang,
                                    "ray.io/node-type": "head" if i == 0 else "worker",
                                    "ray.io/group": "headgroup" if i == 0 else "w"}},
            "spec": {"schedulerName": "muster",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m",
                                                                             "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def raycluster(gang, size):
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": gang, "namespace": NS, "uid": f"uid-rc-{gang}"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
                     "workerGroupSpecs": [{"groupName": "w", "replicas": size - 1,
                                           "template": {"spec": {"containers": [{"name": "w"}]}}}]}}


class Scheduler:
    """kube-scheduler's part: filter each member, then bind them all at once."""

    def __init__(self, port):
        self.port = port
        self.names = [f"n{i:03d}" for i in range(NODES)]

    def call(self, path, body, timeout=60):
        data = json.dumps(body).encode()
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            s.sendall(b"POST %s HTTP/1.1\r\nHost: m\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" %
                      (path.encode(), len(data), data))
            got = b""
            while True:
                c = s.recv(65536)
                if not c:
                    break
                got += c
        finally:
            s.close()
        head, _, rest = got.partition(b"\r\n\r\n")
        return int(head.split(b" ")[1]), json.loads(rest or b"{}")

    def place(self, gang, pods):
        planned = {}
        for attempt in range(5):  # the first members wait until every member exists
            if attempt:
                time.sleep(0.3)  # as kube-scheduler's backoff: the watch catches up
            for p in pods:
                st, r = self.call("/filter", {"Pod": p, "Nodes": None, "NodeNames": self.names})
                stats["filters"] += 1
                if st == 200 and r.get("NodeNames"):
                    planned[p["metadata"]["name"]] = r["NodeNames"][0]
            if len(planned) == len(pods):
                break
        if len(planned) != len(pods):
            stats["unplaced"] += 1
            return False
        out = {}

        def bind(p):
            name = p["metadata"]["name"]
            try:
                out[name] = self.call("/bind", {"PodName": name, "PodNamespace": NS,
                                                "PodUID": p["metadata"]["uid"],
                                                "Node": planned[name]})
            except OSError as e:
                out[name] = (0, {"Error": repr(e)})
        ts = [threading.Thread(target=bind, args=(p,)) for p in pods]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        stats["binds"] += len(pods)
        ok = sum(1 for st, r in out.values() if st == 200 and r.get("Error") == "")
        if 0 < ok < len(pods):
            stats["partial"] += 1
        if ok == len(pods):
            stats["bound_whole"] += 1
        else:
            stats["refused"] += 1
        return ok == len(pods)


def proc_figures(pid):
    fig = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "Threads"):
                fig[k] = int(v.split()[0])
    fig["FDs"] = len(os.listdir(f"/proc/{pid}/fd"))
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--relist", type=float, default=180)
    ap.add_argument("--muster", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "extender", "muster"))
    a = ap.parse_args()
    for i in range(NODES):
        n = node(i)
        cluster.put("nodes", n["metadata"]["name"], n, "ADDED")
    api = ThreadingHTTPServer(("127.0.0.1", 0), API)
    api.daemon_threads = True
    threading.Thread(target=api.serve_forever, daemon=True).start()
    work = tempfile.mkdtemp(prefix="muster-soak.")
    kubeconfig = os.path.join(work, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: soak, cluster: {{server: "http://127.0.0.1:{api.server_address[1]}"}}}}]
users: [{{name: soak, user: {{token: soak}}}}]
contexts: [{{name: soak, context: {{cluster: soak, user: soak}}}}]
current-context: soak
""")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    settings = os.path.join(work, "muster.yaml")
    with open(settings, "w") as f:
        f.write("log: {format: json, level: warn}\nbindWait: 20s\n")
    log = open(os.path.join(work, "muster.log"), "w")
    m = subprocess.Popen([a.muster, "serve", "--config", settings, "--kubeconfig", kubeconfig,
                          "--listen", f"127.0.0.1:{port}"], stderr=log)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    sched = Scheduler(port)
    live, samples, seq = [], [], 0
    start = time.monotonic()
    end = start + a.minutes * 60
    next_sample = next_relist = start
    next_relist += a.relist
    print(f"soak: muster pid {m.pid}, {a.minutes:g} min, a sample every {a.sample:g} s, "
          f"a relist every {a.relist:g} s; log {work}/muster.log", flush=True)
    while time.monotonic() < end and m.poll() is None:
        now = time.monotonic()
        if now >= next_sample:
            f = proc_figures(m.pid)
            samples.append((now - start, f))
            print(f"  t={now - start:6.0f}s rss={f['VmRSS'] / 1024:7.1f}MiB threads={f['Threads']:3d} "
                  f"fds={f['FDs']:4d} gangs={stats['gangs']} whole={stats['bound_whole']} "
                  f"refused={stats['refused']} partial={stats['partial']} relists={stats['relists']}",
                  flush=True)
            next_sample += a.sample
        if now >= next_relist:
            cluster.generation += 1
            stats["relists"] += 1
            next_relist += a.relist
        seq += 1
        gang, size = f"g{seq}", random.randint(1, 24)
        pods = [pod(gang, i, size) for i in range(size)]
        cluster.put("rayclusters", f"{NS}/{gang}", raycluster(gang, size), "ADDED")
        for p in pods:
            cluster.put("pods", f"{NS}/{p['metadata']['name']}", p, "ADDED")
        stats["gangs"] += 1
        try:
            sched.place(gang, pods)
        except (OSError, ValueError) as e:
            stats["errors"] += 1
            print(f"  error: {e!r}", flush=True)
        live.append((gang, pods))
        while len(live) > 30:
            old, opods = live.pop(0)
            for p in opods:
                key = f"{NS}/{p['metadata']['name']}"
                cur = cluster.get("pods", key) or p
                cluster.put("pods", key, cur, "DELETED")
            cluster.put("rayclusters", f"{NS}/{old}", raycluster(old, 1), "DELETED")
        time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
    alive = m.poll() is None
    m.terminate()
    rc = m.wait(60)
    api.shutdown()
    print(report(samples, a, alive, rc))
    return 0 if "soak: ok" in report(samples, a, alive, rc) else 1


def report(samples, a, alive, rc):
    total = a.minutes * 60
    lo, hi = (300, 600) if total >= 1200 else (total / 6, total / 3)
    settled = [f for t, f in samples if lo <= t < hi]
    last = [f for t, f in samples][-6:]
    lines, ok = [], alive and rc == 0 and stats["partial"] == 0 and bool(settled)
    for k, unit, scale in (("VmRSS", "MiB", 1024), ("Threads", "", 1), ("FDs", "", 1)):
        if not settled or not last:
            break
        s = statistics.median(f[k] for f in settled) / scale
        e = statistics.median(f[k] for f in last) / scale
        within = abs(e - s) <= 0.10 * s
        ok &= within
        lines.append(f"soak: {k:7s} settled {s:8.1f}{unit}  ended {e:8.1f}{unit}  "
                     f"{'within' if within else 'NOT within'} 10% ({(e - s) / s * 100:+.1f}%)")
    lines.append(f"soak: {stats['gangs']} gangs, {stats['unplaced']} never planned, "
                 f"{stats['bound_whole']} bound whole, "
                 f"{stats['refused']} refused whole, {stats['partial']} partial, "
                 f"{stats['filters']} filters, {stats['binds']} binds, {stats['relists']} relists, "
                 f"{stats['errors']} client errors; muster {'ran to the end' if alive else 'DIED'}, "
                 f"exit {rc}")
    lines.append("soak: ok" if ok else "soak: FAILED")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
