# The operator-level flag, KAI contract: the KubeRay operator restarted with
# --batch-scheduler=kai-scheduler writes schedulerName kai-scheduler on every Ray pod and copies
# the RayCluster's kai.scheduler/queue label onto them. muster serves the kai-scheduler profile
# (manifests/muster.yaml schedulerNames, manifests/scheduler-config.yaml profiles), so the
# shipped sample raycluster-kai.yaml, with NO schedulerName in its templates, is scheduled by
# muster as one gang in queue team-a. A second RayCluster of team-a asking 3 GPUs while team-a
# may use 2 (and already does) waits whole with the quota reason; raising the limit binds it whole.
# The operator's baseline flags are restored at the end, whatever happens.

# Its own namespace: the harness has no namespace controller, so a namespace deleted by the
# reset between scenarios (kuberay-lab of the walkthrough) stays Terminating for good.
NS_04A=lab-04a
_04a_apply() { # _04a_apply <file|->: a manifest of namespace kuberay-lab, applied in $NS_04A
  sed "s/^\( *namespace:\) kuberay-lab\$/\1 $NS_04A/" "$1" | kubectl_ apply -f -
}
# gang_json <url> <ns/name>: the gang's entry in muster's /debug/state ("null" if none)
_04a_gang() {
  curl -sf --max-time 5 "$1/debug/state" |
    python3 -c 'import json,sys; k=sys.argv[1]; print(json.dumps(next((g for g in json.load(sys.stdin)["gangs"] if g["gang"]==k), None)))' "$2"
}
# _04a_field <ns/name> <field>: one field of the gang in the baseline muster
_04a_field() {
  _04a_gang "$(e2e_muster_url muster)" "$1" | python3 -c 'import json,sys; g=json.load(sys.stdin); print("" if g is None else g.get(sys.argv[1]))' "$2"
}
# _04a_count <cluster> bound|pending: pods of a RayCluster in $NS_04A with / without a node
_04a_count() {
  kubectl_ -n $NS_04A get pods -l "ray.io/cluster=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$2" 'NF { if ((want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_04a_show() {
  kubectl_ -n $NS_04A get pods -o custom-columns='NAME:.metadata.name,SCHEDULER:.spec.schedulerName,QUEUE:.metadata.labels.kai\.scheduler/queue,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName'
}

scenario() {
  trap 'e2e_kuberay >/dev/null || e2e_err "could not restore the operator baseline"' EXIT
  e2e_kuberay --batch-scheduler=kai-scheduler
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ create namespace "$NS_04A"
  kubectl_ apply -f "$E2E_MANIFESTS/samples/queues.yaml"

  # --- the shipped sample: no schedulerName anywhere in it
  if grep -Eq "^[^#]*schedulerName:" "$E2E_MANIFESTS/samples/raycluster-kai.yaml"; then
    echo "raycluster-kai.yaml names a scheduler; the scenario needs the operator to do it"; return 1
  fi
  _04a_apply "$E2E_MANIFESTS/samples/raycluster-kai.yaml"
  kai_bound() { [[ $(_04a_count kai-demo bound) == 3 && $(_04a_count kai-demo pending) == 0 ]]; }
  wait_for 120 "kai-demo: head + 2 workers bound" kai_bound
  _04a_show
  # what KubeRay wrote: schedulerName kai-scheduler and the queue label, on every pod
  local sched queues
  sched=$(kubectl_ -n $NS_04A get pods -l ray.io/cluster=kai-demo -o jsonpath='{.items[*].spec.schedulerName}')
  queues=$(kubectl_ -n $NS_04A get pods -l ray.io/cluster=kai-demo -o jsonpath='{.items[*].metadata.labels.kai\.scheduler/queue}')
  [[ $sched == "kai-scheduler kai-scheduler kai-scheduler" ]] || { echo "schedulerNames: $sched"; return 1; }
  [[ $queues == "team-a team-a team-a" ]] || { echo "queue labels: $queues"; return 1; }
  # bound by muster (its kube-scheduler's extender bind), as one gang in team-a
  grep -q "$NS_04A/kai-demo" "$MUSTER_E2E_DIR/logs/muster.log" || { echo "muster never saw kai-demo"; return 1; }
  echo "muster /debug/state: $(_04a_gang "$(e2e_muster_url muster)" $NS_04A/kai-demo)"
  _04a_gang "$(e2e_muster_url muster)" $NS_04A/kai-demo | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["queue"] == "team-a" and g["state"] == "Bound" and g["minMembers"] == 3 and g["bound"] == 3, g'

  # --- a gang too big for team-a: 1 head + 3 workers = 3 GPUs; team-a has limit 2, in use 2
  sed -e 's/name: kai-demo/name: kai-big/' -e 's/replicas: 2/replicas: 3/' \
    "$E2E_MANIFESTS/samples/raycluster-kai.yaml" | _04a_apply -
  big_reason() {
    [[ $(_04a_count kai-big pending) == 4 ]] || return 1
    [[ $(_04a_field $NS_04A/kai-big reason) == *"queue team-a"* ]]
  }
  wait_for 120 "kai-big: 4 pods, all Pending, with team-a's quota as the reason" big_reason
  # it keeps waiting whole: nothing of it is bound after more scheduling attempts
  sleep 10
  [[ $(_04a_count kai-big bound) == 0 ]] || { _04a_show; echo "kai-big partly bound"; return 1; }
  _04a_show
  kubectl_ get queues.muster.dev
  echo "kai-big waits: $(_04a_field $NS_04A/kai-big reason)"
  [[ $(_04a_field $NS_04A/kai-big state) == Pending ]] || { echo "kai-big not Pending in muster"; return 1; }
  [[ $(_04a_field $NS_04A/kai-big queue) == team-a ]] || { echo "kai-big not in team-a"; return 1; }
  # the reason reaches the pods' Events too (kube-scheduler's FailedScheduling)
  events() { kubectl_ -n $NS_04A get events --field-selector reason=FailedScheduling -o jsonpath='{range .items[*]}{.involvedObject.name}{" "}{.message}{"\n"}{end}' | grep '^kai-big' | grep -q 'team-a'; }
  wait_for 90 "a FailedScheduling event of kai-big naming team-a" events
  kubectl_ -n $NS_04A get events --field-selector reason=FailedScheduling -o jsonpath='{range .items[*]}{.involvedObject.name}{": "}{.message}{"\n"}{end}' | grep '^kai-big' | tail -n 1

  # --- raise team-a's limit to 5 GPUs: kai-big binds whole
  local raised_at filtered
  raised_at=$(date -u +%Y-%m-%dT%H:%M:%S)
  kubectl_ patch queues.muster.dev team-a --type=merge -p '{"spec":{"resources":{"gpu":{"limit":5}}}}'
  big_bound() { [[ $(_04a_count kai-big bound) == 4 && $(_04a_count kai-big pending) == 0 ]]; }
  # A Queue is muster's object: kube-scheduler sees no cluster event when it changes, so muster
  # has to get the waiting gang retried itself. Without that, kube-scheduler retries the pods
  # only when its unschedulable pool is flushed (podMaxInUnschedulablePodsDuration, 5 min).
  if ! wait_for 120 "kai-big: all 4 bound once team-a may use 5 GPUs" big_bound; then
    _04a_show
    filtered=$(awk -v t="$raised_at" -v p="filter pod=$NS_04A/kai-big" '$1 >= t && index($0, p)' "$MUSTER_E2E_DIR/logs/muster.log" | wc -l)
    echo "kai-big still Pending 120 s after team-a's limit was raised; muster state: $(_04a_field $NS_04A/kai-big state)," \
      "reason: $(_04a_field $NS_04A/kai-big reason); filter calls for kai-big since the raise: $filtered"
    ((filtered > 0)) || echo "BUG: kube-scheduler never asked muster again: nothing requeues a gang when its Queue changes"
    return 1
  fi
  # muster writes the Queue's status: team-a now has both gangs, 5 GPUs
  allocated5() { [[ $(kubectl_ get queues.muster.dev team-a -o jsonpath='{.status.allocated.gpu}') == 5 ]]; }
  wait_for 60 "Queue team-a status: 5 GPUs allocated" allocated5
  _04a_show
  kubectl_ get queues.muster.dev
  [[ $(_04a_field $NS_04A/kai-big state) == Bound ]] || { echo "kai-big not Bound in muster"; return 1; }

  # --- back to the baseline operator (no batch scheduler)
  trap - EXIT
  e2e_kuberay
}
