# A PodDisruptionBudget is a promise muster keeps whole (issue 20). Scenario 14's two queues on
# one 8-GPU node: team-a (quota 0) borrows all 8 GPUs with RayCluster "borrow", and a
# PodDisruptionBudget "keep-borrow" (minAvailable 9) covers its pods. team-b (quota 8) submits
# RayCluster "six": muster decides to reclaim borrow, checks the budgets before it evicts any pod,
# and refuses the gang whole: not one of borrow's pods is evicted or touched, six's pods get a
# Warning EvictionRefused naming the budget, muster_evictions_total counts result="refused", and
# six waits. Then the budget is deleted: once evictions.refusedVictimWait (30s, the shipped
# default) has passed, muster reclaims again, this time evicting borrow whole, and six is bound
# whole. The invariants checker polls throughout: no gang partly bound, no gang partly evicted.
#
# The budget's status comes from kube-controller-manager's disruption controller
# (disruptionsAllowed 0 for minAvailable 9 over nine healthy pods); kwok marks the pods Running
# and Ready, as a kubelet would, so they count as healthy. minAvailable, not maxUnavailable 0:
# a maxUnavailable budget needs the pods' owner to have a scale subresource, and a RayCluster has
# none (the disruption controller would report it cannot count the expected pods).

# scenario 14's helpers (f14_count, f14_events, f14_metric, f14_uids, f14_show, f14_state, ...)
# shellcheck source=14-reclaim.sh
source "$(dirname "${BASH_SOURCE[0]}")/14-reclaim.sh"

f14b_cleanup() {
  f14_cleanup
  kubectl_ -n "$F14_NS" delete poddisruptionbudget keep-borrow --ignore-not-found >/dev/null 2>&1
}

# f14b_count <result>: muster_evictions_total{kind="reclaim",result=<result>} now, 0 if absent
f14b_count() {
  local v
  v=$(f14_metric "muster_evictions_total{kind=\"reclaim\",result=\"$1\"}")
  echo "${v/absent/0}"
}

# The budget as the disruption controller sees it: "<observedGeneration>/<generation> <allowed>"
f14b_budget() {
  kubectl_ -n "$F14_NS" get poddisruptionbudget keep-borrow \
    -o jsonpath='{.status.observedGeneration}/{.metadata.generation} {.status.disruptionsAllowed} {.status.currentHealthy}'
}

scenario() {
  F14_DIR=$MUSTER_E2E_DIR/14b
  rm -rf "$F14_DIR" && mkdir -p "$F14_DIR"
  trap f14b_cleanup EXIT
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_LIB_DIR/manifests/reclaim-queues.yaml"
  e2e_invariants_poll_start

  # ---- team-a borrows the whole node, under a budget that allows no disruption
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-reclaim-borrow.yaml"
  borrow_bound() { [[ $(f14_count borrow bound) -eq 9 ]]; }
  wait_for 120 "borrow (team-a, quota 0) bound whole: 9 pods, 8 GPUs" borrow_bound
  borrow_running() {
    [[ $(kubectl_ -n "$F14_NS" get pods -l ray.io/cluster=borrow -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | grep -c .) -eq 9 ]]
  }
  wait_for 60 "kwok marks borrow's 9 pods Running" borrow_running
  kubectl_ apply -f - <<EOF
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: keep-borrow
  namespace: $F14_NS
spec:
  minAvailable: 9
  selector:
    matchLabels:
      ray.io/cluster: borrow
EOF
  budget_counted() {
    local s gen allowed healthy
    s=$(f14b_budget) gen=${s%% *} allowed=$(awk '{print $2}' <<<"$s") healthy=$(awk '{print $3}' <<<"$s")
    [[ ${gen%/*} == "${gen#*/}" && $allowed == 0 && $healthy == 9 ]]
  }
  wait_for 60 "the disruption controller counts keep-borrow: 9 healthy, 0 disruptions allowed" budget_counted
  f14_uids borrow > "$F14_DIR/borrow-before.txt"
  [[ $(grep -c . "$F14_DIR/borrow-before.txt") -eq 9 ]]
  # muster runs on from the scenarios before: its counters are compared as deltas
  local refused0 evicted0 refused evicted
  refused0=$(f14b_count refused) evicted0=$(f14b_count evicted)

  # ---- team-b asks for 6: the reclaim is refused whole
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-reclaim-six.yaml"
  six_pods() { [[ $(f14_count six live) -eq 7 ]]; }
  wait_for 90 "KubeRay creates six's 7 pods" six_pods
  six_told_refused() {
    f14_events EvictionRefused Warning "gang $F14_NS/borrow of queue team-a was not evicted" \
      > "$F14_DIR/refused-events.txt"
    [[ $(cut -f1 "$F14_DIR/refused-events.txt" | sort -u | grep -c ^six-) -eq 7 ]]
  }
  if ! wait_for 120 "six's 7 pods each get a Warning EvictionRefused naming gang $F14_NS/borrow" six_told_refused; then
    f14_show
    f14_state
    return 1
  fi
  echo "--- the refusal: $(cut -f2 "$F14_DIR/refused-events.txt" | sort -u)"
  grep -q "PodDisruptionBudget $F14_NS/keep-borrow allows 0 disruptions" "$F14_DIR/refused-events.txt" ||
    { e2e_err "EvictionRefused does not name the budget keep-borrow"; return 1; }
  refused=$(($(f14b_count refused) - refused0)) evicted=$(($(f14b_count evicted) - evicted0))
  ((refused >= 9 && evicted == 0)) ||
    { e2e_err "muster_evictions_total grew by refused $refused, evicted $evicted; want >= 9 and 0"; return 1; }

  # While the budget stands: borrow keeps every pod (the same uids, none being deleted, no
  # DisruptionTarget), six stays unbound. Twice refusedVictimWait, so muster tries again at
  # least once in it and is refused again.
  local end=$((SECONDS + 65)) now
  while ((SECONDS < end)); do
    now=$(f14_uids borrow | sort)
    [[ $now == "$(sort "$F14_DIR/borrow-before.txt")" && $(f14_count borrow terminating) -eq 0 &&
      $(f14_count borrow bound) -eq 9 && $(f14_count six bound) -eq 0 ]] || {
      f14_show
      f14_state
      e2e_err "borrow touched or six bound while keep-borrow allows no disruption"
      return 1
    }
    sleep 5
  done
  if kubectl_ -n "$F14_NS" get pods -l ray.io/cluster=borrow -o json |
    grep -q '"reason": "EvictionByEvictionAPI"'; then
    e2e_err "a borrow pod carries DisruptionTarget/EvictionByEvictionAPI: muster evicted under the budget"
    return 1
  fi
  f14_state
  refused=$(($(f14b_count refused) - refused0)) evicted=$(($(f14b_count evicted) - evicted0))
  e2e_log "after 65s under the budget: $refused refused, $evicted evicted"
  [[ $evicted == 0 ]] || { e2e_err "muster evicted $evicted pods under the budget"; return 1; }
  ((refused >= 18)) || { e2e_err "$refused refusals in 65s: muster did not try again after refusedVictimWait"; return 1; }

  # ---- the budget goes: borrow is evicted whole, six is bound whole
  kubectl_ -n "$F14_NS" delete poddisruptionbudget keep-borrow
  if ! wait_for 120 "borrow's 9 pods each get a Warning Reclaimed for gang $F14_NS/six" f14_victims_told_six; then
    f14_show
    f14_state
    return 1
  fi
  wait_for 120 "borrow's original 9 pods gone (evicted, deletions finished by kwok)" f14_victims_gone
  six_whole() { [[ $(f14_count six bound) -eq 7 ]]; }
  wait_for 120 "six (team-b) bound whole: 7 pods" six_whole
  evicted=$(($(f14b_count evicted) - evicted0))
  [[ $evicted == 9 ]] || { e2e_err "muster_evictions_total evicted $evicted; want 9 (borrow whole, once)"; return 1; }
  f14_show
  f14_state
  e2e_invariants_poll_stop 20
}
