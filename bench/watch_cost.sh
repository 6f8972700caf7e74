#!/usr/bin/env bash
# watch_cost.sh - what one more watcher of every pod costs the API server, in JSON (as muster's
# reflector reads) or in protobuf (as kube-scheduler's informers read), on the loopback control
# plane of test/e2e (etcd and kube-apiserver alone: nothing schedules, nothing else watches pods).
#
#   bench/watch_cost.sh [-p PODS] [-r ROUNDS] [-w "none json protobuf json4 protobuf4"] [-k]
#
# For each round and each watcher set in turn (alternated, so a busy machine weighs on all
# alike): start the watchers (curl, reading /api/v1/pods?watch=1 and throwing it away), create
# PODS pods (default 2,000) that no scheduler takes from 16 connections (bench/e2e_load.py run
# --no-wait), and take the API server's CPU seconds from the first create to a second after the
# last; stop the watchers, delete the pods. Watcher sets:
#   none        no extra watcher (the load's own protobuf watch of its namespace only)
#   json        one watcher in JSON: each pod event encoded once more, in JSON, and sent
#   protobuf    one watcher in protobuf: sent (the encoding is shared with the informers')
#   json4 ...   four of them: the encoding is done once per format and event, the sending per
#               watcher, so json4 - protobuf4 is still one encoding per event
# Prints each run, then the medians: API server CPU per pod created and each set's difference
# to none, and the paired figure (each round's JSON run less its protobuf run, per watcher). A pod's life in a real cluster is a few events (created, bound, started, ...): the
# per-event figure times those is what a JSON reader of pods costs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
pods=2000 rounds=3 sets="none json protobuf json4 protobuf4" keep=0
while getopts "p:r:w:kh" opt; do
  case $opt in
    p) pods=$OPTARG ;; r) rounds=$OPTARG ;; w) sets=$OPTARG ;; k) keep=1 ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
# shellcheck source=../test/e2e/lib.sh
source "$root/test/e2e/lib.sh"
load() { python3 "$here/e2e_load.py" "$@"; }
export MUSTER_E2E_DIR=${MUSTER_E2E_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/muster-watch-cost.XXXXXX")}
export E2E_NO_NODE=1
out=$MUSTER_E2E_DIR/watch-cost.jsonl
watchers=()
stop_watchers() {
  local p
  for p in "${watchers[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  watchers=()
}
finish() {
  local rc=$?
  stop_watchers
  [[ $keep == 1 ]] && KEEP=1
  KEEP=${KEEP:-0} e2e_down >/dev/null 2>&1
  exit "$rc"
}
trap finish EXIT

e2e_up >/dev/null || exit 1
# shellcheck disable=SC1091
source "$MUSTER_E2E_DIR/env"
start_watchers() { # SET
  local accept n=1 i
  case $1 in
    none) return 0 ;;
    json*) accept=application/json ;;
    protobuf*) accept=application/vnd.kubernetes.protobuf ;;
  esac
  [[ $1 == *4 ]] && n=4
  for ((i = 0; i < n; i++)); do
    curl -sN --cacert "$E2E_CA_CERT" -H "Authorization: Bearer $E2E_ADMIN_TOKEN" \
      -H "Accept: $accept" "$E2E_APISERVER_URL/api/v1/pods?watch=1&allowWatchBookmarks=true" \
      -o /dev/null &
    watchers+=($!)
  done
  sleep 1 # connected before the first create
}

echo "watch_cost: $pods pods per run, sets $sets, $rounds rounds; $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
apiserver=$(cat "$MUSTER_E2E_DIR/pids/kube-apiserver.pid")
for ((round = 1; round <= rounds; round++)); do
  for set in $sets; do
    ns=wc-r$round-$set
    start_watchers "$set"
    load run --ns "$ns" --pods "$pods" --scheduler nobody --no-wait --label "$set" \
      --pid "kube-apiserver=$apiserver" >>"$out" || exit 1
    stop_watchers
    tail -1 "$out" | python3 -c 'import json, sys; r = json.loads(sys.stdin.read())
print("round %s %-10s %d pods created in %5.1f s; API server CPU %6.3f ms per pod (load %s)" % (
    sys.argv[1], r["label"], r["pods"], r["create_seconds"],
    1000 * r["cpu"]["kube-apiserver"] / r["pods"], open("/proc/loadavg").read().split()[0]))' "$round"
    load delete --ns "$ns" >/dev/null || e2e_err "pods of $ns not deleted"
  done
done
echo
python3 - "$out" <<'EOF'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by = {}
for r in runs:
    by.setdefault(r["label"], []).append(1000 * r["cpu"]["kube-apiserver"] / r["pods"])
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2
print("| watchers | runs | API server CPU, ms per pod created (each run) | median | vs none |")
print("|---|---|---|---|---|")
base = med(by["none"]) if "none" in by else None
for label, v in by.items():
    m = med(v)
    print("| %s | %d | %s | %.3f | %s |" % (label, len(v), ", ".join("%.3f" % x for x in v), m,
                                          "%+.3f" % (m - base) if base is not None else "-"))
# The machine's load drifts between rounds more than a watcher weighs: the paired figure is
# each round's JSON run less the same round's protobuf run.
pairs = [(a, b) for a, b in (("json", "protobuf"), ("json4", "protobuf4")) if a in by and b in by]
if pairs:
    print()
    print("| JSON less protobuf, same round | each round, ms per pod | median | per watcher |")
    print("|---|---|---|---|")
for a, b in pairs:
    d = [x - y for x, y in zip(by[a], by[b])]
    n = 4 if a.endswith("4") else 1
    print("| %s - %s | %s | %+.3f | %+.3f |" % (a, b, ", ".join("%+.3f" % x for x in d), med(d),
                                               med(d) / n))
EOF
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
