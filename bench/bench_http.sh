#!/usr/bin/env bash
# bench_http.sh - wrk against the real muster daemon's /filter and /prioritize.
#
#   bench/bench_http.sh [-d DURATION] [-n NODES] [-g GPUS] [MUSTER]     (MUSTER: build/extender/muster)
#
# Builds nothing. Writes a manifest of NODES Nodes with GPUS GPUs each (bench/nodes_gen.sh;
# defaults 5000 and 8) and a settings file (log level warn, so logging stays out of the
# measurement), starts `MUSTER serve --offline -f nodes.yaml --listen 127.0.0.1:<free port>`,
# checks one filter answer, runs wrk per case, prints requests/s and latency per case and stops
# the daemon. Cases: filter with 100 names on 16 connections (-t2 -c16), then filter and
# prioritize with 5,000 names on one connection, as kube-scheduler calls an extender one pod
# at a time. Exits 1 when a target of issue 3 is missed: >= 10,000 filter calls/s at 100
# names, p99 < 2 ms for filter at 5,000 names.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
duration=10s
nodes=5000
gpus=8

while getopts "d:n:g:h" opt; do
  case $opt in
    d) duration=$OPTARG ;;
    n) nodes=$OPTARG ;;
    g) gpus=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
muster=${1:-$root/build/extender/muster}

command -v wrk >/dev/null || { echo "bench_http: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[[ -x $muster ]] || { echo "bench_http: no muster binary at $muster (build it first)" >&2; exit 2; }
((nodes >= 5000)) || { echo "bench_http: the 5,000-name cases need -n 5000 or more" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_http.XXXXXX")
server_pid=
stop_server() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap stop_server EXIT

"$here/nodes_gen.sh" "$nodes" "$gpus" >"$work/nodes.yaml"
cat >"$work/muster.yaml" <<YAML
log:
  level: warn
maxNodeNames: $((nodes > 20000 ? nodes : 20000))
YAML
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port

"$muster" serve --offline --config "$work/muster.yaml" -f "$work/nodes.yaml" \
  --listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server_pid=$!

# Up to 30 s for the daemon to load the nodes and answer /healthz.
for _ in $(seq 300); do
  curl -fsS -o /dev/null "$url/healthz" 2>/dev/null && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "bench_http: muster exited:" >&2
    cat "$work/server.log" >&2
    server_pid=
    exit 1
  fi
  sleep 0.1
done
curl -fsS -o /dev/null "$url/healthz" || { echo "bench_http: no answer from $url/healthz" >&2; exit 1; }

# One real answer first (and a warm-up): the pod must pass on some nodes, or the figures
# measure a refusal. wrk_extender.lua writes its body where WRK_BODY_OUT says.
WRK_BODY_OUT=$work/filter5.json wrk -t1 -c1 -d1s -s "$here/wrk_extender.lua" "$url" -- filter 5 \
  >/dev/null
answer=$(curl -fsS -X POST -H 'Content-Type: application/json' --data-binary "@$work/filter5.json" \
  "$url/filter")
if ! grep -q '"NodeNames":\["node-' <<<"$answer"; then
  echo "bench_http: the bench pod passes no node; muster answered: ${answer:0:300}" >&2
  exit 1
fi
echo "muster $("$muster" --version 2>/dev/null | head -1), $nodes nodes x $gpus GPUs, wrk $duration per case"

# verb, names, threads, connections.
cases=("filter 100 2 16" "filter 5000 1 1" "prioritize 5000 1 1")
printf '%-11s %6s %5s %10s %9s %9s %9s %7s\n' verb names conns "req/s" "p50 ms" "p99 ms" "max ms" errors
status=0
for c in "${cases[@]}"; do
  read -r verb names t n <<<"$c"
  line=$(wrk -t"$t" -c"$n" -d"$duration" --latency -s "$here/wrk_extender.lua" \
    "$url" -- "$verb" "$names" | grep '^RESULT ')
  declare -A r=()
  for kv in ${line#RESULT }; do r[${kv%%=*}]=${kv#*=}; done
  printf '%-11s %6s %5s %10s %9s %9s %9s %7s\n' "$verb" "$names" "$n" "${r[rps]}" "${r[p50_ms]}" \
    "${r[p99_ms]}" "${r[max_ms]}" "${r[errors]}"
  if [[ $verb == filter && $names == 100 ]] && ((${r[rps]} < 10000)); then
    echo "  MISS: filter at 100 names is under 10,000 calls/s" >&2
    status=1
  fi
  if [[ $verb == filter && $names == 5000 ]] && awk "BEGIN{exit !(${r[p99_ms]} >= 2)}"; then
    echo "  MISS: filter p99 at 5,000 names is not under 2 ms" >&2
    status=1
  fi
  if ((${r[errors]} > 0)); then
    echo "  MISS: $verb answered errors (non-200 or socket errors)" >&2
    status=1
  fi
  unset r
done
if grep -qiE 'error|warn' "$work/server.log"; then
  echo "muster logged during the run (first lines):" >&2
  head -5 "$work/server.log" >&2
fi
exit $status
