#!/usr/bin/env bash
# gang_cycle.sh - what kube-scheduler's own gang cycle (Kubernetes 1.37) costs muster: filter,
# prioritize and bind calls per bound pod, and muster's CPU per bound pod, on the loopback
# control plane of test/e2e (etcd, kube-apiserver, kube-scheduler, kwok; v1.37.2 from
# test/e2e/build-components.sh).
#
#   bench/gang_cycle.sh [-n NODES] [-d DOMAINS] [-g GANGS] [-s SIZE] [-m "plain gang tas"]
#                       [-X MUSTER2] [-T SECONDS] [-k] [MUSTER]
#
# NODES kwok nodes (default 48; 8 GPUs, 32 CPUs, 256Gi each) labelled e2e.muster.dev/rack
# d0..d(DOMAINS-1) (default 6), then for each mode (default all three) GANGS gangs (default 24)
# of SIZE one-GPU pods (default 8), created at once: each a scheduling.k8s.io/v1beta1 Workload of
# one template and its PodGroup (minCount SIZE), the pods naming it by spec.schedulingGroup.
#   plain  kube-scheduler without gates: the pods reach muster one at a time (muster's own gang)
#   gang   GenericWorkload on the scheduler: its pod group cycle, PreEnqueue and Permit
#   tas    GenericWorkload and TopologyAwareWorkloadScheduling, the PodGroups constrained to one
#          rack: the cycle runs once per candidate rack, muster's filter per pod per rack
# With -X, each mode runs again with muster binary MUSTER2 (say, one built from before a change)
# for a side-by-side figure. A run gives up after SECONDS (-T, default 300): its line is marked
# "(timed out)". Prints one line per run: pods bound, seconds, calls per bound pod (from muster's
# muster_extender_requests_total), muster's and kube-scheduler's CPU milliseconds per bound pod.
# -k keeps the state dir. The control plane runs in its own state dir, never recorded as the
# current e2e cluster.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
nodes=48 domains=6 gangs=24 size=8 modes="plain gang tas" muster2= timeout=300 keep=0
while getopts "n:d:g:s:m:X:T:kh" opt; do
  case $opt in
    n) nodes=$OPTARG ;; d) domains=$OPTARG ;; g) gangs=$OPTARG ;; s) size=$OPTARG ;;
    m) modes=$OPTARG ;; X) muster2=$(realpath "$OPTARG") ;; T) timeout=$OPTARG ;; k) keep=1 ;;
    *) sed -n '2,26p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
MUSTER_BIN=$(realpath "${1:-$root/build/extender/muster}")
[[ -x $MUSTER_BIN ]] || { echo "gang_cycle: no muster at $MUSTER_BIN" >&2; exit 2; }
muster1=$MUSTER_BIN
export MUSTER_BIN K8S_VERSION=${K8S_VERSION:-v1.37.2}
# shellcheck source=../test/e2e/lib.sh
source "$root/test/e2e/lib.sh"
# shellcheck source=../test/e2e/muster.sh
source "$root/test/e2e/muster.sh"
load() { python3 "$here/e2e_load.py" "$@"; }
KEY=e2e.muster.dev/rack

export MUSTER_E2E_DIR=${MUSTER_E2E_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/muster-gang-cycle.XXXXXX")}
export E2E_NO_NODE=1 E2E_SCHEDULER_V=${E2E_SCHEDULER_V:-1}
finish() {
  local rc=$?
  [[ $keep == 1 ]] && KEEP=1
  KEEP=${KEEP:-0} e2e_down >/dev/null 2>&1
  exit "$rc"
}
trap finish EXIT

e2e_up >/dev/null || exit 1
e2e_muster_install >/dev/null || exit 1
load nodes "$nodes" --prefix gc-node- --domains "$domains" --domain-key "$KEY" || exit 1
echo "gang_cycle: Kubernetes $K8S_VERSION, $nodes nodes in $domains racks of $((nodes / domains * 8)) GPUs," \
  "$gangs gangs of $size one-GPU pods per run; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# start MODE BINARY: muster and its kube-scheduler with the mode's gates
start() {
  local gates=""
  case $1 in
    gang) gates="--feature-gates=GenericWorkload=true" ;;
    tas) gates="--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true" ;;
  esac
  e2e_stop kube-scheduler; e2e_stop muster
  MUSTER_BIN=$2 e2e_muster_start muster >/dev/null || return 1
  E2E_SCHEDULER_FLAGS=$gates e2e_muster_scheduler kube-scheduler >/dev/null || return 1
  # one pod through the whole path first: leader elected, caches synced
  load run --ns "warm-$1-$run" --pods 1 --scheduler muster --timeout 120 >/dev/null ||
    { e2e_err "warm-up pod not bound"; return 1; }
  load delete --ns "warm-$1-$run" >/dev/null
}

run=0
for mode in $modes; do
  for bin in "$muster1" ${muster2:+"$muster2"}; do
    run=$((run + 1))
    start "$mode" "$bin" || exit 1
    url=$(e2e_muster_url muster)
    args=(--ns "gc-$run" --pods $((gangs * size)) --gang "$size" --workload --scheduler muster
      --timeout "$timeout" --metrics "muster=$url/metrics"
      --pid "muster=$(cat "$MUSTER_E2E_DIR/pids/muster.pid")"
      --pid "kube-scheduler=$(cat "$MUSTER_E2E_DIR/pids/kube-scheduler.pid")")
    [[ $mode == tas ]] && args+=(--topology-key "$KEY")
    load run "${args[@]}" >"$MUSTER_E2E_DIR/run-$run.json"
    python3 - "$MUSTER_E2E_DIR/run-$run.json" "$mode" "$bin" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
m = r["metrics"].get("muster", {})
calls = lambda verb: sum(v for k, v in m.items()
                         if k.startswith("muster_extender_requests_total{") and 'verb="%s"' % verb in k)
n = max(r["bound"], 1)
print("%-5s %-28s %4d/%d pods bound in %6.1f s%s: per bound pod %5.2f filter, %4.2f prioritize, "
      "%4.2f bind; CPU per bound pod: muster %5.2f ms, kube-scheduler %6.2f ms" % (
          sys.argv[2], sys.argv[3][-28:], r["bound"], r["pods"], r["seconds"],
          "" if r["bound"] == r["pods"] else " (timed out)", calls("filter") / n,
          calls("prioritize") / n, calls("bind") / n, 1000 * r["cpu"]["muster"] / n,
          1000 * r["cpu"]["kube-scheduler"] / n))
EOF
    load delete --ns "gc-$run" >/dev/null || e2e_err "pods of gc-$run not deleted"
  done
done
