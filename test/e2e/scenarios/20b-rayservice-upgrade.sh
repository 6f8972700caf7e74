# A RayService with the real KubeRay operator v1.7.0, brought up and upgraded (upgradeStrategy
# NewCluster, the default: a change to its cluster's spec makes a pending cluster; the active
# one serves until the pending one is ready, then goes rayClusterDeletionDelaySeconds later).
# No Ray runs on kwok's nodes, so a stand-in dashboard (test/e2e/fake-ray-dashboard.py, reached
# through the operator's HTTP_PROXY) says every Serve application is RUNNING: a cluster is
# ready to serve once muster has bound it and kwok made its pods Ready.
#   1. brought up: its cluster (a CPU head, three 1-GPU workers) bound whole, made active;
#   2. upgraded with room (queue serve, limit 8 GPUs): the pending cluster bound whole beside
#      the active one, promoted, the old one deleted;
#   3. upgraded without room (limit 4, the active cluster holds 3): the pending cluster waits
#      whole, and muster says so in those words ("upgrade of RayService lab-20b/svc waits: queue
#      serve: ...") in /debug/state, its pods' GangWaiting Events and `muster why lab-20b/svc`;
#      the active cluster is untouched (the same pods, bound, none evicted);
#   4. the limit raised to 8: the upgrade goes through.
# About 2-3 minutes.
NS_20B=lab-20b
SVC=svc

_20b_cleanup() {
  local rc=$?
  ((rc == 0)) || {
    kubectl_ -n $NS_20B get rayservices,rayclusters,pods -o wide >&2
    kubectl_ -n $NS_20B get rayservice $SVC -o jsonpath='{.status}' >&2; echo >&2
    curl -sf "$(e2e_muster_url muster)/debug/state" >&2 || true
    tail -n 30 "$MUSTER_E2E_DIR/logs/kuberay-operator.log" >&2
    tail -n 10 "$MUSTER_E2E_DIR/logs/fake-ray-dashboard.log" >&2
  }
  kubectl_ -n $NS_20B delete rayservices.ray.io --all --wait=false >/dev/null 2>&1
  e2e_stop fake-ray-dashboard
  e2e_kuberay >/dev/null 2>&1 # the operator as the baseline runs it: no proxy
  return $rc
}

# The RayService, its workers' image tag $1 (a change to it is an upgrade).
_20b_service() {
  cat <<EOF
apiVersion: ray.io/v1
kind: RayService
metadata: {name: $SVC, namespace: $NS_20B, labels: {muster.dev/queue: serve}}
spec:
  rayClusterDeletionDelaySeconds: 3
  serveConfigV2: |
    applications:
      - name: app
        import_path: model:app
        route_prefix: /
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          schedulerName: muster
          containers:
            - name: ray-head
              image: rayproject/ray:2.41.0
              resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}
    workerGroupSpecs:
      - groupName: gpu
        replicas: 3
        minReplicas: 3
        maxReplicas: 3
        rayStartParams: {}
        template:
          spec:
            schedulerName: muster
            containers:
              - name: ray-worker
                image: rayproject/ray:$1
                resources:
                  requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
                  limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}
EOF
}

_20b_queue() {
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: muster.dev/v1alpha1
kind: Queue
metadata: {name: serve}
spec: {resources: {gpu: {quota: 4, limit: $1}}}
EOF
}

_20b_status() { kubectl_ -n $NS_20B get rayservice $SVC -o jsonpath="{.status.${1}ServiceStatus.rayClusterName}"; }
_20b_bound() { kubectl_ -n $NS_20B get pods -l ray.io/cluster="$1" -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep -c . || true; }
_20b_pods() { kubectl_ -n $NS_20B get pods -l ray.io/cluster="$1" -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{.spec.nodeName}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' | sort; }
_20b_exists() { kubectl_ -n $NS_20B get raycluster "$1" -o name >/dev/null 2>&1; }

# active, pending and upgrade: wait for a pending cluster, then for it to be the active one
_20b_upgrade_through() {
  local old=$1 pending
  has_pending() { [[ -n $(_20b_status pending) ]]; }
  wait_for 60 "the operator makes the pending cluster of the upgrade" has_pending
  pending=$(_20b_status pending)
  bound() { [[ $(_20b_bound "$pending") == 4 ]]; }
  wait_for 120 "the pending cluster $pending bound whole beside $old" bound
  promoted() { [[ $(_20b_status active) == "$pending" ]]; }
  wait_for 120 "$pending promoted to active" promoted
  old_gone() { ! _20b_exists "$old" && [[ $(_20b_bound "$old") == 0 ]]; }
  wait_for 90 "the old cluster $old deleted" old_gone
  e2e_log "upgraded: $old -> $pending"
}

scenario() {
  trap _20b_cleanup EXIT
  local port
  port=$(e2e_free_port)
  _e2e_start fake-ray-dashboard python3 "$E2E_LIB_DIR/fake-ray-dashboard.py" "$port"
  # The proxy is for the operator's dashboard client only: e2e_kuberay's curl of the operator's
  # own /readyz (on loopback) goes direct.
  HTTP_PROXY="http://127.0.0.1:$port" http_proxy="http://127.0.0.1:$port" \
    NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost e2e_kuberay
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ get namespace "$NS_20B" >/dev/null 2>&1 || kubectl_ create namespace "$NS_20B"
  _20b_queue 8

  # 1. brought up
  _20b_service 2.41.0 | kubectl_ apply -f - >/dev/null
  local a b c
  active() { [[ -n $(_20b_status active) ]]; }
  wait_for 180 "RayService $SVC serving from an active cluster" active
  a=$(_20b_status active)
  [[ $(_20b_bound "$a") == 4 ]] || { e2e_err "active cluster $a not bound whole"; return 1; }
  e2e_log "RayService $SVC up: active cluster $a"

  # 2. upgraded with room: 3 + 3 GPUs within the limit of 8
  _20b_service 2.41.1 | kubectl_ apply -f - >/dev/null
  _20b_upgrade_through "$a"
  b=$(_20b_status active)

  # 3. upgraded without room: the active cluster holds 3 of the 4 GPUs serve may hold
  _20b_queue 4
  local before
  before=$(_20b_pods "$b")
  _20b_service 2.41.2 | kubectl_ apply -f - >/dev/null
  has_pending() { [[ -n $(_20b_status pending) ]]; }
  wait_for 60 "the operator makes the pending cluster of the second upgrade" has_pending
  c=$(_20b_status pending)
  local want="upgrade of RayService $NS_20B/$SVC waits: queue serve: limit 4 GPUs, 3 GPUs in use, the gang needs 3 GPUs"
  says() {
    [[ $(curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["gangs"]:
    if g["gang"] == sys.argv[1]:
        print("%s|%s" % (g.get("reason"), g.get("upgradeOf")))' "$NS_20B/$c") == "$want|$NS_20B/$b" ]]
  }
  wait_for 60 "muster: $c waits as the upgrade of $b, in those words" says
  event() { kubectl_ -n $NS_20B get events --field-selector reason=GangWaiting -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -qF "$want"; }
  wait_for 30 "a GangWaiting Event saying so" event
  "$MUSTER_BIN" why "$NS_20B/$SVC" --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig" \
    --muster-url "$(e2e_muster_url muster)" > "$MUSTER_E2E_DIR/why-20b.txt" || true
  cat "$MUSTER_E2E_DIR/why-20b.txt"
  grep -qF "Why:          $want" "$MUSTER_E2E_DIR/why-20b.txt" ||
    { e2e_err "muster why $NS_20B/$SVC does not say why the upgrade waits"; return 1; }
  # For a while: nothing of the upgrade bound, the active cluster's pods the same, bound, none
  # leaving (no eviction makes room for its own upgrade).
  local end=$((SECONDS + 15))
  while ((SECONDS < end)); do
    [[ $(_20b_bound "$c") == 0 ]] || { e2e_err "the upgrade $c is partly bound"; return 1; }
    [[ $(_20b_pods "$b") == "$before" ]] || { e2e_err "the active cluster $b was touched: $(_20b_pods "$b")"; return 1; }
    sleep 1
  done
  [[ $(_20b_status active) == "$b" ]] || { e2e_err "active is $(_20b_status active), not $b"; return 1; }

  # 4. room: the upgrade goes through
  _20b_queue 8
  _20b_upgrade_through "$b"
  [[ $(_20b_status active) == "$c" ]] || { e2e_err "active is $(_20b_status active), not $c"; return 1; }
  kubectl_ -n $NS_20B get rayservices,rayclusters,pods -o wide
}
