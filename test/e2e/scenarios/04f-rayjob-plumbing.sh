# The loopback cluster's parts a RayJob needs, end to end with the KubeRay operator v1.7.0: kwok
# makes the RayJob's cluster Running and Ready, so the operator creates the submitter (in
# K8sJobMode, only once the cluster is ready); kube-controller-manager's Job controller makes
# the submitter's pod, which muster places (its submitterPodTemplate names schedulerName muster)
# and kwok runs to Succeeded; deleting the RayJob, the garbage collector deletes its RayCluster,
# its Job and every pod. This proves the plumbing only (no queue, nothing competing); what
# muster makes of a RayJob (one gang, the submitter's room held) is 20a's.
NS_04F=lab-04f

_04f_cleanup() {
  local rc=$?
  ((rc == 0)) || { kubectl_ -n $NS_04F get rayjobs,rayclusters,jobs,pods -o wide >&2; tail -n 20 "$MUSTER_E2E_DIR/logs/kuberay-operator.log" >&2; }
  kubectl_ -n $NS_04F delete rayjobs.ray.io --all --wait=false >/dev/null 2>&1
  return $rc
}

scenario() {
  trap _04f_cleanup EXIT
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ get namespace "$NS_04F" >/dev/null 2>&1 || kubectl_ create namespace "$NS_04F"
  kubectl_ apply -f - <<EOF
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj, namespace: $NS_04F}
spec:
  entrypoint: python -c "print('hello')"
  submissionMode: K8sJobMode
  shutdownAfterJobFinishes: false
  submitterPodTemplate:
    spec:
      schedulerName: muster
      restartPolicy: Never
      containers:
        - name: ray-job-submitter
          image: rayproject/ray:2.41.0
          resources: {requests: {cpu: 500m, memory: 512Mi}, limits: {cpu: 500m, memory: 512Mi}}
  rayClusterSpec:
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
      - groupName: workers
        replicas: 2
        minReplicas: 2
        maxReplicas: 2
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
  cluster_of() { kubectl_ -n $NS_04F get rayjob rj -o jsonpath='{.status.rayClusterName}'; }
  has_cluster() { [[ -n $(cluster_of) ]]; }
  wait_for 60 "the operator makes RayJob rj's RayCluster" has_cluster
  local rc
  rc=$(cluster_of)
  ready() { [[ $(kubectl_ -n $NS_04F get raycluster "$rc" -o jsonpath='{.status.state}') == ready ]]; }
  wait_for 120 "RayCluster $rc ready: its 3 pods bound by muster, Running and Ready (kwok)" ready
  kubectl_ -n $NS_04F get pods -o wide
  submitter() { [[ -n $(kubectl_ -n $NS_04F get jobs -l "ray.io/originated-from-cr-name=rj" -o name 2>/dev/null) ]] ||
                [[ -n $(kubectl_ -n $NS_04F get job rj -o name 2>/dev/null) ]]; }
  wait_for 120 "the operator creates the submitter Job once the cluster is ready" submitter
  succeeded() {
    kubectl_ -n $NS_04F get pods -l batch.kubernetes.io/job-name=rj \
      -o jsonpath='{range .items[*]}{.spec.nodeName}{" "}{.status.phase}{"\n"}{end}' | grep -q '^gpu-lab-worker Succeeded$'
  }
  wait_for 120 "the Job controller's submitter pod: bound by muster, Succeeded (kwok)" succeeded
  kubectl_ -n $NS_04F get jobs,pods -o wide
  grep -q "filter pod=$NS_04F/rj-" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { e2e_err "muster never filtered the submitter pod"; return 1; }

  # --- the garbage collector: the RayJob's deletion takes its cluster, Job and pods
  kubectl_ -n $NS_04F delete rayjob rj --wait=false
  all_gone() {
    [[ -z $(kubectl_ -n $NS_04F get rayclusters,jobs -o name 2>/dev/null) ]] &&
      [[ -z $(kubectl_ -n $NS_04F get pods -o name 2>/dev/null) ]]
  }
  wait_for 120 "the garbage collector deletes the RayJob's RayCluster, Job and pods" all_gone
  echo "RayJob rj: cluster ready, submitter Job run to completion, all deleted with the RayJob"
}
