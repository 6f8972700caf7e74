#!/usr/bin/env bash
# Smoke test of the local control plane: default kube-scheduler binds a GPU pod to the
# fake node; the KubeRay operator turns a RayCluster into head + worker pods.
# Usage: bash test/e2e/smoke.sh      (KEEP=1 keeps the state dir)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$HERE/lib.sh"

trap 'rc=$?; ((rc)) && e2e_fail "smoke.sh failed (rc=$rc)" 2>/dev/null; e2e_down; exit $rc' EXIT
set -e
t0=$SECONDS
e2e_up
e2e_log "up in $((SECONDS - t0))s"

e2e_scheduler   # default profile, leaderElect: false
kubectl_ apply -f "$HERE/manifests/gpu-pod.yaml"
wait_for 60 "gpu-smoke bound" bash -c '[[ -n $("$0" --kubeconfig "$1" get pod gpu-smoke -o jsonpath="{.spec.nodeName}") ]]' \
  "$E2E_KUBECTL" "$MUSTER_E2E_DIR/admin.kubeconfig"
kubectl_ get pod gpu-smoke -o wide
[[ $(kubectl_ get pod gpu-smoke -o jsonpath='{.spec.nodeName}') == gpu-lab-worker ]]

e2e_kuberay
kubectl_ apply -f "$HERE/manifests/raycluster-smoke.yaml"
count_ray_pods() { [[ $(kubectl_ get pods -l ray.io/cluster=smoke --no-headers 2>/dev/null | wc -l) -ge 3 ]]; }
wait_for 90 "RayCluster smoke: 1 head + 2 worker pods" count_ray_pods
all_bound() { ! kubectl_ get pods -l ray.io/cluster=smoke -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -qx ''; }
wait_for 60 "ray pods bound" all_bound
kubectl_ get pods -l ray.io/cluster=smoke -o wide
kubectl_ get raycluster smoke
e2e_log "smoke OK in $((SECONDS - t0))s"
