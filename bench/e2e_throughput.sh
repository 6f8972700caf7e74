#!/usr/bin/env bash
# e2e_throughput.sh - pods bound per second with kube-scheduler in the loop, muster beside bare
# kube-scheduler, on the loopback control plane of test/e2e (etcd, kube-apiserver, kube-scheduler,
# kwok; built by test/e2e/build-components.sh into ~/.cache/muster).
#
#   bench/e2e_throughput.sh [-n NODES] [-p PODS] [-r ROUNDS] [-g GANG] [-c "A B C D"] [-m MODES]
#                           [-H "A B"] [-T SECONDS] [-M DIR] [-X MUSTER2] [-w WAITING] [-k] [MUSTER]
#
# NODES kwok nodes (default 1,000; 8 GPUs, 32 CPUs, 256Gi each), then ROUNDS rounds (default 3)
# of each configuration in turn, PODS pods per run (default 2,000), created at once from 16
# connections (bench/e2e_load.py). MODES (default "live held"), each run once per round:
#   live  the scheduler runs while the pods are created; the figure is pods bound / seconds from
#         the first create to the last spec.nodeName (on a loaded machine the API server's create
#         rate can be the limit for every configuration alike)
#   held  the pods are created while the configuration's kube-scheduler is stopped; the clock
#         starts when it is started (KAI's "scheduler disabled during job creation"), so the
#         figure is the scheduling rate alone, kube-scheduler's start included; -H names the
#         configurations run held (default: all of -c)
# A run gives up after SECONDS (-T, default 600); its figure is then marked with *.
# -w WAITING: before each run, WAITING pods that will not be placed are created and kept waiting
# beside it (deleted after it): for muster's configurations, gangs of GANG whose RayCluster
# declares GANG more workers than exist (muster turns them away: "20 of 40 members exist"),
# for A and D pods asking 16 GPUs of the 8-GPU nodes (kube-scheduler's own filters turn them
# away). Waiting work is what a busy cluster always has: kube-scheduler retries those pods on
# its own events, and muster hands its refused ones back after a Queue or gang change (the
# PATCHes pods per bound pod in the summary).
# Configurations:
#   A     stock kube-scheduler, default settings (its own profile, no extender)
#   A100  the same with percentageOfNodesToScore: 100
#   B     kube-scheduler + muster as shipped (manifests/scheduler-config.yaml, manifests/muster.yaml),
#         single one-GPU pods
#   C     the same, PODS/GANG RayCluster-shaped gangs: a CPU head and GANG-1 one-GPU workers,
#         with their RayCluster objects (no operator runs: the pods are created directly)
#   D     kube-scheduler's own gangs, no muster: stock kube-scheduler with the GenericWorkload
#         gate (Kubernetes 1.37), C's gangs as scheduling.k8s.io/v1beta1 Workloads of one
#         PodGroup (minCount GANG, the pods naming it by spec.schedulingGroup; same shapes: a CPU
#         head and GANG-1 one-GPU workers)
#   S     B with single pods asking half a GPU (annotation gpu-fraction: "0.5") instead: shares,
#         each committed with its GPU group (the bench's muster runs gpuSharing.reservations:
#         false, as no device plugin runs here: the shares are placed and recorded, no
#         reservation pod is made; B and C have no shares, so nothing else changes for them)
#   AJ AP A with one more watcher of every pod (curl, from before the pods are created to the
#         end of the run), in JSON (AJ) or protobuf (AP): what a JSON watcher such as muster's
#         costs the API server (every pod event encoded once more, in JSON), beside what one
#         more watcher costs at all. The load's own watch reads protobuf, as kube-scheduler's
#         does; kwok reads JSON (its dynamic client), but only pods that have a node.
#   B2 C2 S2  B, C and S with the manifests of DIR (-M, e.g. a copy of manifests/ from before a
#         change) and muster binary MUSTER2 (-X), to compare two deployments in one alternated run
# Every kube-scheduler gets the client QPS/burst of the shipped config, so A is not held back by
# client-side throttling (the summary prints the throttling it measured). Prints each run (with
# the load average), then the medians with B/A and C/A, then where the time went per pod:
# kube-scheduler's metrics, muster's /metrics (its own writes), the API server's requests by verb
# and resource (apiserver_request_total, less the idle control plane's), CPU seconds of every
# component, and the footprint: all components' CPU beyond A's. -k keeps the state dir.
# The control plane runs in its own state dir ($MUSTER_E2E_DIR or a new one), never recorded as
# the current e2e cluster.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=${E2E_THROUGHPUT_ROOT:-$(cd "$here/.." && pwd)}
# bash reads a script as it runs: run a copy, so editing the tree meanwhile changes nothing.
if [[ -z ${E2E_THROUGHPUT_ROOT:-} ]]; then
  copy=$(mktemp -d "${TMPDIR:-/tmp}/e2e_throughput-script.XXXXXX")
  cp "$here/e2e_throughput.sh" "$here/e2e_load.py" "$copy/"
  cp -r "$root/manifests" "$root/test" "$copy/" # the shipped configs and lib.sh of this moment
  E2E_THROUGHPUT_ROOT=$copy E2E_THROUGHPUT_TREE=$root exec bash "$copy/e2e_throughput.sh" "$@"
fi
nodes=1000 pods=2000 rounds=3 gang=20 configs="A B C D" modes="live held" keep=0 other= muster2=
held_configs= run_timeout=600 waiting=0
while getopts "n:p:r:g:c:m:H:T:M:X:w:kh" opt; do
  case $opt in
    n) nodes=$OPTARG ;; p) pods=$OPTARG ;; r) rounds=$OPTARG ;; g) gang=$OPTARG ;;
    c) configs=$OPTARG ;; m) modes=$OPTARG ;; M) other=$(realpath "$OPTARG") ;;
    H) held_configs=$OPTARG ;; T) run_timeout=$OPTARG ;;
    X) muster2=$(realpath "$OPTARG") ;; w) waiting=$OPTARG ;; k) keep=1 ;;
    *) sed -n '2,56p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
MUSTER_BIN=$(realpath "${1:-${E2E_THROUGHPUT_TREE:-$root}/build/extender/muster}")
export MUSTER_BIN
[[ -x $MUSTER_BIN ]] || { echo "e2e_throughput: no muster at $MUSTER_BIN" >&2; exit 2; }
# shellcheck source=../test/e2e/lib.sh
source "$root/test/e2e/lib.sh"
# shellcheck source=../test/e2e/muster.sh
source "$root/test/e2e/muster.sh"
load() { python3 "$here/e2e_load.py" "$@"; }
# The bench's muster places shares on paper (S): no device plugin answers a reservation pod here.
eval "_bench_$(declare -f e2e_muster_config)"
e2e_muster_config() {
  _bench_e2e_muster_config "$@" || return 1
  sed -i 's/^gpuSharing:$/gpuSharing:\n  reservations: false/' "$1"
}
shipped=$E2E_MANIFESTS muster1=$MUSTER_BIN
# B2/C2: another deployment (manifests dir, binary) in the same alternated run
deployment() {
  if [[ $1 == *2 ]]; then
    E2E_MANIFESTS=${other:-$shipped} MUSTER_BIN=${muster2:-$muster1}
  else
    E2E_MANIFESTS=$shipped MUSTER_BIN=$muster1
  fi
}

export MUSTER_E2E_DIR=${MUSTER_E2E_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/muster-bench.XXXXXX")}
export E2E_NO_NODE=1 E2E_SCHEDULER_V=${E2E_SCHEDULER_V:-1}
out=$MUSTER_E2E_DIR/results
finish() {
  local rc=$?
  [[ $keep == 1 ]] && KEEP=1
  cp -r "$out" "${TMPDIR:-/tmp}/e2e_throughput-results.$$" 2>/dev/null &&
    echo "e2e_throughput: results kept in ${TMPDIR:-/tmp}/e2e_throughput-results.$$" >&2
  KEEP=${KEEP:-0} e2e_down >/dev/null 2>&1
  exit "$rc"
}
trap finish EXIT

qps=$(awk '/^  qps:/ {print $2}' "$root/manifests/scheduler-config.yaml")
burst=$(awk '/^  burst:/ {print $2}' "$root/manifests/scheduler-config.yaml")

up() {
  e2e_up || return 1
  e2e_muster_install || return 1
  e2e_kuberay_crds || return 1
  e2e_kwok || return 1
  load nodes "$nodes" || return 1
  mkdir -p "$out"
  local pct
  for pct in "" 100; do
    {
      echo "apiVersion: kubescheduler.config.k8s.io/v1"
      echo "kind: KubeSchedulerConfiguration"
      echo "leaderElection: {leaderElect: false}"
      echo "clientConnection: {kubeconfig: \"@KUBECONFIG@\", qps: ${qps:-500}, burst: ${burst:-1000}}"
      [[ -z $pct ]] || echo "percentageOfNodesToScore: $pct"
    } >"$MUSTER_E2E_DIR/stock$pct.yaml"
  done
}

# The kube-scheduler of a configuration (re)started: name, schedulerName of its pods, URLs.
sched_start() {
  case $1 in
    A | AJ | AP) e2e_scheduler "$MUSTER_E2E_DIR/stock.yaml" kube-scheduler-stock >/dev/null ;;
    A100) e2e_scheduler "$MUSTER_E2E_DIR/stock100.yaml" kube-scheduler-stock >/dev/null ;;
    D) E2E_SCHEDULER_FLAGS="--feature-gates=GenericWorkload=true" \
      e2e_scheduler "$MUSTER_E2E_DIR/stock.yaml" kube-scheduler-gang >/dev/null ;;
    B* | C* | S*) deployment "$1" && e2e_muster_scheduler kube-scheduler >/dev/null ;;
  esac || return 1
  # shellcheck disable=SC1091
  source "$MUSTER_E2E_DIR/env"
  local port_var="E2E_PORT_${sched//-/_}"
  echo "https://127.0.0.1:${!port_var}/metrics" >"$out/sched-url"
}

# Only the schedulers of the configuration under test run.
use() {
  local cfg=$1
  case $cfg in
    A | A100 | AJ | AP)
      e2e_stop kube-scheduler; e2e_stop muster; e2e_stop kube-scheduler-gang
      sched=kube-scheduler-stock scheduler_name=default-scheduler ;;
    D)
      e2e_stop kube-scheduler; e2e_stop muster; e2e_stop kube-scheduler-stock
      sched=kube-scheduler-gang scheduler_name=default-scheduler ;;
    B | C | S | B2 | C2 | S2)
      e2e_stop kube-scheduler-stock; e2e_stop kube-scheduler-gang
      local prev=${last_cfg:-none}
      if [[ ${cfg: -1} != "${prev: -1}" && ($cfg == *2 || $prev == *2) ]]; then
        e2e_stop kube-scheduler; e2e_stop muster # the other deployment
      fi
      deployment "$cfg"
      if ! _e2e_alive muster; then e2e_muster_start muster >/dev/null || return 1; fi
      sched=kube-scheduler scheduler_name=muster ;;
    *) e2e_err "unknown configuration $cfg"; return 1 ;;
  esac
  if [[ $cfg != "${last_cfg:-}" && ($cfg == A* || $cfg == D) ]] || ! _e2e_alive "$sched"; then
    e2e_stop "$sched"
    sched_start "$cfg" || return 1
  fi
  last_cfg=$cfg
  # One pod through the whole path first: leader elected, caches synced.
  load run --ns "warm-${cfg,,}-$round-$mode" --pods 1 --scheduler "$scheduler_name" --timeout 120 \
    >/dev/null || { e2e_err "warm-up pod of $cfg not bound"; return 1; }
  load delete --ns "warm-${cfg,,}-$round-$mode"
}

# AJ/AP: one more watcher of every pod, in JSON or protobuf, discarding what it reads.
watcher_start() {
  local accept
  case $1 in AJ) accept=application/json ;; AP) accept=application/vnd.kubernetes.protobuf ;;
    *) return 0 ;; esac
  curl -sN --cacert "$E2E_CA_CERT" -H "Authorization: Bearer $E2E_ADMIN_TOKEN" -H "Accept: $accept" \
    "$E2E_APISERVER_URL/api/v1/pods?watch=1&allowWatchBookmarks=true" -o /dev/null &
  watcher=$!
}
watcher_stop() {
  [[ -n ${watcher:-} ]] || return 0
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  watcher=
}

# -w: the waiting work beside a run (see above), turned away before the run starts.
waiting_start() { # CFG NS
  ((waiting > 0)) || return 0
  case $1 in
    B* | C* | S*) load run --ns "$2" --pods "$waiting" --gang "$gang" --declare-extra "$gang" \
      --scheduler "$scheduler_name" --no-wait >/dev/null ;;
    *) load run --ns "$2" --pods "$waiting" --gpus-per-pod 16 --scheduler "$scheduler_name" \
      --no-wait >/dev/null ;;
  esac || return 1
  sleep 5
}

run_one() {
  local cfg=$1 mode=$2 ns="bench-r$round-${1,,}-$2" args=() label=$1 hold=$out/hold-$round-$1-$2 lp rc
  waiting_start "$cfg" "wait-$ns" || e2e_err "waiting pods of $cfg not created"
  watcher_start "$cfg"
  args=(--metrics "sched=@$out/sched-url" --metrics "apiserver=$E2E_APISERVER_URL/metrics"
    --pid "kube-scheduler=@$MUSTER_E2E_DIR/pids/$sched.pid"
    --pid "kube-apiserver=$(cat "$MUSTER_E2E_DIR/pids/kube-apiserver.pid")"
    --pid "etcd=$(cat "$MUSTER_E2E_DIR/pids/etcd.pid")"
    --pid "kwok=$(cat "$MUSTER_E2E_DIR/pids/kwok.pid")")
  [[ $cfg == B* || $cfg == C* || $cfg == S* ]] &&
    args+=(--metrics "muster=$(e2e_muster_url muster)/metrics"
      --pid "muster=$(cat "$MUSTER_E2E_DIR/pids/muster.pid")")
  [[ -n ${watcher:-} ]] && args+=(--pid "watcher=$watcher")
  case $cfg in
    C*) args+=(--gang "$gang") ;;
    D) args+=(--gang "$gang" --workload --head) ;;
    S*) args+=(--fraction 0.5) ;;
  esac
  if [[ $mode == held ]]; then
    label="$cfg held"
    e2e_stop "$sched"
    rm -f "$out/sched-url" "$hold" "$hold.created"
    load run --label "$label" --ns "$ns" --pods "$pods" --scheduler "$scheduler_name" \
      --hold-scheduler "$hold" --timeout "$run_timeout" "${args[@]}" >>"$out/runs.jsonl" &
    lp=$!
    while [[ ! -f $hold.created ]] && kill -0 "$lp" 2>/dev/null; do sleep 0.2; done
    touch "$hold"
    sched_start "$cfg" || return 1
    wait "$lp"
  else
    load run --label "$label" --ns "$ns" --pods "$pods" --scheduler "$scheduler_name" \
      --timeout "$run_timeout" "${args[@]}" >>"$out/runs.jsonl"
  fi
  rc=$?
  watcher_stop
  tail -1 "$out/runs.jsonl" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read());
print("round %s %-7s %5d/%d pods bound in %6.1f s: %6.1f pods/s, %6.1f pods/s once flowing "
      "(created in %.1f s; load %s)" % (sys.argv[1], r["label"], r["bound"], r["pods"],
      r["seconds"], r["rate"], r["flowing_rate"], r["create_seconds"],
      open("/proc/loadavg").read().split()[0]))' "$round"
  load delete --ns "$ns" || e2e_err "pods of $ns not deleted"
  ((waiting == 0)) || load delete --ns "wait-$ns" || e2e_err "pods of wait-$ns not deleted"
  return $rc
}

up || exit 1
# What the control plane costs with nothing to schedule (kwok's heartbeats of NODES nodes):
# the summary subtracts it from each run.
# shellcheck disable=SC1091
source "$MUSTER_E2E_DIR/env"
load idle --seconds 15 --metrics "apiserver=$E2E_APISERVER_URL/metrics" \
  --pid "kube-apiserver=$(cat "$MUSTER_E2E_DIR/pids/kube-apiserver.pid")" \
  --pid "etcd=$(cat "$MUSTER_E2E_DIR/pids/etcd.pid")" --pid "kwok=$(cat "$MUSTER_E2E_DIR/pids/kwok.pid")" \
  >"$out/idle.json"
echo "idle CPU per second: $(python3 -c 'import json, sys
print(json.dumps({k: v for k, v in json.load(open(sys.argv[1])).items() if k != "metrics_per_s"}))' "$out/idle.json")"
echo "e2e_throughput: $nodes nodes, $pods pods per run (and $waiting waiting beside), configurations $configs, modes $modes, $rounds rounds;" \
  "kube-scheduler qps $qps burst $burst; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= rounds; round++)); do
  for mode in $modes; do
    list=$configs
    [[ $mode == held && -n $held_configs ]] && list=$held_configs
    for cfg in $list; do
      use "$cfg" || exit 1
      run_one "$cfg" "$mode" || e2e_err "round $round $cfg $mode: not every pod bound"
    done
  done
done
echo
load summary --idle "$out/idle.json" "$out/runs.jsonl"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
