# Issue 10's gang sources beyond KubeRay, on the real kube-apiserver: Volcano's PodGroup
# (scheduling.volcano.sh/v1beta1, minTaskMember per task, pods naming it by the annotation
# scheduling.k8s.io/group-name and their task by volcano.sh/task-spec) and KAI-Scheduler's
# (scheduling.run.ai/v2alpha2, subGroups, pods naming it by the annotation pod-group-name and
# their subgroup by the label kai.scheduler/subgroup-name) with KAI's own Queue
# (scheduling.run.ai/v2, CPU in millicores). Their CRDs (manifests/podgroup-sources.yaml)
# appear while muster runs: it finds them (it looks again every 10 s) and lists them.
#   one node, 1 GPU   vc-job (ps 1 CPU pod, worker 2 x 1 GPU) waits whole: its ps fits alone but
#                     is not bound; the reason names the worker task
#   the node has 8    vc-job bound whole (3 pods); kai-job (leader 1, workers 2; a third worker
#                     beyond the minimum) in KAI Queue kai-team, CPU limit 3000 millicores = 3
#                     CPUs: leader + 2 workers bound, the extra worker waits on the queue's CPU
#                     limit (read as 3 CPUs, not 3,000)
# The CRDs are deleted at the end, whatever happens (a second `queues` kind would make
# `kubectl get queue` ambiguous for the scenarios after this one).
NS_04C=lab-04c

_04c_pod() { # NAME ANNOTATIONS LABELS GPUS
  local res='{cpu: "1", memory: 1Gi}'
  [[ $4 == 0 ]] || res="{cpu: \"1\", memory: 1Gi, nvidia.com/gpu: $4}"
  cat <<EOF
  - apiVersion: v1
    kind: Pod
    metadata: {name: $1, namespace: $NS_04C, annotations: $2, labels: $3}
    spec:
      schedulerName: muster
      containers:
        - name: c
          image: registry.k8s.io/pause:3.10
          resources: {requests: $res, limits: $res}
EOF
}
_04c_objects() {
  cat <<EOF
apiVersion: v1
kind: List
items:
  - apiVersion: scheduling.volcano.sh/v1beta1
    kind: PodGroup
    metadata: {name: vc-job, namespace: $NS_04C}
    spec: {minMember: 3, minTaskMember: {ps: 1, worker: 2}}
  - apiVersion: scheduling.run.ai/v2
    kind: Queue
    metadata: {name: kai-team}
    spec:
      resources:
        cpu: {quota: 3000, limit: 3000, overQuotaWeight: 1}
        memory: {quota: -1, limit: -1, overQuotaWeight: 1}
        gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
  - apiVersion: scheduling.run.ai/v2alpha2
    kind: PodGroup
    metadata: {name: kai-job, namespace: $NS_04C}
    spec:
      minMember: 3
      queue: kai-team
      subGroups: [{name: leader, minMember: 1}, {name: workers, minMember: 2}]
EOF
}
_04c_pods() { # vc or kai
  echo "apiVersion: v1"
  echo "kind: List"
  echo "items:"
  local i vc='{scheduling.k8s.io/group-name: vc-job, volcano.sh/task-spec:' kai='{pod-group-name: kai-job}'
  if [[ $1 == vc ]]; then
    _04c_pod vc-job-ps-0 "$vc ps}" '{app: vc-job}' 0
    for i in 0 1; do _04c_pod "vc-job-worker-$i" "$vc worker}" '{app: vc-job}' 1; done
  else
    _04c_pod kai-job-leader-0 "$kai" '{app: kai-job, kai.scheduler/subgroup-name: leader}' 0
    for i in 0 1 2; do
      _04c_pod "kai-job-worker-$i" "$kai" '{app: kai-job, kai.scheduler/subgroup-name: workers}' 1
    done
  fi
}
_04c_count() { # APP bound|pending
  kubectl_ -n $NS_04C get pods -l "app=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$2" 'NF { if ((want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_04c_show() {
  kubectl_ -n $NS_04C get pods -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName' --sort-by=.metadata.name
}
_04c_gang() { # KEY: the gang's entry in muster's /debug/state, JSON
  curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state" |
    python3 -c 'import json,sys; k=sys.argv[1]; print(json.dumps(next((g for g in json.load(sys.stdin)["gangs"] if g["gang"]==k), None)))' "$1"
}

_04c_cleanup() {
  local rc=$?
  kubectl_ delete pods -n $NS_04C --all --grace-period=0 --force >/dev/null 2>&1
  kubectl_ delete -f "$E2E_LIB_DIR/manifests/podgroup-sources.yaml" --wait=true --timeout=60s >/dev/null 2>&1 ||
    { e2e_err "04c: the CRDs were not deleted"; rc=1; }
  return $rc
}

scenario() {
  trap _04c_cleanup EXIT
  e2e_gpu_node gpu-src 1
  kubectl_ get namespace "$NS_04C" >/dev/null 2>&1 || kubectl_ create namespace "$NS_04C"
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/podgroup-sources.yaml"
  kubectl_ wait --for condition=established --timeout=60s \
    crd/podgroups.scheduling.volcano.sh crd/podgroups.scheduling.run.ai crd/queues.scheduling.run.ai
  _04c_objects | kubectl_ apply -f -
  vc_known() { _04c_gang $NS_04C/vc-job | python3 -c 'import json,sys; g=json.load(sys.stdin); sys.exit(0 if g and g["minMembers"] == 3 else 1)'; }
  wait_for 60 "muster lists the new CRDs' objects: gang $NS_04C/vc-job, minimum 3" vc_known

  # --- 1 GPU: vc-job waits whole, its ps included
  _04c_pods vc | kubectl_ apply -f -
  vc_waits() {
    _04c_gang $NS_04C/vc-job | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["members"] == 3 and g["reason"], g
subs = {s["name"]: s["minMembers"] for s in g["subgroups"]}
assert subs == {"ps": 1, "worker": 2}, subs
assert "worker" in g["reason"], g["reason"]'
  }
  wait_for 90 "vc-job Pending whole in muster, tasks ps 1 and worker 2, the reason naming worker" vc_waits
  local end=$((SECONDS + 15))
  while ((SECONDS < end)); do
    [[ $(_04c_count vc-job bound) == 0 ]] || { _04c_show; e2e_err "pods of vc-job bound with room for 1 of its 2 workers"; return 1; }
    sleep 1
  done
  echo "vc-job waits: $(_04c_gang $NS_04C/vc-job | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"

  # --- 8 GPUs: vc-job whole; kai-job at its queue's CPU limit
  e2e_gpu_node gpu-src 8
  vc_bound() { [[ $(_04c_count vc-job bound) == 3 ]]; }
  wait_for 120 "vc-job bound whole: 3 pods" vc_bound
  _04c_pods kai | kubectl_ apply -f -
  kai_placed() { [[ $(_04c_count kai-job bound) == 3 && $(_04c_count kai-job pending) == 1 ]]; }
  wait_for 120 "kai-job: leader + 2 workers bound, the extra worker Pending" kai_placed
  _04c_show
  kai_state() {
    _04c_gang $NS_04C/kai-job | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Bound" and g["queue"] == "kai-team" and g["minMembers"] == 3 and g["bound"] == 3, g
subs = {s["name"]: s for s in g["subgroups"]}
assert subs["leader"]["minMembers"] == 1 and subs["workers"]["minMembers"] == 2, subs
assert subs["workers"]["extrasWaiting"] == 1, subs
why = subs["workers"]["extraReason"] or ""
assert "kai-team" in why and "cpu" in why, why'
  }
  wait_for 60 "muster: kai-job Bound in kai-team, its extra worker waiting on the queue's cpu limit" kai_state
  echo "kai-job: $(_04c_gang $NS_04C/kai-job | python3 -c 'import json,sys; g=json.load(sys.stdin); print(g["composition"])')"
  sleep 5
  kai_placed || { _04c_show; e2e_err "kai-job: expected 3 bound and 1 pending"; return 1; }
  e2e_invariants # nodes, devices and queues while the pods are there (the cleanup deletes them)
}
