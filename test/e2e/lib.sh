# shellcheck shell=bash
# Local Kubernetes control plane on loopback for the muster e2e tests.
# Source it (`source test/e2e/lib.sh`) or drive it through test/e2e/cluster.sh.
#
#   e2e_up                      etcd + kube-apiserver (RBAC), kube-controller-manager (the Job
#                               controller, garbage collector, namespace controller), kwok, admin
#                               kubeconfig, fake GPU node
#   e2e_down                    stop everything started, remove the dir (KEEP=1 keeps it;
#                               after a failure only logs/ is kept)
#   e2e_scheduler [cfg] [name]  (re)start a kube-scheduler with a KubeSchedulerConfiguration
#                               (@KUBECONFIG@ and @E2E_DIR@ in cfg are substituted)
#   e2e_kuberay [flags...]      apply KubeRay CRDs and (re)start the operator with flags
#   e2e_kwok [flags...]         (re)start kwok: nodes annotated kwok.x-k8s.io/node=fake get
#                               heartbeats, their bound pods become Running and Ready, a deleted
#                               pod goes as after a kubelet's grace period, a Job's pod Succeeds
#   e2e_controller_manager      (re)start kube-controller-manager (E2E_KCM_CONTROLLERS)
#   e2e_gpu_node name [gpus] [cpu] [mem] [gpu_mem_mib] [extra-labels k=v,..]
#   e2e_stop name               stop one component started by this library
#   kubectl_ ...                kubectl against the e2e cluster
#   wait_for secs desc cmd...   poll cmd until it succeeds
#   e2e_fail msg                mark the run failed (logs are kept by e2e_down), return 1
#
# State lives in $MUSTER_E2E_DIR (default: mktemp -d; `up` records it in
# $MUSTER_CACHE/e2e-current so later cluster.sh invocations find it):
#   admin.kubeconfig, env, pki/, logs/<name>.log, pids/<name>.pid, bin/ (symlinks)

E2E_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MUSTER_CACHE=${MUSTER_CACHE:-$HOME/.cache/muster}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
# The suite runs on Kubernetes v1.37.2; test/e2e/run.sh runs a smaller leg on v1.36.3
# (K8S_VERSION=v1.36.3), for what only 1.36 serves (the Workload API's v1alpha2).
K8S_VERSION=${K8S_VERSION:-v1.37.2}
KUBERAY_VERSION=${KUBERAY_VERSION:-v1.7.0}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
E2E_SERVICE_CIDR=${E2E_SERVICE_CIDR:-10.0.0.0/24}

# Kubernetes' Workload API (KEP-4671), off by default, on in the e2e apiserver (and controller
# manager) so muster's Workload and PodGroup reflectors have something to watch:
#   1.36  the feature gate GenericWorkload (alpha since 1.35; it gates the workloads and
#         podgroups storage in pkg/registry/scheduling/rest and the pod's spec.schedulingGroup)
#         and the group version scheduling.k8s.io/v1alpha2 in --runtime-config;
#   1.37  GenericWorkload (beta, still off by default) and scheduling.k8s.io/v1beta1 (v1alpha2 is
#         gone), plus TopologyAwareWorkloadScheduling (alpha), without which the API server
#         forbids a PodGroup's spec.schedulingConstraints (k8s.io/api v0.37.2 scheduling/v1beta1).
# Only the API server and the controller manager get them: a kube-scheduler with the gate
# schedules a PodGroup's pods in one pod group cycle, which a scenario turns on for itself
# (E2E_SCHEDULER_FLAGS). Nothing changes for pods without spec.schedulingGroup.
# E2E_WORKLOAD_API_FLAGS="" drops them.
e2e_workload_api_flags() {
  if [[ -n ${E2E_WORKLOAD_API_FLAGS+set} ]]; then
    echo "$E2E_WORKLOAD_API_FLAGS"
  elif [[ $K8S_VERSION == v1.36.* ]]; then
    echo "--feature-gates GenericWorkload=true --runtime-config scheduling.k8s.io/v1alpha2=true"
  elif [[ $K8S_VERSION == v1.37.* ]]; then
    echo "--feature-gates GenericWorkload=true,TopologyAwareWorkloadScheduling=true --runtime-config scheduling.k8s.io/v1beta1=true"
  fi
}
# The gates alone (the controller manager takes no --runtime-config).
e2e_workload_api_gates() {
  local f
  f=$(e2e_workload_api_flags)
  [[ $f == *"--feature-gates "* ]] || return 0
  f=${f#*--feature-gates }
  echo "--feature-gates ${f%% *}"
}
# The Workload API's version this API server serves ("" when none).
e2e_workload_api_version() {
  local f
  f=$(e2e_workload_api_flags)
  case $f in
    *scheduling.k8s.io/v1beta1=true*) echo v1beta1 ;;
    *scheduling.k8s.io/v1alpha2=true*) echo v1alpha2 ;;
  esac
}

# kube-controller-manager runs only what the suite needs: the Job controller (a RayJob's
# submitter is a batch/v1 Job), the garbage collector (deleting a RayJob or RayCluster deletes
# what it owns, as in a real cluster), the namespace controller (a deleted namespace goes away)
# and, with the Workload API, the PodGroup protection controller (it takes its finalizer off a
# PodGroup no pod uses), and the disruption controller (a PodDisruptionBudget's status, which
# muster reads before it evicts). Not the node lifecycle controller: no kubelet renews the nodes' leases
# but kwok, and a taint from it would evict pods in the middle of a scenario.
E2E_KCM_CONTROLLERS=${E2E_KCM_CONTROLLERS:-job-controller,garbage-collector-controller,namespace-controller,disruption-controller}

e2e_log() { printf '[e2e %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
e2e_err() { printf '[e2e %(%H:%M:%S)T] ERROR: %s\n' -1 "$*" >&2; }

# ---- binaries -----------------------------------------------------------------
e2e_bins() {
  local b=$MUSTER_CACHE/bin
  E2E_ETCD=$b/etcd-$ETCD_VERSION
  E2E_KUBE_APISERVER=$b/kube-apiserver-$K8S_VERSION
  E2E_KUBE_SCHEDULER=$b/kube-scheduler-$K8S_VERSION
  E2E_KUBECTL=$b/kubectl-$K8S_VERSION
  E2E_KUBE_CONTROLLER_MANAGER=$b/kube-controller-manager-$K8S_VERSION
  E2E_KUBERAY_OPERATOR=$b/kuberay-operator-$KUBERAY_VERSION
  E2E_KWOK=$b/kwok-$KWOK_VERSION
  E2E_HELM=$b/helm-$HELM_VERSION
  E2E_KUBERAY_CRDS=$MUSTER_CACHE/crds/kuberay-$KUBERAY_VERSION
  # PodGroup CRD for --batch-scheduler=scheduler-plugins (version kuberay depends on)
  E2E_PODGROUP_CRDS=$(ls -d "$MUSTER_CACHE"/crds/scheduler-plugins-* 2>/dev/null | sort -V | tail -1)
  local missing=() f
  for f in "$E2E_ETCD" "$E2E_KUBE_APISERVER" "$E2E_KUBE_SCHEDULER" "$E2E_KUBECTL" \
    "$E2E_KUBE_CONTROLLER_MANAGER" "$E2E_KWOK"; do
    [[ -x $f ]] || missing+=("$f")
  done
  if ((${#missing[@]})); then
    e2e_err "missing binaries: ${missing[*]}"
    e2e_err "run: bash $E2E_LIB_DIR/build-components.sh"
    return 1
  fi
}

e2e_need_tools() {
  local t missing=()
  for t in openssl curl; do command -v "$t" >/dev/null 2>&1 || missing+=("$t"); done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    e2e_log "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null
  fi
  for t in "${missing[@]}"; do
    command -v "$t" >/dev/null 2>&1 || { e2e_err "$t is required"; return 1; }
  done
}

# ---- state dir --------------------------------------------------------------------
# e2e_dir: resolve MUSTER_E2E_DIR of a running cluster (env, else the `up` pointer file)
e2e_dir() {
  if [[ -z ${MUSTER_E2E_DIR:-} && -f $MUSTER_CACHE/e2e-current ]]; then
    MUSTER_E2E_DIR=$(cat "$MUSTER_CACHE/e2e-current")
  fi
  if [[ -z ${MUSTER_E2E_DIR:-} || ! -f $MUSTER_E2E_DIR/env ]]; then
    e2e_err "no e2e cluster found (set MUSTER_E2E_DIR or run: cluster.sh up)"
    return 1
  fi
  export MUSTER_E2E_DIR
  # shellcheck disable=SC1091
  source "$MUSTER_E2E_DIR/env"
  export KUBECONFIG
  e2e_bins
}

e2e_fail() {
  [[ -n ${MUSTER_E2E_DIR:-} && -d $MUSTER_E2E_DIR ]] && echo "$*" >> "$MUSTER_E2E_DIR/FAILED"
  e2e_err "$*"
  return 1
}

# ---- helpers ----------------------------------------------------------------------
kubectl_() { "$E2E_KUBECTL" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" "$@"; }

# wait_for <timeout-seconds> <description> <command...>
wait_for() {
  local timeout=$1 desc=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then e2e_err "timed out after ${timeout}s waiting for: $desc"; return 1; fi
    sleep 0.5
  done
}

_E2E_PORTS=" "
# e2e_free_port: a currently unused loopback TCP port (10000-30999, below the
# Linux ephemeral range, never handed out twice by this shell)
e2e_free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % 21000))
    [[ $_E2E_PORTS == *" $p "* ]] && continue
    if command -v ss >/dev/null 2>&1; then
      [[ -n $(ss -Htan "( sport = :$p )" 2>/dev/null) ]] && continue
    fi
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    _E2E_PORTS+="$p "
    echo "$p"; return 0
  done
  e2e_err "no free port found"; return 1
}

_e2e_alive() { # _e2e_alive <name>: pid file exists and the process is still ours
  local pf=$MUSTER_E2E_DIR/pids/$1.pid pid
  [[ -f $pf ]] || return 1
  pid=$(cat "$pf")
  [[ -n $pid && -d /proc/$pid ]] || return 1
  # guard against pid reuse: the process must have been started with our state dir /
  # binary cache on its command line. While it execs (nohup, then the binary) its cmdline
  # can read empty or still be the shell's for a moment: look again before calling it dead
  # (CI saw "kwok is not running" at once after its start, its log empty).
  local i cmd
  for ((i = 0; i < 25; i++)); do
    [[ -d /proc/$pid ]] || return 1
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || true
    [[ $cmd == *"$MUSTER_E2E_DIR"* || $cmd == *"$MUSTER_CACHE/bin"* ]] && return 0
    sleep 0.02
  done
  return 1
}

# _e2e_start <name> <binary> [args...]: start in background, log + pid into the state dir
_e2e_start() {
  local name=$1; shift
  mkdir -p "$MUSTER_E2E_DIR/logs" "$MUSTER_E2E_DIR/pids"
  if _e2e_alive "$name"; then e2e_stop "$name"; fi
  local log=$MUSTER_E2E_DIR/logs/$name.log
  [[ -s $log ]] && mv -f "$log" "$log.prev"
  echo "# $(date -Is) $*" > "$log"
  nohup "$@" >> "$log" 2>&1 < /dev/null &
  local pid=$!
  echo "$pid" > "$MUSTER_E2E_DIR/pids/$name.pid"
  echo "$name" >> "$MUSTER_E2E_DIR/pids/order"
  # Until the child has exec'd, its cmdline is this shell's, and _e2e_alive would call it
  # dead (seen under load: "etcd is not running" right after its start). Wait for the exec.
  local i cmd
  for ((i = 0; i < 100; i++)); do
    [[ -d /proc/$pid ]] || break
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || true
    [[ $cmd == *"$MUSTER_E2E_DIR"* || $cmd == *"$MUSTER_CACHE/bin"* ]] && break
    sleep 0.02
  done
  e2e_log "started $name (pid $pid, log $log)"
}

_e2e_died() { # print the tail of a component's log, mark failure
  e2e_err "$1 is not running; last lines of $MUSTER_E2E_DIR/logs/$1.log:"
  tail -n 25 "$MUSTER_E2E_DIR/logs/$1.log" >&2 || true
  e2e_fail "$1 failed to start"
}

# _e2e_wait_http <name> <timeout> <curl args...>: until the URL answers 2xx, or the process dies
_e2e_wait_http() {
  local name=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until curl -sf -o /dev/null --max-time 2 "$@"; do
    _e2e_alive "$name" || { _e2e_died "$name"; return 1; }
    if ((SECONDS >= deadline)); then
      e2e_err "$name not healthy after ${timeout}s ($*)"; tail -n 15 "$MUSTER_E2E_DIR/logs/$name.log" >&2
      e2e_fail "$name not healthy"; return 1
    fi
    sleep 0.5
  done
}

_e2e_term() { # send SIGTERM if the component is alive; prints its pid
  local pid
  _e2e_alive "$1" || { rm -f "$MUSTER_E2E_DIR/pids/$1.pid"; return 1; }
  pid=$(cat "$MUSTER_E2E_DIR/pids/$1.pid")
  kill -TERM "$pid" 2>/dev/null || true
  echo "$pid"
}

_e2e_reap() { # _e2e_reap <name> <pid>: wait up to 10s, then SIGKILL
  local i
  for ((i = 0; i < 100; i++)); do [[ -d /proc/$2 ]] || break; sleep 0.1; done
  if [[ -d /proc/$2 ]]; then kill -KILL "$2" 2>/dev/null || true; sleep 0.2; fi
  rm -f "$MUSTER_E2E_DIR/pids/$1.pid"
  e2e_log "stopped $1 (pid $2)"
}

e2e_stop() {
  local pid
  pid=$(_e2e_term "$1") && _e2e_reap "$1" "$pid"
  return 0
}

# ---- PKI ----------------------------------------------------------------------------
_e2e_pki() {
  local d=$MUSTER_E2E_DIR/pki
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=muster-e2e-ca" 2>/dev/null || exit 1
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
      -subj "/CN=kube-apiserver" 2>/dev/null || exit 1
    printf '%s\n' \
      "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
      "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" > apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null || exit 1
    # service-account token signing key pair
    openssl genrsa -out sa.key 2048 2>/dev/null || exit 1
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null || exit 1
    chmod 0600 ./*.key
  ) || { e2e_fail "openssl: PKI generation failed"; return 1; }
}

_e2e_kubeconfig() { # _e2e_kubeconfig <file> <user> <token>
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: muster-e2e
  cluster:
    server: https://127.0.0.1:$E2E_APISERVER_PORT
    certificate-authority: $MUSTER_E2E_DIR/pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: muster-e2e
  context: {cluster: muster-e2e, user: $2}
current-context: muster-e2e
EOF
  chmod 0600 "$1"
}

# ---- up / down ------------------------------------------------------------------------
e2e_up() {
  e2e_need_tools || return 1
  e2e_bins || return 1
  local _e2e_generated=0
  if [[ -n ${MUSTER_E2E_DIR:-} ]]; then
    mkdir -p "$MUSTER_E2E_DIR" || return 1
    MUSTER_E2E_DIR=$(cd "$MUSTER_E2E_DIR" && pwd)
    if [[ -f $MUSTER_E2E_DIR/env ]] && (source "$MUSTER_E2E_DIR/env" && _e2e_alive kube-apiserver); then
      e2e_err "a cluster is already running in $MUSTER_E2E_DIR (cluster.sh down first)"; return 1
    fi
  else
    MUSTER_E2E_DIR=$(mktemp -d "${TMPDIR:-/tmp}/muster-e2e.XXXXXX")
    _e2e_generated=1
  fi
  export MUSTER_E2E_DIR
  # a reused explicit dir: start from a clean etcd / pid list (old logs become *.prev)
  rm -rf "$MUSTER_E2E_DIR/etcd" "$MUSTER_E2E_DIR/pids" "$MUSTER_E2E_DIR/bin"
  mkdir -p "$MUSTER_E2E_DIR"/{logs,pids,bin} "$MUSTER_CACHE"
  rm -f "$MUSTER_E2E_DIR/FAILED"
  # remember a generated dir for later `cluster.sh` calls (explicit dirs are not recorded,
  # so a bare `cluster.sh down` never touches a cluster somebody started with its own dir)
  [[ $_e2e_generated == 1 ]] && echo "$MUSTER_E2E_DIR" > "$MUSTER_CACHE/e2e-current"
  e2e_log "state dir $MUSTER_E2E_DIR"

  E2E_ETCD_PORT=$(e2e_free_port) && E2E_ETCD_PEER_PORT=$(e2e_free_port) &&
    E2E_APISERVER_PORT=$(e2e_free_port) || return 1
  E2E_ADMIN_TOKEN=$(openssl rand -hex 24)
  _e2e_pki || return 1
  echo "$E2E_ADMIN_TOKEN,muster-e2e-admin,muster-e2e-admin,\"system:masters\"" > "$MUSTER_E2E_DIR/pki/tokens.csv"
  chmod 0600 "$MUSTER_E2E_DIR/pki/tokens.csv"

  local b
  for b in ETCD KUBE_APISERVER KUBE_SCHEDULER KUBE_CONTROLLER_MANAGER KUBECTL KUBERAY_OPERATOR KWOK HELM; do
    local v=E2E_$b; [[ -x ${!v} ]] || continue
    local n=${b,,}; n=${n//_/-}
    ln -sf "${!v}" "$MUSTER_E2E_DIR/bin/$n"
  done
  cat > "$MUSTER_E2E_DIR/env" <<EOF
MUSTER_E2E_DIR=$MUSTER_E2E_DIR
E2E_ETCD_PORT=$E2E_ETCD_PORT
E2E_ETCD_PEER_PORT=$E2E_ETCD_PEER_PORT
E2E_APISERVER_PORT=$E2E_APISERVER_PORT
E2E_APISERVER_URL=https://127.0.0.1:$E2E_APISERVER_PORT
E2E_ADMIN_TOKEN=$E2E_ADMIN_TOKEN
E2E_CA_CERT=$MUSTER_E2E_DIR/pki/ca.crt
KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig
EOF
  source "$MUSTER_E2E_DIR/env"
  _e2e_kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" muster-e2e-admin "$E2E_ADMIN_TOKEN"

  # etcd
  _e2e_start etcd "$E2E_ETCD" --name muster-e2e --data-dir "$MUSTER_E2E_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$E2E_ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$E2E_ETCD_PEER_PORT" \
    --initial-cluster "muster-e2e=http://127.0.0.1:$E2E_ETCD_PEER_PORT" \
    --unsafe-no-fsync --log-level warn
  _e2e_wait_http etcd 60 "http://127.0.0.1:$E2E_ETCD_PORT/health" || return 1

  # kube-apiserver. kube-controller-manager runs without the service account and node
  # lifecycle controllers (E2E_KCM_CONTROLLERS), hence:
  #  - ServiceAccount admission off (no SA controller creates "default" SAs / tokens);
  #  - TaintNodesByCondition admission off (it taints every new Node not-ready:NoSchedule
  #    and only the node lifecycle controller would remove it).
  _e2e_start kube-apiserver "$E2E_KUBE_APISERVER" \
    --etcd-servers "http://127.0.0.1:$E2E_ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$E2E_APISERVER_PORT" \
    --cert-dir "$MUSTER_E2E_DIR/pki" \
    --tls-cert-file "$MUSTER_E2E_DIR/pki/apiserver.crt" \
    --tls-private-key-file "$MUSTER_E2E_DIR/pki/apiserver.key" \
    --client-ca-file "$MUSTER_E2E_DIR/pki/ca.crt" \
    --requestheader-client-ca-file "$MUSTER_E2E_DIR/pki/ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --token-auth-file "$MUSTER_E2E_DIR/pki/tokens.csv" \
    --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$MUSTER_E2E_DIR/pki/sa.pub" \
    --service-account-signing-key-file "$MUSTER_E2E_DIR/pki/sa.key" \
    --service-cluster-ip-range "$E2E_SERVICE_CIDR" \
    --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
    --endpoint-reconciler-type none \
    --allow-privileged=true --profiling=false $(e2e_workload_api_flags) ${E2E_APISERVER_FLAGS:-}
  _e2e_wait_http kube-apiserver 180 --cacert "$E2E_CA_CERT" \
    -H "Authorization: Bearer $E2E_ADMIN_TOKEN" "$E2E_APISERVER_URL/readyz" || return 1
  wait_for 60 "namespace default" kubectl_ get namespace default || { e2e_fail "no default namespace"; return 1; }
  e2e_log "kube-apiserver ready at $E2E_APISERVER_URL"
  [[ ${E2E_NO_KCM:-0} == 1 ]] || e2e_controller_manager || return 1
  [[ ${E2E_NO_KWOK:-0} == 1 ]] || e2e_kwok || return 1

  if [[ ${E2E_NO_NODE:-0} != 1 ]]; then
    e2e_gpu_node gpu-lab-worker || return 1
  fi
  e2e_log "cluster up: export KUBECONFIG=$KUBECONFIG"
}

e2e_down() {
  [[ -n ${MUSTER_E2E_DIR:-} ]] || e2e_dir 2>/dev/null || { e2e_log "nothing to stop"; return 0; }
  local d=$MUSTER_E2E_DIR name
  if [[ -f $d/pids/order ]]; then
    # schedulers/operators first (all at once), then the apiserver, etcd last
    local -a names pids=()
    local pid
    mapfile -t names < <(tac "$d/pids/order" | awk '!seen[$0]++')
    for name in "${names[@]}"; do
      [[ $name == kube-apiserver || $name == etcd ]] && continue
      if pid=$(_e2e_term "$name"); then pids+=("$name" "$pid"); fi
    done
    local i
    for ((i = 0; i + 1 < ${#pids[@]}; i += 2)); do _e2e_reap "${pids[i]}" "${pids[i+1]}"; done
    e2e_stop kube-apiserver
    e2e_stop etcd
  fi
  local ptr=$MUSTER_CACHE/e2e-current
  [[ -f $ptr && $(cat "$ptr") == "$d" ]] && rm -f "$ptr"
  if [[ ${KEEP:-0} == 1 ]]; then
    e2e_log "KEEP=1: left $d"
  elif [[ -f $d/FAILED ]]; then
    # failure: keep the logs (and pki/kubeconfigs, small) but drop etcd data
    rm -rf "$d/etcd"
    e2e_log "run failed ($(head -1 "$d/FAILED")): logs kept in $d/logs"
  else
    case $d in /|"$HOME"|/tmp|"") e2e_err "refusing to remove '$d'"; return 1 ;; esac
    rm -rf "$d"
    e2e_log "removed $d"
  fi
  unset MUSTER_E2E_DIR
}

# e2e_env: export lines for other scripts / an interactive shell
e2e_env() {
  e2e_dir || return 1
  e2e_bins >/dev/null 2>&1 || true
  cat <<EOF
export MUSTER_E2E_DIR=$MUSTER_E2E_DIR
export KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig
export E2E_APISERVER_URL=$E2E_APISERVER_URL
export E2E_CA_CERT=$E2E_CA_CERT
export E2E_ADMIN_TOKEN=$E2E_ADMIN_TOKEN
export E2E_ETCD=$E2E_ETCD
export E2E_KUBE_APISERVER=$E2E_KUBE_APISERVER
export E2E_KUBE_SCHEDULER=$E2E_KUBE_SCHEDULER
export E2E_KUBECTL=$E2E_KUBECTL
export E2E_KUBE_CONTROLLER_MANAGER=$E2E_KUBE_CONTROLLER_MANAGER
export E2E_KUBERAY_OPERATOR=$E2E_KUBERAY_OPERATOR
export E2E_KUBERAY_CRDS=$E2E_KUBERAY_CRDS
export E2E_PODGROUP_CRDS=$E2E_PODGROUP_CRDS
export E2E_KWOK=$E2E_KWOK
export E2E_HELM=$E2E_HELM
export PATH=$MUSTER_E2E_DIR/bin:\$PATH
EOF
}

# ---- objects --------------------------------------------------------------------------
# e2e_gpu_node <name> [gpus=8] [cpu=32] [memory=128Gi] [gpu-mem-MiB=81920] [extra labels k=v,k2=v2]
e2e_gpu_node() {
  local name=$1 gpus=${2:-8} cpu=${3:-32} mem=${4:-128Gi} gmem=${5:-81920} extra=${6:-}
  local now labels="" kv
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  if [[ -n $extra ]]; then
    local IFS=,
    for kv in $extra; do labels+="    \"${kv%%=*}\": \"${kv#*=}\""$'\n'; done
  fi
  # Node create keeps .status (the node registry strategy does not drop it), but set it
  # again through the status subresource so updates of an existing node work too.
  kubectl_ apply -f - >/dev/null <<EOF || { e2e_fail "creating node $name"; return 1; }
apiVersion: v1
kind: Node
metadata:
  name: $name
  labels:
    kubernetes.io/hostname: "$name"
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.memory: "$gmem"
$labels  annotations:
    kwok.x-k8s.io/node: fake
spec: {}
EOF
  local status
  status=$(cat <<EOF
{"status":{
  "capacity":   {"cpu":"$cpu","memory":"$mem","pods":"110","nvidia.com/gpu":"$gpus","ephemeral-storage":"1Ti"},
  "allocatable":{"cpu":"$cpu","memory":"$mem","pods":"110","nvidia.com/gpu":"$gpus","ephemeral-storage":"1Ti"},
  "conditions":[
    {"type":"Ready","status":"True","reason":"KubeletReady","message":"fake node (muster e2e)","lastHeartbeatTime":"$now","lastTransitionTime":"$now"},
    {"type":"MemoryPressure","status":"False","reason":"KubeletHasSufficientMemory","lastHeartbeatTime":"$now","lastTransitionTime":"$now"},
    {"type":"DiskPressure","status":"False","reason":"KubeletHasNoDiskPressure","lastHeartbeatTime":"$now","lastTransitionTime":"$now"},
    {"type":"PIDPressure","status":"False","reason":"KubeletHasSufficientPID","lastHeartbeatTime":"$now","lastTransitionTime":"$now"}],
  "addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"Hostname","address":"$name"}],
  "nodeInfo":{"architecture":"amd64","operatingSystem":"linux","kubeletVersion":"$K8S_VERSION","containerRuntimeVersion":"fake://0",
              "machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"fake","kubeProxyVersion":""}
}}
EOF
)
  kubectl_ patch node "$name" --subresource=status --type=merge -p "$status" >/dev/null ||
    { e2e_fail "patching status of node $name"; return 1; }
  # belt and braces: no taints (the not-ready taint admission is disabled, but a node
  # created against another apiserver config would carry node.kubernetes.io/not-ready)
  if [[ -n $(kubectl_ get node "$name" -o jsonpath='{.spec.taints}') ]]; then
    kubectl_ patch node "$name" --type=json -p '[{"op":"remove","path":"/spec/taints"}]' >/dev/null
  fi
  e2e_log "node $name: cpu=$cpu memory=$mem nvidia.com/gpu=$gpus gpu.memory=${gmem}MiB Ready"
}

# ---- components on demand -------------------------------------------------------------
# e2e_scheduler [config.yaml] [name=kube-scheduler]
# Without a config a default one (default profile, no leader election) is written.
# In the config, @KUBECONFIG@ and @E2E_DIR@ are replaced by the admin kubeconfig / state dir.
e2e_scheduler() {
  e2e_dir || return 1; e2e_bins || return 1
  local cfg=${1:-} name=${2:-kube-scheduler} port out
  out=$MUSTER_E2E_DIR/$name-config.yaml
  if [[ -z $cfg ]]; then
    cat > "$out" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: @KUBECONFIG@
EOF
    cfg=$out
  fi
  [[ -f $cfg ]] || { e2e_err "scheduler config $cfg not found"; return 1; }
  sed -e "s#@KUBECONFIG@#$MUSTER_E2E_DIR/admin.kubeconfig#g" -e "s#@E2E_DIR@#$MUSTER_E2E_DIR#g" \
    "$cfg" > "$out.tmp" && mv -f "$out.tmp" "$out"
  port=$(e2e_free_port) || return 1
  _e2e_start "$name" "$E2E_KUBE_SCHEDULER" --config "$out" \
    --bind-address 127.0.0.1 --secure-port "$port" \
    --authentication-kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --authorization-kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --v "${E2E_SCHEDULER_V:-2}" ${E2E_SCHEDULER_FLAGS:-}
  echo "E2E_PORT_${name//-/_}=$port" >> "$MUSTER_E2E_DIR/env"
  _e2e_wait_http "$name" 60 -k "https://127.0.0.1:$port/readyz" || return 1
  e2e_log "$name ready (config $out, https://127.0.0.1:$port)"
}

# e2e_kuberay [operator flags...], e.g. --batch-scheduler=scheduler-plugins (its PodGroup CRD
# is applied first), --batch-scheduler=volcano (Volcano's), --feature-gates=KubernetesWAS=true
e2e_kuberay() {
  e2e_dir || return 1; e2e_bins || return 1
  [[ -x $E2E_KUBERAY_OPERATOR ]] || { e2e_err "missing $E2E_KUBERAY_OPERATOR (build-components.sh)"; return 1; }
  e2e_kuberay_crds || return 1
  local a
  for a in "$@"; do
    if [[ $a == --batch-scheduler=scheduler-plugins ]]; then e2e_podgroup_crds || return 1; fi
    if [[ $a == --batch-scheduler=volcano ]]; then e2e_volcano_crd || return 1; fi
  done
  local mport pport
  mport=$(e2e_free_port) && pport=$(e2e_free_port) || return 1
  KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig _e2e_start kuberay-operator "$E2E_KUBERAY_OPERATOR" \
    --metrics-addr "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$pport" \
    --enable-leader-election=false --log-stdout-encoder console "$@"
  _e2e_wait_http kuberay-operator 60 "http://127.0.0.1:$pport/readyz" || return 1
  e2e_log "kuberay-operator ready ($*)"
}

e2e_kuberay_crds() {
  [[ -d $E2E_KUBERAY_CRDS ]] || { e2e_err "missing $E2E_KUBERAY_CRDS (build-components.sh)"; return 1; }
  # server-side apply: the RayCluster CRD is too big for the last-applied annotation
  kubectl_ apply --server-side --force-conflicts -f "$E2E_KUBERAY_CRDS" >/dev/null || return 1
  kubectl_ wait --for=condition=Established --timeout=60s \
    crd/rayclusters.ray.io crd/rayjobs.ray.io crd/rayservices.ray.io >/dev/null
}

e2e_podgroup_crds() {
  [[ -n $E2E_PODGROUP_CRDS && -d $E2E_PODGROUP_CRDS ]] ||
    { e2e_err "scheduler-plugins PodGroup CRD not in cache (build-components.sh)"; return 1; }
  kubectl_ apply --server-side --force-conflicts -f "$E2E_PODGROUP_CRDS" >/dev/null || return 1
  kubectl_ wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.x-k8s.io >/dev/null
}

# Volcano's own PodGroup CRD (v1.13.0, kept in manifests/: no Go module serves it), which the
# operator's --batch-scheduler=volcano watches and writes.
e2e_volcano_crd() {
  kubectl_ apply --server-side --force-conflicts -f "$E2E_LIB_DIR/manifests/volcano-podgroup-crd.yaml" >/dev/null || return 1
  kubectl_ wait --for=condition=Established --timeout=60s crd/podgroups.scheduling.volcano.sh >/dev/null
}

# e2e_controller_manager: kube-controller-manager with E2E_KCM_CONTROLLERS (and the PodGroup
# protection controller where the Workload API is on), no leader election, its own loopback port.
e2e_controller_manager() {
  e2e_dir || return 1; e2e_bins || return 1
  local port controllers=$E2E_KCM_CONTROLLERS
  [[ -z $(e2e_workload_api_version) ]] || controllers+=,podgroup-protection-controller
  port=$(e2e_free_port) || return 1
  # shellcheck disable=SC2046 # the gates are two words
  _e2e_start kube-controller-manager "$E2E_KUBE_CONTROLLER_MANAGER" \
    --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --authentication-kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --authorization-kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$port" --leader-elect=false \
    --use-service-account-credentials=false --controllers "$controllers" \
    --v "${E2E_KCM_V:-1}" $(e2e_workload_api_gates) ${E2E_KCM_FLAGS:-}
  _e2e_wait_http kube-controller-manager 60 -k "https://127.0.0.1:$port/healthz" || return 1
  e2e_log "kube-controller-manager ready ($controllers)"
}

# e2e_kwok [flags...]: manages nodes annotated kwok.x-k8s.io/node=fake (every e2e_gpu_node:
# heartbeats, Leases) with its built-in "fast" stages: a pod bound to one becomes Running and
# Ready, a pod with a deletionTimestamp is deleted (a kubelet's part after the grace period), a
# Running pod of a Job Succeeds.
e2e_kwok() {
  e2e_dir || return 1; e2e_bins || return 1
  [[ -x $E2E_KWOK ]] || { e2e_err "kwok not built ($E2E_KWOK)"; return 1; }
  local port
  port=$(e2e_free_port) || return 1
  _e2e_start kwok "$E2E_KWOK" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --server-address "127.0.0.1:$port" --cidr 10.0.1.0/24 --node-ip 127.0.0.1 "$@"
  _e2e_wait_http kwok 60 "http://127.0.0.1:$port/healthz" || return 1
  e2e_log "kwok ready"
}

# e2e_stale_waiting <namespace> <label selector>: print each bound pod of the selection that
# still carries a GangWaiting Event muster wrote (issue 21: a gang's waiting reasons are
# withdrawn when it is bound); fails when there is one.
e2e_stale_waiting() {
  local pods events
  pods=$(kubectl_ -n "$1" get pods -l "$2" -o json) &&
    events=$(kubectl_ -n "$1" get events --field-selector reason=GangWaiting,source=muster -o json) &&
    python3 -c '
import json, sys
pods, events = json.loads(sys.argv[1])["items"], json.loads(sys.argv[2])["items"]
bound = {p["metadata"]["uid"]: p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}
stale = [e for e in events if e["involvedObject"].get("uid") in bound]
for e in stale:
    print("%s: GangWaiting (x%s): %s" % (e["involvedObject"]["name"], e.get("count", 1), e["message"]))
sys.exit(1 if stale or not bound else 0)' "$pods" "$events"
}
