# The operator-level flag, Volcano contract: the KubeRay operator v1.7.0 started with
# --batch-scheduler=volcano (controllers/ray/batchscheduler/volcano/volcano_scheduler.go) writes,
# for every RayCluster not made by a RayJob:
#   - a PodGroup ray-<cluster>-pg (scheduling.volcano.sh/v1beta1, owned by the RayCluster) with
#     minMember = 1 + desired workers (minimum workers under autoscaling), minResources, and
#     spec.queue / spec.priorityClassName from the RayCluster's labels volcano.sh/queue-name and
#     ray.io/priority-class-name;
#   - on every Ray pod: schedulerName volcano, the annotations scheduling.k8s.io/group-name
#     (ray-<cluster>-pg) and volcano.sh/task-spec (its group: headgroup, or the worker group),
#     and the two labels copied from the RayCluster.
# The PodGroup is served from Volcano's own CRD (manifests/volcano-podgroup-crd.yaml, Volcano
# v1.13.0, the API version KubeRay v1.7.0 is built with), which defaults spec.queue to "default".
# muster does not serve the name volcano by default, so a muster + kube-scheduler pair serving it
# runs (e2e_muster_pair), as docs/deploy.md tells a platform team. Then:
#   vc-demo  head + 2 x 1 GPU, labelled volcano.sh/queue-name: team-a and ray.io/priority-class-name:
#            vc-high (1000): KubeRay's contract as above; muster's gang kuberay/vc-demo (the
#            PodGroup is keyed by its owner) in queue team-a at priority 1000, its PodGroup's count
#            3 agreeing with the composition head 1, workers 2; bound whole.
#   vc-mq    head + 1 x 1 GPU, labelled only muster.dev/queue: team-b: the PodGroup KubeRay writes
#            has no queue label to copy, and Volcano's CRD defaults its spec.queue to "default";
#            the gang stays in team-b, the queue its RayCluster names (docs/gangs.md: a source's
#            queue beats a PodGroup's defaulted one), bound whole.
#   vc-big   head + 4 x 2 GPUs (8 GPUs) on a node with 5 free: waits whole with muster's reason;
#            deleting vc-demo (the garbage collector deletes its pods and PodGroup) makes room and
#            vc-big is bound whole.
# The pair, the CRD and the operator's baseline flags are restored at the end, whatever happens.

VC_NAME=volcano
NS_04D=lab-04d
E2E_URL_muster_vc=""

_04d_gang() { e2e_gang "$E2E_URL_muster_vc" "$1"; } # the gang in muster-vc's /debug/state
_04d_count() { # _04d_count <cluster> bound|pending|all
  kubectl_ -n $NS_04D get pods -l "ray.io/cluster=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$2" 'NF { if (want == "all" || (want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_04d_show() {
  kubectl_ -n $NS_04D get pods -o custom-columns='NAME:.metadata.name,SCHEDULER:.spec.schedulerName,GROUP:.metadata.annotations.scheduling\.k8s\.io/group-name,TASK:.metadata.annotations.volcano\.sh/task-spec,QUEUE:.metadata.labels.volcano\.sh/queue-name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName' --sort-by=.metadata.name
}
_04d_cluster() { # NAME WORKERS GPUS-PER-WORKER LABELS(yaml flow map)
  cat <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: $1, namespace: $NS_04D, labels: $4}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: rayproject/ray:2.41.0
            resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}
  workerGroupSpecs:
    - groupName: workers
      replicas: $2
      minReplicas: $2
      maxReplicas: $2
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.41.0
              resources:
                requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: $3}
                limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: $3}
EOF
}

_04d_cleanup() {
  local rc=$?
  if ((rc != 0)); then
    e2e_err "04d failed; muster-vc log tail:"
    tail -n 25 "$MUSTER_E2E_DIR/logs/muster-vc.log" >&2 2>/dev/null
    _04d_show >&2
  fi
  kubectl_ delete rayclusters.ray.io -n $NS_04D --all --wait=false >/dev/null 2>&1
  kubectl_ delete pods -n $NS_04D --all --grace-period=0 --force >/dev/null 2>&1
  e2e_muster_pair_stop vc
  e2e_kuberay >/dev/null || { e2e_err "could not restore the operator baseline"; rc=1; }
  kubectl_ delete podgroups.scheduling.volcano.sh -A --all >/dev/null 2>&1
  kubectl_ delete -f "$E2E_LIB_DIR/manifests/volcano-podgroup-crd.yaml" --wait=true --timeout=60s >/dev/null 2>&1 ||
    { e2e_err "04d: the Volcano CRD was not deleted"; rc=1; }
  return $rc
}

scenario() {
  trap _04d_cleanup EXIT
  e2e_kuberay --batch-scheduler=volcano # also applies Volcano's PodGroup CRD
  e2e_muster_pair vc "$VC_NAME"
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ get namespace "$NS_04D" >/dev/null 2>&1 || kubectl_ create namespace "$NS_04D"
  kubectl_ apply -f "$E2E_MANIFESTS/samples/queues.yaml"
  kubectl_ apply -f - <<EOF
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: vc-high}
value: 1000
---
apiVersion: muster.dev/v1alpha1
kind: Queue
metadata: {name: team-b}
spec:
  parentQueue: org
  resources:
    gpu: {quota: 2, limit: 2, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
EOF

  # --- vc-demo: what KubeRay v1.7.0 writes, and muster-vc binding it whole in team-a
  _04d_cluster vc-demo 2 1 '{volcano.sh/queue-name: team-a, ray.io/priority-class-name: vc-high}' | kubectl_ apply -f -
  demo_bound() { [[ $(_04d_count vc-demo bound) == 3 && $(_04d_count vc-demo pending) == 0 ]]; }
  wait_for 120 "vc-demo: head + 2 workers bound" demo_bound
  _04d_show
  kubectl_ -n $NS_04D get podgroups.scheduling.volcano.sh ray-vc-demo-pg -o json | python3 -c '
import json, sys
pg = json.load(sys.stdin); s = pg["spec"]
assert s["minMember"] == 3, s
assert s.get("queue") == "team-a" and s.get("priorityClassName") == "vc-high", s
assert s["minResources"]["nvidia.com/gpu"] in ("2", 2), s["minResources"]
owner = pg["metadata"]["ownerReferences"][0]
assert owner["kind"] == "RayCluster" and owner["name"] == "vc-demo" and owner.get("controller"), owner
print("PodGroup ray-vc-demo-pg: minMember %d, queue %s, priorityClassName %s, minResources %s" %
      (s["minMember"], s["queue"], s["priorityClassName"], s["minResources"]))'
  kubectl_ -n $NS_04D get pods -l ray.io/cluster=vc-demo -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
assert len(pods) == 3, len(pods)
for p in pods:
    a, l = p["metadata"].get("annotations", {}), p["metadata"].get("labels", {})
    head = l.get("ray.io/node-type") == "head"
    assert p["spec"]["schedulerName"] == "volcano", p["spec"]["schedulerName"]
    assert a.get("scheduling.k8s.io/group-name") == "ray-vc-demo-pg", a
    assert a.get("volcano.sh/task-spec") == ("headgroup" if head else "workers"), a
    assert l.get("volcano.sh/queue-name") == "team-a" and l.get("ray.io/priority-class-name") == "vc-high", l
print("pods: schedulerName volcano, group-name ray-vc-demo-pg, task-spec headgroup|workers, labels copied")'
  grep -q "filter pod=$NS_04D/vc-demo-head" "$MUSTER_E2E_DIR/logs/muster-vc.log" ||
    { echo "muster-vc never filtered vc-demo's head"; return 1; }
  echo "muster-vc /debug/state: $(_04d_gang $NS_04D/vc-demo)"
  _04d_gang $NS_04D/vc-demo | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Bound" and g["bound"] == 3 and g["minMembers"] == 3, g
assert g["queue"] == "team-a" and g["priority"] == 1000, g
assert g["composition"] == "head 1/1, workers 2/2" and g["conflict"] is None, g'

  # --- vc-mq: a muster.dev/queue label, a PodGroup whose queue Volcano's CRD defaulted
  _04d_cluster vc-mq 1 1 '{muster.dev/queue: team-b}' | kubectl_ apply -f -
  mq_bound() { [[ $(_04d_count vc-mq bound) == 2 && $(_04d_count vc-mq pending) == 0 ]]; }
  wait_for 120 "vc-mq: head + 1 worker bound" mq_bound
  local pgq
  pgq=$(kubectl_ -n $NS_04D get podgroups.scheduling.volcano.sh ray-vc-mq-pg -o jsonpath='{.spec.queue}')
  [[ $pgq == default ]] || { echo "ray-vc-mq-pg spec.queue '$pgq': Volcano's CRD should default it"; return 1; }
  # the PodGroup's status changes (and the RayCluster's) reach muster again and again: the gang's
  # queue must not follow whichever came last
  sleep 5
  kubectl_ -n $NS_04D annotate podgroups.scheduling.volcano.sh ray-vc-mq-pg muster-e2e/touched=1 --overwrite >/dev/null
  sleep 3
  echo "muster-vc /debug/state: $(_04d_gang $NS_04D/vc-mq)"
  _04d_gang $NS_04D/vc-mq | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Bound" and g["queue"] == "team-b", g'
  team_b_has_it() {
    curl -sf --max-time 5 "$E2E_URL_muster_vc/debug/state" | python3 -c '
import json, sys
q = {q["name"]: q for q in json.load(sys.stdin)["queues"]}
sys.exit(0 if q["team-b"]["allocated"]["gpu"] in (1, "1") and q["default"]["allocated"]["gpu"] in (0, "0") else 1)'
  }
  wait_for 30 "muster-vc charges vc-mq's GPU to team-b, none to default" team_b_has_it

  # --- vc-big: 8 GPUs with 5 free waits whole; deleting vc-demo frees 2 (garbage collector)
  kubectl_ -n $NS_04D delete raycluster vc-mq --wait=false
  _04d_cluster vc-big 4 2 '{volcano.sh/queue-name: team-a}' | kubectl_ apply -f -
  kubectl_ patch queues.muster.dev team-a --type=merge -p '{"spec":{"resources":{"gpu":{"limit":8}}}}'
  big_waits() {
    [[ $(_04d_count vc-big pending) == 5 ]] || return 1
    _04d_gang $NS_04D/vc-big | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["minMembers"] == 5 and g["reason"], g'
  }
  wait_for 120 "vc-big: 5 pods Pending whole with muster's reason" big_waits
  local end=$((SECONDS + 10))
  while ((SECONDS < end)); do
    [[ $(_04d_count vc-big bound) == 0 ]] || { _04d_show; echo "vc-big partly bound"; return 1; }
    sleep 1
  done
  echo "vc-big waits: $(_04d_gang $NS_04D/vc-big | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"
  kubectl_ -n $NS_04D delete raycluster vc-demo --wait=false
  gone() { [[ $(_04d_count vc-demo all) == 0 ]] && ! kubectl_ -n $NS_04D get podgroups.scheduling.volcano.sh ray-vc-demo-pg >/dev/null 2>&1; }
  wait_for 90 "the garbage collector deletes vc-demo's pods and PodGroup" gone
  big_bound() { [[ $(_04d_count vc-big bound) == 5 && $(_04d_count vc-big pending) == 0 ]]; }
  wait_for 120 "vc-big bound whole once vc-demo is gone" big_bound
  _04d_show
  e2e_invariants
}
