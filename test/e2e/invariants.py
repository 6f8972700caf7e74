#!/usr/bin/env python3
"""The invariants every end-to-end scenario ends with, over what the API server holds:
no gang partly bound, no node over allocatable, no shared GPU over one, no queue over limit.
Usage: invariants.py DIR   (pods.json nodes.json rayclusters.json queues.json from kubectl -o json)
"""
import json, re, sys
from fractions import Fraction

SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}

def qty(v):
    if v is None:
        return Fraction(0)
    if isinstance(v, (int, float)):
        return Fraction(str(v))
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", v.strip())
    if not m:
        raise ValueError(f"bad quantity {v!r}")
    return Fraction(m.group(1)) * SUFFIX[m.group(2)]

def load(d, name):
    with open(f"{d}/{name}.json") as f:
        return json.load(f)["items"]

def requests(pod):
    """Effective requests as Kubernetes computes them (containers summed, max with init)."""
    total = {}
    for c in pod["spec"].get("containers", []):
        r = c.get("resources", {})
        for k in set(r.get("requests", {})) | set(r.get("limits", {})):
            total[k] = total.get(k, 0) + qty(r.get("requests", {}).get(k, r.get("limits", {}).get(k)))
    for c in pod["spec"].get("initContainers", []):
        r = c.get("resources", {})
        for k in set(r.get("requests", {})) | set(r.get("limits", {})):
            total[k] = max(total.get(k, 0), qty(r.get("requests", {}).get(k, r.get("limits", {}).get(k))))
    for k, v in (pod["spec"].get("overhead") or {}).items():
        total[k] = total.get(k, 0) + qty(v)
    return total

def gang_min(rc):
    spec = rc["spec"]
    auto = spec.get("enableInTreeAutoscaling", False)
    n = 1
    for g in spec.get("workerGroupSpecs", []):
        if g.get("suspend"):
            continue
        lo, hi = g.get("minReplicas", 0), g.get("maxReplicas", 2**31 - 1)
        r = lo if auto else min(max(g.get("replicas", 0), lo), hi)
        n += r * g.get("numOfHosts", 1)
    return n

def main(d):
    pods = [p for p in load(d, "pods") if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
    nodes = {n["metadata"]["name"]: n for n in load(d, "nodes")}
    problems = []

    bound = [p for p in pods if p["spec"].get("nodeName")]
    # Gangs: a RayCluster's pods are bound none, or at least its minimum.
    for rc in load(d, "rayclusters"):
        ns, name = rc["metadata"]["namespace"], rc["metadata"]["name"]
        members = [p for p in bound if p["metadata"]["namespace"] == ns
                   and p["metadata"].get("labels", {}).get("ray.io/cluster") == name]
        want = gang_min(rc)
        if 0 < len(members) < want:
            problems.append(f"gang {ns}/{name} partly bound: {len(members)} of {want}")

    # Nodes: bound requests within allocatable.
    used = {}
    for p in bound:
        u = used.setdefault(p["spec"]["nodeName"], {"pods": 0})
        u["pods"] += 1
        for k, v in requests(p).items():
            u[k] = u.get(k, 0) + v
    for node, u in used.items():
        alloc = nodes.get(node, {}).get("status", {}).get("allocatable", {})
        for k, v in u.items():
            if k in alloc and v > qty(alloc[k]):
                problems.append(f"node {node} over allocatable {k}: {float(v)} > {alloc[k]}")

    # Shared GPUs: the shares on one group sum to at most one device, and groups plus whole
    # GPUs (reservation pods are how groups take devices, so count them once) fit the node.
    groups = {}
    for p in bound:
        ann = p["metadata"].get("annotations", {})
        if "muster.dev/gpu-group" not in ann:
            continue
        share = Fraction(ann.get("muster.dev/gpu-fraction", "0"))
        for g in ann["muster.dev/gpu-group"].split(","):
            key = (p["spec"]["nodeName"], g)
            groups[key] = groups.get(key, 0) + share
    for (node, g), s in groups.items():
        if s > 1:
            problems.append(f"GPU group {g} on {node} shared over one device: {float(s)}")
    for node in nodes:
        whole = sum(requests(p).get("nvidia.com/gpu", 0) for p in bound
                    if p["spec"]["nodeName"] == node
                    and p["metadata"].get("labels", {}).get("app.kubernetes.io/name") != "muster-gpu-reservation")
        shared = len({g for (n, g) in groups if n == node})
        cap = qty(nodes[node]["status"].get("allocatable", {}).get("nvidia.com/gpu", "0"))
        if whole + shared > cap:
            problems.append(f"node {node}: {float(whole)} whole GPUs + {shared} shared groups > {cap}")

    # Queues: GPU charged (whole + shares) within limit, rolled up to parents.
    queues = {q["metadata"]["name"]: q for q in load(d, "queues")}
    charged = {}
    for p in bound:
        labels = p["metadata"].get("labels", {})
        q = labels.get("muster.dev/queue") or labels.get("kai.scheduler/queue") or labels.get("volcano.sh/queue-name")
        if not q:
            continue
        ann = p["metadata"].get("annotations", {})
        gpu = requests(p).get("nvidia.com/gpu", 0)
        if "muster.dev/gpu-fraction" in ann:
            gpu += Fraction(ann["muster.dev/gpu-fraction"]) * len(ann.get("muster.dev/gpu-group", "g").split(","))
        seen = set()
        while q and q not in seen:
            seen.add(q)
            charged[q] = charged.get(q, 0) + gpu
            q = queues.get(q, {}).get("spec", {}).get("parentQueue")
    for name, q in queues.items():
        limit = q.get("spec", {}).get("resources", {}).get("gpu", {}).get("limit", -1)
        if limit not in (-1, "-1", None) and charged.get(name, 0) > qty(limit):
            problems.append(f"queue {name} over its gpu limit {limit}: {float(charged[name])}")

    for p in problems:
        print(f"INVARIANT BROKEN: {p}")
    print(f"invariants: {len(bound)} bound pods, {len(groups)} shared groups checked: "
          f"{'ok' if not problems else str(len(problems)) + ' broken'}")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
