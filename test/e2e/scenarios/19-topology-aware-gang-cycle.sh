# muster inside kube-scheduler's gang cycle with TopologyAwareWorkloadScheduling (Kubernetes
# 1.37, alpha; GenericWorkload too): for a PodGroup with schedulingConstraints.topology[{key}]
# kube-scheduler makes one candidate placement per domain of the key, runs the whole pod group
# cycle in each (muster's filter called per pod per placement, offered only that placement's
# nodes), keeps the best feasible placement and throws the others away without telling the
# extender (pkg/scheduler/schedule_one_podgroup.go podGroupSchedulingPlacementAlgorithm).
# muster plans such a gang in one domain of the key and answers every placement without that
# domain from its plan (policy/topology.c), so exactly one placement is feasible: muster's.
# Six kwok nodes in three racks (label e2e.muster.dev/rack): a (2 x 2 GPUs), b (2 x 4), c (2 x 2).
#   tas1  6 x 1 GPU: only rack b holds it; bound whole there
#   tas2, tas3  4 x 1 GPU each: racks a and c, one each, each whole in one rack
#   tas4  3 x 1 GPU: no rack has 3 free: waits whole, kube-scheduler's "0/3 placements",
#         nothing of it bound or reserved by muster
# Then muster's /debug/state against the API: each gang's domain is the rack its pods are bound
# in, no pod planned or held, nothing reserved, 14 GPUs allocated. Calls per bound pod and
# muster's CPU per bound pod go to the log (bench/gang_cycle.sh measures them at scale). The
# baseline kube-scheduler is restored at the end, whatever happens; the invariants are polled
# throughout (each PodGroup: none or at least its minCount bound, all in one rack).
NS_19=lab-19
KEY_19=e2e.muster.dev/rack

_19_apply() { e2e_wa_gang $NS_19 "$@" | kubectl_ apply -f - >/dev/null; } # e2e_wa_gang's args
_19_racks() { # NAME: the racks of gang NAME's bound pods, sorted, unique
  kubectl_ -n $NS_19 get pods -l "gang=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
    grep . | sed 's/^tas-\(.\).*/\1/' | sort -u | tr '\n' ' '
}
_19_bound() {
  kubectl_ -n $NS_19 get pods -l "gang=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true
}

_19_cleanup() {
  local rc=$?
  e2e_invariants_poll_stop || rc=1
  ((rc == 0)) || kubectl_ -n $NS_19 get pods -o wide >&2
  kubectl_ delete pods -n $NS_19 --all --grace-period=0 --force >/dev/null 2>&1
  e2e_stop kube-scheduler
  e2e_muster_scheduler kube-scheduler >/dev/null || { e2e_err "could not restore the baseline kube-scheduler"; rc=1; }
  return $rc
}

scenario() {
  [[ $(e2e_workload_api_version) == v1beta1 ]] || { e2e_err "no scheduling.k8s.io/v1beta1 here"; return 1; }
  trap _19_cleanup EXIT
  e2e_stop kube-scheduler
  E2E_SCHEDULER_FLAGS="--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true" \
    e2e_muster_scheduler kube-scheduler
  local r n gpus
  for r in a b c; do
    gpus=2; [[ $r == b ]] && gpus=4
    for n in 1 2; do e2e_gpu_node "tas-$r$n" "$gpus" 32 128Gi 81920 "$KEY_19=$r" >/dev/null; done
  done
  kubectl_ get namespace "$NS_19" >/dev/null 2>&1 || kubectl_ create namespace "$NS_19"
  e2e_invariants_poll_start
  local url filters0 prio0 binds0 cpu0
  url=$(e2e_muster_url muster)
  filters0=$(e2e_metric "$url" muster_extender_requests_total 'verb="filter"')
  prio0=$(e2e_metric "$url" muster_extender_requests_total 'verb="prioritize"')
  binds0=$(e2e_metric "$url" muster_extender_requests_total 'verb="bind"')
  cpu0=$(e2e_cpu_ms muster)

  # --- tas1: only rack b holds 6
  _19_apply tas1 6 6 1 "$KEY_19"
  tas1_bound() { [[ $(_19_bound tas1) == 6 ]]; }
  wait_for 120 "tas1 bound whole" tas1_bound
  [[ $(_19_racks tas1) == "b " ]] || { e2e_err "tas1 in racks: $(_19_racks tas1)"; return 1; }
  echo "tas1: 6 pods bound, all in rack b"

  # --- tas2, tas3: one in rack a, the other in rack c
  _19_apply tas2 4 4 1 "$KEY_19"
  _19_apply tas3 4 4 1 "$KEY_19"
  two_bound() { [[ $(_19_bound tas2) == 4 && $(_19_bound tas3) == 4 ]]; }
  wait_for 120 "tas2 and tas3 bound whole" two_bound
  local r2 r3
  r2=$(_19_racks tas2) r3=$(_19_racks tas3)
  [[ ${#r2} == 2 && ${#r3} == 2 && $r2 != "$r3" && $r2 != "b " && $r3 != "b " ]] ||
    { e2e_err "tas2 in racks '$r2', tas3 in '$r3': want one of a and c each"; return 1; }
  echo "tas2: rack ${r2% }, tas3: rack ${r3% }, each whole"

  # --- tas4: 3 with 2 free in rack b and none elsewhere: waits whole
  _19_apply tas4 3 3 1 "$KEY_19"
  tas4_waits() {
    local c
    c=$(kubectl_ -n $NS_19 get podgroups.v1beta1.scheduling.k8s.io tas4-0 \
      -o jsonpath='{range .status.conditions[?(@.type=="PodGroupInitiallyScheduled")]}{.status}{" "}{.reason}{end}')
    [[ $c == "False Unschedulable" ]] || return 1
    e2e_gang "$url" $NS_19/tas4 | python3 -c '
import json, sys
g = json.load(sys.stdin)
assert g and g["state"] == "Pending" and g["members"] == 3 and g["reason"], g'
  }
  wait_for 90 "tas4 Unschedulable (kube-scheduler) and Pending in muster with a reason" tas4_waits
  sleep 5
  [[ $(_19_bound tas4) == 0 ]] || { e2e_err "tas4 partly bound"; return 1; }
  echo "tas4 waits: $(e2e_gang "$url" $NS_19/tas4 | python3 -c 'import json,sys; print(json.load(sys.stdin)["reason"])')"
  echo "kube-scheduler: $(kubectl_ -n $NS_19 get podgroups.v1beta1.scheduling.k8s.io tas4-0 \
    -o jsonpath='{range .status.conditions[?(@.type=="PodGroupInitiallyScheduled")]}{.message}{end}' | cut -c1-200)"

  # --- muster's view against the API
  kubectl_ -n $NS_19 get pods -o json > "$MUSTER_E2E_DIR/19-pods.json"
  kubectl_ get nodes -o json > "$MUSTER_E2E_DIR/19-nodes.json"
  curl -sf --max-time 5 "$url/debug/state" > "$MUSTER_E2E_DIR/19-state.json"
  python3 - "$MUSTER_E2E_DIR/19-pods.json" "$MUSTER_E2E_DIR/19-nodes.json" "$MUSTER_E2E_DIR/19-state.json" "$NS_19" "$KEY_19" <<'EOF'
import json, sys
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
rack = {n["metadata"]["name"]: n["metadata"]["labels"].get(sys.argv[5]) for n in json.load(open(sys.argv[2]))["items"]}
state = json.load(open(sys.argv[3])); ns, key = sys.argv[4], sys.argv[5]
for g in state["gangs"]:
    if not g["gang"].startswith(ns + "/"):
        continue
    name = g["gang"].split("/", 1)[1]
    bound = {rack[p["spec"]["nodeName"]] for p in pods.values()
             if p["metadata"]["labels"]["gang"] == name and p["spec"].get("nodeName")}
    assert g["topologyKey"] == key, g
    if g["state"] == "Bound":
        assert {f"{key}={r}" for r in bound} == {g["domain"]}, (g["gang"], g["domain"], bound)
    else:
        assert not bound and g["domain"] is None, (g["gang"], g["domain"], bound)
for s in state["pods"]:
    if s["pod"].startswith(ns + "/"):
        assert s["phase"] in ("Bound", "Pending"), ("planned or held after the cycle", s)
        api = pods[s["pod"].split("/", 1)[1]]["spec"].get("nodeName")
        assert s.get("node") == api, (s, api)
q = {q["name"]: q for q in state["queues"]}["default"]
assert int(q["allocated"]["gpu"]) == 14 and int(q["reserved"]["gpu"]) == 0, q
print("muster /debug/state matches the API: each gang's domain is its pods' rack, 14 GPUs allocated, none reserved")
EOF
  local filters prio binds cpu
  filters=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="filter"') - filters0))
  prio=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="prioritize"') - prio0))
  binds=$(($(e2e_metric "$url" muster_extender_requests_total 'verb="bind"') - binds0))
  cpu=$(($(e2e_cpu_ms muster) - cpu0))
  python3 -c 'import sys; f,p,b,c,n = map(int, sys.argv[1:]); print("topology-aware gang cycle: %d pods bound; per bound pod %.2f filter, %.2f prioritize, %.2f bind calls; muster CPU %.1f ms per bound pod (the scenario whole)" % (n, f/n, p/n, b/n, c/n))' \
    "$filters" "$prio" "$binds" "$cpu" 14
}
