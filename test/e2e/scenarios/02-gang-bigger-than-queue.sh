# The walkthrough's second experiment: a gang bigger than its queue. RayCluster "frac"
# (manifests/samples/raycluster-fractional.yaml: a 1-GPU head plus four workers with
# gpu-fraction "0.5" = 3 GPUs) in queue team-a (manifests/samples/queues.yaml: GPU limit 2)
# -> all five Pods Pending, the quota reason in their Events; raise the limit to 3 -> all
# five bound on exactly 3 devices: the head's whole GPU and two shared GPU groups (two
# workers each), each group held by one reservation pod in muster-system.
NS=kuberay-lab
RC=frac
REASON="queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; never: more than the limit"

show_pods() {
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,FRACTION:.metadata.annotations.gpu-fraction,GROUP:.metadata.annotations.muster\.dev/gpu-group,NODE:.spec.nodeName,PHASE:.status.phase'
}

# Bound members of the gang (pods with a nodeName), one per line.
bound_nodes() {
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o jsonpath='{range .items[?(@.spec.nodeName)]}{.spec.nodeName}{"\n"}{end}'
}
pod_count() {
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o name | grep -c .
}

# Every one of the five pods has an Event (muster's GangWaiting, or kube-scheduler's
# FailedScheduling carrying the extender's answer) with the quota reason.
all_have_reason() {
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o json > "$MUSTER_E2E_DIR/02-pods.json" &&
    kubectl_ -n "$NS" get events -o json > "$MUSTER_E2E_DIR/02-events.json" &&
    python3 - "$MUSTER_E2E_DIR/02-pods.json" "$MUSTER_E2E_DIR/02-events.json" "$REASON" <<'EOF'
import json, sys
pods = [p["metadata"]["name"] for p in json.load(open(sys.argv[1]))["items"]]
events = json.load(open(sys.argv[2]))["items"]
want = sys.argv[3]
have = {e["involvedObject"]["name"] for e in events
        if e.get("reason") in ("GangWaiting", "FailedScheduling") and want in (e.get("message") or "")}
missing = [p for p in pods if p not in have]
sys.exit(1 if len(pods) != 5 or missing else 0)
EOF
}

scenario() {
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_MANIFESTS/samples/queues.yaml"
  # The shipped sample is what the walkthrough describes: team-a may hold 2 GPUs.
  limit=$(kubectl_ get queue team-a -o jsonpath='{.spec.resources.gpu.limit}')
  [[ $limit == 2 ]] || { e2e_err "samples/queues.yaml: team-a gpu limit is '$limit', expected 2"; return 1; }
  kubectl_ apply -f "$E2E_MANIFESTS/samples/raycluster-fractional.yaml"

  five_pods() { [[ $(pod_count) -eq 5 ]]; }
  wait_for 90 "KubeRay creates the 5 pods of $RC" five_pods
  # Pending whole, and for the right reason.
  wait_for 90 "every pod of $RC has the event '$REASON'" all_have_reason
  local end=$((SECONDS + 20)) n
  while ((SECONDS < end)); do
    n=$(bound_nodes | grep -c . || true)
    ((n == 0)) || { show_pods; e2e_err "$n pods of $RC bound while queue team-a is over its limit"; return 1; }
    # a gang that cannot be admitted reserves nothing: no GPU is taken for its shares
    n=$(kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation -o name | grep -c . || true)
    ((n == 0)) || { e2e_err "$n GPU reservation pods exist while $RC waits over its queue limit"; return 1; }
    sleep 1
  done
  show_pods
  echo "--- why it waits (Events):"
  # (no `| head`: with pipefail a SIGPIPE'd kubectl would fail the scenario)
  kubectl_ -n "$NS" get events -o custom-columns='POD:.involvedObject.name,REASON:.reason,MESSAGE:.message' |
    awk 'NR == 1 || (/GangWaiting|FailedScheduling/ && !seen[$0]++)'
  kubectl_ get queues

  # Raise the limit: the gang fits now. Nothing else changes in the cluster, so muster alone
  # has to get kube-scheduler to try the five pods again (it does not watch Queues).
  kubectl_ patch queue team-a --type merge -p '{"spec":{"resources":{"gpu":{"limit":3}}}}'
  all_bound() {
    local nodes
    nodes=$(bound_nodes)
    [[ $(grep -c . <<<"$nodes") -eq 5 && $(grep -cx gpu-lab-worker <<<"$nodes") -eq 5 ]]
  }
  wait_for 120 "all 5 pods of $RC bound to gpu-lab-worker after the limit is raised" all_bound
  show_pods
  # The quota reason was true while it waited; bound, it is withdrawn from all five (one
  # deletecollection for the gang, issue 21): describe shows no stale GangWaiting.
  no_stale() { e2e_stale_waiting "$NS" ray.io/cluster=$RC >/dev/null; }
  wait_for 30 "no GangWaiting Event left on the bound pods of $RC" no_stale ||
    { e2e_stale_waiting "$NS" ray.io/cluster=$RC; return 1; }
  echo "--- Events on its pods once bound:"
  kubectl_ -n "$NS" get events -o custom-columns='POD:.involvedObject.name,REASON:.reason,MESSAGE:.message' |
    awk 'NR == 1 || /GangWaiting|GangBound/'

  # Exactly 3 devices: the head's whole GPU, and the four halves on two groups, each group
  # backed by one reservation pod asking nvidia.com/gpu: 1 on the node.
  reservations() {
    kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation -o json
  }
  two_reservations() {
    [[ $(kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation \
      -o jsonpath='{range .items[?(@.spec.nodeName)]}{.spec.nodeName}{"\n"}{end}' | grep -cx gpu-lab-worker) -eq 2 ]]
  }
  wait_for 60 "2 reservation pods bound to gpu-lab-worker" two_reservations
  echo "--- reservation pods (one per shared GPU):"
  kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation -o custom-columns='NAME:.metadata.name,GROUP:.metadata.labels.muster\.dev/gpu-group,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,DEVICE:.metadata.annotations.muster\.dev/gpu-device,NODE:.spec.nodeName'
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o json > "$MUSTER_E2E_DIR/02-pods.json"
  reservations > "$MUSTER_E2E_DIR/02-reservations.json"
  python3 - "$MUSTER_E2E_DIR/02-pods.json" "$MUSTER_E2E_DIR/02-reservations.json" <<'EOF'
import json, sys
from collections import Counter
pods = json.load(open(sys.argv[1]))["items"]
res = json.load(open(sys.argv[2]))["items"]
def gpus(p):
    c = p["spec"]["containers"][0].get("resources", {})
    return c.get("limits", {}).get("nvidia.com/gpu") or c.get("requests", {}).get("nvidia.com/gpu")
heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
workers = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
assert len(heads) == 1 and len(workers) == 4, (len(heads), len(workers))
h = heads[0]
assert str(gpus(h)) == "1", f"head asks {gpus(h)} GPUs"
assert "muster.dev/gpu-group" not in h["metadata"].get("annotations", {}), "head got a shared group"
groups = Counter()
for w in workers:
    a = w["metadata"].get("annotations", {})
    assert gpus(w) is None, f"{w['metadata']['name']} asks whole GPUs"
    assert a.get("muster.dev/gpu-fraction") == "0.500", (w["metadata"]["name"], a.get("muster.dev/gpu-fraction"))
    assert a.get("muster.dev/gpu-group"), f"{w['metadata']['name']} has no muster.dev/gpu-group"
    groups[a["muster.dev/gpu-group"]] += 1
assert len(groups) == 2 and set(groups.values()) == {2}, f"worker shares on groups {dict(groups)}, want 2 groups of 2"
bound = [r for r in res if r["spec"].get("nodeName") == "gpu-lab-worker"]
assert len(res) == 2 and len(bound) == 2, f"{len(res)} reservation pods, {len(bound)} on gpu-lab-worker"
held = Counter()
for r in bound:
    assert str(gpus(r)) == "1", f"reservation {r['metadata']['name']} asks {gpus(r)} GPUs"
    held[r["metadata"]["labels"].get("muster.dev/gpu-group")] += 1
assert set(held) == set(groups) and set(held.values()) == {1}, f"reservations hold {dict(held)}, workers use {dict(groups)}"
print(f"devices: head 1 whole GPU + {len(groups)} shared groups {sorted(groups)} = {1 + len(groups)}")
EOF

  # The queue shows what it holds (muster writes status every two seconds).
  allocated_3() { [[ $(kubectl_ get queue team-a -o jsonpath='{.status.allocated.gpu}') == 3 ]]; }
  wait_for 60 "kubectl get queue team-a: status.allocated.gpu == 3" allocated_3
  kubectl_ get queues
}
