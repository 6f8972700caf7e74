#!/usr/bin/env bash
# Local Kubernetes control plane on loopback for muster e2e tests (see lib.sh).
#
#   cluster.sh up                        etcd + kube-apiserver + fake GPU node gpu-lab-worker
#   cluster.sh scheduler [cfg.yaml] [name]   (re)start kube-scheduler with a config
#   cluster.sh kuberay [operator flags]  apply KubeRay CRDs, (re)start the operator
#   cluster.sh podgroup-crds             apply the scheduler-plugins PodGroup CRD
#   cluster.sh kwok [flags]              optional: start kwok (pods on fake nodes -> Running)
#   cluster.sh node NAME [gpus] [cpu] [mem] [gpu_mem_mib] [labels k=v,..]
#   cluster.sh stop NAME                 stop one component (kube-scheduler, kuberay-operator, ...)
#   cluster.sh env                       print export lines:  eval "$(cluster.sh env)"
#   cluster.sh status                    components and their pids
#   cluster.sh down                      stop everything; remove the dir unless KEEP=1
#                                        (after a failure only logs are kept)
#   cluster.sh kubectl ARGS...           kubectl against the cluster
#
# The state dir is $MUSTER_E2E_DIR (default: a new mktemp -d, remembered in
# ${MUSTER_CACHE:-~/.cache/muster}/e2e-current for later invocations).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cmd=${1:-}; shift || true
case $cmd in
  up)
    if ! e2e_up; then
      e2e_err "cluster up failed; logs in ${MUSTER_E2E_DIR:-?}/logs"
      [[ -n ${MUSTER_E2E_DIR:-} ]] && KEEP=${KEEP:-0} e2e_down
      exit 1
    fi
    echo "MUSTER_E2E_DIR=$MUSTER_E2E_DIR"
    echo "KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig" ;;
  down)          e2e_down ;;
  env)           e2e_env ;;
  scheduler)     e2e_scheduler "$@" ;;
  kuberay)       e2e_kuberay "$@" ;;
  podgroup-crds) e2e_dir && e2e_podgroup_crds ;;
  kwok)          e2e_kwok "$@" ;;
  node)          e2e_dir && e2e_gpu_node "$@" ;;
  stop)          e2e_dir && e2e_stop "${1:?name}" ;;
  kubectl)       e2e_dir && kubectl_ "$@" ;;
  status)
    e2e_dir || exit 1
    echo "dir: $MUSTER_E2E_DIR  apiserver: $E2E_APISERVER_URL"
    for f in "$MUSTER_E2E_DIR"/pids/*.pid; do
      [[ -f $f ]] || continue
      n=$(basename "$f" .pid)
      if _e2e_alive "$n"; then echo "  $n: running (pid $(cat "$f"))"; else echo "  $n: dead"; fi
    done ;;
  *)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2 ;;
esac
