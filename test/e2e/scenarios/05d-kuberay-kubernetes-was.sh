# KubeRay 1.7's KubernetesWAS feature gate (alpha, controllers/ray/batchscheduler/kubernetes-was/
# v1alpha2), which only Kubernetes 1.36 can take: it targets scheduling.k8s.io/v1alpha2, which
# 1.37 no longer serves (the operator checks discovery at start). For a RayCluster labelled
# ray.io/gang-scheduling-enabled: "true" and not autoscaling, the operator writes
#   - Workload <cluster> (controllerRef: the RayCluster; one template "cluster", gang minCount
#     1 + desired workers) and PodGroup <cluster>-cluster made from it,
#   - on every Ray pod: spec.schedulingGroup.podGroupName <cluster>-cluster and schedulerName
#     default-scheduler (KubeRay's choice: the gang is left to kube-scheduler's own gang cycle).
# So muster sees these pods only where it serves the profile default-scheduler, i.e. as the
# cluster's default scheduler (docs/deploy.md): a muster + kube-scheduler pair serving that name
# runs here (e2e_muster_pair; no other scheduler of that name runs in this cluster). Then:
#   was-demo  head + 3 x 1 GPU on a node with 2 GPUs: the Workload's count (4) and the
#             RayCluster's composition (head 1, workers 3) agree, no conflict; waits whole;
#             the node grows to 8: bound whole, the gang keyed by the RayCluster.
# legs: 1.36
NS_05D=lab-05d
E2E_URL_muster_was=""

_05d_count() { # bound|pending|all
  kubectl_ -n $NS_05D get pods -l ray.io/cluster=was-demo \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$1" 'NF { if (want == "all" || (want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_05d_gang() { e2e_gang "$E2E_URL_muster_was" $NS_05D/was-demo; }

_05d_cleanup() {
  local rc=$?
  ((rc == 0)) || tail -n 25 "$MUSTER_E2E_DIR/logs/muster-was.log" >&2 2>/dev/null
  kubectl_ delete rayclusters.ray.io -n $NS_05D --all --wait=false >/dev/null 2>&1
  kubectl_ delete pods -n $NS_05D --all --grace-period=0 --force >/dev/null 2>&1
  e2e_muster_pair_stop was
  e2e_kuberay >/dev/null || { e2e_err "could not restore the operator baseline"; rc=1; }
  return $rc
}

scenario() {
  [[ $(e2e_workload_api_version) == v1alpha2 ]] ||
    { e2e_err "KubernetesWAS needs scheduling.k8s.io/v1alpha2 (Kubernetes 1.36), not $K8S_VERSION"; return 1; }
  trap _05d_cleanup EXIT
  e2e_kuberay --feature-gates=KubernetesWAS=true
  e2e_muster_pair was default-scheduler
  e2e_gpu_node gpu-lab-worker 2
  kubectl_ get namespace "$NS_05D" >/dev/null 2>&1 || kubectl_ create namespace "$NS_05D"
  kubectl_ apply -f - <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: was-demo, namespace: $NS_05D, labels: {ray.io/gang-scheduling-enabled: "true"}}
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
      replicas: 3
      minReplicas: 3
      maxReplicas: 3
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: rayproject/ray:2.41.0
              resources:
                requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
                limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
EOF
  four() { [[ $(_05d_count all) == 4 ]]; }
  wait_for 120 "was-demo: the head and 3 workers" four
  # what KubeRay v1.7.0 wrote
  kubectl_ -n $NS_05D get workloads.v1alpha2.scheduling.k8s.io was-demo -o json | python3 -c '
import json, sys
w = json.load(sys.stdin); s = w["spec"]
assert s["controllerRef"] == {"apiGroup": "ray.io", "kind": "RayCluster", "name": "was-demo"}, s
t = s["podGroupTemplates"]
assert len(t) == 1 and t[0]["name"] == "cluster" and t[0]["schedulingPolicy"]["gang"]["minCount"] == 4, t
print("Workload was-demo: controllerRef RayCluster was-demo, template cluster, gang minCount 4")'
  kubectl_ -n $NS_05D get podgroups.v1alpha2.scheduling.k8s.io was-demo-cluster -o json | python3 -c '
import json, sys
s = json.load(sys.stdin)["spec"]
assert s["podGroupTemplateRef"]["workload"] == {"workloadName": "was-demo", "podGroupTemplateName": "cluster"}, s
assert s["schedulingPolicy"]["gang"]["minCount"] == 4, s
print("PodGroup was-demo-cluster: from template cluster, gang minCount 4")'
  kubectl_ -n $NS_05D get pods -l ray.io/cluster=was-demo -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    s = p["spec"]
    assert s["schedulerName"] == "default-scheduler", s["schedulerName"]
    assert s["schedulingGroup"] == {"podGroupName": "was-demo-cluster"}, s.get("schedulingGroup")
print("pods: schedulerName default-scheduler, schedulingGroup was-demo-cluster")'

  # --- 2 GPUs: waits whole, the sources agreeing
  waits() {
    _05d_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["minMembers"] == 4 and g["members"] == 4, g
assert g["composition"].startswith("head 0/1, workers 0/3") and g["conflict"] is None, g
assert g["reason"], g'
  }
  wait_for 90 "was-demo Pending whole in muster-was, the Workload agreeing with the RayCluster" waits
  local end=$((SECONDS + 10))
  while ((SECONDS < end)); do
    [[ $(_05d_count bound) == 0 ]] || { e2e_err "was-demo partly bound with room for 2 of 3 workers"; return 1; }
    sleep 1
  done
  echo "was-demo waits: $(_05d_gang | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"

  # --- 8 GPUs: bound whole
  e2e_gpu_node gpu-lab-worker 8
  bound() { [[ $(_05d_count bound) == 4 ]]; }
  wait_for 120 "was-demo bound whole" bound
  _05d_gang | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g["state"] == "Bound" and g["bound"] == 4 and g["composition"] == "head 1/1, workers 3/3", g
print("muster-was: %s, %s" % (g["state"], g["composition"]))'
  e2e_invariants
}
