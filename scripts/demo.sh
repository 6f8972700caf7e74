#!/usr/bin/env bash
# muster's demo: a local Kubernetes control plane on loopback (etcd, kube-apiserver,
# kube-scheduler and the KubeRay operator, built from the Go module proxy and cached),
# a fake 8-GPU node like the walkthrough's gpu-lab-worker, and the walkthrough's
# experiments replayed with muster as the scheduler.
#
#   scripts/demo.sh            run and clean up
#   scripts/demo.sh --keep     leave the cluster up and print its kubeconfig
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KEEP_CLUSTER=0
case ${1:-} in
  --keep) KEEP_CLUSTER=1 ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "usage: scripts/demo.sh [--keep]" >&2; exit 2 ;;
esac

"$ROOT/scripts/deps.sh" || exit 1
"$ROOT/scripts/build.sh" "$ROOT/build" >/dev/null || exit 1
bash "$ROOT/test/e2e/build-components.sh" || exit 1

export MUSTER_BIN=$ROOT/build/extender/muster
# shellcheck source=../test/e2e/lib.sh
source "$ROOT/test/e2e/lib.sh"
# shellcheck source=../test/e2e/muster.sh
source "$ROOT/test/e2e/muster.sh"

finish() {
  [[ -f ${MUSTER_E2E_DIR:-/nonexistent}/agent.pid ]] && kill "$(cat "$MUSTER_E2E_DIR/agent.pid")" 2>/dev/null
  if ((KEEP_CLUSTER)); then
    echo
    echo "The cluster stays up. Try:"
    echo "  export KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig"
    echo "  $E2E_KUBECTL get pods -A -o wide; $E2E_KUBECTL get queues"
    echo "  curl -s $(e2e_muster_url muster)/debug/state"
    echo "Stop it with: bash $ROOT/test/e2e/cluster.sh down"
  else
    e2e_down >/dev/null 2>&1
  fi
}
trap finish EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }
k() { kubectl_ "$@"; }
kmuster() { # the kubectl plugin, as a user runs it
  mkdir -p "$MUSTER_E2E_DIR/plugins" && ln -sfn "$MUSTER_BIN" "$MUSTER_E2E_DIR/plugins/kubectl-muster"
  PATH="$MUSTER_E2E_DIR/plugins:$PATH" "$E2E_KUBECTL" muster "$@" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig"
}
pods() {
  k -n kuberay-lab get pods -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,SHARE:.metadata.annotations.gpu-fraction,GROUP:.metadata.annotations.muster\.dev/gpu-group,NODE:.spec.nodeName' "$@"
}
gangs() {
  curl -s "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["gangs"]:
    if g["gang"].startswith("kuberay-lab/"):
        why = "  -- " + g["reason"] if g["reason"] else ""
        print("  gang %-22s %-8s %d/%d bound%s" % (g["gang"], g["state"], g["bound"], g["minMembers"], why))'
}
until_bound() { # until_bound <count> <selector>
  wait_for 120 "$1 pods bound" bash -c "[[ \$($E2E_KUBECTL --kubeconfig $MUSTER_E2E_DIR/admin.kubeconfig -n kuberay-lab get pods -l $2 -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | grep -c .) -ge $1 ]]"
}

say "Bringing up the control plane, KubeRay and muster (deployed from manifests/)"
e2e_up >/dev/null || exit 1
e2e_muster_install >/dev/null || exit 1
e2e_muster_start muster >/dev/null || exit 1
e2e_muster_scheduler kube-scheduler >/dev/null || exit 1
e2e_kuberay >/dev/null || exit 1
# No GPU here: play the device plugin's part for muster's reservation pods (see run.sh).
(
  while :; do
    k -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation \
      -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{" "}{.metadata.annotations.muster\.dev/gpu-device}{"\n"}{end}' 2>/dev/null |
      while read -r name device; do
        [[ -n $name && -z $device ]] && k -n muster-system annotate pod "$name" "muster.dev/gpu-device=GPU-fake-$name" >/dev/null 2>&1
      done
    sleep 0.5
  done
) & echo $! > "$MUSTER_E2E_DIR/agent.pid"
show k get nodes -o custom-columns='NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu,GPU-MEM:.metadata.labels.nvidia\.com/gpu\.memory'

say "Experiment 1: one yaml, a whole Ray cluster (head 2 CPU, two workers with one GPU each)"
show k apply -f "$ROOT/manifests/samples/namespace-kuberay-lab.yaml" -f "$ROOT/manifests/samples/raycluster-demo.yaml"
until_bound 3 ray.io/cluster=demo
pods; gangs

say "Experiment 2: a gang bigger than its queue (1-GPU head + four 0.5 workers = 3 GPUs, limit 2)"
show k apply -f "$ROOT/manifests/samples/queues.yaml" -f "$ROOT/manifests/samples/raycluster-fractional.yaml"
sleep 8
pods -l ray.io/cluster=frac; gangs
show k get queues
echo "Why they wait (muster's GangWaiting Events: one per pod, replaced when the reason changes):"
k -n kuberay-lab get events --field-selector reason=GangWaiting -o custom-columns='POD:.involvedObject.name,COUNT:.count,MESSAGE:.message' | head -6
echo "and as kubectl muster why tells it:"
show kmuster why kuberay-lab/frac
say "Raise team-a's GPU limit to 3: all five bind together, on exactly 3 devices"
show k patch queue team-a --type=merge -p '{"spec":{"resources":{"gpu":{"limit":3}}}}'
until_bound 5 ray.io/cluster=frac
pods -l ray.io/cluster=frac; gangs
sleep 2
echo "Bound: the waiting reasons are withdrawn (no GangWaiting Event left on a bound pod of frac):"
if e2e_stale_waiting kuberay-lab ray.io/cluster=frac; then echo "  none stale"; else echo "  STALE Events above"; fi
k -n kuberay-lab get events -o custom-columns='POD:.involvedObject.name,REASON:.reason,MESSAGE:.message' | awk 'NR == 1 || /GangWaiting|GangBound/'
echo "Reservation pods holding the shared devices:"
k -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation -o custom-columns='NAME:.metadata.name,GROUP:.metadata.labels.muster\.dev/gpu-group,NODE:.spec.nodeName,DEVICE:.metadata.annotations.muster\.dev/gpu-device'
sleep 3; show k get queues

say "Experiment 3: two gangs that each need 6 of 8 GPUs"
k delete -n kuberay-lab raycluster demo frac >/dev/null
k delete -n kuberay-lab pods --all --grace-period=0 --force >/dev/null 2>&1  # no controller-manager here
for name in alpha beta; do
  sed -e "s/name: demo$/name: $name/" -e "s/replicas: 2/replicas: 6/" "$ROOT/manifests/samples/raycluster-demo.yaml" | k apply -f - >/dev/null
done
sleep 10
pods -l 'ray.io/cluster in (alpha,beta)'; gangs
waiting=$(k -n kuberay-lab get pods -l ray.io/node-type=head -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.labels.ray\.io/cluster}{end}')
waiting=$([[ $waiting == alpha ]] && echo beta || echo alpha)
echo "Why the other one waits:"
show kmuster why "kuberay-lab/$waiting"
say "Delete the one that was placed: the other binds whole"
placed=$(k -n kuberay-lab get pods -l ray.io/node-type=head -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.labels.ray\.io/cluster}{end}')
show k -n kuberay-lab delete raycluster "$placed"
k -n kuberay-lab delete pods -l "ray.io/cluster=$placed" --grace-period=0 --force >/dev/null 2>&1
other=$([[ $placed == alpha ]] && echo beta || echo alpha)
until_bound 7 "ray.io/cluster=$other"
pods -l "ray.io/cluster=$other"; gangs
sleep 2
echo "No stale waiting reason on its bound pods:"
if e2e_stale_waiting kuberay-lab "ray.io/cluster=$other"; then echo "  none stale"; else echo "  STALE Events above"; fi
say "Done. muster's metrics, for a taste:"
curl -s "$(e2e_muster_url muster)/metrics" | grep -E '^muster_(gangs|bind_outcomes_total|bindings_total)' | head
echo "what muster asked of the API server (muster_kube_requests_total, the writes):"
curl -s "$(e2e_muster_url muster)/metrics" | grep -E '^muster_kube_requests_total\{verb="(CREATE|PATCH|UPDATE|DELETE)"' | head
