#!/usr/bin/env bash
# kill9_trials.sh - SIGKILL muster at random points of a gang's commit, N times, on the loopback
# cluster of test/e2e (real kube-apiserver, kube-scheduler, KubeRay operator), restarting it as a
# container restart would; after every trial: 0 partial gangs, 0 double-booked shares
# (test/e2e/invariants.py). Not for CI: a trial takes tens of seconds.
#
#   bench/kill9_trials.sh [N] [MUSTER]     (N default 100; MUSTER default build/extender/muster)
#
# The trials are test/e2e/scenarios/90-kill9-trials.sh; its last line is
# "kill9: N trials in S s: P partial gangs, B with invariants broken, M kill moments missed".
# MUSTER_E2E_DIR=<dir> keeps the cluster's state (logs, snapshots) there.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100}
[[ $n =~ ^[0-9]+$ ]] || { sed -n '2,12p' "$0" >&2; exit 2; }
export KILL9_TRIALS=$n
exec bash "$root/test/e2e/run.sh" "${2:-$root/build/extender/muster}" 90-kill9-trials
