# Issue 10's Workload API gang on the real kube-apiserver, on both legs: 1.37 serves
# scheduling.k8s.io/v1beta1 (manifests/workload-api-train-v1beta1.yaml: spec.workloadRef), 1.36
# v1alpha2 (manifests/workload-api-train.yaml: spec.podGroupTemplateRef.workload), each with the
# GenericWorkload gate on the API server (lib.sh e2e_workload_api_flags).
# Workload "train": template driver (gang minCount 1),
# template workers (minCount 4), a PodGroup from each; five pods name them through
# spec.schedulingGroup.podGroupName: one CPU driver, four 1-GPU workers. kube-scheduler runs
# without the gate, so the pods reach muster one by one, as any others.
#   node with 3 GPUs   nothing of train binds, not even the driver, which fits alone: the
#                      gang is one Workload, its templates subgroups (docs/gangs.md); every pod
#                      waits with muster's reason naming the workers' subgroup
#   the node has 4     all five bound, through the barrier, as one gang of 5
# muster's /debug/state shows gang lab-05c/train with subgroups driver 1 and workers 4; the
# invariants are polled throughout, per Workload template.

# legs: 1.37 1.36
NS_05C=lab-05c

_05c_pods() { # the five pods, as a List
  local i
  echo "apiVersion: v1"
  echo "kind: List"
  echo "items:"
  _05c_pod train-driver-0 train-driver '{cpu: "1", memory: 1Gi}'
  for i in 0 1 2 3; do
    _05c_pod "train-workers-$i" train-workers '{cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}'
  done
}
_05c_pod() { # NAME PODGROUP RESOURCES
  cat <<EOF
  - apiVersion: v1
    kind: Pod
    metadata: {name: $1, namespace: $NS_05C}
    spec:
      schedulerName: muster
      schedulingGroup: {podGroupName: $2}
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources: {requests: $3, limits: $3}
EOF
}
_05c_bound() { # pods of train with a node
  kubectl_ -n $NS_05C get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
_05c_show() {
  kubectl_ -n $NS_05C get pods -o custom-columns='NAME:.metadata.name,GROUP:.spec.schedulingGroup.podGroupName,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName' --sort-by=.metadata.name
}
_05c_gang() { # the gang's entry in muster's /debug/state, JSON
  curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state" |
    python3 -c 'import json,sys; k=sys.argv[1]; print(json.dumps(next((g for g in json.load(sys.stdin)["gangs"] if g["gang"]==k), None)))' "$NS_05C/train"
}
# Every one of the five pods has muster's reason (GangWaiting, or FailedScheduling carrying it).
_05c_all_have_reason() {
  kubectl_ -n $NS_05C get events -o json | python3 -c '
import json, sys
want = sys.argv[1]
have = {e["involvedObject"]["name"] for e in json.load(sys.stdin)["items"]
        if e.get("reason") in ("GangWaiting", "FailedScheduling") and want in (e.get("message") or "")}
sys.exit(0 if len(have) == 5 else 1)' "$1"
}

_05c_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  return $rc
}

scenario() {
  local v manifest
  v=$(e2e_workload_api_version)
  case $v in
    v1beta1) manifest=$E2E_LIB_DIR/manifests/workload-api-train-v1beta1.yaml ;;
    v1alpha2) manifest=$E2E_LIB_DIR/manifests/workload-api-train.yaml ;;
    *) e2e_err "no Workload API on $K8S_VERSION (flags: $(e2e_workload_api_flags))"; return 1 ;;
  esac
  kubectl_ get "workloads.$v.scheduling.k8s.io" -A >/dev/null ||
    { e2e_err "the API server does not serve scheduling.k8s.io/$v Workloads (flags: $(e2e_workload_api_flags))"; return 1; }
  trap _05c_cleanup EXIT
  e2e_gpu_node gpu-w 3
  kubectl_ get namespace "$NS_05C" >/dev/null 2>&1 || kubectl_ create namespace "$NS_05C"
  e2e_invariants_poll_start
  kubectl_ apply -f "$manifest"
  # the gang's declaration first, as a controller would write it
  known() { _05c_gang | python3 -c 'import json,sys; g=json.load(sys.stdin); sys.exit(0 if g and g["minMembers"] == 5 else 1)'; }
  wait_for 60 "muster knows Workload $NS_05C/train: minimum 5" known
  _05c_pods | kubectl_ apply -f -

  # --- 3 GPUs: nothing binds
  local reason="gang $NS_05C/train: "
  wait_for 120 "every pod of train has muster's reason starting '$reason'" _05c_all_have_reason "$reason"
  local end=$((SECONDS + 15))
  while ((SECONDS < end)); do
    [[ $(_05c_bound) == 0 ]] || { _05c_show; e2e_err "pods of train bound while its workers cannot be"; return 1; }
    sleep 1
  done
  _05c_show
  echo "--- why train waits (muster's Events, each message once):"
  kubectl_ -n $NS_05C get events --field-selector reason=GangWaiting -o custom-columns='MESSAGE:.message' |
    awk 'NR > 1 && !seen[$0]++'
  waits() {
    _05c_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["members"] == 5 and g["bound"] == 0, g
subs = {s["name"]: s["minMembers"] for s in g["subgroups"]}
assert subs == {"driver": 1, "workers": 4}, subs
assert "workers" in (g["reason"] or ""), g["reason"]'
  }
  wait_for 30 "muster /debug/state: train Pending, subgroups driver 1 and workers 4, the reason naming workers" waits
  echo "muster /debug/state: $(_05c_gang)"

  # --- 4 GPUs: all five bound
  e2e_gpu_node gpu-w 4
  all_bound() { [[ $(_05c_bound) == 5 ]]; }
  wait_for 120 "all five pods of train bound once the node has 4 GPUs" all_bound
  _05c_show
  bound_state() {
    _05c_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Bound" and g["bound"] == 5 and g["minMembers"] == 5, g'
  }
  wait_for 30 "muster /debug/state: train Bound, 5 of 5" bound_state
  grep -qE "gang $NS_05C/train: [0-9]+ of 5 members at bind" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { echo "no barrier line for gang $NS_05C/train of 5 in muster.log"; return 1; }
}
