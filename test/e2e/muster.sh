# shellcheck shell=bash
# muster on the local control plane, deployed from manifests/ as a platform team would:
#
#   e2e_muster_install              namespace, Queue CRD, PriorityClass, muster's RBAC (rbac.yaml
#                                   alone, so the rules we ship are proven enough), a kubeconfig
#                                   with the ServiceAccount muster's token
#   e2e_muster_start [name] [args]  muster serve with manifests/muster.yaml (listen, kubeconfig and
#                                   webhook certificate paths substituted), waits for /readyz
#   e2e_muster_scheduler [name] [url]  kube-scheduler with manifests/scheduler-config.yaml
#   e2e_muster_restart [name]       restart a muster on the port its kube-scheduler already calls,
#                                   with NAME.yaml.gpu-sharing lines put under gpuSharing: and
#                                   NAME.yaml.extra lines appended to its settings
#   e2e_muster_pair SUFFIX NAME     a second muster + kube-scheduler serving schedulerName NAME
#   e2e_gang URL NS/NAME            a gang's entry in a muster's /debug/state
#   e2e_wa_gang NS NAME MIN N GPUS [KEY]  YAML: a v1beta1 Workload, its PodGroup and N pods
#   e2e_metric URL NAME [MATCH]     a Prometheus family's sum from URL/metrics
#   e2e_muster_kill name [signal]   stop one muster (default SIGKILL)
#   e2e_invariants                  no gang partly bound, no node over allocatable, no shared
#                                   device over one, no queue over limit (test/e2e/invariants.py)
#
# Needs lib.sh sourced and MUSTER_BIN set to the muster binary.

E2E_REPO=$(cd "$E2E_LIB_DIR/../.." && pwd)
E2E_MANIFESTS=$E2E_REPO/manifests

e2e_muster_install() {
  e2e_dir || return 1
  kubectl_ apply -f "$E2E_MANIFESTS/namespace.yaml" -f "$E2E_MANIFESTS/crd-queue.yaml" \
    -f "$E2E_MANIFESTS/priorityclass.yaml" -f "$E2E_MANIFESTS/rbac.yaml" >/dev/null || return 1
  kubectl_ wait --for=condition=Established crd/queues.muster.dev --timeout=60s >/dev/null || return 1
  local token
  token=$(kubectl_ -n muster-system create token muster --duration=24h) || return 1
  _e2e_kubeconfig "$MUSTER_E2E_DIR/muster.kubeconfig" muster "$token"
  e2e_log "muster installed from manifests/ (ServiceAccount muster-system/muster)"
}

# e2e_muster_config <file> <port> [extra yaml lines...]: manifests/muster.yaml for this cluster
e2e_muster_config() {
  local out=$1 port=$2; shift 2
  sed -e "s#^listen: .*#listen: 127.0.0.1:$port#" \
      -e "s#format: json#format: plain#" \
      -e "/^  webhookListen:/d" -e "/^  webhookTLS:/,/^    keyFile:/d" \
      -e "s#^leaderElection: {enabled: true}#leaderElection: {enabled: true, leaseName: ${E2E_LEASE:-muster-scheduler}}#" \
      "$E2E_MANIFESTS/muster.yaml" > "$out"
  local line
  for line in "$@"; do printf '%s\n' "$line" >> "$out"; done
}

e2e_muster_start() {
  e2e_dir || return 1
  local name=${1:-muster}; shift || true
  local port cfg=$MUSTER_E2E_DIR/$name.yaml
  port=$(e2e_free_port) || return 1
  [[ -f $cfg.extra ]] || : > "$cfg.extra"
  e2e_muster_config "$cfg" "$port"
  cat "$cfg.extra" >> "$cfg"
  "$MUSTER_BIN" serve --config "$cfg" --check-config >/dev/null || { e2e_fail "muster config $cfg"; return 1; }
  _e2e_start "$name" "$MUSTER_BIN" serve --config "$cfg" \
    --kubeconfig "$MUSTER_E2E_DIR/muster.kubeconfig" "$@"
  echo "E2E_URL_${name//-/_}=http://127.0.0.1:$port" >> "$MUSTER_E2E_DIR/env"
  printf -v "E2E_URL_${name//-/_}" '%s' "http://127.0.0.1:$port"
  _e2e_wait_http "$name" 60 "http://127.0.0.1:$port/readyz" || return 1
  e2e_log "$name ready on http://127.0.0.1:$port"
}

e2e_muster_restart() {
  local name=${1:-muster} url port cfg
  cfg=$MUSTER_E2E_DIR/$name.yaml
  url=$(e2e_muster_url "$name") port=${url##*:}
  e2e_stop "$name"
  e2e_muster_config "$cfg" "$port"
  grep -q '^gpuSharing:$' "$cfg" || { e2e_fail "no gpuSharing: block in $cfg"; return 1; }
  [[ ! -s $cfg.gpu-sharing ]] || sed -i "/^gpuSharing:\$/r $cfg.gpu-sharing" "$cfg"
  [[ ! -f $cfg.extra ]] || cat "$cfg.extra" >> "$cfg"
  "$MUSTER_BIN" serve --config "$cfg" --check-config >/dev/null || { e2e_fail "muster config $cfg"; return 1; }
  _e2e_start "$name" "$MUSTER_BIN" serve --config "$cfg" --kubeconfig "$MUSTER_E2E_DIR/muster.kubeconfig"
  _e2e_wait_http "$name" 60 "$url/readyz" || return 1
  e2e_log "$name ready again on $url"
}

# e2e_muster_url NAME: where muster NAME listens, the last address the state dir's env recorded
# (a scenario runs in a subshell: one that restarts muster on a new port, as 12 does, records it
# there, and the scenarios after it must not use the shell's older value).
e2e_muster_url() {
  local v="E2E_URL_${1//-/_}" line
  line=$(grep "^$v=" "$MUSTER_E2E_DIR/env" 2>/dev/null | tail -n 1)
  if [[ -n $line ]]; then echo "${line#*=}"; else echo "${!v}"; fi
}

e2e_muster_scheduler() {
  local name=${1:-kube-scheduler} url=${2:-$(e2e_muster_url muster)}
  local cfg=$MUSTER_E2E_DIR/$name-from-manifests.yaml
  sed -e "s#__KUBECONFIG__#@KUBECONFIG@#" -e "s#__MUSTER_URL__#$url#" \
    -e "s#resourceName: muster-scheduler#resourceName: ${E2E_LEASE:-muster-scheduler}#" \
    "$E2E_MANIFESTS/scheduler-config.yaml" > "$cfg"
  e2e_scheduler "$cfg" "$name"
}

# e2e_muster_pair SUFFIX SCHEDULER_NAME: a second muster ("muster-SUFFIX", manifests/muster.yaml
# with schedulerNames [SCHEDULER_NAME]) and its kube-scheduler ("kube-scheduler-SUFFIX",
# manifests/scheduler-config.yaml with that one profile and its own lease), as docs/deploy.md
# tells a platform team to serve a KubeRay --batch-scheduler contract muster does not ship with.
# Sets E2E_URL_muster_SUFFIX; e2e_muster_pair_stop SUFFIX stops both.
e2e_muster_pair() {
  local suffix=$1 sname=$2 port url
  local cfg=$MUSTER_E2E_DIR/muster-$suffix.yaml sched=$MUSTER_E2E_DIR/kube-scheduler-$suffix-from-manifests.yaml
  port=$(e2e_free_port) || return 1
  e2e_muster_config "$cfg" "$port"
  sed -i "s/^schedulerNames: .*/schedulerNames: [$sname]/" "$cfg"
  grep -q "^schedulerNames: \[$sname\]$" "$cfg" || { e2e_err "schedulerNames not replaced in $cfg"; return 1; }
  "$MUSTER_BIN" serve --config "$cfg" --check-config >/dev/null || { e2e_fail "muster config $cfg"; return 1; }
  _e2e_start "muster-$suffix" "$MUSTER_BIN" serve --config "$cfg" --kubeconfig "$MUSTER_E2E_DIR/muster.kubeconfig"
  url=http://127.0.0.1:$port
  printf -v "E2E_URL_muster_$suffix" '%s' "$url"
  echo "E2E_URL_muster_$suffix=$url" >> "$MUSTER_E2E_DIR/env"
  _e2e_wait_http "muster-$suffix" 60 "$url/readyz" || return 1
  sed -e "s#__KUBECONFIG__#@KUBECONFIG@#" -e "s#__MUSTER_URL__#$url#" \
    -e "s#resourceName: muster-scheduler#resourceName: muster-scheduler-$suffix#" \
    -e "s#^- schedulerName: muster\$#- schedulerName: $sname#" -e "/^- schedulerName: kai-scheduler\$/d" \
    "$E2E_MANIFESTS/scheduler-config.yaml" > "$sched"
  [[ $(grep -c '^- schedulerName:' "$sched") == 1 ]] && grep -q "^- schedulerName: $sname\$" "$sched" ||
    { e2e_err "profiles not rewritten in $sched"; return 1; }
  e2e_scheduler "$sched" "kube-scheduler-$suffix"
}
e2e_muster_pair_stop() {
  e2e_stop "kube-scheduler-$1"
  e2e_stop "muster-$1"
}

# e2e_wa_gang NS NAME MINCOUNT PODS GPUS [TOPOLOGY_KEY] [FIRST]: YAML for a Workload-API gang
# (scheduling.k8s.io/v1beta1, Kubernetes 1.37): Workload NAME of one template "workers" (gang
# minCount MINCOUNT, and with TOPOLOGY_KEY a schedulingConstraints.topology of it), PodGroup
# NAME-0 made from it, and pods NAME-FIRST.. NAME-(FIRST+PODS-1) (FIRST default 0; the objects
# only with FIRST 0) naming it by spec.schedulingGroup, labelled gang=NAME, schedulerName
# muster, 1 CPU and GPUS GPUs each.
e2e_wa_gang() {
  local ns=$1 name=$2 min=$3 pods=$4 gpus=$5 key=${6:-} first=${7:-0} i constraints=""
  [[ -z $key ]] || constraints="schedulingConstraints: {topology: [{key: $key}]}"
  if ((first == 0)); then
    cat <<EOF
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: $name, namespace: $ns}
spec:
  podGroupTemplates:
    - name: workers
      schedulingPolicy: {gang: {minCount: $min}}
      $constraints
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: $name-0, namespace: $ns}
spec:
  workloadRef: {workloadName: $name, templateName: workers}
  schedulingPolicy: {gang: {minCount: $min}}
  $constraints
EOF
  fi
  for ((i = first; i < first + pods; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: $name-$i, namespace: $ns, labels: {gang: $name}}
spec:
  schedulerName: muster
  schedulingGroup: {podGroupName: $name-0}
  containers:
    - name: c
      image: registry.k8s.io/pause:3.10
      resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: $gpus}, limits: {cpu: "1", memory: 1Gi, nvidia.com/gpu: $gpus}}
EOF
  done
}

# e2e_metric URL NAME [LABEL-MATCH]: the sum of a Prometheus series family's values whose line
# contains LABEL-MATCH (e.g. 'verb="filter"'), from URL/metrics
e2e_metric() {
  curl -sf --max-time 5 "$1/metrics" | awk -v n="$2" -v m="${3:-}" '
    $1 ~ "^"n"({|$)" && index($0, m) { s += $NF } END { printf "%d\n", s }'
}

# e2e_cpu_ms NAME: CPU milliseconds (user + system) a component started by lib.sh has used
e2e_cpu_ms() {
  local pid
  pid=$(cat "$MUSTER_E2E_DIR/pids/$1.pid" 2>/dev/null) || { echo 0; return; }
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' "/proc/$pid/stat"
}

# e2e_gang URL NS/NAME: the gang's entry in that muster's /debug/state, JSON ("null" if none)
e2e_gang() {
  curl -sf --max-time 5 "$1/debug/state" |
    python3 -c 'import json,sys; k=sys.argv[1]; print(json.dumps(next((g for g in json.load(sys.stdin)["gangs"] if g["gang"]==k), None)))' "$2"
}

e2e_muster_kill() {
  local name=$1 sig=${2:-KILL} pid
  _e2e_alive "$name" || return 0
  pid=$(cat "$MUSTER_E2E_DIR/pids/$name.pid")
  kill -"$sig" "$pid" 2>/dev/null
  while [[ -d /proc/$pid ]]; do sleep 0.1; done
  rm -f "$MUSTER_E2E_DIR/pids/$name.pid"
  e2e_log "$name stopped with SIG$sig"
}

e2e_invariants() {
  local d=$MUSTER_E2E_DIR/snap
  mkdir -p "$d"
  kubectl_ get pods -A -o json > "$d/pods.json" && kubectl_ get nodes -o json > "$d/nodes.json" || return 1
  kubectl_ get rayclusters.ray.io -A -o json > "$d/rayclusters.json" 2>/dev/null || echo '{"items":[]}' > "$d/rayclusters.json"
  kubectl_ get queues.muster.dev -o json > "$d/queues.json" 2>/dev/null || echo '{"items":[]}' > "$d/queues.json"
  e2e_snapshot_workload_api "$d"
  e2e_snapshot_topologies "$d"
  python3 "$E2E_LIB_DIR/invariants.py" "$d"
}

# e2e_snapshot_workload_api <dir>: workloads.json and wapodgroups.json (empty lists when the
# API server does not serve the Workload API)
e2e_snapshot_workload_api() {
  local v
  v=$(e2e_workload_api_version)
  if [[ -z $v ]]; then
    echo '{"items":[]}' > "$1/workloads.json"; echo '{"items":[]}' > "$1/wapodgroups.json"; return 0
  fi
  kubectl_ get "workloads.$v.scheduling.k8s.io" -A -o json > "$1/workloads.json" 2>/dev/null ||
    echo '{"items":[]}' > "$1/workloads.json"
  kubectl_ get "podgroups.$v.scheduling.k8s.io" -A -o json > "$1/wapodgroups.json" 2>/dev/null ||
    echo '{"items":[]}' > "$1/wapodgroups.json"
}

# e2e_snapshot_topologies <dir>: KAI's Topologies (an empty list without the CRD, scenario 20's)
e2e_snapshot_topologies() {
  kubectl_ get topologies.kai.scheduler -o json > "$1/topologies.json" 2>/dev/null ||
    echo '{"items":[]}' > "$1/topologies.json"
}

# The invariants, polled while a scenario runs (e2e_invariants only looks at the end). A gang's
# Bindings are applied one pod at a time, so one snapshot may land inside a commit: a broken
# invariant counts only when a second snapshot a second later still shows it.
#   e2e_invariants_poll_start   in the background; broken ones are appended to
#                               $MUSTER_E2E_DIR/invariants-polled
#   e2e_invariants_polls        how many snapshots it has looked at so far
#   e2e_invariants_poll_stop [min]  stop it; fails (printing them) if any was found, or if
#                               it looked fewer than min times
e2e_invariants_poll_check() { # <dir>: the subjects of the broken invariants of one snapshot
  local d=$1
  mkdir -p "$d"
  kubectl_ get pods -A -o json > "$d/pods.json" && kubectl_ get nodes -o json > "$d/nodes.json" || return 0
  kubectl_ get rayclusters.ray.io -A -o json > "$d/rayclusters.json" 2>/dev/null || echo '{"items":[]}' > "$d/rayclusters.json"
  kubectl_ get queues.muster.dev -o json > "$d/queues.json" 2>/dev/null || echo '{"items":[]}' > "$d/queues.json"
  e2e_snapshot_workload_api "$d"
  e2e_snapshot_topologies "$d"
  # "INVARIANT BROKEN: gang ns/x partly bound: 5 of 9" -> "gang ns/x partly bound"
  python3 "$E2E_LIB_DIR/invariants.py" "$d" | sed -n 's/^INVARIANT BROKEN: \(.*\): [^:]*$/\1/p' | sort -u
}
e2e_invariants_poll_start() {
  : > "$MUSTER_E2E_DIR/invariants-polled"
  : > "$MUSTER_E2E_DIR/invariants-polls"
  (
    set +e +o pipefail
    local first again both
    while :; do
      first=$(e2e_invariants_poll_check "$MUSTER_E2E_DIR/poll-a")
      if [[ -n $first ]]; then
        sleep 1
        again=$(e2e_invariants_poll_check "$MUSTER_E2E_DIR/poll-b")
        both=$(comm -12 <(echo "$first") <(echo "$again"))
        if [[ -n $both ]]; then
          sed "s/^/$(date +%T) /" <<<"$both" >> "$MUSTER_E2E_DIR/invariants-polled"
          python3 "$E2E_LIB_DIR/invariants.py" "$MUSTER_E2E_DIR/poll-b" | grep '^INVARIANT' >> "$MUSTER_E2E_DIR/invariants-polled"
          cp "$MUSTER_E2E_DIR/poll-b/pods.json" "$MUSTER_E2E_DIR/broken-pods-$(date +%s).json"
        fi
      fi
      echo . >> "$MUSTER_E2E_DIR/invariants-polls"
      sleep 0.5
    done
  ) &
  echo $! > "$MUSTER_E2E_DIR/invariants-poll.pid"
}
e2e_invariants_polls() {
  [[ -f $MUSTER_E2E_DIR/invariants-polls ]] && wc -l < "$MUSTER_E2E_DIR/invariants-polls" || echo 0
}
e2e_invariants_poll_stop() {
  local pf=$MUSTER_E2E_DIR/invariants-poll.pid min=${1:-0} n
  if [[ -f $pf ]]; then kill "$(cat "$pf")" 2>/dev/null; rm -f "$pf"; fi
  n=$(e2e_invariants_polls)
  if [[ -s $MUSTER_E2E_DIR/invariants-polled ]]; then
    e2e_err "invariants broken while the scenario ran (twice, a second apart):"
    cat "$MUSTER_E2E_DIR/invariants-polled" >&2
    return 1
  fi
  if ((n < min)); then
    e2e_err "the invariants poller looked only $n times (want $min at least)"
    return 1
  fi
  echo "invariants held throughout ($n polls)"
}
