# Preemption inside one queue, end to end. Queue team-a's quota is the whole 8-GPU node
# gpu-lab-worker, so reclaim (between queues) has nothing to do. RayCluster "low" (priority 10: a
# head plus eight 1-GPU workers) takes all 8 GPUs; "high" (priority 50: a head plus six 1-GPU
# workers) then submits and cannot fit -> muster evicts low's gang whole through the Eviction API
# (the API server marks each pod DisruptionTarget/EvictionByEvictionAPI; each gets a Warning
# Event Preempted with the engine's reason "preempted for gang kuberay-lab/high of queue team-a:
# its priority 50 is above 10"), KubeRay re-creates low's pods and they wait Pending whole (8
# GPUs do not fit beside high's 6), high is bound whole and its pods get a Normal Event
# Preempted naming low, muster_evictions_total{kind="preempt",result="evicted"} counts 9.
# Then "peer" (priority 50, like high: a head plus four 1-GPU workers) submits: 2 GPUs are free,
# and high is not of strictly lower priority, so peer waits and nothing is evicted; for 45 s
# after, low's re-created gang (priority 10) does not preempt back and peer does not preempt
# high. The invariants checker runs throughout (a background poller: no gang partly bound, no
# node over allocatable, so no GPU held twice).
#
# Who is preemptible, and at what priority (extender/kube/decode_gang.c, decode_pod.c,
# policy/gang.c). A gang's priority is its source's PriorityClass (a RayCluster's label
# ray.io/priority-class-name, a PodGroup's spec.priorityClassName), else its highest member's
# (spec.priority, which the API server's Priority admission sets from spec.priorityClassName).
# It is preemptible when its source says so (label kai.scheduler/preemptibility on the
# RayCluster, a PodGroup's spec.preemptibility), else when a member is labelled preemptible,
# else by KAI's line: priority below 100. Here both classes are below 100 and nothing is
# labelled, so both gangs are preemptible by priority; the engine's preemption takes only
# victims of strictly lower priority in the same queue, past its preemptMinRuntime (0 here).
#
# Why the pods name no PriorityClass. Only the RayClusters do (KAI's way), so every pod has
# priority 0 and kube-scheduler's own DefaultPreemption (which deletes victims itself, not through
# the Eviction API, and which muster's preempt verb only keeps whole) finds no lower-priority
# pod: what is tested is muster's preemption alone.
#
# Who finishes the deletions: kwok, as in 14-reclaim.sh (its pod-delete stage removes a pod of a
# managed node once it has a deletionTimestamp, as a kubelet would; pod-ready makes bound pods
# Running, so the victims are Running pods, as on a real cluster). Transitions: a snapshot can
# land inside a gang's Bindings or evictions, so the poller counts a broken invariant only when
# a second snapshot a second later still shows it.

F15_NS=kuberay-lab
F15_DIR= # set by scenario: $MUSTER_E2E_DIR/15
F15_REASON="preempted for gang $F15_NS/high of queue team-a: its priority 50 is above 10"

f15_show() {
  kubectl_ -n "$F15_NS" get pods -o custom-columns='NAME:.metadata.name,CLUSTER:.metadata.labels.ray\.io/cluster,NODE:.spec.nodeName,PHASE:.status.phase,DELETING:.metadata.deletionTimestamp' --sort-by=.metadata.name
}

# f15_count <cluster> <what>: how many of its pods are: live (not being deleted) | bound (live
# with a node) | running (live and Running)
f15_count() {
  kubectl_ -n "$F15_NS" get pods -l ray.io/cluster="$1" -o json | python3 -c '
import json, sys
pods = [p for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")]
print(len({"live": pods,
           "bound": [p for p in pods if p["spec"].get("nodeName")],
           "running": [p for p in pods if p.get("status", {}).get("phase") == "Running"]}[sys.argv[1]]))' "$2"
}

# f15_uids <cluster>: "name uid" of its pods, one per line
f15_uids() {
  kubectl_ -n "$F15_NS" get pods -l ray.io/cluster="$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.uid}{"\n"}{end}'
}

# f15_events <reason> <type> <text>: Events of that reason and type whose message holds text,
# as "pod<TAB>message" lines
f15_events() {
  kubectl_ -n "$F15_NS" get events -o json | python3 -c '
import json, sys
reason, kind, text = sys.argv[1:4]
for e in json.load(sys.stdin)["items"]:
    if e.get("reason") == reason and e.get("type") == kind and text in (e.get("message") or ""):
        print("%s\t%s" % (e["involvedObject"]["name"], e["message"]))' "$1" "$2" "$3"
}

# f15_metric <series>: the value of one exact series in muster's /metrics, or "absent"
f15_metric() {
  curl -sf --max-time 5 "$(e2e_muster_url muster)/metrics" |
    awk -v s="$1" 'index($0, s " ") == 1 { v = $NF } END { print (v == "" ? "absent" : v) }'
}
# f15_evictions KIND RESULT: muster_evictions_total{kind,result} counted since the scenario began
# (the muster under test may have evicted for earlier scenarios: 14 reclaims with it)
f15_evictions() {
  local v base_var="F15_BASE_$1_$2"
  v=$(f15_metric "muster_evictions_total{kind=\"$1\",result=\"$2\"}")
  [[ $v == absent ]] && v=0
  echo $((v - ${!base_var:-0}))
}
f15_evictions_baseline() {
  local k r
  for k in preempt reclaim; do
    for r in evicted refused; do
      printf -v "F15_BASE_${k}_$r" '%s' 0
      printf -v "F15_BASE_${k}_$r" '%s' "$(f15_evictions "$k" "$r")"
    done
  done
  F15_BASE_EVICTION_POSTS=$(f15_eviction_posts)
}
# The Evictions muster posted that the API server took (2xx), dry runs included, as its
# muster_kube_requests_total counts them.
f15_eviction_posts() {
  local v code sum=0
  for code in 200 201; do
    v=$(f15_metric "muster_kube_requests_total{verb=\"CREATE\",resource=\"pods/eviction\",code=\"$code\"}")
    [[ $v == absent ]] || sum=$((sum + v))
  done
  echo "$sum"
}

# f15_state [gang]: muster's /debug/state for this namespace's gangs and the evictions, as lines;
# with a gang name, only "<state> <priority> <preemptible> <reason>" of that gang
f15_state() {
  curl -sf --max-time 5 "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
s, ns, only = json.load(sys.stdin), sys.argv[1], sys.argv[2]
for g in s["gangs"]:
    if only:
        if g["gang"] == ns + "/" + only:
            print(g["state"], g["priority"], str(g["preemptible"]).lower(), g.get("reason") or "")
        continue
    if g["gang"].startswith(ns + "/"):
        print("muster: gang %s %s, priority %s%s (%s of %s bound)%s" % (g["gang"], g["state"],
              g["priority"], "" if g["preemptible"] else " non-preemptible", g["bound"],
              g["minMembers"], " - " + g["reason"] if g.get("reason") else ""))
for e in [] if only else s.get("evictions", []):
    print("muster: eviction %s of gang %s for %s: %s%s" % (e["pod"], e["gang"], e["by"], e["result"],
          " - " + e["why"] if e.get("why") else ""))' "$F15_NS" "${1:-}" || true
}

# ---- cleanup (the invariants are polled by e2e_invariants_poll_start, muster.sh) -------------

# Stop what this scenario started (by pid), whatever way it ends.
f15_cleanup() {
  local f=$F15_DIR/watch.pid
  [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null
  rm -f "$f"
}

# ---- checks --------------------------------------------------------------------------------

# Every pod in low-before.txt ("name uid") got the engine's Preempted Warning.
f15_victims_told() {
  local name uid
  f15_events Preempted Warning "$F15_REASON" > "$F15_DIR/victim-events.txt"
  while read -r name uid; do
    grep -q "^$name	" "$F15_DIR/victim-events.txt" || return 1
  done < "$F15_DIR/low-before.txt"
}

# None of the pods in low-before.txt exists any more (by uid: KubeRay re-creates new ones).
f15_victims_gone() {
  local now
  now=$(f15_uids low | awk '{print $2}')
  ! grep -qFf <(awk '{print $2}' "$F15_DIR/low-before.txt") <<<"$now"
}

# The API server's own mark of an Eviction API eviction on every victim, from the watch.
f15_evicted_by_api() {
  python3 - "$F15_DIR/watch.json" "$F15_DIR/low-before.txt" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
want = {l.split()[1]: l.split()[0] for l in open(sys.argv[2]) if l.strip()}
seen, other, dec, i = set(), {}, json.JSONDecoder(), 0
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
        if c.get("type") == "DisruptionTarget":
            if c.get("reason") == "EvictionByEvictionAPI":
                seen.add(obj["metadata"]["uid"])
            else:
                other[obj["metadata"]["uid"]] = c.get("reason")
missing = [want[u] for u in want if u not in seen]
if missing or other:
    print("not evicted through the Eviction API (no DisruptionTarget/EvictionByEvictionAPI): "
          + " ".join(sorted(missing)) + "; other disruptions: %s" % other)
    sys.exit(1)
print(f"all {len(want)} victims carried DisruptionTarget/EvictionByEvictionAPI before they went")
EOF
}

# Lines of muster's log with a filter verdict for one of this cluster's pods: proof that
# kube-scheduler kept asking about it.
f15_filtered() { grep -c "filter.*pod=$F15_NS/$1-" "$MUSTER_E2E_DIR/logs/muster.log" || true; }

scenario() {
  F15_DIR=$MUSTER_E2E_DIR/15
  rm -rf "$F15_DIR" && mkdir -p "$F15_DIR"
  trap f15_cleanup EXIT
  f15_evictions_baseline
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_LIB_DIR/manifests/preempt-queue.yaml"
  e2e_invariants_poll_start

  # ---- low takes the whole node
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-preempt-low.yaml"
  low_running() { [[ $(f15_count low running) -eq 9 ]]; }
  wait_for 150 "low (priority 10) bound whole and Running (kwok): 9 pods, 8 GPUs" low_running
  read -r state prio preemptible _ <<<"$(f15_state low)"
  [[ $state == Bound && $prio == 10 && $preemptible == true ]] ||
    { f15_state; e2e_err "gang low: $state, priority $prio, preemptible $preemptible; want Bound, 10, true"; return 1; }
  f15_uids low > "$F15_DIR/low-before.txt"
  [[ $(grep -c . "$F15_DIR/low-before.txt") -eq 9 ]]

  # ---- high, same queue, priority 50, asks for 6
  # kubectl itself in the background (not the kubectl_ function, whose subshell a kill
  # would leave its kubectl behind, watching until the API server stops)
  "$E2E_KUBECTL" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" -n "$F15_NS" get pods -l ray.io/cluster=low -w --output-watch-events -o json \
    > "$F15_DIR/watch.json" 2>/dev/null &
  echo $! > "$F15_DIR/watch.pid"
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-preempt-high.yaml"
  if ! wait_for 150 "low's 9 pods each get a Warning Preempted: $F15_REASON" f15_victims_told; then
    f15_show
    f15_state
    return 1
  fi
  wait_for 120 "low's original 9 pods gone (evicted, deletions finished by kwok)" f15_victims_gone
  high_whole() { [[ $(f15_count high bound) -eq 7 ]]; }
  wait_for 120 "high (priority 50) bound whole: 7 pods" high_whole
  kill "$(cat "$F15_DIR/watch.pid")" 2>/dev/null && rm -f "$F15_DIR/watch.pid"
  echo "--- the victims' Events:"
  cut -f2 "$F15_DIR/victim-events.txt" | sort | uniq -c
  f15_evicted_by_api

  # KubeRay re-creates low's pods; they wait whole: 8 GPUs do not fit beside high's 6.
  low_back() { [[ $(f15_count low live) -eq 9 ]]; }
  wait_for 90 "KubeRay re-creates low's 9 pods" low_back
  [[ $(f15_count low bound) -eq 0 ]] || { f15_show; e2e_err "re-created low pods bound"; return 1; }

  # The preemptor's side: each of high's pods names the victims.
  f15_events Preempted Normal "evicted gang $F15_NS/low of queue team-a (9 of 9 pods)" > "$F15_DIR/preemptor-events.txt"
  told=$(cut -f1 "$F15_DIR/preemptor-events.txt" | sort -u | grep -c ^high- || true)
  ((told == 7)) || { e2e_err "$told of high's 7 pods have a Normal Preempted Event naming $F15_NS/low"; cat "$F15_DIR/preemptor-events.txt" >&2; return 1; }
  echo "--- the preemptor's Event: $(cut -f2 "$F15_DIR/preemptor-events.txt" | sort -u)"

  local evicted refused reclaimed
  evicted=$(f15_evictions preempt evicted)
  refused=$(f15_evictions preempt refused)
  reclaimed=$(f15_evictions reclaim evicted)
  [[ $evicted == 9 && $refused == 0 && $reclaimed == 0 ]] ||
    { e2e_err "muster_evictions_total: preempt evicted $evicted, refused $refused, reclaim evicted $reclaimed; want 9, 0, 0"; return 1; }
  # Each victim: a dry run, then the eviction itself, both 201 from the real API server.
  local posts=$(($(f15_eviction_posts) - F15_BASE_EVICTION_POSTS))
  ((posts >= 18)) ||
    { e2e_err "muster_kube_requests_total counts $posts Evictions taken (2xx) for 9 victims; want at least 18 (dry run and eviction each)"; return 1; }

  # ---- peer, priority 50 like high: 2 GPUs are free, and an equal priority preempts nothing
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/raycluster-preempt-peer.yaml"
  peer_waits() {
    local state prio _ reason
    read -r state prio _ reason <<<"$(f15_state peer)"
    [[ $state == Pending && $prio == 50 && -n $reason && $(f15_count peer live) -eq 5 ]]
  }
  wait_for 90 "muster sees peer's 5 pods (priority 50) and says why the gang waits" peer_waits
  echo "--- peer waits: $(f15_state peer | cut -d' ' -f4-)"

  # ---- no preemption back and forth: 45 s in which nothing changes. kube-scheduler retries a
  # rejected pod only on a cluster event; touch the waiting pods the way muster's own hand-back
  # does (annotation muster.dev/requeue), so muster is asked about both gangs again in the window.
  local warnings end=$((SECONDS + 45)) l h p w m low0 peer0 dl dp
  warnings=$(f15_events Preempted Warning "" | grep -c . || true)
  low0=$(f15_filtered low) peer0=$(f15_filtered peer)
  e2e_log "watching for 45 s: no further preemption ($warnings Preempted Warnings, $evicted evictions so far)"
  kubectl_ -n "$F15_NS" annotate pods -l 'ray.io/cluster in (low,peer)' --overwrite \
    "muster.dev/requeue=e2e-$(date +%s)" >/dev/null
  while ((SECONDS < end)); do
    l=$(f15_count low bound) h=$(f15_count high bound) p=$(f15_count peer bound)
    w=$(f15_events Preempted Warning "" | grep -c . || true)
    m=$(f15_evictions preempt evicted)
    if ((l != 0 || h != 7 || p != 0)) || [[ $w != "$warnings" || $m != "$evicted" ]]; then
      f15_show
      f15_state
      e2e_err "preemption loop: low $l bound, high $h, peer $p; $w Preempted Warnings (was $warnings), $m evictions (was $evicted)"
      return 1
    fi
    sleep 3
  done
  f15_state
  dl=$(($(f15_filtered low) - low0)) dp=$(($(f15_filtered peer) - peer0))
  e2e_log "muster was asked about low's pods $dl and peer's $dp times in those 45 s, and evicted nothing"
  ((dl > 0 && dp > 0)) || { e2e_err "kube-scheduler did not retry low ($dl) or peer ($dp): the window proves nothing"; return 1; }
  e2e_invariants_poll_stop 10
}
