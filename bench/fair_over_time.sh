#!/usr/bin/env bash
# fair_over_time.sh - two teams alternate bursts over simulated days, replayed by `muster
# simulate` on a timeline (docs/simulate.md) with fair over time off, on (muster's defaults:
# halfLife 4h, window 168h, k 1) and on with k 4; prints each queue's GPU-hours and waiting
# time, and the gap between the teams. Printed, never asserted (docs/bench.md).
#
#   bench/fair_over_time.sh [MUSTER] [--days N] [--gangs N] [--every H]
#
# The cluster: 2 nodes of 8 GPUs. team-a and team-b (quota 0, weight 1, reclaimMinRuntime 30m)
# each submit a burst once every H hours (default 24), team-b H/2 hours after team-a: N gangs
# (default 24) of one 4-GPU pod running 3 hours, 18 hours of the whole cluster per burst. The
# run ends after the last day.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
muster=${1:-$here/../build/extender/muster}
[[ $# -gt 0 ]] && shift
days=4 gangs=24 every=24
while [[ $# -gt 0 ]]; do
    case $1 in
    --days) days=$2; shift 2 ;;
    --gangs) gangs=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    *) echo "usage: $0 [MUSTER] [--days N] [--gangs N] [--every H]" >&2; exit 2 ;;
    esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hours=$((days * 24))

python3 - "$hours" "$gangs" "$every" >"$tmp/alternate.yaml" <<'PY'
import sys
hours, gangs, every = (int(a) for a in sys.argv[1:4])
docs = []
for n in range(2):
    docs.append(f"""apiVersion: v1
kind: Node
metadata: {{name: gpu-{n}}}
status: {{allocatable: {{cpu: "96", memory: 768Gi, pods: "110", nvidia.com/gpu: "8"}}}}""")
for t in "ab":
    docs.append(f"""apiVersion: muster.dev/v1alpha1
kind: Queue
metadata: {{name: team-{t}}}
spec:
  reclaimMinRuntime: 30m
  resources:
    gpu: {{quota: 0, limit: -1, overQuotaWeight: 1}}""")
for t, offset in (("a", 0), ("b", every // 2)):
    for b, start in enumerate(range(offset, hours, every)):
        for g in range(gangs):
            docs.append(f"""apiVersion: v1
kind: Pod
metadata:
  name: {t}-burst{b}-{g}
  namespace: lab
  labels: {{muster.dev/queue: team-{t}}}
  annotations: {{simulate.muster.dev/arrival: {start}h, simulate.muster.dev/duration: 3h}}
spec:
  containers: [{{name: main, resources: {{requests: {{cpu: "4", memory: 32Gi, nvidia.com/gpu: "4"}}}}}}]""")
print("\n---\n".join(docs))
PY

echo "two teams, 16 GPUs, a burst of $gangs x 4 GPUs x 3h each every ${every}h (team-b ${every}h/2 later), $days days"
printf '%-22s %9s %9s %9s   %9s %9s %9s   %5s %5s   %5s %5s   %6s\n' "fair over time" \
    "a GPU-h" "b GPU-h" "gap" "a wait h" "b wait h" "gap" "a end" "b end" "a ev" "b ev" "run s"
for run in "off|--half-life 0" "on (defaults)|" "on, k 4|--k 4"; do
    name=${run%%|*}
    args=${run#*|}
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$muster" simulate -f "$tmp/alternate.yaml" --until "${hours}h" $args >"$tmp/out.json"
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    python3 - "$tmp/out.json" "$name" "$secs" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t = {q["name"]: q for q in j["timeline"]["queues"]}
a, b = t["team-a"], t["team-b"]
print("%-22s %9.1f %9.1f %9.1f   %9.2f %9.2f %9.2f   %5d %5d   %5d %5d   %6.2f" % (
    sys.argv[2], a["gpuHours"], b["gpuHours"], abs(a["gpuHours"] - b["gpuHours"]),
    a["meanWaitHours"], b["meanWaitHours"], abs(a["meanWaitHours"] - b["meanWaitHours"]),
    a["finished"], b["finished"], a["evictions"], b["evictions"], float(sys.argv[3])))
PY
done
echo "(wait h: mean hours a gang waited, each time it waited, until it started or the run ended;"
echo " end: gangs finished by the end; ev: gangs evicted by reclaim)"
