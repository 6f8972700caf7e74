#!/usr/bin/env bash
# End-to-end: muster between a real kube-apiserver, a real kube-scheduler and the real KubeRay
# operator, on loopback. One control plane; before each scenario the workloads, queues and
# nodes of the previous one are removed, and after it the invariants are checked.
#
#   test/e2e/run.sh MUSTER_BIN [pattern]     pattern: parts of names, |-separated ("04d|18")
#   K8S_VERSION=v1.36.3 test/e2e/run.sh MUSTER_BIN      the 1.36 leg
#
# Scenarios are test/e2e/scenarios/NN-name.sh, each defining `scenario` (run in a subshell
# with `set -e`; lib.sh and muster.sh are sourced). KEEP=1 keeps the state dir.
# Which Kubernetes minors a scenario runs on is its line "# legs: 1.37 1.36" (none: 1.37 only);
# the minor of K8S_VERSION (lib.sh: v1.37.2 unless set) picks them.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
MUSTER_BIN=$(realpath "${1:?usage: run.sh MUSTER_BIN [pattern]}")
PATTERN=${2:-}
export MUSTER_BIN
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=muster.sh
source "$HERE/muster.sh"

passed=0 failed=0 failures=()
# What each component running now has cost in CPU seconds (docs/e2e.md quotes it per leg).
e2e_component_cpu() {
  local f n pid out=""
  for f in "$MUSTER_E2E_DIR"/pids/*.pid; do
    [[ -f $f ]] || continue
    n=$(basename "$f" .pid) pid=$(cat "$f")
    [[ -r /proc/$pid/stat ]] || continue
    out+=" $n $(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1fs", ($12 + $13) / hz }' "/proc/$pid/stat"),"
  done
  echo "${out%,}"
}

finish() {
  local rc=$?
  [[ -z ${MUSTER_E2E_DIR:-} ]] || e2e_log "CPU of the components still running:$(e2e_component_cpu)"
  e2e_fake_node_agent_stop
  ((failed)) && e2e_fail "end-to-end scenarios failed: ${failures[*]}" 2>/dev/null
  e2e_down
  echo "e2e: $passed passed, $failed failed"
  ((failed == 0 && rc == 0)) || exit 1
}
trap finish EXIT

# The node's part in GPU sharing: a real node's device plugin gives each reservation pod a
# GPU and `muster reserve` writes it onto the pod. No GPU exists here, so this loop writes
# the annotation `muster reserve` would write, for reservation pods bound to fake nodes.
e2e_fake_node_agent() {
  (
    set +e +o pipefail # one failed kubectl must not end the node's part
    while :; do
      kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation \
        -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.metadata.annotations.muster\.dev/gpu-device}{"\n"}{end}' 2>/dev/null |
        while read -r name node device; do
          [[ -n $name && -z $device ]] || continue
          kubectl_ -n muster-system annotate pod "$name" "muster.dev/gpu-device=GPU-fake-$name" >/dev/null 2>&1
        done
      sleep 0.5
    done
  ) &
  echo $! > "$MUSTER_E2E_DIR/fake-node-agent.pid"
}
e2e_fake_node_agent_alive() {
  [[ -f ${MUSTER_E2E_DIR:-/nonexistent}/fake-node-agent.pid ]] &&
    kill -0 "$(cat "$MUSTER_E2E_DIR/fake-node-agent.pid")" 2>/dev/null
}
e2e_fake_node_agent_stop() {
  [[ -f ${MUSTER_E2E_DIR:-/nonexistent}/fake-node-agent.pid ]] || return 0
  kill "$(cat "$MUSTER_E2E_DIR/fake-node-agent.pid")" 2>/dev/null
  rm -f "$MUSTER_E2E_DIR/fake-node-agent.pid"
}

# Remove what a scenario left: workloads (force: kwok finishes a graceful delete only of a pod
# on a node it manages), their ConfigMaps and Events, queues, reservation pods, nodes.
# Namespaces stay (scenarios name their own; deleting and re-creating one costs the namespace
# controller's sweep). Then the baseline components run again.
e2e_reset() {
  local ns
  kubectl_ delete rayjobs.ray.io,rayservices.ray.io,rayclusters.ray.io --all -A --wait=false >/dev/null 2>&1
  kubectl_ delete jobs.batch --all -A --wait=false >/dev/null 2>&1
  # One DELETE of each collection per namespace (kubectl's --all deletes one object at a time:
  # after 16's 200 pods and their Events, minutes): pods at once (gracePeriodSeconds=0, as
  # --force), ConfigMaps but the bootstrap ones and kube-root-ca.crt, Events.
  for ns in $(kubectl_ get ns -o jsonpath='{.items[*].metadata.name}'); do
    case $ns in kube-system|kube-public|kube-node-lease) continue ;; esac
    kubectl_ delete --raw "/api/v1/namespaces/$ns/pods?gracePeriodSeconds=0" >/dev/null 2>&1
    kubectl_ delete --raw "/api/v1/namespaces/$ns/configmaps?labelSelector=%21kubernetes.io%2Fbootstrapping&fieldSelector=metadata.name%21%3Dkube-root-ca.crt" >/dev/null 2>&1
    kubectl_ delete --raw "/api/v1/namespaces/$ns/events" >/dev/null 2>&1
  done
  kubectl_ delete podgroups.scheduling.x-k8s.io --all -A >/dev/null 2>&1
  # The Workload API's (lib.sh turns it on). The PodGroupProtection admission plugin puts the
  # finalizer scheduling.k8s.io/podgroup-protection on every PodGroup; kube-controller-manager's
  # PodGroup protection controller takes it off once no pod uses it, which the pods' deletion
  # above may not have reached yet: strip it after the delete.
  kubectl_ delete workloads.scheduling.k8s.io --all -A >/dev/null 2>&1
  kubectl_ delete podgroups.scheduling.k8s.io --all -A --wait=false >/dev/null 2>&1
  kubectl_ get podgroups.scheduling.k8s.io -A \
    -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' 2>/dev/null |
    while read -r ns name; do
      [[ -n $name ]] && kubectl_ -n "$ns" patch podgroups.scheduling.k8s.io "$name" --type=merge \
        -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
  kubectl_ delete queues.muster.dev --all >/dev/null 2>&1
  kubectl_ delete topologies.kai.scheduler --all >/dev/null 2>&1 # scenario 20's CRD, when applied
  kubectl_ delete mutatingwebhookconfiguration muster-gpu-sharing >/dev/null 2>&1
  kubectl_ delete --raw /api/v1/nodes >/dev/null 2>&1
  e2e_baseline
}

# The baseline every scenario starts from: the controller manager and kwok (lib.sh e2e_up), one
# muster, its kube-scheduler, the operator.
e2e_baseline() {
  _e2e_alive kube-controller-manager || e2e_controller_manager || return 1
  _e2e_alive kwok || e2e_kwok || return 1
  _e2e_alive muster || e2e_muster_start muster || return 1
  _e2e_alive kube-scheduler || e2e_muster_scheduler kube-scheduler || return 1
  _e2e_alive kuberay-operator || e2e_kuberay || return 1
  e2e_fake_node_agent_alive || e2e_fake_node_agent
}

# The scenario is one asked for: PATTERN empty, or one of its |-separated parts in its name.
e2e_wanted() {
  local p parts
  [[ -n $PATTERN ]] || return 0
  IFS='|' read -ra parts <<<"$PATTERN"
  for p in "${parts[@]}"; do [[ $1 == *"$p"* ]] && return 0; done
  return 1
}

# The scenario runs on this leg: its "# legs:" line names the minor of K8S_VERSION (no line: 1.37).
e2e_on_leg() {
  local minor=${K8S_VERSION#v}; minor=${minor%.*}
  local legs
  legs=$(sed -n 's/^# legs: *//p' "$1" | head -n 1)
  [[ " ${legs:-1.37} " == *" $minor "* ]]
}

set -e
t0=$SECONDS
e2e_log "Kubernetes $K8S_VERSION, KubeRay operator $KUBERAY_VERSION"
e2e_up
kubectl_ delete node gpu-lab-worker >/dev/null 2>&1 || true
e2e_muster_install
e2e_baseline
set +e
e2e_log "control plane and muster up in $((SECONDS - t0))s"
e2e_log "Kubernetes $K8S_VERSION: $(e2e_bins >/dev/null && "$E2E_KUBE_APISERVER" --version 2>/dev/null)"

for f in "$HERE"/scenarios/[0-9]*.sh; do
  name=$(basename "$f" .sh)
  e2e_wanted "$name" || continue
  # 90-kill9-trials runs only when asked for (bench/kill9_trials.sh): skipping it here saves the
  # reset before it (after 17's 300 nodes, minutes of deletes)
  [[ $name != 90-kill9-trials || -n ${KILL9_TRIALS:-} ]] || continue
  e2e_on_leg "$f" || continue
  e2e_reset >/dev/null 2>&1 || e2e_baseline
  e2e_log "=== scenario $name"
  start=$SECONDS
  (
    set -e
    # shellcheck disable=SC1090
    source "$f"
    scenario
  )
  rc=$?
  # a scenario that failed while polling the invariants leaves its poller behind
  if [[ -f $MUSTER_E2E_DIR/invariants-poll.pid ]]; then
    kill "$(cat "$MUSTER_E2E_DIR/invariants-poll.pid")" 2>/dev/null
    rm -f "$MUSTER_E2E_DIR/invariants-poll.pid"
  fi
  if ((rc == 0)); then
    e2e_invariants || rc=1
  fi
  if ((rc == 0)); then
    passed=$((passed + 1))
    e2e_log "=== PASS $name ($((SECONDS - start))s)"
  else
    failed=$((failed + 1)) failures+=("$name")
    e2e_err "=== FAIL $name ($((SECONDS - start))s); muster log tail:"
    tail -n 30 "$MUSTER_E2E_DIR/logs/muster.log" >&2 || true
    kubectl_ get pods -A -o wide >&2 || true
  fi
done
