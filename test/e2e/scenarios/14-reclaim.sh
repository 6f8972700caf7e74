# Reclaim between queues (issue 9), end to end. Queue team-a (quota 0) borrows all 8 GPUs of
# gpu-lab-worker with RayCluster "borrow" (a head plus eight 1-GPU workers); team-b (quota 8)
# then submits RayCluster "six" (a head plus six 1-GPU workers) -> muster evicts team-a's gang
# whole through the Eviction API (its pods get a DisruptionTarget condition from the API server
# and a Warning Event Reclaimed with the engine's reason), KubeRay re-creates borrow's pods and
# they wait whole (8 GPUs do not fit beside six's 6), six is bound whole, its pods get a Normal
# Event Reclaimed naming the victims, muster_evictions_total counts 9. The invariants checker
# runs throughout (a background poller), and for two minutes after nothing is reclaimed again.
#
# Who finishes the deletions. An eviction only sets a pod's deletionTimestamp; a kubelet would
# stop the containers and delete the object, and no kubelet runs here. kwok does (lib.sh starts
# it with the control plane; its built-in "fast" stages): pod-delete removes a managed node's pod
# once it has a deletionTimestamp, as a kubelet does after the grace period, and pod-ready marks
# bound pods Running. kwok rather than a force-deleting loop in the scenario because (1) the
# Eviction API treats Pending pods specially (it ignores PodDisruptionBudgets for them), so
# without Running victims the test would not evict what a real cluster evicts; (2) the
# deletion comes from the node's side, the same way for every pod, with no knowledge of
# muster. kwok manages the nodes annotated kwok.x-k8s.io/node=fake (every e2e_gpu_node).
#
# Transitions. Kubernetes applies a gang's Bindings, and its evictions, one pod at a time, so a
# snapshot can land inside one; the poller counts a broken invariant only when a second
# snapshot a second later still shows it (a gang partly bound for longer than that is a bug).

F14_NS=kuberay-lab
F14_DIR= # set by scenario: $MUSTER_E2E_DIR/14

f14_show() {
  kubectl_ -n "$F14_NS" get pods -o custom-columns='NAME:.metadata.name,CLUSTER:.metadata.labels.ray\.io/cluster,QUEUE:.metadata.labels.muster\.dev/queue,NODE:.spec.nodeName,PHASE:.status.phase,DELETING:.metadata.deletionTimestamp' --sort-by=.metadata.name
  kubectl_ get queues
}

# f14_count <cluster> <what>: how many of its pods are: all | live (not being deleted) |
# bound (live with a node) | terminating
f14_count() {
  kubectl_ -n "$F14_NS" get pods -l ray.io/cluster="$1" -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
what = sys.argv[1]
print(len({"all": pods, "live": live,
           "bound": [p for p in live if p["spec"].get("nodeName")],
           "terminating": [p for p in pods if p["metadata"].get("deletionTimestamp")]}[what]))' "$2"
}

# f14_uids <cluster>: "name uid" of its pods, one per line
f14_uids() {
  kubectl_ -n "$F14_NS" get pods -l ray.io/cluster="$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.uid}{"\n"}{end}'
}

# f14_events <reason> <type> <text>: Events of that reason and type whose message holds text,
# as "pod<TAB>message" lines
f14_events() {
  kubectl_ -n "$F14_NS" get events -o json | python3 -c '
import json, sys
reason, kind, text = sys.argv[1:4]
for e in json.load(sys.stdin)["items"]:
    if e.get("reason") == reason and e.get("type") == kind and text in (e.get("message") or ""):
        print("%s\t%s" % (e["involvedObject"]["name"], e["message"]))' "$1" "$2" "$3"
}

# f14_metric <series>: the value of one exact series in muster's /metrics, or "absent"
f14_metric() {
  curl -sf --max-time 5 "$(e2e_muster_url muster)/metrics" |
    awk -v s="$1" 'index($0, s " ") == 1 { v = $NF } END { print (v == "" ? "absent" : v) }'
}

f14_fair_share() { kubectl_ get queue "$1" -o jsonpath='{.status.fairShare.gpu}'; }

# ---- cleanup (the invariants are polled by e2e_invariants_poll_start, muster.sh) -------------

# Stop what this scenario started (by pid), whatever way it ends.
f14_cleanup() {
  local f=$F14_DIR/watch.pid
  [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null
  rm -f "$f"
}

# ---- checks --------------------------------------------------------------------------------

# f14_victims_told <reclaimer>: every pod in $F14_DIR/borrow-before.txt ("name uid") got the
# engine's Reclaimed Warning for gang $F14_NS/<reclaimer>.
f14_victims_told() {
  local name uid
  f14_events Reclaimed Warning "evicted for gang $F14_NS/$1 of queue team-b" > "$F14_DIR/victim-events.txt"
  while read -r name uid; do
    grep -q "^$name	" "$F14_DIR/victim-events.txt" || return 1
  done < "$F14_DIR/borrow-before.txt"
}
f14_victims_told_six() { f14_victims_told six; }
f14_victims_told_solo() { f14_victims_told solo; }

# None of the pods in borrow-before.txt exists any more (by uid: KubeRay re-creates new ones).
f14_victims_gone() {
  local now
  now=$(f14_uids borrow | awk '{print $2}')
  ! grep -qFf <(awk '{print $2}' "$F14_DIR/borrow-before.txt") <<<"$now"
}

# The API server's own mark of an Eviction API eviction on every victim, from the watch.
f14_evicted_by_api() {
  python3 - "$F14_DIR/watch.json" "$F14_DIR/borrow-before.txt" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
want = {l.split()[1]: l.split()[0] for l in open(sys.argv[2]) if l.strip()}
seen, dec, i = set(), json.JSONDecoder(), 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    try:
        ev, i = dec.raw_decode(text, i)
    except ValueError:
        break  # the last event, cut off when the watch was stopped
    obj = ev.get("object", ev)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionTarget" and c.get("reason") == "EvictionByEvictionAPI":
            seen.add(obj["metadata"]["uid"])
missing = [want[u] for u in want if u not in seen]
if missing:
    print("not evicted through the Eviction API (no DisruptionTarget/EvictionByEvictionAPI): "
          + " ".join(sorted(missing)))
    sys.exit(1)
print(f"all {len(want)} victims carried DisruptionTarget/EvictionByEvictionAPI before they went")
EOF
}

f14_state() {
  curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
s = json.load(sys.stdin)
for q in s["queues"]:
    if q["name"] in ("team-a", "team-b"):
        print("muster: queue %s allocated gpu %s, fair share gpu %s, demand gpu %s" % (
            q["name"], q["allocated"]["gpu"], q.get("fairShare", {}).get("gpu"), q.get("demand", {}).get("gpu")))
for g in s["gangs"]:
    if g["gang"].startswith(sys.argv[1] + "/"):
        print("muster: gang %s %s (%s of %s bound)%s" % (g["gang"], g["state"], g["bound"], g["minMembers"],
              " - " + g["reason"] if g.get("reason") else ""))
for e in s.get("evictions", []):
    print("muster: eviction %s of gang %s for %s: %s%s" % (e["pod"], e["gang"], e["by"], e["result"],
          " - " + e["why"] if e.get("why") else ""))' "$F14_NS" || true
}

scenario() {
  F14_DIR=$MUSTER_E2E_DIR/14
  rm -rf "$F14_DIR" && mkdir -p "$F14_DIR"
  trap f14_cleanup EXIT
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_LIB_DIR/manifests/reclaim-queues.yaml"
  e2e_invariants_poll_start
  # What muster evicts with, granted by manifests/rbac.yaml alone (its ServiceAccount's token).
  local sa=system:serviceaccount:muster-system:muster
  kubectl_ auth can-i create pods --subresource=eviction -n "$F14_NS" --as="$sa" >/dev/null ||
    { e2e_err "muster's ServiceAccount may not create pods/eviction (manifests/rbac.yaml)"; return 1; }
  kubectl_ auth can-i list poddisruptionbudgets.policy -n "$F14_NS" --as="$sa" >/dev/null ||
    { e2e_err "muster's ServiceAccount may not list poddisruptionbudgets (manifests/rbac.yaml)"; return 1; }
  kubectl_ auth can-i delete pods -n "$F14_NS" --as="$sa" >/dev/null 2>&1 &&
    { e2e_err "muster's ServiceAccount may delete workload pods: evictions only"; return 1; }

  # ---- team-a borrows the whole node
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-reclaim-borrow.yaml"
  borrow_bound() { [[ $(f14_count borrow bound) -eq 9 ]]; }
  wait_for 120 "borrow (team-a, quota 0) bound whole: 9 pods, 8 GPUs" borrow_bound
  borrow_running() {
    [[ $(kubectl_ -n "$F14_NS" get pods -l ray.io/cluster=borrow -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | grep -c .) -eq 9 ]]
  }
  wait_for 60 "kwok marks borrow's 9 pods Running" borrow_running
  team_a_8() { [[ $(kubectl_ get queue team-a -o jsonpath='{.status.allocated.gpu}') == 8 ]]; }
  wait_for 60 "kubectl get queue team-a: status.allocated.gpu == 8" team_a_8
  # The printer column is there, whatever the engine computes.
  kubectl_ get queues -o wide | tee "$F14_DIR/queues-borrowed.txt"
  grep -q "GPU FAIR SHARE" "$F14_DIR/queues-borrowed.txt" ||
    { e2e_err "kubectl get queues has no GPU FAIR SHARE column"; return 1; }
  for series in 'muster_evictions_total{kind="reclaim",result="evicted"}' \
    'muster_queue_fair_share{queue="team-a",resource="gpu"}' 'muster_queue_demand{queue="team-a",resource="gpu"}'; do
    [[ $(f14_metric "$series") != absent ]] || { e2e_err "/metrics has no $series"; return 1; }
  done
  # Alone, team-a's fair share is the whole node (nobody else asks).
  fair_a_8() { [[ $(f14_fair_share team-a) == 8 ]]; }
  wait_for 30 "queue team-a: status.fairShare.gpu == 8 while nobody else asks" fair_a_8
  f14_state
  f14_uids borrow > "$F14_DIR/borrow-before.txt"
  [[ $(grep -c . "$F14_DIR/borrow-before.txt") -eq 9 ]]

  # ---- team-b, within its quota, asks for 6
  # kubectl itself in the background (not the kubectl_ function, whose subshell a kill
  # would leave its kubectl behind, watching until the API server stops)
  "$E2E_KUBECTL" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" -n "$F14_NS" get pods -l ray.io/cluster=borrow -w --output-watch-events -o json \
    > "$F14_DIR/watch.json" 2>/dev/null &
  echo $! > "$F14_DIR/watch.pid"
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-reclaim-six.yaml"
  six_pods() { [[ $(f14_count six live) -eq 7 ]]; }
  wait_for 90 "KubeRay creates six's 7 pods" six_pods
  if ! wait_for 120 "borrow's 9 pods each get a Warning Reclaimed for gang $F14_NS/six" f14_victims_told_six; then
    f14_show
    f14_state
    return 1
  fi
  wait_for 120 "borrow's original 9 pods gone (evicted, deletions finished by kwok)" f14_victims_gone
  six_whole() { [[ $(f14_count six bound) -eq 7 ]]; }
  wait_for 120 "six (team-b) bound whole: 7 pods" six_whole
  kill "$(cat "$F14_DIR/watch.pid")" 2>/dev/null && rm -f "$F14_DIR/watch.pid"
  f14_show
  f14_state
  echo "--- the victims' Events:"
  cut -f2 "$F14_DIR/victim-events.txt" | sort | uniq -c
  f14_evicted_by_api

  # KubeRay re-created borrow's pods; they wait whole: 8 GPUs do not fit beside six's 6.
  borrow_back() { [[ $(f14_count borrow live) -eq 9 ]]; }
  wait_for 90 "KubeRay re-creates borrow's 9 pods" borrow_back
  [[ $(f14_count borrow bound) -eq 0 ]] || { f14_show; e2e_err "re-created borrow pods bound"; return 1; }

  # The reclaimer's side: each of six's pods names the victims.
  f14_events Reclaimed Normal "$F14_NS/borrow" > "$F14_DIR/reclaimer-events.txt"
  told=$(cut -f1 "$F14_DIR/reclaimer-events.txt" | sort -u | grep -c ^six- || true)
  ((told == 7)) || { e2e_err "$told of six's 7 pods have a Normal Reclaimed Event naming $F14_NS/borrow"; cat "$F14_DIR/reclaimer-events.txt" >&2; return 1; }
  echo "--- the reclaimer's Event: $(cut -f2 "$F14_DIR/reclaimer-events.txt" | sort -u)"

  evicted=$(f14_metric 'muster_evictions_total{kind="reclaim",result="evicted"}')
  refused=$(f14_metric 'muster_evictions_total{kind="reclaim",result="refused"}')
  [[ $evicted == 9 && $refused == 0 ]] ||
    { e2e_err "muster_evictions_total: evicted $evicted, refused $refused; want 9 and 0"; return 1; }
  # KAI's division: team-b first gets min(quota 8, demand 6) = 6; the 2 left go to team-a.
  fair_after() { [[ $(f14_fair_share team-b) == 6 && $(f14_fair_share team-a) == 2 ]]; }
  wait_for 30 "fair shares after the reclaim: team-b 6 GPUs, team-a 2" fair_after
  kubectl_ get queues

  # ---- no reclaim loop: two minutes in which nothing changes
  local warnings end=$((SECONDS + 120)) a b w m
  warnings=$(f14_events Reclaimed Warning "" | grep -c . || true)
  e2e_log "watching for two minutes: no further reclaim ($warnings Reclaimed Warnings, $evicted evictions so far)"
  while ((SECONDS < end)); do
    a=$(f14_count borrow bound) b=$(f14_count six bound)
    w=$(f14_events Reclaimed Warning "" | grep -c . || true)
    m=$(f14_metric 'muster_evictions_total{kind="reclaim",result="evicted"}')
    if ((a != 0 || b != 7)) || [[ $w != "$warnings" || $m != "$evicted" ]]; then
      f14_show
      f14_state
      e2e_err "reclaim loop: borrow $a bound, six $b bound, $w Reclaimed Warnings (was $warnings), $m evictions (was $evicted)"
      return 1
    fi
    sleep 5
  done
  f14_state

  # ---- a pod kube-scheduler never asks muster about
  # six goes; borrow, waiting whole, is bound again on all 8 GPUs. Then team-b asks for one GPU
  # with a lone pod: no node passes kube-scheduler's own filter (Insufficient nvidia.com/gpu),
  # so no filter reaches muster; muster finds it waiting unasked (evictions.unaskedWait, 500 ms)
  # and reclaims for it: borrow whole (a gang is a victim whole), solo bound, borrow back
  # waiting (8 GPUs do not fit beside solo's 1).
  # (six's pods are deleted with it by hand, as before kube-controller-manager's garbage
  # collector ran here; kwok finishes.)
  kubectl_ -n "$F14_NS" delete raycluster six --wait=true
  kubectl_ -n "$F14_NS" delete pods -l ray.io/cluster=six --wait=false
  wait_for 180 "borrow bound whole again once six is gone" borrow_bound
  wait_for 60 "kwok marks borrow's 9 pods Running" borrow_running
  f14_uids borrow > "$F14_DIR/borrow-before.txt"
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/pod-reclaim-solo.yaml"
  solo_refused_in_tree() {
    kubectl_ -n "$F14_NS" get events --field-selector involvedObject.name=solo,reason=FailedScheduling \
      -o jsonpath='{.items[*].message}' | grep -q "Insufficient nvidia.com/gpu"
  }
  wait_for 60 "kube-scheduler's own filter turns solo away (Insufficient nvidia.com/gpu): muster is not asked" \
    solo_refused_in_tree
  if ! wait_for 120 "borrow's 9 pods each get a Warning Reclaimed for $F14_NS/solo" f14_victims_told_solo; then
    f14_show
    f14_state
    return 1
  fi
  solo_bound() { [[ -n $(kubectl_ -n "$F14_NS" get pod solo -o jsonpath='{.spec.nodeName}') ]]; }
  wait_for 120 "solo (team-b) bound once borrow's pods are gone" solo_bound
  wait_for 90 "KubeRay re-creates borrow's 9 pods" borrow_back
  sleep 20
  [[ $(f14_count borrow bound) -eq 0 ]] || { f14_show; e2e_err "re-created borrow pods bound beside solo"; return 1; }
  solo_bound || { e2e_err "solo lost its node"; return 1; }
  evicted=$(f14_metric 'muster_evictions_total{kind="reclaim",result="evicted"}')
  [[ $evicted == 18 ]] || { e2e_err "muster_evictions_total evicted $evicted; want 18 (9 for six, 9 for solo)"; return 1; }
  grep "kube-scheduler did not ask about" "$MUSTER_E2E_DIR/logs/muster.log" ||
    { e2e_err "muster's log does not say it decided evictions for an unasked gang"; return 1; }
  f14_show
  f14_state
  e2e_invariants_poll_stop 20
}
