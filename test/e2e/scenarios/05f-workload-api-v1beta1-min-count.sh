# The Workload API v1beta1 (Kubernetes 1.37, beta, off by default: the API server runs with the
# GenericWorkload gate and scheduling.k8s.io/v1beta1, lib.sh), where a PodGroup's
# gang.minCount is mutable after creation (k8s.io/api v0.37.2 scheduling/v1beta1
# GangSchedulingPolicy: "mutable to support workload scaling"). Workload "infer" (one template
# "replicas", gang minCount 4) and PodGroup "infer-0" made from it (spec.workloadRef{workloadName,
# templateName}, minCount 4); three 1-GPU pods name it by spec.schedulingGroup. kube-scheduler
# runs without the gate here: the pods reach muster one by one.
#   minCount 4, 3 pods   nothing binds: muster's reason "3 of 4 members exist"
#   minCount 3           muster follows the PodGroup (docs/gangs.md: a template's minimum is its
#                        PodGroups' minCounts), hands the pods back, and all 3 bind whole
# Without kube-scheduler's own gang cycle nobody writes the PodGroup's status: no
# PodGroupInitiallyScheduled condition (muster reads PodGroups only; scenario 18 shows what
# kube-scheduler writes with the gate on).
NS_05F=lab-05f

_05f_objects() { # MINCOUNT
  cat <<EOF
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: infer, namespace: $NS_05F}
spec:
  podGroupTemplates:
    - name: replicas
      schedulingPolicy: {gang: {minCount: 4}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: infer-0, namespace: $NS_05F}
spec:
  workloadRef: {workloadName: infer, templateName: replicas}
  schedulingPolicy: {gang: {minCount: $1}}
EOF
}
_05f_pods() {
  local i
  echo "apiVersion: v1"
  echo "kind: List"
  echo "items:"
  for i in 0 1 2; do
    cat <<EOF
  - apiVersion: v1
    kind: Pod
    metadata: {name: infer-$i, namespace: $NS_05F}
    spec:
      schedulerName: muster
      schedulingGroup: {podGroupName: infer-0}
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}, limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}}
EOF
  done
}
_05f_bound() { kubectl_ -n $NS_05F get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true; }
_05f_gang() { e2e_gang "$(e2e_muster_url muster)" $NS_05F/infer; }

_05f_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  return $rc
}

scenario() {
  [[ $(e2e_workload_api_version) == v1beta1 ]] || { e2e_err "no scheduling.k8s.io/v1beta1 here"; return 1; }
  trap _05f_cleanup EXIT
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ get namespace "$NS_05F" >/dev/null 2>&1 || kubectl_ create namespace "$NS_05F"
  e2e_invariants_poll_start
  _05f_objects 4 | kubectl_ apply -f -
  known() { _05f_gang | python3 -c 'import json,sys; g=json.load(sys.stdin); sys.exit(0 if g and g["minMembers"] == 4 else 1)'; }
  wait_for 60 "muster knows gang $NS_05F/infer: minimum 4" known
  _05f_pods | kubectl_ apply -f -

  # --- minCount 4, 3 pods: nothing binds
  waits() {
    _05f_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["members"] == 3 and g["minMembers"] == 4, g
assert (g["reason"] or "").endswith("3 of 4 members exist"), g["reason"]'
  }
  wait_for 90 "infer Pending in muster: 3 of 4 members exist" waits
  local end=$((SECONDS + 10))
  while ((SECONDS < end)); do
    [[ $(_05f_bound) == 0 ]] || { e2e_err "pods of infer bound with 3 of its 4"; return 1; }
    sleep 1
  done
  echo "infer waits: $(_05f_gang | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"

  # --- minCount lowered to 3: followed
  kubectl_ -n $NS_05F patch podgroups.v1beta1.scheduling.k8s.io infer-0 --type=merge \
    -p '{"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}'
  [[ $(kubectl_ -n $NS_05F get podgroups.v1beta1.scheduling.k8s.io infer-0 -o jsonpath='{.spec.schedulingPolicy.gang.minCount}') == 3 ]] ||
    { e2e_err "the API server kept minCount 4"; return 1; }
  bound() { [[ $(_05f_bound) == 3 ]]; }
  wait_for 90 "infer bound whole once its PodGroup's minCount is 3" bound
  _05f_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g["state"] == "Bound" and g["bound"] == 3 and g["minMembers"] == 3, g
print("muster: gang %s %s, %d of minimum %d" % (g["gang"], g["state"], g["bound"], g["minMembers"]))'
  # nobody writes the PodGroup's status without kube-scheduler's gang cycle
  local conds
  conds=$(kubectl_ -n $NS_05F get podgroups.v1beta1.scheduling.k8s.io infer-0 -o jsonpath='{.status.conditions}')
  [[ -z $conds ]] || { e2e_err "PodGroup infer-0 has conditions without kube-scheduler's gang cycle: $conds"; return 1; }
  echo "PodGroup infer-0: status.conditions empty (muster writes none)"
}
