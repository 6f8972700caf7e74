# A RayJob is one gang, submitter included, with the real KubeRay operator v1.7.0 (K8sJobMode):
# two RayJobs of 3 GPUs each in queue team-a (limit 4 GPUs): one's cluster and submitter are
# placed as one gang (its cluster bound whole without waiting for the submitter KubeRay makes
# only once the cluster is ready, the submitter then placed in the room held for it, on the
# same node, counted in team-a from the start), the other waits whole with a reason naming it;
# a pod of another queue that would fit only in the held room waits until the submitter has
# come and gone; deleting the first RayJob (the garbage collector takes its cluster and Job)
# frees the queue, and the second is placed whole, submitter included.
# kwok makes pods Ready at once and the operator makes the submitter's Job a second later: to
# look at the held room, a ValidatingAdmissionPolicy holds the Job's pod back (the Job
# controller retries) until the intruder has been turned away. The invariants are polled
# throughout (no gang partly bound, no node or queue over). About 15-40 s.
NS_20A=lab-20a

_20a_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  ((rc == 0)) || {
    kubectl_ -n $NS_20A get rayjobs,rayclusters,jobs,pods -o wide >&2
    curl -sf "$(e2e_muster_url muster)/debug/state" >&2 || true
    tail -n 20 "$MUSTER_E2E_DIR/logs/kuberay-operator.log" >&2
  }
  kubectl_ -n $NS_20A delete rayjobs.ray.io --all --wait=false >/dev/null 2>&1
  kubectl_ -n $NS_20A delete pods --all --grace-period=0 --force >/dev/null 2>&1
  kubectl_ delete validatingadmissionpolicybinding,validatingadmissionpolicy hold-back-submitters-20a \
    --ignore-not-found >/dev/null 2>&1 || true
  return $rc
}

# While it stands, no Job's pod is made in the namespace (the Job controller retries).
_20a_hold_back() {
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: hold-back-submitters-20a}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
    - expression: "!has(object.metadata.labels) || !('batch.kubernetes.io/job-name' in object.metadata.labels)"
      message: held back by e2e 20a
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: hold-back-submitters-20a}
spec:
  policyName: hold-back-submitters-20a
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: $NS_20A}
EOF
}

# rayjob NAME: 1-cpu head, three 1-GPU workers, a 500m submitter of muster's, queue team-a.
_20a_rayjob() {
  cat <<EOF
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: $1, namespace: $NS_20A, labels: {muster.dev/queue: team-a}}
spec:
  entrypoint: python -c "print('hello')"
  shutdownAfterJobFinishes: false
  submitterPodTemplate:
    spec:
      schedulerName: muster
      restartPolicy: Never
      containers:
        - name: ray-job-submitter
          image: rayproject/ray:2.41.0
          resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: 500m, memory: 256Mi}}
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
        replicas: 3
        minReplicas: 3
        maxReplicas: 3
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
}

# muster's /debug/state entry of the gang of RayJob NAME, as JSON (empty: none)
_20a_gang_of() {
  curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["gangs"]:
    o = g.get("owner") or {}
    if o.get("kind") == "RayJob" and o.get("name") == sys.argv[1]:
        print(json.dumps(g))' "$NS_20A/$1"
}
_20a_field() { python3 -c 'import json, sys; g = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
_20a_cluster() { kubectl_ -n $NS_20A get rayjob "$1" -o jsonpath='{.status.rayClusterName}'; }
_20a_bound() { kubectl_ -n $NS_20A get pods -l ray.io/cluster="$1" -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep -c . || true; }
_20a_submitter() { kubectl_ -n $NS_20A get pods -l batch.kubernetes.io/job-name="$1" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null | head -n 1; }

scenario() {
  trap _20a_cleanup EXIT
  # 16 cpu, 8 GPUs: room for both clusters; team-a's limit (4 GPUs) decides.
  e2e_gpu_node gpu-lab-worker 8 16
  kubectl_ get namespace "$NS_20A" >/dev/null 2>&1 || kubectl_ create namespace "$NS_20A"
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: muster.dev/v1alpha1
kind: Queue
metadata: {name: team-a}
spec: {resources: {gpu: {quota: 4, limit: 4}}}
---
apiVersion: muster.dev/v1alpha1
kind: Queue
metadata: {name: team-b}
spec: {resources: {cpu: {quota: 1}}}
EOF
  e2e_invariants_poll_start
  _20a_hold_back
  # The policy is in force once a Job's pod is refused: try one.
  refused() {
    ! kubectl_ -n $NS_20A run probe --image=busybox --restart=Never --dry-run=server \
      --labels=batch.kubernetes.io/job-name=probe >/dev/null 2>&1
  }
  wait_for 30 "the admission policy holding Job pods back in force" refused
  { _20a_rayjob first; echo ---; _20a_rayjob second; } | kubectl_ apply -f - >/dev/null

  named() { [[ -n $(_20a_cluster first) && -n $(_20a_cluster second) ]]; }
  wait_for 60 "the operator names both RayJobs' clusters" named
  local ca cb winner loser cw cl
  ca=$(_20a_cluster first) cb=$(_20a_cluster second)
  one_bound() { [[ $(_20a_bound "$ca") == 4 || $(_20a_bound "$cb") == 4 ]]; }
  wait_for 120 "one RayJob's cluster bound whole (head + 3 workers), no submitter yet" one_bound
  if [[ $(_20a_bound "$ca") == 4 ]]; then winner=first loser=second cw=$ca cl=$cb; else winner=second loser=first cw=$cb cl=$ca; fi
  e2e_log "RayJob $winner's cluster $cw runs; $loser's $cl must wait whole"

  # The operator made the submitter's Job (RayJob Running); its pod is held back. muster holds
  # its room on the node, in team-a.
  job_made() { [[ $(kubectl_ -n $NS_20A get rayjob "$winner" -o jsonpath='{.status.jobDeploymentStatus}') == Running ]] &&
               kubectl_ -n $NS_20A get job "$winner" -o name >/dev/null 2>&1; }
  wait_for 60 "the operator makes RayJob $winner's submitter Job" job_made
  local g held
  g=$(_20a_gang_of "$winner")
  held=$(_20a_field "$g" '"%s %s %s %s" % (g["held"][0]["state"], g["held"][0]["node"], g["held"][0]["ask"]["cpu"], g["held"][0]["asked"])')
  e2e_log "muster's gang of RayJob $winner ($(_20a_field "$g" 'g["composition"]')): held $held"
  [[ $held == "Waiting gpu-lab-worker 500m True" ]] || { e2e_err "held: $held"; return 1; }
  [[ -z $(_20a_submitter "$winner") ]] || { e2e_err "the submitter's pod was not held back"; return 1; }
  local reserved
  reserved=$(curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
print([q["reserved"]["cpu"] for q in json.load(sys.stdin)["queues"] if q["name"] == "team-a"][0])')
  [[ $reserved == 500m ]] || { e2e_err "team-a reserves $reserved, want the held 500m"; return 1; }

  # gpu-lab-worker's 16 cpu hold the cluster's 4 and the submitter's 0.5. A filler of team-b
  # takes the 11.5 left; an intruder of team-b asking 500m would fit only in the held room.
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: $NS_20A, labels: {muster.dev/queue: team-b}}
spec:
  schedulerName: muster
  containers:
    - {name: c, image: busybox, resources: {requests: {cpu: 11500m, memory: 1Gi}, limits: {cpu: 11500m, memory: 1Gi}}}
EOF
  filler_bound() { [[ -n $(kubectl_ -n $NS_20A get pod filler -o jsonpath='{.spec.nodeName}') ]]; }
  wait_for 60 "the filler (11.5 cpu) bound beside the cluster and the held room" filler_bound
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: intruder, namespace: $NS_20A, labels: {muster.dev/queue: team-b}}
spec:
  schedulerName: muster
  containers:
    - {name: c, image: busybox, resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: 500m, memory: 256Mi}}}
EOF
  turned_away() { kubectl_ -n $NS_20A get events --field-selector involvedObject.name=intruder,reason=GangWaiting -o name | grep -q .; }
  wait_for 30 "the intruder turned away (the only room left is the submitter's)" turned_away
  kubectl_ -n $NS_20A get events --field-selector involvedObject.name=intruder,reason=GangWaiting \
    -o jsonpath='{range .items[*]}muster on the intruder: {.message}{"\n"}{end}' | head -n 1
  [[ -z $(kubectl_ -n $NS_20A get pod intruder -o jsonpath='{.spec.nodeName}') ]] ||
    { e2e_err "the intruder took the submitter's room"; return 1; }

  # Let the Job controller make the submitter: it takes the held room, as a member of the gang.
  kubectl_ delete validatingadmissionpolicybinding,validatingadmissionpolicy hold-back-submitters-20a >/dev/null
  # The intruder is looked at first: bound then, the submitter must have been bound before it
  # (kwok runs the submitter to Succeeded at once, and its room is then the intruder's).
  local end=$((SECONDS + 90)) sub="" ibound
  while ((SECONDS < end)); do
    ibound=$(kubectl_ -n $NS_20A get pod intruder -o jsonpath='{.spec.nodeName}')
    sub=$(_20a_submitter "$winner")
    [[ $sub == *" gpu-lab-worker "* ]] && break
    [[ -z $ibound ]] || { e2e_err "intruder bound before RayJob $winner's submitter ($sub)"; return 1; }
    sleep 0.5
  done
  [[ $sub == *" gpu-lab-worker "* ]] || { e2e_err "submitter of $winner not bound: '$sub'"; return 1; }
  e2e_log "submitter of $winner: $sub"
  grep -q "filter pod=$NS_20A/${sub%% *} gang=$NS_20A/$cw verdict=planned node=gpu-lab-worker" \
    "$MUSTER_E2E_DIR/logs/muster.log" ||
    { e2e_err "muster did not plan the submitter as a member of gang $cw"; return 1; }
  g=$(_20a_gang_of "$winner")
  [[ $(_20a_field "$g" 'g["held"][0]["state"]') == Arrived ]] ||
    { e2e_err "RayJob $winner's hold: $(_20a_field "$g" 'g["held"]')"; return 1; }
  # kwok runs the submitter to Succeeded: its room is free, the intruder binds.
  intruder_bound() { [[ -n $(kubectl_ -n $NS_20A get pod intruder -o jsonpath='{.spec.nodeName}') ]]; }
  wait_for 60 "the intruder bound once the submitter finished" intruder_bound

  # The other RayJob waits whole, its reason naming it.
  [[ $(_20a_bound "$cl") == 0 ]] || { e2e_err "RayJob $loser's cluster partly bound"; return 1; }
  g=$(_20a_gang_of "$loser")
  local why
  why=$(_20a_field "$g" 'g["reason"]')
  e2e_log "RayJob $loser waits: $why"
  [[ $why == "RayJob $NS_20A/$loser: queue team-a: limit 4 GPUs, 3 GPUs in use, the gang needs 3 GPUs" ]] ||
    { e2e_err "reason of RayJob $loser: '$why'"; return 1; }
  has_event() { kubectl_ -n $NS_20A get events --field-selector reason=GangWaiting -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -q "^RayJob $NS_20A/$loser: queue team-a"; }
  wait_for 30 "a GangWaiting Event naming RayJob $loser" has_event

  # Deleting the first RayJob frees team-a: its cluster and Job go (garbage collector), the
  # second is placed whole, and its submitter after it, in the room held for it.
  kubectl_ -n $NS_20A delete rayjob "$winner" --wait=false >/dev/null
  loser_bound() { [[ $(_20a_bound "$cl") == 4 ]]; }
  wait_for 120 "RayJob $loser's cluster bound whole once $winner was deleted" loser_bound
  gone() { [[ -z $(_20a_gang_of "$winner") ]]; }
  wait_for 60 "muster forgets RayJob $winner's gang" gone
  sub_bound() { [[ $(_20a_submitter "$loser") == *" gpu-lab-worker "* ]]; }
  wait_for 120 "RayJob $loser's submitter bound" sub_bound
  g=$(_20a_gang_of "$loser")
  [[ $(_20a_field "$g" 'g["held"][0]["state"]') == Arrived ]] ||
    { e2e_err "RayJob $loser's hold: $(_20a_field "$g" 'g["held"]')"; return 1; }
  kubectl_ -n $NS_20A get rayjobs,rayclusters,jobs,pods -o wide
}
