# muster inside kube-scheduler's own gang cycle (Kubernetes 1.37, the GenericWorkload gate on the
# scheduler too: pkg/scheduler/schedule_one_podgroup.go and the GangScheduling plugin). The
# scheduler then holds a PodGroup's pods in PreEnqueue until minCount of them exist, filters
# them one after the other in one pod group cycle (each earlier member only assumed), waits in
# Permit until minCount are assumed, and only then binds, each through muster's bind barrier.
# Gangs are v1beta1 Workloads of one template with a PodGroup made from it (e2e_wa_gang).
#   gc   minCount 4: 3 pods exist -> kube-scheduler keeps them to itself (PreEnqueue), muster is
#        never asked; the 4th -> all 4 bound whole; kube-scheduler writes the PodGroup's
#        condition PodGroupInitiallyScheduled True; muster's plans and queue charges match the
#        API (no pod planned or held, the default queue charged the 4 GPUs bound).
#   gc2  minCount 6 on the 4 GPUs left: muster's reason, nothing of it bound or reserved,
#        PodGroupInitiallyScheduled False (Unschedulable); gc deleted -> gc2 bound whole.
# muster's filter, prioritize and bind calls per bound pod and its CPU per bound pod go to the
# log (bench/gang_cycle.sh measures them). The baseline kube-scheduler (no gate) is restored at
# the end, whatever happens. The invariants are polled throughout (each PodGroup: none or at
# least its minCount bound).
NS_18=lab-18

_18_bound() { # NAME: pods of gang NAME with a node
  kubectl_ -n $NS_18 get pods -l "gang=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}
_18_apply() { e2e_wa_gang $NS_18 "$@" | kubectl_ apply -f - >/dev/null; } # e2e_wa_gang's args
_18_condition() { # PODGROUP: status and reason of PodGroupInitiallyScheduled ("" if none)
  kubectl_ -n $NS_18 get podgroups.v1beta1.scheduling.k8s.io "$1" \
    -o jsonpath='{range .status.conditions[?(@.type=="PodGroupInitiallyScheduled")]}{.status}{" "}{.reason}{end}'
}
# muster's view against the API's: every pod muster holds a place for is bound there, nothing
# is planned or held at the barrier, and each queue's allocated GPUs are the GPUs bound in it.
_18_state_matches_api() {
  kubectl_ -n $NS_18 get pods -o json > "$MUSTER_E2E_DIR/18-pods.json"
  curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state" > "$MUSTER_E2E_DIR/18-state.json"
  python3 - "$MUSTER_E2E_DIR/18-pods.json" "$MUSTER_E2E_DIR/18-state.json" "$NS_18" <<'EOF'
import json, sys
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
state = json.load(open(sys.argv[2])); ns = sys.argv[3]
gpus = 0
for name, p in pods.items():
    if p["spec"].get("nodeName"):
        gpus += int(p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", 0))
mine = [s for s in state["pods"] if s["pod"].startswith(ns + "/")]
for s in mine:
    name = s["pod"].split("/", 1)[1]
    assert s["phase"] in ("Bound", "Pending"), ("muster holds a place that is not bound", s)
    api = pods[name]["spec"].get("nodeName")
    assert (s["phase"] == "Bound") == bool(api), (s, api)
    assert s.get("node") == api or not api, (s, api)
q = {q["name"]: q for q in state["queues"]}["default"]
assert int(q["allocated"]["gpu"]) == gpus, (q["allocated"], gpus)
assert int(q["reserved"]["gpu"]) == 0, q["reserved"]
print("muster /debug/state matches the API: %d pods, %d GPUs bound, none planned or held" % (len(mine), gpus))
EOF
}

_18_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  kubectl_ delete pods -n $NS_18 --all --grace-period=0 --force >/dev/null 2>&1
  e2e_stop kube-scheduler
  e2e_muster_scheduler kube-scheduler >/dev/null || { e2e_err "could not restore the baseline kube-scheduler"; rc=1; }
  return $rc
}

scenario() {
  [[ $(e2e_workload_api_version) == v1beta1 ]] || { e2e_err "no scheduling.k8s.io/v1beta1 here"; return 1; }
  trap _18_cleanup EXIT
  e2e_stop kube-scheduler
  E2E_SCHEDULER_FLAGS="--feature-gates=GenericWorkload=true" e2e_muster_scheduler kube-scheduler
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ get namespace "$NS_18" >/dev/null 2>&1 || kubectl_ create namespace "$NS_18"
  e2e_invariants_poll_start
  local url filters0 binds0 prio0 cpu0 filters binds prio cpu
  url=$(e2e_muster_url muster)
  filters0=$(e2e_metric "$url" muster_extender_requests_total 'verb="filter"')
  prio0=$(e2e_metric "$url" muster_extender_requests_total 'verb="prioritize"')
  binds0=$(e2e_metric "$url" muster_extender_requests_total 'verb="bind"')
  cpu0=$(e2e_cpu_ms muster)

  # --- gc: 3 of 4 pods -> held in kube-scheduler's PreEnqueue, muster never asked
  _18_apply gc 4 3 1
  sleep 8
  if grep -q "filter pod=$NS_18/gc-" "$MUSTER_E2E_DIR/logs/muster.log"; then
    e2e_err "muster was asked about gc with 3 of its 4 pods: kube-scheduler's PreEnqueue should hold them"; return 1
  fi
  [[ $(_18_bound gc) == 0 ]] || { e2e_err "gc partly bound"; return 1; }
  echo "gc, 3 of 4 pods: held by kube-scheduler (PreEnqueue), no filter call reached muster"
  _18_apply gc 4 1 1 "" 3
  gc_bound() { [[ $(_18_bound gc) == 4 ]]; }
  wait_for 90 "gc bound whole once its 4th pod exists" gc_bound
  scheduled() { [[ $(_18_condition gc-0) == "True Scheduled" ]]; }
  wait_for 30 "kube-scheduler writes PodGroupInitiallyScheduled True on gc-0" scheduled
  echo "PodGroup gc-0: PodGroupInitiallyScheduled $(_18_condition gc-0) (kube-scheduler's)"
  grep -qE "gang $NS_18/gc: [0-9]+ of 4 members at bind" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { e2e_err "gc's binds did not pass muster's barrier"; return 1; }
  wait_for 20 "muster's /debug/state matches the API" _18_state_matches_api
  _18_state_matches_api

  # --- gc2: 6 on the 4 GPUs left: waits whole, nothing reserved; room made -> bound whole
  _18_apply gc2 6 6 1
  gc2_waits() {
    [[ $(_18_condition gc2-0) == "False Unschedulable" ]] || return 1
    e2e_gang "$url" $NS_18/gc2 | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["members"] == 6 and g["reason"], g'
  }
  wait_for 90 "gc2 Unschedulable (kube-scheduler's condition) and Pending in muster with a reason" gc2_waits
  sleep 5
  [[ $(_18_bound gc2) == 0 ]] || { e2e_err "gc2 partly bound"; return 1; }
  echo "gc2 waits: $(e2e_gang "$url" $NS_18/gc2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"
  _18_state_matches_api
  kubectl_ -n $NS_18 delete pods -l gang=gc --wait=false
  gc2_bound() { [[ $(_18_bound gc2) == 6 ]]; }
  wait_for 120 "gc2 bound whole once gc is gone" gc2_bound
  wait_for 20 "muster's /debug/state matches the API" _18_state_matches_api

  filters=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="filter"') - filters0))
  prio=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="prioritize"') - prio0))
  binds=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="bind"') - binds0))
  cpu=$(($(e2e_cpu_ms muster) - cpu0))
  python3 -c 'import sys; f,p,b,c,n = map(int, sys.argv[1:]); print("gang cycle: %d pods bound; per bound pod %.2f filter, %.2f prioritize, %.2f bind calls; muster CPU %.1f ms per bound pod (the scenario whole)" % (n, f/n, p/n, b/n, c/n))' \
    "$filters" "$prio" "$binds" "$cpu" 10
}
