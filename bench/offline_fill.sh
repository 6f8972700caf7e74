#!/usr/bin/env bash
# offline_fill.sh - fill `muster serve --offline` with pods and print the rate per window, the
# daemon's CPU and its resident memory at the end (issue 14: flat cost as the cluster fills,
# at most 64 MiB with a 5,000-node, 50,000-pod cache).
#
#   bench/offline_fill.sh [-n NODES] [-g GPUS] [-p PODS] [-G GANG] [-c CLIENTS] [-k NAMES] [-s STRATEGY] [MUSTER]
#
# Defaults: 5,000 nodes with 16 GPUs each (bench/nodes_gen.sh), 50,000 pods, single pods
# (-G 20: RayCluster-shaped gangs of 1 head + 19 one-GPU workers, their RayClusters loaded with -f),
# 4 clients (build/bench/bench_fill), every node name in every filter call, muster's default strategy
# (-s binpack: what manifests/ ship). Builds nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
nodes=5000 gpus=16 pods=50000 gang=1 clients=4 names= strategy=
while getopts "n:g:p:G:c:k:s:h" opt; do
  case $opt in
    n) nodes=$OPTARG ;; g) gpus=$OPTARG ;; p) pods=$OPTARG ;; G) gang=$OPTARG ;;
    c) clients=$OPTARG ;; k) names=$OPTARG ;; s) strategy=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
muster=${1:-$root/build/extender/muster}
fill=${BENCH_FILL:-$root/build/bench/bench_fill}
[[ -x $muster ]] || { echo "offline_fill: no muster at $muster" >&2; exit 2; }
[[ -x $fill ]] || { echo "offline_fill: no bench_fill at $fill (cmake --build build)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/offline_fill.XXXXXX")
pid=
cleanup() {
  [[ -z $pid ]] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT

"$here/nodes_gen.sh" "$nodes" "$gpus" >"$work/nodes.yaml"
manifests=(-f "$work/nodes.yaml")
if ((gang > 1)); then
  awk -v n=$((pods / gang)) -v w=$((gang - 1)) 'BEGIN {
    for (i = 1; i <= n; i++) {
      printf "---\napiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: rc-%05d\n  namespace: bench\n", i
      printf "spec:\n  headGroupSpec: {}\n  workerGroupSpecs:\n  - groupName: gpu\n    replicas: %d\n", w
    }
  }' >"$work/rayclusters.yaml"
  manifests+=(-f "$work/rayclusters.yaml")
fi
cat >"$work/muster.yaml" <<YAML
log:
  level: warn
maxNodeNames: $((nodes > 20000 ? nodes : 20000))
YAML
[[ -z $strategy ]] || echo "strategy: $strategy" >>"$work/muster.yaml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$muster" serve --offline --config "$work/muster.yaml" "${manifests[@]}" \
  --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; pid=; exit 1; }
  sleep 0.1
done
rss_kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$pid/status"; }
cpu_s() { awk '{printf "%.1f", ($14 + $15) / 100}' "/proc/$pid/stat"; }
echo "offline_fill: $nodes nodes x $gpus GPUs, $pods pods, gang $gang, $clients clients, strategy ${strategy:-default}, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "after loading: rss $(( $(rss_kib VmRSS) / 1024 )) MiB, cpu $(cpu_s) s"
rc=0
"$fill" -c "$clients" -g "$gang" -n "$nodes" ${names:+-k "$names"} "http://127.0.0.1:$port" "$pods" || rc=$?
echo "muster: cpu $(cpu_s) s, rss $(( $(rss_kib VmRSS) / 1024 )) MiB (peak $(( $(rss_kib VmHWM) / 1024 )) MiB)"
exit $rc
