# kill -9 trials (issue 11): muster is SIGKILLed at a random point of a gang's commit, again and
# again, and restarted as a container restart would (same command line, same port). After each
# trial every gang is bound whole or not at all and no GPU share is booked twice
# (test/e2e/invariants.py over what the API server holds).
#
# Long: it runs only when KILL9_TRIALS=N is set (bench/kill9_trials.sh sets it); otherwise it
# passes at once, so an ordinary e2e run does not pay for it.
#
# Each trial creates one RayCluster on two 8-GPU nodes, alternating two shapes: a head and 6
# workers of half a GPU each (a commit with reservation pods, which takes a while) and a head
# and 5 workers of a whole GPU. The kill comes at one of three moments, chosen at random: once a
# member's bind is held at the barrier (then 0-100 ms), once muster logs the
# gang's first Binding (then 0-30 ms), or at once when it logs the gang's third.

K9_NS=kill9

k9_rc() { # k9_rc NAME KIND: KIND half or gpu
  local name=$1 kind=$2 n meta res
  if [[ $kind == half ]]; then
    n=6 meta='annotations: { gpu-fraction: "0.5" }' res='{ cpu: "1", memory: 1Gi }'
  else
    n=5 meta='labels: { e2e: gpu }' res='{ cpu: "1", memory: 1Gi, nvidia.com/gpu: 1 }'
  fi
  cat <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: { name: $name, namespace: $K9_NS }
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
      replicas: $n
      minReplicas: $n
      maxReplicas: $n
      rayStartParams: {}
      template:
        metadata: { $meta }
        spec:
          schedulerName: muster
          containers:
            - name: ray-worker
              image: rayproject/ray:2.52.0
              resources: { limits: $res, requests: $res }
EOF
}

k9_pods() { kubectl_ -n "$K9_NS" get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}'; }
k9_count() { k9_pods "$1" | grep -c . || true; }
k9_bound() { k9_pods "$1" | awk 'NF == 2' | grep -c . || true; }
k9_all_bound() { [[ $(k9_count "$1") -eq $2 && $(k9_bound "$1") -eq $2 ]]; }
k9_gone() { [[ $(k9_count "$1") -eq 0 ]]; }
k9_log() { echo "$MUSTER_E2E_DIR/logs/muster.log"; }
k9_no_reservations() { # every reservation pod is being deleted (muster's reaper saw its group empty)
  [[ -z $(kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation \
    -o jsonpath='{range .items[?(!@.metadata.deletionTimestamp)]}{.metadata.name}{"\n"}{end}' 2>/dev/null) ]]
}

# SIGKILL muster, keeping its command line in K9_CMD; k9_restart starts it again exactly as it
# ran (a container restart: kube-scheduler keeps its URL).
k9_kill() {
  local pid
  pid=$(cat "$MUSTER_E2E_DIR/pids/muster.pid") || return 1
  mapfile -d '' -t K9_CMD < "/proc/$pid/cmdline" || return 1
  kill -KILL "$pid"
  while [[ -d /proc/$pid ]]; do sleep 0.05; done
  rm -f "$MUSTER_E2E_DIR/pids/muster.pid"
  cat "$(k9_log)" >> "$MUSTER_E2E_DIR/logs/muster.kill9.log"
}

k9_restart() {
  _e2e_start muster "${K9_CMD[@]}"
  disown "$!" 2>/dev/null || true
  _e2e_wait_http muster 90 "$(e2e_muster_url muster)/readyz"
}

# Wait on muster's log for the trigger of this trial, then the random delay.
k9_wait_trigger() { # k9_wait_trigger GANG MOMENT
  local gang=$1 moment=$2 want line seen=0 deadline=$((SECONDS + 120)) fd tail_pid
  case $moment in
    held) want="bind held at the gang barrier pod=$K9_NS/$gang-" ;;
    *) want=" bound pod=$K9_NS/$gang-" ;;
  esac
  exec {fd}< <(exec tail -n 0 -F "$(k9_log)" 2>/dev/null)
  tail_pid=$!
  while ((SECONDS < deadline)); do
    IFS= read -r -t 5 -u "$fd" line || continue
    [[ $line == *"$want"* ]] || continue
    seen=$((seen + 1))
    [[ $moment == third && $seen -lt 3 ]] || break
  done
  kill "$tail_pid" 2>/dev/null || true
  exec {fd}<&-
  ((seen > 0)) || return 1
  case $moment in # a commit posts its Bindings within milliseconds: short delays land inside it
    held) sleep "0.$(printf '%03d' $((RANDOM % 100)))" ;;
    first) sleep "0.$(printf '%03d' $((RANDOM % 30)))" ;;
  esac
}

scenario() {
  local n=${KILL9_TRIALS:-0} i kind moment gang start=$SECONDS partial=0 broken=0 missed=0 mid=0
  local stuck=0
  local moments=(held first third)
  if ((n == 0)); then
    echo "kill9: KILL9_TRIALS is not set; skipped (bench/kill9_trials.sh runs it)"
    return 0
  fi
  e2e_gpu_node gpu-k1 8
  e2e_gpu_node gpu-k2 8
  kubectl_ create namespace "$K9_NS" >/dev/null 2>&1 || true
  for ((i = 1; i <= n; i++)); do
    kind=$([[ $((i % 2)) == 1 ]] && echo half || echo gpu)
    moment=${moments[$((RANDOM % 3))]}
    gang=t$i
    k9_rc "$gang" "$kind" | kubectl_ apply -f - >/dev/null
    if ! k9_wait_trigger "$gang" "$moment"; then
      missed=$((missed + 1))
      echo "kill9: trial $i ($kind, $moment): the moment never came; killing anyway"
    fi
    local at_kill want=6
    [[ $kind == half ]] && want=7
    k9_kill || { e2e_fail "trial $i: muster is not running"; return 1; }
    at_kill=$(k9_bound "$gang") # with muster dead, as the kill left it
    ((at_kill > 0 && at_kill < want)) && mid=$((mid + 1))
    k9_restart || { e2e_fail "trial $i: muster did not come back"; return 1; }
    if ! wait_for 180 "trial $i: $gang bound whole" k9_all_bound "$gang" "$want"; then
      local b
      b=$(k9_bound "$gang")
      ((b > 0 && b < want)) && partial=$((partial + 1))
      stuck=$((stuck + 1))
      e2e_err "kill9: trial $i ($kind, killed $moment): $b of $want bound after 180 s"
    fi
    if ! e2e_invariants >/dev/null 2>"$MUSTER_E2E_DIR/kill9-invariants.$i"; then
      broken=$((broken + 1))
      e2e_err "kill9: trial $i: invariants broken:"
      cat "$MUSTER_E2E_DIR/kill9-invariants.$i" >&2
    fi
    echo "kill9: trial $i/$n $kind killed at '$moment' with $at_kill of $want bound; now $(k9_bound "$gang") of $want; $((SECONDS - start))s so far"
    kubectl_ -n "$K9_NS" delete raycluster "$gang" --wait=false >/dev/null 2>&1
    kubectl_ -n "$K9_NS" delete pods -l "ray.io/cluster=$gang" --grace-period=0 --force >/dev/null 2>&1
    wait_for 120 "trial $i: $gang gone" k9_gone "$gang" || true
    # No kubelet here finishes a graceful delete: the reservation pods muster reaps would stay
    # Terminating under their group's name, and the next commit of that group waits on them.
    wait_for 30 "trial $i: reservation pods reaped" k9_no_reservations || true
    kubectl_ -n muster-system delete pods -l app.kubernetes.io/name=muster-gpu-reservation \
      --grace-period=0 --force >/dev/null 2>&1
  done
  echo "kill9: $n trials in $((SECONDS - start))s: $partial partial gangs, $broken with invariants broken (partial gangs, double-booked shares, nodes or queues over), $mid killed mid-commit (some members bound, some not), $stuck not bound whole within 180 s, $missed kill moments missed"
  ((partial == 0 && broken == 0 && stuck == 0))
}
