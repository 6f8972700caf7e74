#!/usr/bin/env python3
"""The invariants every end-to-end scenario ends with, over what the API server holds:
no gang partly bound (nor any of its subgroups: a RayCluster's head and worker groups, a
Workload's pod group templates), no gang with a required topology level across two domains of
it, no node over allocatable, no shared GPU over one, no queue over
limit.
Usage: invariants.py DIR   (pods.json nodes.json rayclusters.json queues.json from kubectl -o json;
                            workloads.json and wapodgroups.json, the Workload API's, and
                            topologies.json, KAI's, if present)
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

def load(d, name, optional=False):
    try:
        with open(f"{d}/{name}.json") as f:
            return json.load(f)["items"]
    except FileNotFoundError:
        if optional:
            return []
        raise

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

def composition(rc):
    """A RayCluster's subgroups and their minimums, as KubeRay's utils/util.go counts them."""
    spec = rc["spec"]
    auto = spec.get("enableInTreeAutoscaling", False)
    subs = {"head": 1}
    for g in spec.get("workerGroupSpecs", []):
        lo, hi = g.get("minReplicas", 0), g.get("maxReplicas", 2**31 - 1)
        r = lo if auto else min(max(g.get("replicas", 0), lo), hi)
        subs[g["groupName"]] = 0 if g.get("suspend") else r * g.get("numOfHosts", 1)
    return subs

def ray_subgroup(pod):
    labels = pod["metadata"].get("labels", {})
    return "head" if labels.get("ray.io/node-type") == "head" else labels.get("ray.io/group")

def check_gang(problems, key, subs, members, subgroup_of):
    """Bound none of the gang, or at least every subgroup's minimum."""
    want = sum(subs.values())
    if not members:
        return
    if len(members) < want:
        problems.append(f"gang {key} partly bound: {len(members)} of {want}")
        return
    for name, lo in subs.items():
        have = sum(1 for p in members if subgroup_of(p) == name)
        if have < lo:
            problems.append(f"gang {key} subgroup {name} below its minimum with the gang bound: "
                            f"{have} of {lo} ({len(members)} of the gang)")

def pod_group_ref(pg):
    """(workload, template) of a Workload-API PodGroup: v1alpha2's podGroupTemplateRef.workload
    {workloadName, podGroupTemplateName} or v1beta1's workloadRef{workloadName, templateName}."""
    spec = pg.get("spec") or {}
    old = (spec.get("podGroupTemplateRef") or {}).get("workload") or {}
    if old.get("workloadName"):
        return old["workloadName"], old.get("podGroupTemplateName")
    new = spec.get("workloadRef") or {}
    if new.get("workloadName"):
        return new["workloadName"], new.get("templateName")
    return None, None

def gang_min(policy):
    gang = (policy or {}).get("gang")
    return gang.get("minCount", 0) if gang else 0

def workload_gangs(d, bound):
    """Workload API: a Workload's templates, each PodGroup made from one, the pods naming it.
    A template's minimum is the sum of its PodGroups' minCounts (mutable in v1beta1, and what
    kube-scheduler enforces), or the template's own while it has no PodGroup."""
    workloads = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in load(d, "workloads", True)}
    template_of = {}
    made = {}
    for pg in load(d, "wapodgroups", True):
        ns = pg["metadata"]["namespace"]
        wl, tpl = pod_group_ref(pg)
        if wl:
            template_of[(ns, pg["metadata"]["name"])] = (wl, tpl)
            made.setdefault((ns, wl, tpl), []).append(gang_min((pg.get("spec") or {}).get("schedulingPolicy")))
    for (ns, name), w in workloads.items():
        subs = {}
        for t in w["spec"].get("podGroupTemplates", []):
            mins = made.get((ns, name, t["name"]))
            subs[t["name"]] = sum(mins) if mins else gang_min(t.get("schedulingPolicy"))
        def subgroup_of(p, ns=ns):
            group = ((p["spec"].get("schedulingGroup") or {}).get("podGroupName"))
            return template_of.get((ns, group), (None, None))[1]
        members = [p for p in bound if p["metadata"]["namespace"] == ns
                   and template_of.get((ns, (p["spec"].get("schedulingGroup") or {}).get("podGroupName")),
                                       (None,))[0] == name]
        yield f"{ns}/{name}", subs, members, subgroup_of

def pod_group_checks(d, bound, nodes, problems):
    """Each Workload-API PodGroup on its own, as kube-scheduler's gang cycle admits it: none of
    its pods bound or at least its minCount, and with a topology constraint all of them in one
    domain of its key (schedulingConstraints.topology[0].key)."""
    for pg in load(d, "wapodgroups", True):
        ns, name = pg["metadata"]["namespace"], pg["metadata"]["name"]
        spec = pg.get("spec") or {}
        members = [p for p in bound if p["metadata"]["namespace"] == ns
                   and (p["spec"].get("schedulingGroup") or {}).get("podGroupName") == name]
        want = gang_min(spec.get("schedulingPolicy"))
        if members and len(members) < want:
            problems.append(f"pod group {ns}/{name} partly bound: {len(members)} of {want}")
        topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
        if topo and members:
            key = topo[0].get("key")
            domains = {nodes.get(p["spec"]["nodeName"], {}).get("metadata", {}).get("labels", {}).get(key, "<none>")
                       for p in members}
            if len(domains) > 1:
                problems.append(f"pod group {ns}/{name} bound across domains of {key}: {sorted(domains)}")

def raycluster_topology_checks(d, bound, nodes, problems):
    """A RayCluster annotated KAI's way with a required level (kai.scheduler/topology and
    topology-required-placement, a level's label or alias): its bound pods in one domain of that
    level, the labels of every coarser level alike (docs/topology.md)."""
    topologies = {t["metadata"]["name"]: t.get("spec", {}).get("levels", [])
                  for t in load(d, "topologies", True)}
    for rc in load(d, "rayclusters"):
        ann = rc["metadata"].get("annotations", {})
        levels = topologies.get(ann.get("kai.scheduler/topology"))
        want = ann.get("kai.scheduler/topology-required-placement")
        if not levels or not want:
            continue
        idx = next((i for i, l in enumerate(levels) if want in (l.get("nodeLabel"), l.get("alias"))), None)
        if idx is None:
            continue
        ns, name = rc["metadata"]["namespace"], rc["metadata"]["name"]
        members = [p for p in bound if p["metadata"]["namespace"] == ns
                   and p["metadata"].get("labels", {}).get("ray.io/cluster") == name]
        keys = [l["nodeLabel"] for l in levels[: idx + 1]]
        domains = {tuple(nodes.get(p["spec"]["nodeName"], {}).get("metadata", {}).get("labels", {}).get(k, "<none>")
                         for k in keys) for p in members}
        if len(domains) > 1:
            problems.append(f"raycluster {ns}/{name} bound across domains of {want}: {sorted(domains)}")

def main(d):
    pods = [p for p in load(d, "pods") if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]
    nodes = {n["metadata"]["name"]: n for n in load(d, "nodes")}
    problems = []

    bound = [p for p in pods if p["spec"].get("nodeName")]
    # Gangs: a RayCluster's pods are bound none, or at least the minimum of its head and of
    # each worker group (a count can be met by the wrong members: kuberay#4656); the same for
    # a Workload's pod group templates.
    for rc in load(d, "rayclusters"):
        ns, name = rc["metadata"]["namespace"], rc["metadata"]["name"]
        members = [p for p in bound if p["metadata"]["namespace"] == ns
                   and p["metadata"].get("labels", {}).get("ray.io/cluster") == name]
        check_gang(problems, f"{ns}/{name}", composition(rc), members, ray_subgroup)
    for key, subs, members, subgroup_of in workload_gangs(d, bound):
        check_gang(problems, key, subs, members, subgroup_of)
    pod_group_checks(d, bound, nodes, problems)
    raycluster_topology_checks(d, bound, nodes, problems)

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
