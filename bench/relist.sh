#!/usr/bin/env bash
# relist.sh - how muster lists and relists a big cluster, and what kube-scheduler's filter calls
# feel meanwhile (issue 14: a relist of 100,000 objects in linear time; filter p99 during a relist
# within 2x of its quiet value).
#
#   bench/relist.sh [-n NODES] [-p "PODS ..."] [-d DURATION] [MUSTER]
#
# For each PODS count (default "25000 50000 100000") a fake API server (bench/fake_apiserver.py)
# serves NODES nodes (default 5,000) and PODS bound pods; `muster serve` lists them and the line
# says its CPU and wall seconds until /readyz and its resident memory then. For the largest count
# it then answers every pods watch with 410 Gone, so muster relists without pause: for DURATION
# (default 10s) alone (muster's CPU per relist), then with bench/wrk_extender.lua (filter, 5,000
# names, one connection) running, and prints p50/p99 of that beside a quiet run before.
# Needs wrk and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
nodes=5000 counts="25000 50000 100000" duration=10s
while getopts "n:p:d:h" opt; do
  case $opt in
    n) nodes=$OPTARG ;; p) counts=$OPTARG ;; d) duration=$OPTARG ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
muster=${1:-$root/build/extender/muster}
command -v wrk >/dev/null || { echo "relist: wrk is not installed" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/relist.XXXXXX")
fake= server=
stop() {
  [[ -z $server ]] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; }
  [[ -z $fake ]] || { kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null || true; }
  server= fake=
}
trap 'stop; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$server/stat"; }
ctl() { curl -fsS "http://127.0.0.1:$api/control/$1"; }
lists() { ctl stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["pod_lists"])'; }

start() { # start PODS: fake API server and muster, until muster is ready
  api=$(free_port) port=$(free_port)
  python3 "$here/fake_apiserver.py" "$api" "$nodes" "$1" >"$work/fake.log" 2>&1 &
  fake=$!
  until grep -q fake_apiserver "$work/fake.log" 2>/dev/null; do sleep 0.2; done
  cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://127.0.0.1:$api"}}]
users: [{name: bench, user: {token: bench}}]
contexts: [{name: fake, context: {cluster: fake, user: bench}}]
current-context: fake
EOF
  printf 'log:\n  level: warn\nmaxNodeNames: 20000\n' >"$work/muster.yaml"
  local t0=$SECONDS
  "$muster" serve --config "$work/muster.yaml" --kubeconfig "$work/kubeconfig" \
    --listen "127.0.0.1:$port" >"$work/muster.log" 2>&1 &
  server=$!
  local t=$(date +%s.%N)
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; do
    kill -0 "$server" 2>/dev/null || { cat "$work/muster.log" >&2; exit 1; }
    sleep 0.05
  done
  local cpu
  cpu=$(cpu_s)
  printf 'list   %6d pods + %d nodes: ready after %5.1f s wall, %6.2f s muster CPU (%.1f ms per 1,000 objects), rss %.1f MiB\n' \
    "$1" "$nodes" "$(echo "$(date +%s.%N) - $t" | bc)" "$cpu" "$(echo "$cpu * 1000000 / ($1 + $nodes)" | bc -l)" \
    "$(echo "$(awk '$1 == "VmRSS:" {print $2}' "/proc/$server/status") / 1024" | bc -l)"
}

filter_p() { # one wrk run: "p50 p99"
  wrk -t1 -c1 -d"$duration" --latency -s "$here/wrk_extender.lua" "http://127.0.0.1:$port" -- filter 5000 |
    sed -n 's/^RESULT .*p50_ms=\([0-9.]*\) p99_ms=\([0-9.]*\).*/\1 \2/p'
}

echo "relist: $(basename "$muster"), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
last=${counts##* }
for n in $counts; do
  start "$n"
  if [[ $n == "$last" ]]; then
    read -r q50 q99 < <(filter_p)
    # Relists alone first: what one costs muster; then filter calls during relists.
    ctl relist >/dev/null
    l0=$(lists) c0=$(cpu_s)
    sleep "${duration%s}"
    l1=$(lists) c1=$(cpu_s)
    read -r r50 r99 < <(filter_p)
    l2=$(lists)
    ctl quiet >/dev/null
    per=0
    ((l1 > l0)) && per=$(echo "($c1 - $c0) / ($l1 - $l0)" | bc -l)
    printf 'relists of %d pods, alone: %d in %s, %.2f s muster CPU each\n' "$n" $((l1 - l0)) "$duration" "$per"
    printf 'filter, 5,000 names, quiet:          p50 %6.2f ms  p99 %6.2f ms\n' "$q50" "$q99"
    printf 'filter, 5,000 names, while relisting: p50 %6.2f ms  p99 %6.2f ms  (%.1fx quiet p99; %d relists meanwhile)\n' \
      "$r50" "$r99" "$(echo "$r99 / $q99" | bc -l)" $((l2 - l1))
  fi
  stop
done
