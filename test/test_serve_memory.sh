#!/usr/bin/env bash
# Memory bounded by design (issue 11), measured on `muster serve --offline` with the default
# limits (maxBodyBytes 32Mi, server.decodeBudget 256Mi, server.maxBufferedBytes 128Mi):
#   - a 30 MiB body of the costliest shape (15 million tiny JSON values) is refused with 413
#     and a reason before it is parsed: peak RSS stays within 80 MiB of the baseline;
#   - a 30 MiB body of 5,230 full Node objects (nodeCacheCapable: false) is decoded and
#     answered within 340 MiB of the baseline;
#   - 16 of the costly bodies at once: each is answered (413, or 503 while 128 MiB of bodies
#     are already being received) within 200 MiB of the baseline;
#   - after the bursts, resident memory is back within 40 MiB of the baseline.
# Peaks are VmHWM, reset between cases through /proc/PID/clear_refs.
#   test_serve_memory.sh MUSTER_BIN TEST_DIR
set -uo pipefail
exec python3 - "$@" <<'PY'
import json, sys, threading, time
sys.path.insert(0, sys.argv[2])
from serve_harness import Harness, pod

MiB = 1024
muster = sys.argv[1]
cluster = """---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110"}}
"""
h = Harness(muster, "test_serve_memory", "log: {format: json, level: warn}\n", cluster)
names = {"Nodes": None, "NodeNames": ["gpu-1"]}

def costly(mib):
    p = pod("costly")
    p["spec"]["x"] = "@"
    text = json.dumps(dict(names, Pod=p))
    n = ((mib << 20) - len(text)) // 2
    return text.replace('"@"', "[" + ",".join(["0"] * n) + "]").encode()

def node(i):
    return {"metadata": {"name": f"node-{i:05d}", "uid": f"uid-{i}", "resourceVersion": "100",
                         "labels": {"kubernetes.io/hostname": f"node-{i:05d}",
                                    "nvidia.com/gpu.memory": "81920",
                                    "topology.kubernetes.io/zone": "zone-a",
                                    "node.kubernetes.io/instance-type": "p4d.24xlarge"}},
            "spec": {"podCIDR": "10.244.1.0/24", "providerID": f"aws:///us-east-1a/i-{i:017d}"},
            "status": {"capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "allocatable": {"cpu": "63500m", "memory": "500Gi", "pods": "110"},
                       "conditions": [{"type": t, "status": "False", "reason": "Kubelet" + t,
                                       "lastHeartbeatTime": "2025-05-01T09:00:00Z",
                                       "message": "kubelet has sufficient " + t}
                                      for t in ["MemoryPressure", "DiskPressure", "PIDPressure",
                                                "Ready"]],
                       "nodeInfo": {"machineID": "a" * 32, "systemUUID": "b" * 36,
                                    "kernelVersion": "5.15.0", "kubeletVersion": "v1.30.1"},
                       "images": [{"names": [f"registry.example.com/team/image-{k}@sha256:" + "d" * 64,
                                             f"registry.example.com/team/image-{k}:v1.2.3"],
                                   "sizeBytes": 123456789} for k in range(20)]}}

def full_nodes(mib):
    one = len(json.dumps(node(0))) + 2
    n = (mib << 20) // one
    return json.dumps({"Pod": pod("wide"), "Nodes": {"metadata": {}, "items": [node(i) for i in range(n)]},
                       "NodeNames": None}).encode(), n

bounds = not h.sanitized()
if not bounds:
    print("test_serve_memory: built with AddressSanitizer: answers checked, memory figures not")

def within(what, cond, detail):
    h.check(what, cond or not bounds, detail)

def reset_peak():
    with open(f"/proc/{h.proc.pid}/clear_refs", "w") as f:
        f.write("5")

for i in range(20):
    h.call("/filter", dict(names, Pod=pod(f"warm-{i}")))
time.sleep(0.5)
base = h.proc_status("VmRSS")

# 1. The costliest 30 MiB body: refused before it is parsed.
body = costly(30)
reset_peak()
st, text, _ = h.call("/filter", raw=body, timeout=120)
peak = h.proc_status("VmHWM") - base
h.check("a costly 30 MiB body is refused with 413 and a reason",
        st == 413 and "budget" in text, (st, text[:300]))
print(f"costly 30 MiB body: peak {peak // MiB} MiB over a baseline of {base // MiB} MiB")
within(f"its peak RSS stays within 80 MiB of the baseline (was {peak // MiB} MiB)",
        peak <= 80 * MiB, f"peak {peak} kB over a baseline of {base} kB")

# 2. 5,230 full Nodes in 30 MiB: decoded and answered, within the budget.
wide, n = full_nodes(30)
reset_peak()
st, text, _ = h.call("/filter", raw=wide, timeout=120)
peak = h.proc_status("VmHWM") - base
h.check(f"{n} full Node objects in 30 MiB are decoded and answered", st == 200, (st, text[:300]))
print(f"{n} full Nodes in 30 MiB: peak {peak // MiB} MiB over the baseline")
within(f"their peak RSS stays within 340 MiB of the baseline (was {peak // MiB} MiB)",
        peak <= 340 * MiB, f"peak {peak} kB over a baseline of {base} kB")

# 3. Sixteen costly bodies at once.
reset_peak()
codes = []
def send():
    try:
        codes.append(h.call("/filter", raw=body, timeout=300)[0])
    except OSError as e:
        codes.append(repr(e))
ts = [threading.Thread(target=send) for _ in range(16)]
for t in ts:
    t.start()
for t in ts:
    t.join(300)
peak = h.proc_status("VmHWM") - base
h.check("16 costly bodies at once are each answered 413 or 503",
        len(codes) == 16 and all(c in (413, 503) for c in codes), codes)
print(f"16 costly bodies at once: peak {peak // MiB} MiB over the baseline; answers {sorted(codes)}")
within(f"16 at once stay within 200 MiB of the baseline (was {peak // MiB} MiB)",
        peak <= 200 * MiB, f"peak {peak} kB over a baseline of {base} kB")

# 4. After the bursts, back near the baseline.
time.sleep(3)
h.call("/healthz")
rss = h.proc_status("VmRSS") - base
print(f"after the bursts: {rss // MiB} MiB over the baseline")
within(f"resident memory returns within 40 MiB of the baseline (was {rss // MiB} MiB over)",
        rss <= 40 * MiB, f"{rss} kB over a baseline of {base} kB")
h.check("still serving", h.call("/filter", dict(names, Pod=pod("after")))[0] == 200)
h.finish()
PY
