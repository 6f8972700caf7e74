# The KubeRay operator v1.7.0's RayMultiHostIndexing (beta, on by default in 1.7:
# pkg/features/features.go) on a multi-host worker group: numOfHosts 2, replicas 2. KubeRay makes
# replicas x numOfHosts = 4 worker pods and labels each with ray.io/worker-group-replica-index
# (every worker, 1.7), and, numOfHosts > 1, ray.io/worker-group-replica-name (one name per
# replica, shared by its hosts) and ray.io/replica-host-index (0..numOfHosts-1 inside a replica)
# (common/pod.go, raycluster_controller.go reconcileMultiHostWorkerGroup, which also deletes a
# replica's remaining hosts when one of them is gone). muster's gang is the RayCluster's
# composition, head 1 and tpu 4 (replicas x numOfHosts, utils/util.go), whatever labels the
# pods carry:
#   3 GPUs   nothing binds, not even the head (it fits alone): the reason names subgroup tpu
#   8 GPUs   all 5 bound whole
# The invariants are polled throughout.
NS_04E=lab-04e

_04e_count() { # bound|pending|all
  kubectl_ -n $NS_04E get pods -l ray.io/cluster=mh \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$1" 'NF { if (want == "all" || (want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_04e_show() {
  kubectl_ -n $NS_04E get pods -o custom-columns='NAME:.metadata.name,GROUP:.metadata.labels.ray\.io/group,REPLICA:.metadata.labels.ray\.io/worker-group-replica-name,INDEX:.metadata.labels.ray\.io/worker-group-replica-index,HOST:.metadata.labels.ray\.io/replica-host-index,NODE:.spec.nodeName' --sort-by=.metadata.name
}
_04e_gang() { e2e_gang "$(e2e_muster_url muster)" $NS_04E/mh; }

_04e_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  return $rc
}

scenario() {
  trap _04e_cleanup EXIT
  e2e_gpu_node gpu-lab-worker 3
  kubectl_ get namespace "$NS_04E" >/dev/null 2>&1 || kubectl_ create namespace "$NS_04E"
  e2e_invariants_poll_start
  kubectl_ apply -f - <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: mh, namespace: $NS_04E}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
          - name: ray-head
            image: rayproject/ray:2.41.0
            resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}
  workerGroupSpecs:
    - groupName: tpu
      replicas: 2
      minReplicas: 2
      maxReplicas: 2
      numOfHosts: 2
      rayStartParams: {}
      template:
        spec:
          schedulerName: muster
          containers:
            - name: ray-worker
              image: rayproject/ray:2.41.0
              resources:
                requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
                limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
EOF
  five() { [[ $(_04e_count all) == 5 ]]; }
  wait_for 120 "mh: KubeRay made the head and 2 x 2 hosts" five
  _04e_show
  # what KubeRay v1.7.0 labels the workers with
  kubectl_ -n $NS_04E get pods -l ray.io/cluster=mh,ray.io/node-type=worker -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
assert len(pods) == 4, len(pods)
replicas = {}
for p in pods:
    l = p["metadata"]["labels"]
    for k in ("ray.io/worker-group-replica-name", "ray.io/worker-group-replica-index", "ray.io/replica-host-index"):
        assert k in l, (p["metadata"]["name"], "no label " + k)
    replicas.setdefault(l["ray.io/worker-group-replica-name"], []).append(
        (l["ray.io/worker-group-replica-index"], l["ray.io/replica-host-index"]))
assert len(replicas) == 2, replicas
for name, members in replicas.items():
    assert sorted(h for _, h in members) == ["0", "1"], (name, members)
    assert len({i for i, _ in members}) == 1, (name, members)
assert sorted({m[0][0] for m in replicas.values()}) == ["0", "1"], replicas
print("RayMultiHostIndexing: 2 replicas (%s), hosts 0 and 1 in each" % ", ".join(sorted(replicas)))'

  # --- 3 GPUs: waits whole
  waits() {
    _04e_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["minMembers"] == 5 and g["members"] == 5, g
subs = {s["name"]: s["minMembers"] for s in g["subgroups"]}
assert subs == {"head": 1, "tpu": 4}, subs
assert "tpu" in (g["reason"] or ""), g["reason"]'
  }
  wait_for 90 "mh Pending whole in muster: head 1, tpu 4, the reason naming tpu" waits
  local end=$((SECONDS + 10))
  while ((SECONDS < end)); do
    [[ $(_04e_count bound) == 0 ]] || { _04e_show; e2e_err "mh partly bound with room for 3 of its 4 hosts"; return 1; }
    sleep 1
  done
  echo "mh waits: $(_04e_gang | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"

  # --- 8 GPUs: bound whole
  e2e_gpu_node gpu-lab-worker 8
  bound() { [[ $(_04e_count bound) == 5 ]]; }
  wait_for 120 "mh bound whole: 5 pods" bound
  _04e_show
  _04e_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g["state"] == "Bound" and g["bound"] == 5 and g["composition"] == "head 1/1, tpu 4/4", g
print("muster: %s, %s" % (g["state"], g["composition"]))'
}
