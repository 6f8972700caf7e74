# Topology-aware gangs with the real KubeRay operator, in KAI's dialect (docs/topology.md):
# KAI's Topology CRD and a Topology over kwok nodes labelled by block and rack (2 blocks x 2 racks
# x 2 nodes x 4 GPUs), and RayClusters annotated KAI's way: the gang required in one block
# (kai.scheduler/topology-required-placement on the RayCluster), its worker group preferring one
# rack (the same annotation family on the group's pod template). KubeRay makes the pods; muster
# reads the annotations from the RayCluster.
#   topo-a  head + 3 x 4 GPUs (12): placed whole in one block, the workers in as few racks as it
#           goes (two in one rack of 8 GPUs, one in the other); /debug/state names its block
#   topo-b  head + 5 x 4 GPUs (20): no block has 20 GPUs; it waits whole, the reason naming the
#           block level and the nearest block's shortfall, nothing of it bound
# The invariants are polled throughout. About 40 s on 2 shared cores (the Topology CRD, 8 nodes,
# two RayClusters).
NS_20=lab-20
BLOCK_20=e2e.muster.dev/block
RACK_20=e2e.muster.dev/rack

_20_cluster() { # NAME WORKERS: a RayCluster in KAI's dialect
  cat <<YAML
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: $1
  namespace: $NS_20
  annotations:
    kai.scheduler/topology: e2e-topology
    kai.scheduler/topology-required-placement: block
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          resources: {limits: {cpu: "1", memory: 2Gi}, requests: {cpu: "1", memory: 2Gi}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: $2
    minReplicas: $2
    maxReplicas: $2
    rayStartParams: {}
    template:
      metadata:
        annotations:
          kai.scheduler/topology: e2e-topology
          kai.scheduler/topology-preferred-placement: rack
      spec:
        schedulerName: muster
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            limits: {cpu: "2", memory: 8Gi, nvidia.com/gpu: 4}
            requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: 4}
YAML
}
# _20_where NAME: "<node> <block>/<rack>" per pod of RayCluster NAME bound so far
_20_where() {
  kubectl_ -n $NS_20 get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    grep . | while read -r n; do
      echo "$n $(kubectl_ get node "$n" -o jsonpath="{.metadata.labels.e2e\.muster\.dev/block}/{.metadata.labels.e2e\.muster\.dev/rack}")"
    done
}
_20_bound() { kubectl_ -n $NS_20 get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
_20_pods() { kubectl_ -n $NS_20 get pods -l "ray.io/cluster=$1" -o name | grep -c . || true; }

_20_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  ((rc == 0)) || kubectl_ -n $NS_20 get pods -o wide >&2
  kubectl_ -n $NS_20 delete rayclusters.ray.io --all --wait=false >/dev/null 2>&1
  kubectl_ delete topologies.kai.scheduler e2e-topology >/dev/null 2>&1
  return $rc
}

scenario() {
  local t0=$SECONDS b r n url
  trap _20_cleanup EXIT
  kubectl_ apply --server-side --force-conflicts -f "$E2E_LIB_DIR/manifests/kai-topology-crd.yaml" >/dev/null
  kubectl_ wait --for=condition=Established --timeout=60s crd/topologies.kai.scheduler >/dev/null
  kubectl_ apply -f - >/dev/null <<YAML
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: e2e-topology}
spec:
  levels:
  - {nodeLabel: $BLOCK_20, alias: block}
  - {nodeLabel: $RACK_20, alias: rack}
  - {nodeLabel: kubernetes.io/hostname}
YAML
  for b in 1 2; do for r in 1 2; do for n in 1 2; do
    e2e_gpu_node "topo-b$b-r$r-$n" 4 32 128Gi 81920 "$BLOCK_20=b$b,$RACK_20=r$r" >/dev/null
  done; done; done
  kubectl_ get namespace "$NS_20" >/dev/null 2>&1 || kubectl_ create namespace "$NS_20"
  e2e_invariants_poll_start
  url=$(e2e_muster_url muster)

  # --- topo-a: 12 GPUs, required in one block, its workers preferring a rack
  _20_cluster topo-a 3 | kubectl_ apply -f - >/dev/null
  a_bound() { [[ $(_20_bound topo-a) == 4 ]]; }
  wait_for 120 "topo-a: head + 3 workers bound" a_bound
  _20_where topo-a
  python3 - "$(_20_where topo-a)" "$(e2e_gang "$url" $NS_20/topo-a)" <<'PY'
import json, sys
where = [l.split() for l in sys.argv[1].splitlines()]
g = json.loads(sys.argv[2])
blocks = {d.split("/")[0] for _, d in where}
assert len(blocks) == 1, ("topo-a spans blocks", where)
workers = [d for n, d in where]
racks = sorted(workers.count(r) for r in set(workers))
assert g["state"] == "Bound" and g["domain"] == "block=" + blocks.pop(), g
assert g["topologyKey"] == "e2e.muster.dev/block", g
print("topo-a: one block, racks used", racks, "; muster:", g["domain"], "|", g["topology"])
PY
  # the 3 workers and the head: two workers share a rack (8 GPUs), not three racks
  [[ $(_20_where topo-a | awk '{print $2}' | sort | uniq -c | awk '$1 >= 2' | grep -c .) -ge 1 ]] ||
    { echo "topo-a's workers are spread over the racks"; return 1; }

  # --- topo-b: 20 GPUs, no block has them: it waits whole, saying why
  _20_cluster topo-b 5 | kubectl_ apply -f - >/dev/null
  b_waits() {
    [[ $(_20_pods topo-b) == 6 ]] || return 1
    e2e_gang "$url" $NS_20/topo-b | grep -q 'in one block (required)'
  }
  wait_for 120 "topo-b: 6 pods, waiting with the block level in its reason" b_waits
  sleep 5 # kube-scheduler retries it; nothing of it may bind
  [[ $(_20_bound topo-b) == 0 ]] || { echo "topo-b partly bound"; _20_where topo-b; return 1; }
  echo "topo-b waits: $(e2e_gang "$url" $NS_20/topo-b | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"
  echo "scenario 20 took $((SECONDS - t0)) s"
}
