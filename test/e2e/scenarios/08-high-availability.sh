# High availability as shipped: two kube-scheduler + muster pairs, kube-scheduler's own leader
# election (Lease muster-system/muster-scheduler, 15 s / 10 s / 2 s, from
# manifests/scheduler-config.yaml) decides which pair schedules. Gangs arrive in a loop; while
# they arrive the leader pair dies (its kube-scheduler by SIGKILL, so the Lease is not released
# and must expire, and its muster with it, possibly in the middle of a bind barrier) -> the
# other kube-scheduler acquires the Lease, calls its own muster (which never received a call
# while standing by), and every gang ends bound whole. Gang g3 is caught in the leader's bind
# barrier for sure: one member is held back by a scheduling gate until the leader is dead. Capacity: 8 gangs of 2 GPUs on two
# 8-GPU nodes, an exact fit, so a GPU booked twice or lost across the takeover leaves a gang out.

F08_NS=ha
F08_LEASE=${E2E_LEASE:-muster-scheduler}
F08_GANGS=8

f08_rc() {
  cat <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: { name: $1, namespace: $F08_NS }
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
          - name: ray-head
            image: rayproject/ray:2.52.0
            resources: { limits: { cpu: "1", memory: 1Gi }, requests: { cpu: "1", memory: 1Gi } }
  workerGroupSpecs:
    - groupName: w
      replicas: 2
      minReplicas: 2
      maxReplicas: 2
      rayStartParams: {}
      template:
        spec:
          schedulerName: muster
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              resources:
                limits:   { cpu: "1", memory: 1Gi, nvidia.com/gpu: 1 }
                requests: { cpu: "1", memory: 1Gi, nvidia.com/gpu: 1 }
EOF
  # g3 has one more member, CPU only, held back by a scheduling gate: the rest of g3 waits at
  # the leader muster's bind barrier for it, and the leader pair dies right there.
  [[ $1 == g3 ]] || return 0
  cat <<EOF
    - groupName: late
      replicas: 1
      minReplicas: 1
      maxReplicas: 1
      rayStartParams: {}
      template:
        spec:
          schedulerName: muster
          schedulingGates: [{ name: e2e.muster.dev/hold }]
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              resources: { limits: { cpu: "1", memory: 1Gi }, requests: { cpu: "1", memory: 1Gi } }
EOF
}
f08_size() { if [[ $1 == g3 ]]; then echo 4; else echo 3; fi; }

f08_holder() { kubectl_ -n muster-system get lease "$F08_LEASE" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
f08_leads() { grep -q "Successfully acquired lease" "$MUSTER_E2E_DIR/logs/$1.log"; }
f08_bound() { kubectl_ -n "$F08_NS" get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep -c . || true; }
f08_count() { kubectl_ -n "$F08_NS" get pods -l "ray.io/cluster=$1" -o name | grep -c . || true; }
f08_all_whole() {
  local i
  for ((i = 1; i <= F08_GANGS; i++)); do
    local n; n=$(f08_size "g$i")
    [[ $(f08_count "g$i") -eq $n && $(f08_bound "g$i") -eq $n ]] || return 1
  done
}
f08_summary() {
  local i line=""
  for ((i = 1; i <= F08_GANGS; i++)); do line+=" g$i=$(f08_bound "g$i")/$(f08_count "g$i")"; done
  echo "  bound per gang:$line"
}
# A component's command line, saved before it is killed, to start it again exactly as it ran
# (same config, same port: later scenarios reach `muster` at the URL run.sh recorded).
f08_save() { cp "/proc/$(cat "$MUSTER_E2E_DIR/pids/$1.pid")/cmdline" "$MUSTER_E2E_DIR/$1.cmdline"; }
f08_restore() {
  local cmd
  mapfile -d '' -t cmd < "$MUSTER_E2E_DIR/$1.cmdline"
  _e2e_start "$1" "${cmd[@]}"
  disown "$!" 2>/dev/null || true
}
f08_filters() { grep -c "filter pod=$F08_NS/" "$MUSTER_E2E_DIR/logs/$1.log" || true; }

scenario() {
  local leader_s leader_m standby_s standby_m holder0 holder1 i p
  e2e_gpu_node gpu-ha-1 8
  e2e_gpu_node gpu-ha-2 8
  kubectl_ create namespace "$F08_NS" >/dev/null

  # The second pair, as the Deployment's second replica would be.
  e2e_muster_start muster-b
  e2e_muster_scheduler kube-scheduler-b "$(e2e_muster_url muster-b)"
  wait_for 60 "a holder for Lease $F08_LEASE" f08_holder
  holder0=$(f08_holder)
  if f08_leads kube-scheduler && ! f08_leads kube-scheduler-b; then
    leader_s=kube-scheduler leader_m=muster standby_s=kube-scheduler-b standby_m=muster-b
  elif f08_leads kube-scheduler-b && ! f08_leads kube-scheduler; then
    leader_s=kube-scheduler-b leader_m=muster-b standby_s=kube-scheduler standby_m=muster
  else
    e2e_fail "cannot tell the leader: both or neither kube-scheduler logged an acquired lease"; return 1
  fi
  echo "Lease $F08_LEASE held by $holder0 -> leader pair $leader_s + $leader_m; standby $standby_s + $standby_m"
  grep -h "acquire leader lease\|Successfully acquired lease" "$MUSTER_E2E_DIR/logs/kube-scheduler.log" \
    "$MUSTER_E2E_DIR/logs/kube-scheduler-b.log" | sed 's/^/  /'

  # Gangs arrive; the leader pair dies when the third is at muster's bind barrier (or bound).
  for ((i = 1; i <= 3; i++)); do f08_rc "g$i" | kubectl_ apply -f - >/dev/null; done
  f08_g3_at_bind() {
    [[ $(grep -c "bind held at the gang barrier pod=$F08_NS/g3-" "$MUSTER_E2E_DIR/logs/$leader_m.log") -ge 3 ]]
  }
  wait_for 120 "g3's three ungated members held at the leader muster's bind barrier" f08_g3_at_bind
  f08_save "$leader_s"
  f08_save "$leader_m"
  e2e_muster_kill "$leader_s" KILL
  e2e_muster_kill "$leader_m" KILL
  echo "leader pair killed; at that moment:"
  f08_summary
  grep -E "pod=$F08_NS/g3-" "$MUSTER_E2E_DIR/logs/$leader_m.log" | grep -E "held|bound" | tail -n 2 | cut -c1-200 | sed 's/^/  /'
  echo "  the standby muster got $(f08_filters "$standby_m") filter calls while standing by (expect 0)"
  [[ $(f08_filters "$standby_m") -eq 0 ]] || { e2e_fail "the standby muster was called while not leading"; return 1; }
  [[ $(f08_bound g3) -eq 0 ]] || { e2e_fail "g3 partly bound while a member was gated"; return 1; }
  for p in $(kubectl_ -n "$F08_NS" get pods -l ray.io/cluster=g3,ray.io/group=late -o name); do
    kubectl_ -n "$F08_NS" patch "$p" --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
  done
  echo "  g3's gate lifted: its 4 members are for the next leader to bind whole"
  for ((i = 4; i <= F08_GANGS; i++)); do
    f08_rc "g$i" | kubectl_ apply -f - >/dev/null
    sleep 1
  done

  f08_moved() { h=$(f08_holder); [[ -n $h && $h != "$holder0" ]] && f08_leads "$standby_s"; }
  wait_for 120 "$standby_s to acquire Lease $F08_LEASE" f08_moved
  holder1=$(f08_holder)
  echo "Lease $F08_LEASE now held by $holder1 ($standby_s):"
  grep -h "Successfully acquired lease" "$MUSTER_E2E_DIR/logs/$standby_s.log" | sed 's/^/  /'

  wait_for 120 "all $F08_GANGS gangs bound whole" f08_all_whole
  f08_summary
  echo "  the new leader's muster ($standby_m) answered $(f08_filters "$standby_m") filter calls"
  kubectl_ -n "$F08_NS" get pods --sort-by=.metadata.name \
    -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName'
  curl -sf "$(e2e_muster_url "$standby_m")/debug/state" | python3 -c '
import json, sys
gangs = [g for g in json.load(sys.stdin)["gangs"] if g["gang"].startswith(sys.argv[1] + "/")]
for g in sorted(gangs, key=lambda g: g["gang"]):
    print("  %-6s %-8s %d/%d" % (g["gang"], g["state"], g["bound"], g["minMembers"]))
bad = [g["gang"] for g in gangs if g["state"] != "Bound"]
assert not bad, "not Bound in the new leader muster: %s" % bad' "$F08_NS"
  e2e_invariants

  # Back to the baseline run.sh expects: `muster` + `kube-scheduler` leading, no -b pair.
  if ! _e2e_alive muster; then
    f08_restore muster
    _e2e_wait_http muster 90 "$(e2e_muster_url muster)/readyz"
  fi
  _e2e_alive kube-scheduler || f08_restore kube-scheduler
  e2e_stop kube-scheduler-b
  e2e_stop muster-b
  f08_baseline_leads() { [[ $(f08_holder) != "$holder1" || $leader_s == kube-scheduler-b ]] && f08_leads kube-scheduler; }
  wait_for 120 "kube-scheduler to lead again" f08_baseline_leads
  echo "baseline restored: Lease $F08_LEASE held by $(f08_holder) (kube-scheduler)"
}
