# The operator-level flag, scheduler-plugins contract: KubeRay v1.7.0 started with
# --batch-scheduler=scheduler-plugins writes schedulerName scheduler-plugins-scheduler on EVERY
# Ray pod, and for a RayCluster labelled ray.io/gang-scheduling-enabled creates a
# scheduling.x-k8s.io/v1alpha1 PodGroup named after the cluster (minMember = desired workers + 1,
# created once, never updated) and labels the pods scheduling.x-k8s.io/pod-group: <cluster>.
# muster does not serve that name by default, so, as docs/deploy.md tells a platform team, a
# muster + kube-scheduler pair is started whose muster.yaml schedulerNames and whose
# scheduler profile are scheduler-plugins-scheduler (its own lease). Then:
#   sp-demo  head + 2 x 1 GPU: bound whole by that pair; the PodGroup's minMember (3) and the
#            RayCluster's composition (head 1, workers 2) agree: no conflict.
#   sp-auto  autoscaling, minReplicas 1, replicas 2, 4-GPU workers: KubeRay's PodGroup says 3,
#            the RayCluster's composition head 1, big 1 (= 2). A composition beats a count
#            (docs/gangs.md, "Precedence"): the gang is head + 1 worker, bound whole, and the
#            second worker is an extra, Pending with a reason while only 6 GPUs are free; the
#            disagreement is the gang's conflict, in /debug/state and a GangSpecMismatch Event
#            on its pods. A second node lets the extra bind.
# Until issue 10 this scenario expected the opposite: the PodGroup's count (3) won and kept
# sp-auto Pending whole. That is the count-only minimum kuberay#4656 reports: a PodGroup
# written from the desired replicas (KubeRay's TODO "consider the case when autoscaling is
# enabled", still in v1.7.0's scheduler_plugins.go) would hold back an autoscaling cluster
# whose own minimum fits.
# The pair is stopped and the operator's baseline flags restored at the end, whatever happens.

SP_NAME=scheduler-plugins-scheduler
E2E_URL_muster_sp=""
# Its own namespace: the harness has no namespace controller, so a namespace deleted by the
# reset between scenarios (kuberay-lab of the walkthrough) stays Terminating for good.
NS_04B=lab-04b
_04b_apply() { # _04b_apply <file|->: a manifest of namespace kuberay-lab, applied in $NS_04B
  sed "s/^\( *namespace:\) kuberay-lab\$/\1 $NS_04B/" "$1" | kubectl_ apply -f -
}

_04b_gang() { e2e_gang "$E2E_URL_muster_sp" "$1"; } # the gang in muster-sp's /debug/state
_04b_field() { # _04b_field <ns/name> <field>
  _04b_gang "$1" | python3 -c 'import json,sys; g=json.load(sys.stdin); print("" if g is None else g.get(sys.argv[1]))' "$2"
}
_04b_count() { # _04b_count <cluster> bound|pending|all
  kubectl_ -n $NS_04B get pods -l "ray.io/cluster=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$2" 'NF { if (want == "all" || (want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_04b_show() {
  kubectl_ -n $NS_04B get pods -o custom-columns='NAME:.metadata.name,SCHEDULER:.spec.schedulerName,POD-GROUP:.metadata.labels.scheduling\.x-k8s\.io/pod-group,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName'
}
_04b_min_member() { kubectl_ -n $NS_04B get podgroups.scheduling.x-k8s.io "$1" -o jsonpath='{.spec.minMember}'; }

_04b_cleanup() {
  local rc=$?
  if ((rc != 0)); then
    e2e_err "04b failed; muster-sp log tail:"
    tail -n 25 "$MUSTER_E2E_DIR/logs/muster-sp.log" >&2 2>/dev/null
    echo "muster-sp /debug/state: $(curl -sf --max-time 5 "$E2E_URL_muster_sp/debug/state")" >&2
  fi
  e2e_muster_pair_stop sp
  e2e_kuberay >/dev/null || e2e_err "could not restore the operator baseline"
  return $rc
}

scenario() {
  trap _04b_cleanup EXIT
  e2e_kuberay --batch-scheduler=scheduler-plugins # also applies the PodGroup CRD
  e2e_muster_pair sp "$SP_NAME"
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ create namespace "$NS_04B"

  # --- sp-demo: what KubeRay writes, and muster-sp binding it whole
  _04b_apply "$E2E_LIB_DIR/manifests/raycluster-scheduler-plugins.yaml"
  demo_bound() { [[ $(_04b_count sp-demo bound) == 3 && $(_04b_count sp-demo pending) == 0 ]]; }
  wait_for 120 "sp-demo: head + 2 workers bound" demo_bound
  _04b_show
  kubectl_ -n $NS_04B get podgroups.scheduling.x-k8s.io sp-demo \
    -o custom-columns='PODGROUP:.metadata.name,MIN-MEMBER:.spec.minMember,OWNER:.metadata.ownerReferences[0].kind'
  local sched groups min
  sched=$(kubectl_ -n $NS_04B get pods -l ray.io/cluster=sp-demo -o jsonpath='{.items[*].spec.schedulerName}')
  groups=$(kubectl_ -n $NS_04B get pods -l ray.io/cluster=sp-demo -o jsonpath='{.items[*].metadata.labels.scheduling\.x-k8s\.io/pod-group}')
  [[ $sched == "$SP_NAME $SP_NAME $SP_NAME" ]] || { echo "schedulerNames: $sched"; return 1; }
  [[ $groups == "sp-demo sp-demo sp-demo" ]] || { echo "pod-group labels: $groups"; return 1; }
  min=$(_04b_min_member sp-demo)
  [[ $min == 3 ]] || { echo "PodGroup sp-demo minMember $min, KubeRay should write 3"; return 1; }
  grep -q "filter pod=$NS_04B/sp-demo-head" "$MUSTER_E2E_DIR/logs/muster-sp.log" ||
    { echo "muster-sp never filtered sp-demo's head"; return 1; }
  echo "muster-sp /debug/state: $(_04b_gang $NS_04B/sp-demo)"
  _04b_gang $NS_04B/sp-demo | python3 -c '
import json, sys
g = json.load(sys.stdin); want = int(sys.argv[1])
assert g and g["state"] == "Bound" and g["bound"] == 3 and g["minMembers"] == want, g
assert g["composition"] == "head 1/1, workers 2/2" and g["conflict"] is None, g' "$min"

  # --- sp-auto: the PodGroup's minMember (3) against the RayCluster's autoscaling composition
  # (head 1, big 1). gpu-lab-worker has 6 GPUs free: one 4-GPU worker fits, the second does not.
  _04b_apply "$E2E_LIB_DIR/manifests/raycluster-scheduler-plugins-autoscaling.yaml"
  auto_exists() { [[ $(_04b_count sp-auto all) == 3 && -n $(_04b_min_member sp-auto) ]]; }
  wait_for 120 "sp-auto: 3 pods and its PodGroup" auto_exists
  min=$(_04b_min_member sp-auto)
  [[ $min == 3 ]] || { echo "PodGroup sp-auto minMember $min, KubeRay v1.7.0 should write 3"; return 1; }
  # head + one worker bound (the composition's minimum), the other worker waits alone
  minimum_bound() { [[ $(_04b_count sp-auto bound) == 2 && $(_04b_count sp-auto pending) == 1 ]]; }
  wait_for 120 "sp-auto: head + 1 worker bound, 1 worker Pending" minimum_bound
  [[ $(kubectl_ -n $NS_04B get pods -l ray.io/cluster=sp-auto,ray.io/node-type=head \
    -o jsonpath='{.items[0].spec.nodeName}') == gpu-lab-worker ]] || { _04b_show; echo "sp-auto's head is not bound"; return 1; }
  local want_conflict="PodGroup $NS_04B/sp-auto 3 disagrees with RayCluster $NS_04B/sp-auto 2 (head 1, big 1), which muster follows"
  auto_state() {
    _04b_gang $NS_04B/sp-auto | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Bound" and g["minMembers"] == 2 and g["bound"] == 2, g
assert g["conflict"] == sys.argv[1], g
assert g["composition"].startswith("head 1/1, big 1/1 (+1 extra waiting"), g' "$want_conflict"
  }
  wait_for 60 "muster-sp: sp-auto Bound at minimum 2, one extra waiting, the conflict shown" auto_state
  # several scheduling rounds and RayCluster status updates later: still so, nothing squeezed in
  sleep 10
  minimum_bound || { _04b_show; echo "sp-auto: expected head + 1 worker bound, 1 pending"; return 1; }
  _04b_show
  echo "muster-sp /debug/state: $(_04b_gang $NS_04B/sp-auto)"
  # the disagreement is told on the gang's pods (housekeeping, once per change of words)
  mismatch_told() {
    kubectl_ -n $NS_04B get events --field-selector reason=GangSpecMismatch -o json | python3 -c '
import json, sys
want = sys.argv[1]
pods = {e["involvedObject"]["name"] for e in json.load(sys.stdin)["items"] if e.get("message") == want}
sys.exit(0 if len([p for p in pods if p.startswith("sp-auto-")]) == 3 else 1)' "$want_conflict"
  }
  wait_for 60 "a GangSpecMismatch Event on each of sp-auto's 3 pods" mismatch_told
  echo "GangSpecMismatch: $want_conflict"
  [[ -z $(kubectl_ -n $NS_04B get events --field-selector reason=GangSpecMismatch \
    -o jsonpath='{range .items[*]}{.involvedObject.name}{"\n"}{end}' | grep '^sp-demo-') ]] ||
    { echo "sp-demo's sources agree, yet it got a GangSpecMismatch Event"; return 1; }

  # --- room for the extra: a second node with 4 GPUs -> the waiting worker binds there
  e2e_gpu_node gpu-extra 4
  auto_bound() { [[ $(_04b_count sp-auto bound) == 3 && $(_04b_count sp-auto pending) == 0 ]]; }
  wait_for 120 "sp-auto: the extra worker bound once a second node has room" auto_bound
  _04b_show
  [[ $(_04b_field $NS_04B/sp-auto state) == Bound ]] || { echo "sp-auto not Bound in muster-sp"; return 1; }
  [[ $(_04b_field $NS_04B/sp-auto minMembers) == 2 ]] || { echo "sp-auto minMembers changed"; return 1; }
  [[ $(kubectl_ -n $NS_04B get pods -l ray.io/cluster=sp-auto --field-selector spec.nodeName=gpu-extra -o name | grep -c .) == 1 ]] ||
    { echo "expected one sp-auto worker on gpu-extra"; return 1; }
}
