# Autoscaling: enableInTreeAutoscaling with a worker group minReplicas 1, replicas 3,
# maxReplicas 5 (1 GPU each, head no GPU) on a node with 2 GPUs. The gang minimum is
# head + minReplicas = 2: head and one worker are bound as the gang, then the workers beyond the
# minimum are placed one at a time: two workers bound, the third Pending with a reason.
# Then muster follows the cluster as it changes:
#   minReplicas 1 -> 2          /debug/state minMembers 2 -> 3 (the gang stays Bound)
#   a second node, 1 GPU        the pending worker binds
#   replicas 3 -> 5             two new workers, no room: Pending with a reason
#   replicas 5 -> 3, the two pending workers in scaleStrategy.workersToDelete
#                               KubeRay deletes them; muster forgets them (members 4, none pending)
#   minReplicas 2 -> 1          minMembers back to 2

# Its own namespace: the harness has no namespace controller, so a namespace deleted by the
# reset between scenarios (kuberay-lab of the walkthrough) stays Terminating for good.
NS_05=lab-05
_05_apply() { # _05_apply <file|->: a manifest of namespace kuberay-lab, applied in $NS_05
  sed "s/^\( *namespace:\) kuberay-lab\$/\1 $NS_05/" "$1" | kubectl_ apply -f -
}
_05_state() { curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state"; }
_05_gang() { # _05_gang <field>: a field of gang $NS_05/auto in muster's /debug/state
  _05_state | python3 -c '
import json, sys
g = next((g for g in json.load(sys.stdin)["gangs"] if g["gang"] == sys.argv[2]), None)
print("" if g is None else g.get(sys.argv[1]))' "$1" "$NS_05/auto"
}
_05_pending_reasons() { # one line per pending worker: "name: reason" (its PodScheduled message)
  kubectl_ -n $NS_05 get pods -l ray.io/cluster=auto,ray.io/node-type=worker -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    if p["spec"].get("nodeName"):
        continue
    c = [c for c in p.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"]
    print(p["metadata"]["name"] + ":", c[0].get("message", "") if c else "")'
}
_05_count() { # _05_count head|worker bound|pending
  kubectl_ -n $NS_05 get pods -l "ray.io/cluster=auto,ray.io/node-type=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    awk -v want="$2" 'NF { if ((want == "bound") == (NF == 2)) n++ } END { print n + 0 }'
}
_05_pending_names() {
  kubectl_ -n $NS_05 get pods -l ray.io/cluster=auto,ray.io/node-type=worker \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' | awk 'NF == 1 { print $1 }'
}
_05_show() {
  kubectl_ -n $NS_05 get pods -o custom-columns='NAME:.metadata.name,TYPE:.metadata.labels.ray\.io/node-type,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName'
  echo "gang $NS_05/auto: state=$(_05_gang state) minMembers=$(_05_gang minMembers) members=$(_05_gang members) bound=$(_05_gang bound)"
}
_05_expect() { # _05_expect <field> <value>
  local v; v=$(_05_gang "$1")
  [[ $v == "$2" ]] || { echo "muster /debug/state: gang auto $1 = $v, want $2"; return 1; }
}
# _05_workers <bound> <pending>: exactly that many workers bound / pending, head bound
_05_workers() {
  [[ $(_05_count head bound) == 1 && $(_05_count worker bound) == "$1" && $(_05_count worker pending) == "$2" ]]
}

scenario() {
  e2e_gpu_node gpu-a 2
  kubectl_ create namespace "$NS_05"
  _05_apply "$E2E_LIB_DIR/manifests/raycluster-autoscaling.yaml"

  # --- head + one worker as the gang, then one more worker; the third waits with a reason
  third_waits() { _05_workers 2 1 && [[ $(_05_pending_reasons | grep -c 'Insufficient nvidia.com/gpu') == 1 ]]; }
  wait_for 120 "auto: head + 2 workers bound, 1 worker Pending with a reason" third_waits
  _05_show
  _05_expect minMembers 2
  _05_expect state Bound
  _05_expect members 4
  _05_expect bound 3
  _05_pending_reasons | sed 's/^/pending: /'
  # the gang was committed at minimum 2: its barrier waited for 2 members, never for 4
  grep -F "gang $NS_05/auto: 1 of 2 members at bind" "$MUSTER_E2E_DIR/logs/muster.log" | head -n 1
  grep -qF "gang $NS_05/auto: 1 of 2 members at bind" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { echo "no barrier line for a gang of 2 in muster.log"; return 1; }
  ! grep -qE "gang $NS_05/auto: [0-9]+ of [34] members" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { echo "muster waited for more than the autoscaling minimum"; return 1; }
  # stays so: no worker squeezed onto the 2-GPU node
  sleep 10
  _05_workers 2 1 || { _05_show; echo "expected 2 workers bound and 1 pending"; return 1; }

  # --- minReplicas 1 -> 2: the gang minimum follows
  kubectl_ -n $NS_05 patch raycluster auto --type=json \
    -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/minReplicas","value":2}]'
  min3() { [[ $(_05_gang minMembers) == 3 ]]; }
  wait_for 90 "muster: minMembers 3 after minReplicas 2" min3
  _05_expect state Bound
  echo "minReplicas 2 -> gang $NS_05/auto minMembers $(_05_gang minMembers), state $(_05_gang state)"

  # --- room for one more: a second node with 1 GPU -> the pending worker binds
  e2e_gpu_node gpu-b 1
  wait_for 120 "auto: the pending worker bound on gpu-b" _05_workers 3 0
  _05_show
  [[ $(kubectl_ -n $NS_05 get pods -l ray.io/cluster=auto --field-selector spec.nodeName=gpu-b -o name | wc -l) == 1 ]] ||
    { echo "expected one worker on gpu-b"; return 1; }
  _05_expect members 4
  _05_expect bound 4

  # --- replicas 3 -> 5: two workers more than fit; both Pending with a reason
  kubectl_ -n $NS_05 patch raycluster auto --type=json \
    -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/replicas","value":5}]'
  two_wait() { _05_workers 3 2 && [[ $(_05_pending_reasons | grep -c 'Insufficient nvidia.com/gpu') == 2 ]]; }
  wait_for 120 "auto: 3 workers bound, 2 new ones Pending with a reason" two_wait
  _05_show
  _05_pending_reasons | sed 's/^/pending: /'
  _05_expect state Bound
  _05_expect members 6

  # --- replicas 5 -> 3, naming the two pending workers as the ones to delete (what the Ray
  # autoscaler writes): KubeRay deletes them, muster forgets them
  local victims
  victims=$(_05_pending_names | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))')
  kubectl_ -n $NS_05 patch raycluster auto --type=json -p "[
    {\"op\":\"replace\",\"path\":\"/spec/workerGroupSpecs/0/replicas\",\"value\":3},
    {\"op\":\"add\",\"path\":\"/spec/workerGroupSpecs/0/scaleStrategy\",\"value\":{\"workersToDelete\":$victims}}]"
  gone() { _05_workers 3 0 && [[ $(_05_gang members) == 4 && $(_05_gang bound) == 4 ]]; }
  wait_for 120 "auto: the two pending workers deleted, muster's gang back to 4 members" gone
  _05_show
  _05_expect state Bound

  # --- minReplicas 2 -> 1: the minimum follows back down
  kubectl_ -n $NS_05 patch raycluster auto --type=json \
    -p '[{"op":"replace","path":"/spec/workerGroupSpecs/0/minReplicas","value":1}]'
  min2() { [[ $(_05_gang minMembers) == 2 ]]; }
  wait_for 90 "muster: minMembers 2 after minReplicas 1" min2
  _05_expect state Bound
  echo "minReplicas 1 -> gang $NS_05/auto minMembers $(_05_gang minMembers), state $(_05_gang state)"
}
