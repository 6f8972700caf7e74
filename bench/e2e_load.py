#!/usr/bin/env python3
"""e2e_load.py - load for the loopback control plane of test/e2e (bench/e2e_throughput.sh,
bench/kai_scale.sh, test/e2e/scenarios/12-*.sh). Python's standard library only.

  e2e_load.py nodes COUNT [--gpus 8 --cpu 32 --memory 256Gi --prefix kwok-node-]
                          [--domains D --domain-key KEY]  (node i labelled KEY=d<i mod D>)
  e2e_load.py run --ns NS --pods N [--gang G] [--scheduler NAME] [--queue Q] [--gpus-per-pod 1]
                  [--podgroup | --workload [--topology-key KEY]] [--head] [--fraction F]
                  [--declare-extra K] [--no-wait] [--watch-format protobuf|json]
                  [--threads 16] [--timeout 600] [--metrics name=url ...]
                  [--pid name=pid ...] [--hold-scheduler FILE]
  e2e_load.py delete --ns NS
  e2e_load.py count --ns NS               pods and bound pods in NS

The API server, CA and token come from $MUSTER_E2E_DIR/env (lib.sh writes it).

`run` creates the namespace, the gangs' declarations first (RayCluster objects when --gang > 1,
or one scheduling.x-k8s.io PodGroup per gang with --podgroup, or with --workload a
scheduling.k8s.io/v1beta1 Workload of one template "workers" (gang minCount G, with
--topology-key a schedulingConstraints.topology of it) and PodGroup <gang>-0 per gang, whose
pods name it by spec.schedulingGroup; no operator runs, so nothing else creates pods), opens a watch on the namespace's pods, then creates the pods from THREADS
connections and waits until every pod has spec.nodeName. It prints one JSON line:
  {"pods":N, "bound":N, "seconds": first create to last nodeName, "rate": bound/seconds,
   "flowing_rate": pods/s from the first nodeName to the last,
   "create_seconds": first to last create, "metrics": {name: {series: delta}}, "cpu": {name: s}}
Metrics are scraped before and after (Prometheus text; kube-scheduler's with the admin token)
and only the deltas of counters, histogram sums and counts are kept. --hold-scheduler FILE: the
pods are created while the scheduler is held (FILE is not there yet); the clock starts when the
script sees FILE appear, so creation is not part of the figure (KAI's "scheduler disabled during
job creation"): FILE.created is written once every pod exists. A --metrics or --pid value
@FILE is read from FILE when it is used (a scheduler started later).
"""
import argparse
import http.client
import json
import os
import queue
import re
import ssl
import sys
import threading
import time


def env():
    d = os.environ.get("MUSTER_E2E_DIR")
    if not d:
        ptr = os.path.expanduser(os.environ.get("MUSTER_CACHE", "~/.cache/muster")) + "/e2e-current"
        d = open(ptr).read().strip()
    vals = {}
    for line in open(os.path.join(d, "env")):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            vals[k] = v
    return vals


class API:
    def __init__(self):
        e = env()
        m = re.match(r"https://([^:/]+):(\d+)", e["E2E_APISERVER_URL"])
        self.host, self.port = m.group(1), int(m.group(2))
        self.token = e["E2E_ADMIN_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=e["E2E_CA_CERT"])
        self.local = threading.local()

    def conn(self, fresh=False):
        c = getattr(self.local, "c", None)
        if c is None or fresh:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self.local.c = c
        return c

    def call(self, method, path, body=None, ok=(200, 201, 202), stream=False,
             accept="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": "Bearer " + self.token, "Accept": accept}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(5):
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                            timeout=None) if stream else self.conn(attempt > 0)
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                if stream:
                    return r
                text = r.read()
            except (OSError, http.client.HTTPException):
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status not in ok:
                raise RuntimeError("%s %s: %d %s" % (method, path, r.status, text[:300]))
            try:
                return json.loads(text) if text else None
            except ValueError:
                return None  # "404 page not found" for a resource that is not installed
        raise RuntimeError("%s %s: gave up" % (method, path))


def pool(n, jobs, fn):
    """Run fn(job) for every job on n threads; the first exception is raised."""
    q = queue.Queue()
    for j in jobs:
        q.put(j)
    errors = []

    def work():
        while not errors:
            try:
                j = q.get_nowait()
            except queue.Empty:
                return
            try:
                fn(j)
            except Exception as ex:  # noqa: BLE001 - reported below
                errors.append(ex)

    ts = [threading.Thread(target=work) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


# ---- objects ---------------------------------------------------------------------------------

def node_obj(name, a):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res = {"cpu": a.cpu, "memory": a.memory, "pods": "110", "nvidia.com/gpu": str(a.gpus),
           "ephemeral-storage": "1Ti"}
    cond = lambda t, s, r: {"type": t, "status": s, "reason": r, "lastHeartbeatTime": now,  # noqa: E731
                            "lastTransitionTime": now}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64", "type": "kwok",
                                "nvidia.com/gpu.present": "true",
                                "nvidia.com/gpu.memory": "81920",
                                **domain_label(name, a)}},
        "spec": {},
        "status": {"capacity": res, "allocatable": res,
                   "conditions": [cond("Ready", "True", "KubeletReady"),
                                  cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                  cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                  cond("PIDPressure", "False", "KubeletHasSufficientPID")],
                   "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                 {"type": "Hostname", "address": name}],
                   "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                "kubeletVersion": os.environ.get("K8S_VERSION", "v1.37.2"), "containerRuntimeVersion": "fake://0",
                                "machineID": "", "systemUUID": "", "bootID": "",
                                "kernelVersion": "", "osImage": "fake", "kubeProxyVersion": ""}},
    }


def domain_label(name, a):
    if not getattr(a, "domains", 0) or not a.domain_key:
        return {}
    return {a.domain_key: "d%d" % (int(name[len(a.prefix):]) % a.domains)}


def cmd_nodes(a):
    api = API()

    def one(i):
        name = "%s%05d" % (a.prefix, i)
        try:
            api.call("POST", "/api/v1/nodes", node_obj(name, a))
        except RuntimeError as ex:
            if "409" not in str(ex):
                raise
    t = time.time()
    pool(16, range(1, a.count + 1), one)
    print("created %d nodes in %.1f s" % (a.count, time.time() - t), file=sys.stderr)


def container(gpus, cpu, mem):
    res = {"cpu": cpu, "memory": mem}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    return [{"name": "c", "image": "registry.k8s.io/pause:3.10",
             "resources": {"requests": res, "limits": dict(res)}}]


def pod_specs(a):
    """(name, pod) for every pod, gang by gang; heads first."""
    out = []
    labels_base = {"muster.dev/bench": a.ns}
    if a.queue:
        labels_base["muster.dev/queue"] = a.queue
    gangs = a.pods // a.gang
    for g in range(1, gangs + 1):
        for m in range(a.gang):
            labels = dict(labels_base)
            annotations = {}
            if a.gang == 1:
                name, gpus, cpu, mem = "p-%05d" % g, a.gpus_per_pod, "2", "8Gi"
                if a.fraction:
                    gpus, annotations = 0, {"gpu-fraction": a.fraction}
            elif a.podgroup:
                name, gpus, cpu, mem = "pg-%04d-%03d" % (g, m), a.gpus_per_pod, "2", "8Gi"
                labels["scheduling.x-k8s.io/pod-group"] = "pg-%04d" % g
            elif a.workload:
                name, gpus, cpu, mem = "wl-%04d-%03d" % (g, m), a.gpus_per_pod, "2", "8Gi"
            else:
                head = m == 0
                cluster = "rc-%04d" % g
                name = "%s-head" % cluster if head else "%s-gpu-worker-%02d" % (cluster, m)
                gpus, cpu, mem = (0, "4", "16Gi") if head else (a.gpus_per_pod, "2", "8Gi")
                labels.update({"ray.io/cluster": cluster, "ray.io/is-ray-node": "yes",
                               "ray.io/node-type": "head" if head else "worker",
                               "ray.io/group": "headgroup" if head else "gpu",
                               "app.kubernetes.io/created-by": "kuberay-operator"})
            if (a.podgroup or a.workload) and a.head and m == 0:
                gpus, cpu, mem = 0, "4", "16Gi"  # the shape of C's RayCluster head
            pod = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": dict({"name": name, "namespace": a.ns, "labels": labels},
                                 **({"annotations": annotations} if annotations else {})),
                "spec": {"schedulerName": a.scheduler, "containers": container(gpus, cpu, mem),
                         "terminationGracePeriodSeconds": 0},
            }
            if a.gang > 1 and a.workload:
                pod["spec"]["schedulingGroup"] = {"podGroupName": "wl-%04d-0" % g}
            out.append((name, pod))
    return out


def gang_objects(a):
    gangs = a.pods // a.gang
    if a.gang == 1:
        return []
    if a.workload:
        policy = {"gang": {"minCount": a.gang}}
        constraints = ({"schedulingConstraints": {"topology": [{"key": a.topology_key}]}}
                       if a.topology_key else {})
        out = []
        for g in range(1, gangs + 1):
            out.append(("/apis/scheduling.k8s.io/v1beta1/namespaces/%s/workloads" % a.ns, {
                "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "wl-%04d" % g, "namespace": a.ns},
                "spec": {"podGroupTemplates": [dict({"name": "workers",
                                                     "schedulingPolicy": policy}, **constraints)]}}))
            out.append(("/apis/scheduling.k8s.io/v1beta1/namespaces/%s/podgroups" % a.ns, {
                "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "wl-%04d-0" % g, "namespace": a.ns},
                "spec": dict({"workloadRef": {"workloadName": "wl-%04d" % g,
                                              "templateName": "workers"},
                              "schedulingPolicy": policy}, **constraints)}))
        return out
    if a.podgroup:
        return [("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups" % a.ns, {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "pg-%04d" % g, "namespace": a.ns},
            "spec": {"minMember": a.gang}}) for g in range(1, gangs + 1)]
    tmpl = lambda gpus: {"spec": {"schedulerName": a.scheduler,  # noqa: E731
                                  "containers": [{"name": "ray", "image": "rayproject/ray:2.46.0"}]}}
    return [("/apis/ray.io/v1/namespaces/%s/rayclusters" % a.ns, {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "rc-%04d" % g, "namespace": a.ns},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": tmpl(0)},
                 "workerGroupSpecs": [{"groupName": "gpu", "replicas": a.gang - 1 + a.declare_extra,
                                       "minReplicas": a.gang - 1 + a.declare_extra,
                                       "maxReplicas": a.gang - 1 + a.declare_extra,
                                       "rayStartParams": {}, "template": tmpl(1)}]}})
        for g in range(1, gangs + 1)]


# ---- metrics and CPU ---------------------------------------------------------------------------

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
KEEP = re.compile(r"(_total|_sum|_count)$")


def scrape(url, api):
    """{series: value} for counters and histogram sums/counts (buckets dropped)."""
    out = {}
    if not url:
        return out
    try:
        if url.startswith("https://"):
            m = re.match(r"https://([^:/]+):(\d+)(/.*)?", url)
            c = http.client.HTTPSConnection(m.group(1), int(m.group(2)),
                                            context=ssl._create_unverified_context(), timeout=30)
            c.request("GET", m.group(3) or "/metrics",
                      headers={"Authorization": "Bearer " + api.token})
        else:
            m = re.match(r"http://([^:/]+):(\d+)(/.*)?", url)
            c = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=30)
            c.request("GET", m.group(3) or "/metrics")
        text = c.getresponse().read().decode()
    except OSError:
        return out
    for line in text.splitlines():
        mm = LINE.match(line)
        if not mm or not KEEP.search(mm.group(1)):
            continue
        try:
            out[mm.group(1) + (mm.group(2) or "")] = float(mm.group(3))
        except ValueError:
            pass
    return out


def cpu_seconds(pid):
    if not pid:
        return 0.0
    try:
        f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def resolve(v):
    """A value, or @FILE: the file's first line, read now ("" while it does not exist)."""
    if not v.startswith("@"):
        return v
    try:
        return open(v[1:]).readline().strip()
    except OSError:
        return ""


def kv(pairs):
    return dict(p.split("=", 1) for p in pairs or [])


# ---- run -----------------------------------------------------------------------------------------

# ---- the watch, in protobuf -------------------------------------------------------------------
# kube-scheduler, the controllers and the kubelets read pods as protobuf; a JSON watcher would make
# the API server encode every pod event once more (what issue 26 measures with -c AJ/AP), so the
# load's own watch reads protobuf: length-prefixed frames of metav1.WatchEvent (raw), whose object
# is "k8s\0" + runtime.Unknown{raw: the Pod}. Only the fields read here are decoded (field numbers
# of k8s.io/api v0.37.2 core/v1 generated.proto and apimachinery's meta/v1 and runtime).

def pb_fields(b):
    """(field number, value) of each field of message b: int for varints, bytes for the rest."""
    i, n = 0, len(b)
    while i < n:
        key, i = pb_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = pb_varint(b, i)
        elif wt == 2:
            ln, i = pb_varint(b, i)
            val, i = b[i:i + ln], i + ln
        elif wt == 1:
            val, i = b[i:i + 8], i + 8
        elif wt == 5:
            val, i = b[i:i + 4], i + 4
        else:
            raise ValueError("protobuf wire type %d" % wt)
        yield num, val


def pb_varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def pb_field(b, num, default=b""):
    for n, v in pb_fields(b):
        if n == num:
            return v
    return default


def pb_watch_event(frame):
    """(type, {"metadata": {name, resourceVersion}, "spec": {nodeName}}) of one watch frame."""
    etype = pb_field(frame, 1).decode()
    raw = pb_field(pb_field(frame, 2), 1)  # RawExtension.raw
    if raw[:4] != b"k8s\x00":
        raise ValueError("not a protobuf-enveloped object")
    obj = pb_field(raw[4:], 2)  # runtime.Unknown.raw
    meta, spec = pb_field(obj, 1), pb_field(obj, 2)  # Pod.metadata, Pod.spec (Status: others)
    pod = {"metadata": {"name": pb_field(meta, 1).decode(),  # ObjectMeta.name
                        "resourceVersion": pb_field(meta, 6).decode()},  # .resourceVersion
           "spec": {"nodeName": pb_field(spec, 10).decode()}}  # PodSpec.nodeName
    return etype, pod


def pb_frames(r):
    """Each frame of a length-delimited protobuf watch stream; ends with the stream."""
    while True:
        head = r.read(4)
        if len(head) < 4:
            return
        ln = int.from_bytes(head, "big")
        body = r.read(ln)
        if len(body) < ln:
            return
        yield body


def json_events(r):
    while True:
        line = r.readline()
        if not line:
            return
        ev = json.loads(line)
        yield ev.get("type"), ev.get("object", {})


def watch_pods(api, ns, rv, names, state, done, fmt="protobuf"):
    """Record when each pod is first seen with a nodeName; resume on 410 by relisting."""
    accept = "application/vnd.kubernetes.protobuf" if fmt == "protobuf" else "application/json"
    while not done.is_set():
        if rv is None:
            lst = api.call("GET", "/api/v1/namespaces/%s/pods" % ns)
            rv = lst["metadata"]["resourceVersion"]
            for p in lst["items"]:
                note(p, names, state)
        r = api.call("GET", "/api/v1/namespaces/%s/pods?watch=1&resourceVersion=%s"
                     "&allowWatchBookmarks=true&timeoutSeconds=60" % (ns, rv), stream=True,
                     accept=accept)
        events = pb_frames(r) if fmt == "protobuf" else json_events(r)
        for etype, obj in (pb_watch_event(f) for f in events) if fmt == "protobuf" else events:
            if done.is_set():
                break
            if etype == "ERROR":
                rv = None
                break
            rv = obj.get("metadata", {}).get("resourceVersion", rv)
            if etype in ("ADDED", "MODIFIED"):
                note(obj, names, state)
        r.close()


def note(pod, names, state):
    name = pod.get("metadata", {}).get("name")
    if name in names and pod.get("spec", {}).get("nodeName") and name not in state["bound"]:
        state["bound"][name] = time.time()
        if len(state["bound"]) == len(names):
            state["all"].set()


def ensure_ns(api, ns):
    try:
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": ns}})
    except RuntimeError as ex:
        if "409" not in str(ex):
            raise


def cmd_run(a):
    api = API()
    ensure_ns(api, a.ns)
    for path, obj in gang_objects(a):
        api.call("POST", path, obj)
    if a.gang > 1:
        time.sleep(a.settle)  # the declarations reach muster's cache before the first pod
    specs = pod_specs(a)
    names = {n for n, _ in specs}
    state = {"bound": {}, "all": threading.Event()}
    done = threading.Event()
    lst = api.call("GET", "/api/v1/namespaces/%s/pods?limit=1" % a.ns)
    w = threading.Thread(target=watch_pods, daemon=True,
                         args=(api, a.ns, lst["metadata"]["resourceVersion"], names, state, done,
                               a.watch_format))
    w.start()
    metrics, pids = kv(a.metrics), kv(a.pid)
    created = []

    def create(item):
        api.call("POST", "/api/v1/namespaces/%s/pods" % a.ns, item[1])
        created.append(time.time())

    def snapshot():
        return ({k: scrape(resolve(u), api) for k, u in metrics.items()},
                {k: cpu_seconds(resolve(p)) for k, p in pids.items()})
    if a.no_wait:  # created, not scheduled: what the creates cost, for bench/watch_cost.sh
        before, cpu0 = snapshot()
        t0 = time.time()
        pool(a.threads, specs, create)
        time.sleep(1)  # the watchers are sent the last events
        after, cpu1 = snapshot()
        done.set()
        print(json.dumps({"label": a.label, "ns": a.ns, "pods": len(names), "bound": 0,
                          "seconds": round(time.time() - t0, 3),
                          "create_seconds": round(max(created) - min(created), 3),
                          "cpu": {k: round(cpu1[k] - cpu0[k], 3) for k in pids}}))
        return 0
    if a.hold_scheduler:
        pool(a.threads, specs, create)
        open(a.hold_scheduler + ".created", "w").close()
        while not os.path.exists(a.hold_scheduler):
            time.sleep(0.05)
        before, cpu0 = snapshot()
        t0 = time.time()
    else:
        before, cpu0 = snapshot()
        t0 = time.time()
        pool(a.threads, specs, create)
    state["all"].wait(a.timeout)
    done.set()
    t_end = max(state["bound"].values()) if state["bound"] else time.time()
    time.sleep(1)  # kube-scheduler counts an attempt once its binding goroutine is done
    after, cpu1 = snapshot()
    cpu = {k: round(cpu1[k] - cpu0[k], 2) for k in pids}
    deltas = {}
    for k in metrics:
        deltas[k] = {s: round(v - before[k].get(s, 0.0), 6) for s, v in after[k].items()
                     if v - before[k].get(s, 0.0) != 0}
    bound = len(state["bound"])
    secs = max(t_end - t0, 1e-6)
    t_first = min(state["bound"].values()) if state["bound"] else t_end
    flowing = (bound - 1) / (t_end - t_first) if bound > 1 and t_end > t_first else 0.0
    print(json.dumps({"label": a.label, "ns": a.ns, "pods": len(names), "bound": bound,
                      "seconds": round(secs, 3), "rate": round(bound / secs, 1),
                      "first_bound_after": round(t_first - t0, 3), "flowing_rate": round(flowing, 1),
                      "create_seconds": round(max(created) - min(created), 3) if created else 0,
                      "cpu": cpu, "metrics": deltas}))
    return 0 if bound == len(names) else 1


def cmd_delete(a):
    api = API()
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    for path in ("/api/v1/namespaces/%s/pods" % a.ns,
                 "/apis/ray.io/v1/namespaces/%s/rayclusters" % a.ns,
                 "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups" % a.ns,
                 "/apis/scheduling.k8s.io/v1beta1/namespaces/%s/workloads" % a.ns,
                 "/apis/scheduling.k8s.io/v1beta1/namespaces/%s/podgroups" % a.ns):
        try:
            api.call("DELETE", path, body, ok=(200, 404))
        except RuntimeError:
            pass
    for _ in range(600):
        if not api.call("GET", "/api/v1/namespaces/%s/pods?limit=1" % a.ns)["items"]:
            return 0
        time.sleep(0.5)
    return 1


def cmd_idle(a):
    """CPU seconds per second of each process while nothing is scheduled; with --metrics, the
    rate of each counter too (under "metrics_per_s": the API server's own writes, kwok's
    heartbeats), which the summary takes off each run as it does the idle CPU."""
    pids, metrics = kv(a.pid), kv(a.metrics)
    api = API() if metrics else None
    m0 = {k: scrape(resolve(u), api) for k, u in metrics.items()}
    c0 = {k: cpu_seconds(resolve(p)) for k, p in pids.items()}
    t0 = time.time()
    time.sleep(a.seconds)
    out = {k: round((cpu_seconds(resolve(p)) - c0[k]) / a.seconds, 4) for k, p in pids.items()}
    secs = time.time() - t0
    m1 = {k: scrape(resolve(u), api) for k, u in metrics.items()}
    if metrics:
        out["metrics_per_s"] = {k: {sr: (v - m0[k].get(sr, 0.0)) / secs for sr, v in m1[k].items()
                                    if v - m0[k].get(sr, 0.0) > 0} for k in metrics}
    print(json.dumps(out))
    return 0


def cmd_count(a):
    api = API()
    items = api.call("GET", "/api/v1/namespaces/%s/pods" % a.ns)["items"]
    bound = sum(1 for p in items if p.get("spec", {}).get("nodeName"))
    print("%d %d" % (len(items), bound))
    return 0


# ---- summary -------------------------------------------------------------------------------------

def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def series_sum(m, name, **labels):
    """Sum of the series of `name` whose labels include every given label."""
    tot = 0.0
    for k, v in m.items():
        base, _, rest = k.partition("{")
        if base != name:
            continue
        if all('%s="%s"' % (lk, lv) in rest for lk, lv in labels.items()):
            tot += v
    return tot


def add_into(acc, m):
    for k, v in m.items():
        acc[k] = acc.get(k, 0.0) + v


ALL_BEYOND_IDLE = "CPU of all of them beyond idle, ms per pod"
WRITES = ("POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION")
LABEL = re.compile(r'(\w+)="([^"]*)"')


def labels_of(series):
    return dict(LABEL.findall(series.partition("{")[2]))


def api_requests(apiserver, idle_rates, seconds):
    """{(verb, resource[/subresource]): count} from apiserver_request_total deltas, less what
    the idle control plane does in as many seconds (kwok's heartbeats, leases)."""
    out = {}
    for series, v in apiserver.items():
        if not series.startswith("apiserver_request_total{"):
            continue
        lb = labels_of(series)
        res = lb.get("resource", "")
        if lb.get("group"):
            res = lb["group"] + "/" + res
        if lb.get("subresource"):
            res += "/" + lb["subresource"]
        k = (lb.get("verb", "?"), res)
        out[k] = out.get(k, 0.0) + v - idle_rates.get(series, 0.0) * seconds
    return out


def api_rows(runs, idle, pods):
    """API requests per bound pod by verb and resource: writes each, reads and watches summed."""
    rates = idle.get("metrics_per_s", {}).get("apiserver", {})
    tot = {}
    for r in runs:
        for k, v in api_requests(r["metrics"].get("apiserver", {}), rates, r["seconds"]).items():
            tot[k] = tot.get(k, 0.0) + v
    if not tot:
        return []
    writes = {k: v for k, v in tot.items() if k[0] in WRITES}
    rows = [("API writes per pod (beyond idle)", sum(writes.values()) / pods, "")]
    for (verb, res), v in sorted(writes.items(), key=lambda kv: -kv[1]):
        if v / pods >= 0.005:
            rows.append(("  %s %s" % (verb, res), v / pods, ""))
    rows.append(("API reads per pod (GET, LIST)",
                 sum(v for k, v in tot.items() if k[0] in ("GET", "LIST")) / pods, ""))
    return rows


def own_request_rows(must, pods):
    """muster's own requests per bound pod (muster_kube_requests_total{verb,resource,code})."""
    by = {}
    for series, v in must.items():
        if series.startswith("muster_kube_requests_total{"):
            lb = labels_of(series)
            if lb.get("verb") not in ("WATCH", "LIST", "GET"):
                k = "%s %s" % (lb.get("verb", "?"), lb.get("resource", "?"))
                by[k] = by.get(k, 0.0) + v
    rows = []
    if by:
        rows.append(("muster's own writes per pod", sum(by.values()) / pods, ""))
    for k, v in sorted(by.items(), key=lambda kv: -kv[1]):
        if v / pods >= 0.005:
            rows.append(("  muster %s" % k, v / pods, ""))
    if "muster_kube_connections_total" in must:  # each a TLS handshake on both sides
        rows.append(("muster's connections opened to the API server per pod",
                     must["muster_kube_connections_total"] / pods, ""))
    return rows


def where_time_goes(runs, idle):
    """Per-pod figures from every run of one configuration, summed."""
    pods = sum(r["bound"] for r in runs) or 1
    sched, must, cpu, busy = {}, {}, {}, {}
    for r in runs:
        add_into(sched, r["metrics"].get("sched", {}))
        add_into(must, r["metrics"].get("muster", {}))
        add_into(cpu, r.get("cpu", {}))
        add_into(busy, {k: v - idle.get(k, 0.0) * r["seconds"] for k, v in r.get("cpu", {}).items()})
    rows = api_rows(runs, idle, pods) + own_request_rows(must, pods)
    att = series_sum(sched, "scheduler_schedule_attempts_total")
    rows.append(("kube-scheduler attempts per pod", att / pods, ""))
    for res in ("scheduled", "unschedulable", "error"):
        n = series_sum(sched, "scheduler_schedule_attempts_total", result=res)
        if n:
            rows.append(("  attempts %s" % res, n / pods, ""))
    for name, label in (("scheduler_scheduling_attempt_duration_seconds", "scheduling attempt"),
                        ("scheduler_scheduling_algorithm_duration_seconds", "  algorithm (filter+score+extenders)")):
        s_, c_ = series_sum(sched, name + "_sum"), series_sum(sched, name + "_count")
        if c_:
            rows.append((label + ", ms per pod", 1000 * s_ / pods, ""))
    for ep in ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit",
               "PreBind", "Bind"):
        s_ = series_sum(sched, "scheduler_framework_extension_point_duration_seconds_sum",
                        extension_point=ep)
        if s_:
            rows.append(("  extension point %s, ms per pod" % ep, 1000 * s_ / pods, ""))
    # kube-scheduler 1.37 has no extender metric: its algorithm's time outside the extension
    # points it runs in the algorithm is the extenders' filter and prioritize calls as it waits
    # for them (encoding, the round trip, decoding), plus its own bookkeeping (A's figure).
    alg = series_sum(sched, "scheduler_scheduling_algorithm_duration_seconds_sum")
    if alg:
        inside = sum(series_sum(sched, "scheduler_framework_extension_point_duration_seconds_sum",
                                extension_point=ep)
                     for ep in ("PreFilter", "Filter", "PostFilter", "PreScore", "Score"))
        rows.append(("  algorithm outside its extension points (extender calls; A: bookkeeping), "
                     "ms per pod", 1000 * (alg - inside) / pods, ""))
    thr = series_sum(sched, "rest_client_rate_limiter_duration_seconds_sum")
    rows.append(("  client-side throttling, ms per pod", 1000 * thr / pods, ""))
    req = series_sum(sched, "rest_client_requests_total")
    if req:
        rows.append(("  API requests per pod", req / pods, ""))
    for verb in ("filter", "prioritize", "bind", "preempt"):
        n = series_sum(must, "muster_extender_requests_total", verb=verb)
        if not n:
            if must:  # muster ran and was never asked this
                rows.append(("muster %s: calls per pod, ms per call, ms per pod" % verb, 0.0, ""))
            continue
        s_ = series_sum(must, "muster_extender_request_duration_seconds_sum", verb=verb)
        rows.append(("muster %s: calls per pod, ms per call, ms per pod" % verb, n / pods,
                     "%.2f / %.2f" % (1000 * s_ / n, 1000 * s_ / pods)))
    loop = series_sum(must, "muster_extender_event_loop_answers_total", verb="filter")
    nf = series_sum(must, "muster_extender_requests_total", verb="filter")
    if nf:
        rows.append(("  muster filters answered by its event loop (no worker), share", loop / nf, ""))
    w, wc = series_sum(must, "muster_bind_wait_seconds_sum"), series_sum(must, "muster_bind_wait_seconds_count")
    if wc:
        rows.append(("muster binds held at the barrier per pod, ms held", wc / pods, "%.1f" % (1000 * w / wc)))
    for name in sorted(cpu):
        rows.append(("CPU %s, ms per pod" % name, 1000 * cpu[name] / pods, ""))
    if idle:
        for name in sorted(busy):
            rows.append(("CPU %s beyond its idle rate, ms per pod" % name, 1000 * busy[name] / pods, ""))
        rows.append((ALL_BEYOND_IDLE, 1000 * sum(busy.values()) / pods, ""))
    return rows


def cmd_summary(a):
    runs = [json.loads(line) for f in a.files for line in open(f) if line.strip()]
    by = {}
    for r in runs:
        by.setdefault(r["label"], []).append(r)
    def base_of(label):
        # "B" and "B2" are compared with "A", "B held" with "A held"
        suffix = label.partition(" ")[2]
        rs = by.get(a.base + (" " + suffix if suffix else ""), [])
        return median([r["rate"] for r in rs]) if rs else None
    print("| configuration | runs | pods/s (each run) | median | vs %s | flowing pods/s, median |" % a.base)
    print("|---|---|---|---|---|---|")
    for label, rs in by.items():
        m = median([r["rate"] for r in rs])
        each = ", ".join("%.0f" % r["rate"] + ("" if r["bound"] == r["pods"] else "*") for r in rs)
        base = base_of(label)
        ratio = "%.2f" % (m / base) if base else "-"
        flow = median([r.get("flowing_rate", 0) for r in rs])
        print("| %s | %d | %s | %.0f | %s | %.0f |" % (label, len(rs), each, m, ratio, flow))
    print()
    labels = list(by)
    idle = json.load(open(a.idle)) if a.idle else {}
    table = {label: where_time_goes(by[label], idle) for label in labels}
    keys = []
    for label in labels:  # all components beyond its base's (A's; "A held" for held runs)
        suffix = label.partition(" ")[2]
        base = a.base + (" " + suffix if suffix else "")
        if label == base or base not in table:
            continue
        mine = [v for k, v, _ in table[label] if k == ALL_BEYOND_IDLE]
        theirs = [v for k, v, _ in table[base] if k == ALL_BEYOND_IDLE]
        if mine and theirs:
            table[label].append(("footprint: all components beyond %s's, ms per pod" % a.base,
                                 mine[0] - theirs[0], ""))
    for label in labels:
        for k, _, _ in table[label]:
            if k not in keys:
                keys.append(k)
    print("| where time goes (all runs, per pod) | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for k in keys:
        cells = []
        for label in labels:
            hit = [(v, x) for kk, v, x in table[label] if kk == k]
            cells.append(("%.2f" % hit[0][0] + (" / " + hit[0][1] if hit[0][1] else "")) if hit else "")
        print("| %s | %s |" % (k, " | ".join(cells)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("nodes")
    n.add_argument("count", type=int)
    n.add_argument("--gpus", type=int, default=8)
    n.add_argument("--cpu", default="32")
    n.add_argument("--memory", default="256Gi")
    n.add_argument("--prefix", default="kwok-node-")
    n.add_argument("--domains", type=int, default=0)
    n.add_argument("--domain-key", default="")
    r = sub.add_parser("run")
    r.add_argument("--ns", required=True)
    r.add_argument("--pods", type=int, required=True)
    r.add_argument("--gang", type=int, default=1)
    r.add_argument("--podgroup", action="store_true")
    r.add_argument("--workload", action="store_true")
    r.add_argument("--topology-key", default="")
    r.add_argument("--scheduler", default="muster")
    r.add_argument("--queue", default="")
    r.add_argument("--gpus-per-pod", type=int, default=1)
    r.add_argument("--threads", type=int, default=16)
    r.add_argument("--timeout", type=float, default=600)
    r.add_argument("--settle", type=float, default=2.0)
    r.add_argument("--metrics", action="append")
    r.add_argument("--pid", action="append")
    r.add_argument("--hold-scheduler", default="")
    r.add_argument("--label", default="")
    r.add_argument("--watch-format", choices=("protobuf", "json"), default="protobuf")
    r.add_argument("--no-wait", action="store_true",
                   help="create the pods and stop: no scheduler is waited for")
    r.add_argument("--declare-extra", type=int, default=0,
                   help="each RayCluster declares this many workers more than are created: "
                        "gangs that wait for members that never come")
    r.add_argument("--head", action="store_true",
                   help="with --workload or --podgroup: member 0 of each gang a CPU head, as C's")
    r.add_argument("--fraction", default="",
                   help="single pods ask this share of a GPU (annotation gpu-fraction) instead")
    sm = sub.add_parser("summary")
    sm.add_argument("files", nargs="+")
    sm.add_argument("--base", default="A")
    sm.add_argument("--idle", default="", help="JSON from `idle`: CPU/s subtracted per run second")
    i = sub.add_parser("idle")
    i.add_argument("--pid", action="append")
    i.add_argument("--metrics", action="append")
    i.add_argument("--seconds", type=float, default=10)
    d = sub.add_parser("delete")
    d.add_argument("--ns", required=True)
    c = sub.add_parser("count")
    c.add_argument("--ns", required=True)
    a = ap.parse_args()
    return {"nodes": cmd_nodes, "run": cmd_run, "delete": cmd_delete, "count": cmd_count,
            "summary": cmd_summary, "idle": cmd_idle}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
