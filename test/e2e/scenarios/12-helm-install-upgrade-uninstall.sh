# The Helm chart (manifests/chart/muster) against the e2e kube-apiserver: helm install, two
# helm upgrades, helm uninstall, with the walkthrough's demo RayCluster placed whole by the
# chart-installed muster in between.
#
# What "chart-installed muster" means here. This cluster has no kubelet and no controller
# manager: the chart's Deployment is stored but never becomes a pod. So the scenario installs
# the chart's objects with helm, then runs muster and kube-scheduler as local processes the way
# the chart's pod would run them, taking everything it can from what helm installed:
#  - the settings are the chart-made ConfigMap muster-config, read back from the API server,
#    with only what a loopback cluster needs changed (listen ports, the certificate's and the
#    kubeconfig's paths) - never a value the chart decides (profiles, names, strategy, Lease);
#  - both muster and kube-scheduler authenticate with a token of the chart-made ServiceAccount
#    muster, so the chart's RBAC (muster's rules and the kube-scheduler's, Lease included) is
#    what lets them work, not an admin identity;
#  - muster serves HTTPS with the chart-made certificate from Secret muster-webhook-tls, and the
#    scenario checks it as the ServiceMonitor would (CA from the Secret, serverName the
#    Service's name). The API server cannot call the webhook through Service muster-webhook
#    (no Service network here), so no GPU-share pod is created while the chart's webhook
#    configuration is installed.
# Before the install the kustomize-installed objects the chart also owns (RBAC, PriorityClass,
# the Queue CRD) are deleted, so helm installs them itself (the CRD from the chart's crds/);
# afterwards the baseline of every scenario is restored from manifests/ (trap).
#
#  1. the chart rendered with default values deploys what `kubectl kustomize manifests/` deploys
#     (real kubectl, test/chart_drift.py); gen-webhook-cert.sh --secret, the kustomize path's
#     certificate, writes the ca.crt the ServiceMonitor reads, as the chart does;
#  2. helm install; the chart's muster and kube-scheduler place the demo RayCluster whole;
#  3. helm upgrade with Queues and a new strategy: the Queues appear, the settings' checksum
#     changes, the certificate is kept (lookup); a gang bigger than team-a's limit waits whole,
#     and placing it takes only a helm upgrade raising the limit;
#  4. helm upgrade with webhook.certificate.rotate: a new certificate, the webhook trusts it;
#  5. helm uninstall: the chart's objects are gone, the CRD is kept (crds/).

S12_NS=muster-system
S12_RELEASE=muster
S12_CHART=$E2E_REPO/manifests/chart/muster
S12_HELM=$E2E_HELM
S12_DIR=$MUSTER_E2E_DIR/s12

# helm against the e2e cluster; what it prints goes to s12/helm.log.
helm_() { KUBECONFIG=$MUSTER_E2E_DIR/admin.kubeconfig "$S12_HELM" "$@"; }
helm_do() { helm_ "$@" >> "$S12_DIR/helm.log" 2>&1 || { tail -n 20 "$S12_DIR/helm.log" >&2; return 1; }; }

s12_restore() {
  set +e
  e2e_stop kube-scheduler
  e2e_stop muster
  helm_ uninstall "$S12_RELEASE" -n "$S12_NS" >/dev/null 2>&1
  kubectl_ delete mutatingwebhookconfiguration muster-gpu-sharing --ignore-not-found >/dev/null 2>&1
  kubectl_ -n "$S12_NS" delete secret muster-webhook-tls --ignore-not-found >/dev/null 2>&1
  # The baseline: muster and its kube-scheduler deployed from manifests/ (muster.sh).
  e2e_muster_install && e2e_muster_start muster && e2e_muster_scheduler kube-scheduler ||
    e2e_err "12: could not restore the baseline muster"
}

s12_secret() { kubectl_ -n "$S12_NS" get secret muster-webhook-tls -o "jsonpath={.data.$1}"; }
s12_cabundle() {
  kubectl_ get mutatingwebhookconfiguration muster-gpu-sharing -o 'jsonpath={.webhooks[0].clientConfig.caBundle}'
}
s12_annotation() {
  kubectl_ -n "$S12_NS" get deploy muster -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["template"]["metadata"]["annotations"].get(sys.argv[1], ""))' "$1"
}

# s12_run: muster and kube-scheduler as the chart's pod would run them (see the header).
s12_run() {
  local port wport token
  e2e_stop kube-scheduler
  e2e_stop muster
  mkdir -p "$S12_DIR/tls"
  port=$(e2e_free_port) && wport=$(e2e_free_port) || return 1
  kubectl_ -n "$S12_NS" get configmap muster-config -o json > "$S12_DIR/configmap.json" || return 1
  for k in tls.crt tls.key ca.crt; do s12_secret "${k//./\\.}" | base64 -d > "$S12_DIR/tls/$k" || return 1; done
  token=$(kubectl_ -n "$S12_NS" create token muster --duration=1h) || return 1
  _e2e_kubeconfig "$S12_DIR/muster.kubeconfig" muster "$token"
  python3 - "$S12_DIR" "$port" "$wport" <<'EOF' || return 1
import json, sys, yaml
d, port, wport = sys.argv[1], sys.argv[2], sys.argv[3]
data = json.load(open(f"{d}/configmap.json"))["data"]
m = yaml.safe_load(data["muster.yaml"])
m["listen"] = f"127.0.0.1:{port}"
m["gpuSharing"]["webhookListen"] = f"127.0.0.1:{wport}"
m["gpuSharing"]["webhookTLS"] = {"certFile": f"{d}/tls/tls.crt", "keyFile": f"{d}/tls/tls.key"}
open(f"{d}/muster.yaml", "w").write(yaml.safe_dump(m))
s = yaml.safe_load(data["scheduler-config.yaml"])
assert s["clientConnection"]["kubeconfig"] == "" and s["extenders"][0]["urlPrefix"] == "http://127.0.0.1:8888", s
s["clientConnection"]["kubeconfig"] = f"{d}/muster.kubeconfig"
s["extenders"][0]["urlPrefix"] = f"http://127.0.0.1:{port}"
open(f"{d}/scheduler-config.yaml", "w").write(yaml.safe_dump(s))
EOF
  "$MUSTER_BIN" serve --config "$S12_DIR/muster.yaml" --check-config >/dev/null || { e2e_fail "12: chart settings refused"; return 1; }
  _e2e_start muster "$MUSTER_BIN" serve --config "$S12_DIR/muster.yaml" --kubeconfig "$S12_DIR/muster.kubeconfig"
  # Recorded in the state dir's env as e2e_muster_start does: e2e_dir (e2e_scheduler) reads it back.
  echo "E2E_URL_muster=http://127.0.0.1:$port" >> "$MUSTER_E2E_DIR/env"
  E2E_URL_muster=http://127.0.0.1:$port S12_WPORT=$wport
  _e2e_wait_http muster 60 "$E2E_URL_muster/readyz" || return 1
  e2e_scheduler "$S12_DIR/scheduler-config.yaml" kube-scheduler || return 1
  e2e_log "12: muster and kube-scheduler run from the chart's ConfigMap, ServiceAccount and certificate"
}

# The chart's certificate as the ServiceMonitor uses it: CA from the Secret, the Service's name.
s12_tls_metrics() {
  curl -sf --max-time 5 --cacert "$S12_DIR/tls/ca.crt" \
    --resolve "muster-webhook.$S12_NS.svc:$S12_WPORT:127.0.0.1" \
    "https://muster-webhook.$S12_NS.svc:$S12_WPORT/metrics" | grep -qx 'muster_ready 1'
}

s12_gang() { # s12_gang CLUSTER: its pods' nodes, one line each ("-" when unbound)
  kubectl_ -n kuberay-lab get pods -l "ray.io/cluster=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"-"}{"\n"}{end}'
}
s12_all_bound() { # s12_all_bound CLUSTER N
  local nodes; nodes=$(s12_gang "$1")
  [[ $(grep -c . <<<"$nodes") -eq $2 && $(grep -cx 'gpu-lab-worker-' <<<"$nodes") -eq $2 ]]
}
s12_none_bound() { # s12_none_bound CLUSTER N: N pods, none bound
  local nodes; nodes=$(s12_gang "$1")
  [[ $(grep -c . <<<"$nodes") -eq $2 && $(grep -cx -- '-' <<<"$nodes") -eq $2 ]]
}
s12_gang_state() { # s12_gang_state KEY STATE BOUND [REASON-PART]
  curl -sf "$E2E_URL_muster/debug/state" | python3 -c '
import json, sys
g = [g for g in json.load(sys.stdin)["gangs"] if g["gang"] == sys.argv[1]]
why = sys.argv[4] if len(sys.argv) > 4 else None
sys.exit(0 if g and g[0]["state"] == sys.argv[2] and g[0]["bound"] == int(sys.argv[3]) and
         (why is None or why in (g[0]["reason"] or "")) else 1)' "$@"
}

s12_big_raycluster() { # three 1-GPU workers and a CPU head in queue team-a
  cat <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: big
  namespace: kuberay-lab
  labels: {muster.dev/queue: team-a}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
        - {name: ray-head, image: rayproject/ray:2.52.0, resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}}
  workerGroupSpecs:
  - groupName: gpus
    replicas: 3
    minReplicas: 3
    maxReplicas: 3
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
        - {name: ray-worker, image: rayproject/ray:2.52.0, resources: {requests: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}, limits: {cpu: "1", memory: 2Gi, nvidia.com/gpu: 1}}}
EOF
}

s12_values() { # s12_values TEAM_A_GPU_LIMIT
  cat <<EOF
strategy: spread
queues:
- name: org
  priority: 100
  resources: {gpu: {quota: 8, limit: 8, overQuotaWeight: 1}}
- name: team-a
  parentQueue: org
  priority: 100
  resources: {gpu: {quota: 2, limit: $1, overQuotaWeight: 1}}
EOF
}

scenario() {
  local crt0 ca0 cfg0 tlssum0 crt1 out
  [[ -x $S12_HELM ]] || { e2e_err "helm not built ($S12_HELM): bash test/e2e/build-components.sh helm"; return 1; }
  trap s12_restore EXIT
  mkdir -p "$S12_DIR"
  "$S12_HELM" version --short

  # 1. No drift, with the real kustomize.
  { "$E2E_KUBECTL" kustomize "$E2E_MANIFESTS"; echo ---; cat "$E2E_MANIFESTS/webhook.yaml"; } > "$S12_DIR/kustomize.yaml"
  "$S12_HELM" template "$S12_RELEASE" "$S12_CHART" -n "$S12_NS" --include-crds > "$S12_DIR/template.yaml"
  python3 "$E2E_REPO/test/chart_drift.py" "$S12_DIR/kustomize.yaml" "$S12_DIR/template.yaml" ||
    { e2e_err "12: the chart and kubectl kustomize manifests/ differ (above)"; return 1; }

  # The kustomize path's Secret (gen-webhook-cert.sh --secret) has what the ServiceMonitor
  # reads too: ca.crt beside tls.crt and tls.key.
  printf '#!/bin/sh\nexec %s --kubeconfig %s "$@"\n' "$E2E_KUBECTL" "$MUSTER_E2E_DIR/admin.kubeconfig" > "$S12_DIR/kubectl"
  chmod +x "$S12_DIR/kubectl"
  KUBECTL=$S12_DIR/kubectl bash "$E2E_MANIFESTS/gen-webhook-cert.sh" --out "$S12_DIR/gen-certs" --secret >/dev/null 2>&1
  [[ $(kubectl_ -n "$S12_NS" get secret muster-webhook-tls -o jsonpath='{.type}') == kubernetes.io/tls &&
     $(s12_secret 'ca\.crt' | base64 -d) == "$(cat "$S12_DIR/gen-certs/ca.crt")" ]] ||
    { e2e_err "12: gen-webhook-cert.sh --secret wrote no kubernetes.io/tls Secret with ca.crt"; return 1; }

  # 2. helm install, after taking away what the baseline installed from manifests/.
  e2e_stop kube-scheduler
  e2e_stop muster
  kubectl_ delete -f "$E2E_MANIFESTS/rbac.yaml" -f "$E2E_MANIFESTS/priorityclass.yaml" \
    -f "$E2E_MANIFESTS/crd-queue.yaml" --ignore-not-found >/dev/null
  kubectl_ -n "$S12_NS" delete secret muster-webhook-tls --ignore-not-found >/dev/null
  helm_do install "$S12_RELEASE" "$S12_CHART" -n "$S12_NS"
  [[ $(helm_ status "$S12_RELEASE" -n "$S12_NS" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["info"]["status"])') == deployed ]] ||
    { e2e_err "12: helm install did not end deployed"; return 1; }
  kubectl_ wait --for=condition=Established crd/queues.muster.dev --timeout=60s >/dev/null
  kubectl_ -n "$S12_NS" get deploy/muster configmap/muster-config sa/muster sa/muster-reserve service/muster-webhook \
    pdb/muster secret/muster-webhook-tls >/dev/null
  kubectl_ get clusterrole/muster clusterrolebinding/muster-as-kube-scheduler priorityclass/muster-gpu-reservation >/dev/null
  [[ -n $(s12_cabundle) && $(s12_cabundle) == "$(s12_secret 'ca\.crt')" ]] ||
    { e2e_err "12: the webhook's caBundle is not the Secret's ca.crt"; return 1; }
  crt0=$(s12_secret 'tls\.crt') ca0=$(s12_cabundle)
  cfg0=$(s12_annotation checksum/config) tlssum0=$(s12_annotation checksum/webhook-tls)
  s12_run
  wait_for 30 "the chart's certificate serves /metrics as the ServiceMonitor scrapes it" s12_tls_metrics

  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" -f "$E2E_MANIFESTS/samples/raycluster-demo.yaml" >/dev/null
  wait_for 120 "demo: 3 pods bound to gpu-lab-worker by the chart's muster" s12_all_bound demo 3
  wait_for 30 "muster: gang kuberay-lab/demo Bound whole" s12_gang_state kuberay-lab/demo Bound 3

  # 3. helm upgrade: Queues from values, a new strategy; the certificate stays.
  s12_values 2 > "$S12_DIR/values-2.yaml"
  helm_do upgrade "$S12_RELEASE" "$S12_CHART" -n "$S12_NS" -f "$S12_DIR/values-2.yaml"
  [[ $(kubectl_ get queue team-a -o jsonpath='{.spec.resources.gpu.limit}') == 2 ]] ||
    { e2e_err "12: helm upgrade did not create Queue team-a"; return 1; }
  [[ $(kubectl_ get queue team-a -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}') == Helm ]] ||
    { e2e_err "12: Queue team-a is not Helm's"; return 1; }
  [[ $(s12_secret 'tls\.crt') == "$crt0" && $(s12_cabundle) == "$ca0" && $(s12_annotation checksum/webhook-tls) == "$tlssum0" ]] ||
    { e2e_err "12: helm upgrade changed the webhook certificate (lookup should keep it)"; return 1; }
  [[ $(s12_annotation checksum/config) != "$cfg0" ]] ||
    { e2e_err "12: new settings but the same checksum/config: the pods would not roll"; return 1; }
  s12_run # the roll: muster reads its settings at start
  grep -qx 'strategy: spread' "$S12_DIR/muster.yaml" || { e2e_err "12: the upgraded ConfigMap lacks strategy: spread"; return 1; }
  wait_for 30 "the kept certificate still verifies" s12_tls_metrics
  s12_big_raycluster | kubectl_ apply -f - >/dev/null
  wait_for 90 "big: 4 pods, none bound (3 GPUs in team-a, limit 2)" s12_none_bound big 4
  wait_for 30 "muster: gang kuberay-lab/big waits whole for team-a's limit" \
    s12_gang_state kuberay-lab/big Pending 0 "queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; never: more than the limit"
  s12_none_bound big 4
  s12_values 3 > "$S12_DIR/values-3.yaml"
  helm_do upgrade "$S12_RELEASE" "$S12_CHART" -n "$S12_NS" -f "$S12_DIR/values-3.yaml"
  wait_for 120 "big: placed whole once helm raised team-a's limit to 3" s12_all_bound big 4
  wait_for 30 "muster: gang kuberay-lab/big Bound whole" s12_gang_state kuberay-lab/big Bound 4

  # 4. Rotation on request: a new certificate and CA, trusted by the webhook, pods roll.
  helm_do upgrade "$S12_RELEASE" "$S12_CHART" -n "$S12_NS" --reuse-values --set webhook.certificate.rotate=true
  crt1=$(s12_secret 'tls\.crt')
  [[ $crt1 != "$crt0" && $(s12_cabundle) != "$ca0" && $(s12_cabundle) == "$(s12_secret 'ca\.crt')" &&
     $(s12_annotation checksum/webhook-tls) != "$tlssum0" ]] ||
    { e2e_err "12: rotate=true did not give a new certificate the webhook trusts"; return 1; }
  s12_run
  wait_for 30 "the rotated certificate verifies" s12_tls_metrics
  helm_do upgrade "$S12_RELEASE" "$S12_CHART" -n "$S12_NS" --reuse-values --set webhook.certificate.rotate=false
  [[ $(s12_secret 'tls\.crt') == "$crt1" ]] || { e2e_err "12: the rotated certificate was not kept"; return 1; }
  [[ $(helm_ history "$S12_RELEASE" -n "$S12_NS" -o json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 5 ]] ||
    { e2e_err "12: expected 5 revisions"; return 1; }

  # 5. helm uninstall: the chart's objects go, the CRD (crds/) stays.
  e2e_stop kube-scheduler
  e2e_stop muster
  helm_do uninstall "$S12_RELEASE" -n "$S12_NS"
  for o in "-n $S12_NS deploy/muster" "-n $S12_NS configmap/muster-config" "-n $S12_NS sa/muster" \
           "-n $S12_NS secret/muster-webhook-tls" "clusterrole/muster" "clusterrolebinding/muster-as-kube-scheduler" \
           "mutatingwebhookconfiguration/muster-gpu-sharing" "queue/team-a" "queue/org"; do
    # shellcheck disable=SC2086
    out=$(kubectl_ get $o -o name 2>/dev/null) || true
    [[ -z $out ]] || { e2e_err "12: $o survived helm uninstall"; return 1; }
  done
  kubectl_ get crd queues.muster.dev >/dev/null || { e2e_err "12: helm uninstall deleted the Queue CRD"; return 1; }
  [[ -z $(helm_ list -n "$S12_NS" -q) ]] || { e2e_err "12: the release is still listed"; return 1; }
  e2e_log "12: helm install, upgrade x4 and uninstall against the e2e kube-apiserver"
}
