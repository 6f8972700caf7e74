# Faults. (a) `kill -9` muster while a gang is in its bind barrier, at three moments, and restart
# it the way a container restart would (same command line, same port: kube-scheduler keeps
# calling the same URL) -> every gang ends bound whole or not at all, and no GPU share is
# booked twice (the shares are packed so tightly that a share counted twice, or one forgotten
# after the restart, leaves a gang without room or a device over one):
#   1. binds held at the barrier, nothing bound yet (a member is held back by a scheduling gate);
#   2. right after the commit's first Binding (emulated: muster killed at the barrier, then the
#      head's Binding posted to the node muster had planned, as muster's commit would have);
#   3. a real race: SIGKILL as soon as muster's log shows the gang's first "bound".
# (b) kube-apiserver stopped and started again with the same flags and port -> muster's watches
# reconnect (muster_watch_restarts_total grows, /readyz ok) and it keeps scheduling: a node and a
# RayCluster created after the restart are seen and the gang binds whole.

F06_NS=faults
F06_GATE=e2e.muster.dev/hold

# f06_rc NAME HEAD_GPU WORKERS WORKER_KIND GATED: a RayCluster whose head has HEAD_GPU whole
# GPUs (0 = none), WORKERS workers in group "w" asking WORKER_KIND ("half" = gpu-fraction 0.5,
# "gpu" = one whole GPU), and GATED (0/1) more such workers in group "late" carrying a
# scheduling gate: kube-scheduler does not take them until the gate is removed, so the rest of
# the gang reaches bind and is held at muster's barrier as long as the test wants.
f06_rc() {
  local name=$1 head_gpu=$2 n=$3 kind=$4 gated=$5 head_res worker_meta worker_res group
  head_res='{ cpu: "1", memory: 1Gi }'
  ((head_gpu > 0)) && head_res="{ cpu: \"1\", memory: 1Gi, nvidia.com/gpu: $head_gpu }"
  if [[ $kind == half ]]; then
    worker_meta='annotations: { gpu-fraction: "0.5" }'
    worker_res='{ cpu: "1", memory: 1Gi }'
  else
    worker_meta='labels: { e2e: gpu }'
    worker_res='{ cpu: "1", memory: 1Gi, nvidia.com/gpu: 1 }'
  fi
  cat <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: { name: $name, namespace: $F06_NS }
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
            resources: { limits: $head_res, requests: $head_res }
  workerGroupSpecs:
EOF
  for group in w late; do
    local count=$n gate=""
    if [[ $group == late ]]; then
      ((gated > 0)) || continue
      count=$gated gate="schedulingGates: [{ name: $F06_GATE }]"
    fi
    cat <<EOF
    - groupName: $group
      replicas: $count
      minReplicas: $count
      maxReplicas: $count
      rayStartParams: {}
      template:
        metadata: { $worker_meta }
        spec:
          schedulerName: muster
          $gate
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              resources: { limits: $worker_res, requests: $worker_res }
EOF
  done
}

f06_pods() { kubectl_ -n "$F06_NS" get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}'; }
f06_count() { f06_pods "$1" | grep -c . || true; }
f06_bound() { f06_pods "$1" | awk 'NF == 2' | grep -c . || true; }
f06_all_bound() { local n; n=$(f06_count "$1"); [[ $n -eq $2 && $(f06_bound "$1") -eq $2 ]]; }
f06_exist() { [[ $(f06_count "$1") -eq $2 ]]; }
f06_show() {
  kubectl_ -n "$F06_NS" get pods -l "ray.io/cluster in ($(IFS=,; echo "$*"))" --sort-by=.metadata.name -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,SHARE:.metadata.annotations.muster\.dev/gpu-fraction,GROUP:.metadata.annotations.muster\.dev/gpu-group,NODE:.spec.nodeName'
}

f06_url() { e2e_muster_url muster; }
f06_log() { echo "$MUSTER_E2E_DIR/logs/muster.log"; }
f06_held() { grep -q "bind held at the gang barrier pod=$F06_NS/$1-" "$(f06_log)"; }
f06_ready() { curl -sf --max-time 3 "$(f06_url)/readyz" >/dev/null; }
f06_watch_restarts() {
  curl -sf --max-time 3 "$(f06_url)/metrics" | awk '/^muster_watch_restarts_total/ {s += $NF} END {print s + 0}'
}
f06_gang_state() { # muster's own view of one gang: "state bound/min waitingAtBind"
  curl -sf --max-time 3 "$(f06_url)/debug/state" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["gangs"]:
    if g["gang"] == sys.argv[1]:
        print(g["state"], "%d/%d" % (g["bound"], g["minMembers"]), "waitingAtBind=%d" % g["waitingAtBind"], g.get("reason") or "")
' "$F06_NS/$1"
}

# The command line of a running component (as started by _e2e_start), into array F06_CMD.
f06_cmdline() {
  local pid
  pid=$(cat "$MUSTER_E2E_DIR/pids/$1.pid") && [[ -r /proc/$pid/cmdline ]] || return 1
  mapfile -d '' -t F06_CMD < "/proc/$pid/cmdline"
}

# SIGKILL muster; the caller restarts it with f06_muster_start. Its log is kept aside.
f06_muster_kill() {
  f06_cmdline muster || { e2e_fail "muster is not running"; return 1; }
  F06_MUSTER_CMD=("${F06_CMD[@]}")
  e2e_muster_kill muster KILL
  cp "$(f06_log)" "$MUSTER_E2E_DIR/logs/muster.06-kill$1.log"
}

# Restart muster exactly as it ran: same config, same listen port (a container restart).
f06_muster_start() {
  _e2e_start muster "${F06_MUSTER_CMD[@]}"
  disown "$!" 2>/dev/null || true # no "Killed" notice from this shell at the next kill
  _e2e_wait_http muster 90 "$(f06_url)/readyz" || return 1
  e2e_log "muster restarted on $(f06_url) (same port: kube-scheduler keeps its extender URL)"
}

f06_ungate() {
  local p
  for p in $(kubectl_ -n "$F06_NS" get pods -l "ray.io/cluster=$1,ray.io/group=late" -o name); do
    kubectl_ -n "$F06_NS" patch "$p" --type=json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
  done
}

# Stop kube-apiserver and start it again with the same command line (flags, port, certs).
f06_apiserver_restart() {
  f06_cmdline kube-apiserver || { e2e_fail "kube-apiserver is not running"; return 1; }
  local cmd=("${F06_CMD[@]}")
  e2e_stop kube-apiserver
  sleep "${1:-3}" # long enough for every watch to notice and fail a reconnect or two
  _e2e_start kube-apiserver "${cmd[@]}"
  disown "$!" 2>/dev/null || true
  _e2e_wait_http kube-apiserver 180 --cacert "$E2E_CA_CERT" \
    -H "Authorization: Bearer $E2E_ADMIN_TOKEN" "$E2E_APISERVER_URL/readyz" || return 1
  e2e_log "kube-apiserver restarted at $E2E_APISERVER_URL"
}

# GPU groups on gpu-a as the API server records them (annotations), next to muster's view.
f06_groups() {
  kubectl_ get pods -A -o json | python3 -c '
import json, sys
from fractions import Fraction
g = {}
for p in json.load(sys.stdin)["items"]:
    a = p["metadata"].get("annotations", {})
    if p["spec"].get("nodeName") and "muster.dev/gpu-group" in a:
        k = p["spec"]["nodeName"] + "/" + a["muster.dev/gpu-group"]
        g[k] = g.get(k, 0) + Fraction(a.get("muster.dev/gpu-fraction", "0"))
print("  GPU groups (API server):", " ".join("%s=%s" % (k, float(v)) for k, v in sorted(g.items())) or "none")'
}

# After each fault: the shares and the invariants, so a broken one is blamed on its moment.
f06_check() {
  f06_groups
  e2e_invariants || { e2e_fail "invariants broken after $1"; return 1; }
}

# Every member of every gang bound, or none.
f06_whole_or_none() {
  local rc n b
  for rc in "$@"; do
    n=$(f06_count "$rc") b=$(f06_bound "$rc")
    if ((b != 0 && b != n)); then e2e_fail "gang $F06_NS/$rc partly bound: $b of $n"; return 1; fi
  done
}

scenario() {
  local w0 w1 head node log
  # One node of 4 GPUs for the shares: 1.5 + 1.5 + 1 GPU of half-GPU workers fill it exactly.
  e2e_gpu_node gpu-a 4
  kubectl_ create namespace "$F06_NS" >/dev/null

  # Before any fault: 3 halves bound (one GPU full, one half used). The restarted muster must
  # charge them again from their annotations, or later gangs would be put on their devices.
  f06_rc steady 0 3 half 0 | kubectl_ apply -f - >/dev/null
  wait_for 120 "steady: 4 pods bound" f06_all_bound steady 4
  f06_groups

  # ---- (a)1: kill -9 while binds are held at the barrier ------------------------------------
  echo "--- (a)1 SIGKILL muster while gang 'held' waits at the bind barrier"
  f06_rc held 0 2 half 1 | kubectl_ apply -f - >/dev/null
  wait_for 90 "held: 4 pods exist" f06_exist held 4
  wait_for 90 "held: a bind held at the gang barrier" f06_held held
  grep "bind held at the gang barrier pod=$F06_NS/held-" "$(f06_log)" | tail -n 3
  f06_muster_kill 1
  echo "at the kill: $(f06_bound held) of 4 'held' pods bound (the barrier holds: expect 0)"
  [[ $(f06_bound held) -eq 0 ]] || { e2e_fail "held: bound before the gang was whole"; return 1; }
  f06_muster_start
  # kube-scheduler retries; the new muster re-plans the gang and holds it at the barrier again
  wait_for 120 "held: bind held again by the restarted muster" f06_held held
  echo "restarted muster's view: $(f06_gang_state held)"
  [[ $(f06_bound held) -eq 0 ]] || { e2e_fail "held: bound while a member is still gated"; return 1; }
  f06_ungate held
  wait_for 120 "held: all 4 pods bound" f06_all_bound held 4
  echo "after the gate is lifted: $(f06_gang_state held)"
  f06_check "(a)1"

  # ---- (a)2: killed right after the commit's first Binding ----------------------------------
  echo "--- (a)2 SIGKILL muster at the barrier, then the head's Binding lands (as a commit's first would)"
  f06_rc first 0 1 half 1 | kubectl_ apply -f - >/dev/null
  wait_for 90 "first: 3 pods exist" f06_exist first 3
  head=$(kubectl_ -n "$F06_NS" get pods -l ray.io/cluster=first,ray.io/node-type=head -o jsonpath='{.items[0].metadata.name}')
  f06_head_held() { grep -q "bind held at the gang barrier pod=$F06_NS/$head " "$(f06_log)"; }
  wait_for 90 "first: the head's bind held at the barrier" f06_head_held
  node=$(grep "bind held at the gang barrier pod=$F06_NS/$head " "$(f06_log)" | tail -n 1 | sed -n 's/.* node=\([^ ]*\).*/\1/p')
  f06_muster_kill 2
  kubectl_ create --raw "/api/v1/namespaces/$F06_NS/pods/$head/binding" -f - >/dev/null <<EOF
{"apiVersion":"v1","kind":"Binding","metadata":{"name":"$head"},"target":{"apiVersion":"v1","kind":"Node","name":"$node"}}
EOF
  echo "while muster is down: $(f06_bound first) of 3 'first' pods bound (head on $node)"
  f06_muster_start
  echo "restarted muster's view: $(f06_gang_state first)"
  f06_ungate first
  wait_for 120 "first: all 3 pods bound" f06_all_bound first 3
  echo "after the gate is lifted: $(f06_gang_state first)"
  f06_check "(a)2"

  # ---- (a)3: the real race: SIGKILL on the gang's first "bound" ------------------------------
  echo "--- (a)3 SIGKILL muster as soon as its log shows gang 'race' being bound"
  e2e_gpu_node gpu-b 6 # gpu-a is full; 'race' (6 whole GPUs) fills this one exactly
  log=$(f06_log)
  exec {f06_fd}< <(exec tail -n +1 -F "$log" 2>/dev/null)
  local tail_pid=$! line hit=0
  f06_rc race 0 6 gpu 0 | kubectl_ apply -f - >/dev/null
  local deadline=$((SECONDS + 120))
  while ((SECONDS < deadline)); do
    IFS= read -r -t 5 -u "$f06_fd" line || continue
    if [[ $line == *"info  bound pod=$F06_NS/race-"* ]]; then hit=1; break; fi
  done
  f06_muster_kill 3
  kill "$tail_pid" 2>/dev/null || true
  exec {f06_fd}<&-
  ((hit)) || { e2e_fail "race: muster never logged a bind of the gang"; return 1; }
  echo "at the kill: $(f06_bound race) of 7 'race' pods bound; muster's last words:"
  grep -E "pod=$F06_NS/race-" "$MUSTER_E2E_DIR/logs/muster.06-kill3.log" | grep -E " bound |held" | tail -n 4
  f06_muster_start
  wait_for 120 "race: all 7 pods bound" f06_all_bound race 7
  echo "restarted muster's view: $(f06_gang_state race)"
  f06_check "(a)3"

  f06_whole_or_none steady held first race
  f06_show steady held first race

  # ---- (b) kube-apiserver restart ------------------------------------------------------------
  echo "--- (b) restart kube-apiserver"
  w0=$(f06_watch_restarts)
  f06_cmdline kube-scheduler || { e2e_fail "kube-scheduler is not running"; return 1; }
  local sched_cmd=("${F06_CMD[@]}")
  f06_apiserver_restart 3
  if ! _e2e_alive kube-scheduler; then
    # kube-scheduler exits when it cannot renew its Lease within renewDeadline (10 s); the
    # Deployment's container would be restarted. kube-scheduler's behaviour, not muster's.
    e2e_log "kube-scheduler exited while the API server was down; restarting it as it ran"
    grep -m1 "Leaderelection lost" "$MUSTER_E2E_DIR/logs/kube-scheduler.log" || true
    _e2e_start kube-scheduler "${sched_cmd[@]}"
    disown "$!" 2>/dev/null || true
    f06_sched_leads() { _e2e_alive kube-scheduler && grep -q "Successfully acquired lease" "$MUSTER_E2E_DIR/logs/kube-scheduler.log"; }
    wait_for 120 "the restarted kube-scheduler to lead" f06_sched_leads
  fi
  f06_watch_restarts_grew() { (($(f06_watch_restarts) > w0)); }
  wait_for 120 "muster_watch_restarts_total to grow past $w0" f06_watch_restarts_grew
  wait_for 120 "muster /readyz after the API server restart" f06_ready
  w1=$(f06_watch_restarts)
  echo "muster_watch_restarts_total: $w0 -> $w1; /readyz: $(curl -s --max-time 3 "$(f06_url)/readyz")"
  curl -sf --max-time 3 "$(f06_url)/metrics" | grep '^muster_watch_restarts_total' || true
  grep -E "watch failed|listed resource" "$(f06_log)" | tail -n 6
  # a node and a gang muster can only know from its reconnected watches
  e2e_gpu_node gpu-c 2
  f06_rc after 0 2 gpu 0 | kubectl_ apply -f - >/dev/null
  wait_for 120 "after: all 3 pods bound" f06_all_bound after 3
  f06_check "(b)"
  [[ $(f06_pods after | awk '$2 == "gpu-c"' | grep -c .) -ge 2 ]] ||
    { e2e_fail "after: GPU workers not on the node created after the restart"; return 1; }
  echo "restarted-API-server gang, muster's view: $(f06_gang_state after)"
  f06_show after
  f06_whole_or_none steady held first race after
}
