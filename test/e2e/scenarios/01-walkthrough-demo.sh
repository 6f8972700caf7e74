# The walkthrough's first experiment: the demo RayCluster (head 2 CPU, no GPU; two workers with
# nvidia.com/gpu: 1), schedulerName muster in its templates -> three Pods bound to
# gpu-lab-worker, the head with no GPU.
# legs: 1.37 1.36
scenario() {
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_MANIFESTS/samples/raycluster-demo.yaml"
  all_bound() {
    local nodes
    nodes=$(kubectl_ -n kuberay-lab get pods -l ray.io/cluster=demo -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}')
    [[ $(grep -c . <<<"$nodes") -eq 3 && $(grep -cx gpu-lab-worker <<<"$nodes") -eq 3 ]]
  }
  wait_for 90 "demo: 3 pods bound to gpu-lab-worker" all_bound
  # Bound: no waiting reason left on them (issue 21), not even "its RayCluster or PodGroup is
  # not known yet" from a watch that saw the pods first (withdrawn with the gang's bind, or
  # never posted within the grace).
  no_stale() { e2e_stale_waiting kuberay-lab ray.io/cluster=demo >/dev/null; }
  wait_for 30 "demo: no GangWaiting Event left on its bound pods" no_stale ||
    { e2e_stale_waiting kuberay-lab ray.io/cluster=demo; return 1; }
  # It placed them reading Pods and Nodes as protobuf from this API server (watchProtobuf, on by
  # default): both watches' last replies were protobuf that decoded (an undecodable one turns
  # the watch to JSON for good, and this to 0); the CRDs stay JSON.
  local metrics
  metrics=$(curl -sf "$(e2e_muster_url muster)/metrics")
  grep -qx 'muster_watch_protobuf{resource="pods"} 1' <<<"$metrics" &&
    grep -qx 'muster_watch_protobuf{resource="nodes"} 1' <<<"$metrics" &&
    grep -qx 'muster_watch_protobuf{resource="rayclusters"} 0' <<<"$metrics" ||
    { grep '^muster_watch_' <<<"$metrics"; echo "pods and nodes not read as protobuf"; return 1; }
  kubectl_ -n kuberay-lab get pods -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName'
  head=$(kubectl_ -n kuberay-lab get pods -l ray.io/node-type=head -o jsonpath='{.items[0].spec.containers[0].resources.limits.nvidia\.com/gpu}')
  [[ -z $head ]] || { echo "head asks a GPU: $head"; return 1; }
  # muster's own view agrees: one gang, bound whole.
  curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
s = json.load(sys.stdin)
g = [g for g in s["gangs"] if g["gang"] == "kuberay-lab/demo"][0]
assert g["state"] == "Bound" and g["bound"] == 3 and g["minMembers"] == 3, g'
}
