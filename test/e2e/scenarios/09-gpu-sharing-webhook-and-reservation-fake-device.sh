# GPU sharing made real (issue 5), end to end, with the node's part PLAYED BY THE TEST: no GPU
# exists here, so the fake node agent (run.sh, e2e_fake_node_agent) writes on each reservation
# pod the muster.dev/gpu-device annotation `muster reserve` would write ("GPU-fake-<pod>").
#
#  - muster serves the admission webhook over HTTPS with a certificate from
#    manifests/gen-webhook-cert.sh; the MutatingWebhookConfiguration is manifests/webhook.yaml
#    rendered by that script (URL form, caBundle); the API server calls it over TLS;
#  - a gpu-fraction "0.5" pod gets NVIDIA_VISIBLE_DEVICES / GPU_FRACTION from ConfigMap
#    muster-gpu-<id>, label muster.dev/gpu-share-id and runtimeClassName nvidia;
#    gpu-fraction "1.5" is rejected at create with a readable message;
#  - two 0.5 pods on a 1-GPU node share one group, held by ONE reservation pod (nvidia.com/gpu: 1
#    on that node); their ConfigMaps carry the (fake) device;
#  - a whole-GPU pod of the default scheduler stays Pending on that full node, and gets the GPU
#    once both sharing pods are deleted and muster has deleted the reservation pod;
#  - KubeRay workers (generateName: no name at admission) get their ConfigMaps too;
#  - after a restart muster keeps the reservation pod in use and deletes an orphan one.
#
# muster is restarted with the webhook on the port kube-scheduler already calls, and restarted
# with the default settings at the end (trap), so the next scenario finds the baseline.

S09_NS=share-lab
S09_NODE=gpu-share-1


s09_cleanup() {
  set +e
  e2e_stop default-scheduler
  kubectl_ delete mutatingwebhookconfiguration muster-gpu-sharing --ignore-not-found >/dev/null 2>&1
  kubectl_ delete -f "$E2E_LIB_DIR/manifests/runtimeclass-nvidia.yaml" --ignore-not-found >/dev/null 2>&1
  rm -f "$MUSTER_E2E_DIR/muster.yaml.gpu-sharing"
  e2e_muster_restart || e2e_err "09: could not restart muster with its default settings"
}

# s09_share_pod NAME FRACTION [scheduler]: a pod asking for a GPU share (no nvidia.com/gpu)
s09_share_pod() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $S09_NS
  annotations: {gpu-fraction: "$2"}
spec:
  schedulerName: ${3:-muster}
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: registry.invalid/cuda:0
    env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]
    resources:
      requests: {cpu: 100m, memory: 64Mi}
EOF
}

s09_node_of() { kubectl_ -n "$S09_NS" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
s09_bound() { [[ -n $(s09_node_of "$1") ]]; }
s09_reservations() { # name node group gpu-request device, one line per reservation pod
  kubectl_ -n muster-system get pods -l app.kubernetes.io/name=muster-gpu-reservation -o json |
    python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    m, s = p["metadata"], p["spec"]
    if m.get("deletionTimestamp"):
        continue
    r = s["containers"][0].get("resources", {})
    print(m["name"], s.get("nodeName", "-"), m.get("labels", {}).get("muster.dev/gpu-group", "-"),
          r.get("requests", {}).get("nvidia.com/gpu", "-") + "/" + r.get("limits", {}).get("nvidia.com/gpu", "-"),
          m.get("annotations", {}).get("muster.dev/gpu-device", "-"))'
}
s09_no_reservation() { [[ -z $(s09_reservations) ]]; }

scenario() {
  local certs=$MUSTER_E2E_DIR/webhook-certs wport url
  trap s09_cleanup EXIT
  # The baseline's fake node agent must be alive.
  e2e_fake_node_agent_alive || { e2e_err "the fake node agent is not running"; return 1; }

  # 1. A serving certificate for 127.0.0.1 and the webhook configuration, from manifests/.
  wport=$(e2e_free_port)
  url=https://127.0.0.1:$wport/mutate-pods
  bash "$E2E_MANIFESTS/gen-webhook-cert.sh" --out "$certs" --ip 127.0.0.1 \
    --webhook-out "$certs/webhook.yaml" --url "$url" >/dev/null
  grep -q "url: \"$url\"" "$certs/webhook.yaml" && grep -q "^    caBundle: LS0t" "$certs/webhook.yaml" ||
    { echo "rendered webhook.yaml has no URL or no caBundle"; return 1; }
  openssl verify -CAfile "$certs/ca.crt" "$certs/tls.crt" >/dev/null
  openssl x509 -in "$certs/tls.crt" -noout -ext subjectAltName | grep -q "IP Address:127.0.0.1"

  # 2. muster with the webhook listener (HTTPS) on that port.
  printf '%s\n' "  webhookListen: 127.0.0.1:$wport" "  webhookTLS:" \
    "    certFile: $certs/tls.crt" "    keyFile: $certs/tls.key" > "$MUSTER_E2E_DIR/muster.yaml.gpu-sharing"
  e2e_muster_restart
  grep -q "serving the GPU-sharing webhook" "$MUSTER_E2E_DIR/logs/muster.log"
  # HTTPS, trusted through the CA the caBundle carries; plain HTTP is not served there.
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$certs/ca.crt" -X POST \
    -H 'Content-Type: application/json' --data '{}' "$url")
  [[ $code == 4* ]] || { echo "webhook over TLS answered $code to an empty review"; return 1; }
  if curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$wport/mutate-pods"; then
    echo "the webhook answers plain HTTP"; return 1
  fi

  kubectl_ apply -f "$certs/webhook.yaml" >/dev/null
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/runtimeclass-nvidia.yaml" >/dev/null
  kubectl_ create namespace "$S09_NS" >/dev/null
  e2e_gpu_node "$S09_NODE" 1

  # The API server reads webhook configurations asynchronously: wait until a server-side dry
  # run comes back mutated (the webhook declares sideEffects: None, so dry runs call it).
  mutated_dry_run() {
    s09_share_pod probe 0.5 | kubectl_ create --dry-run=server -o jsonpath='{.metadata.labels}' -f - |
      grep -q muster.dev/gpu-share-id
  }
  wait_for 60 "the API server calls the webhook" mutated_dry_run

  # 3. The rejection, as a person reads it.
  local out
  if out=$(s09_share_pod too-much 1.5 | kubectl_ create -f - 2>&1); then
    echo "gpu-fraction 1.5 was admitted: $out"; return 1
  fi
  echo "rejected as expected: $out"
  [[ $out == *'admission webhook "gpu-sharing.muster.dev" denied the request'* &&
     $out == *'gpu-fraction 1.5 is outside (0, 1): use nvidia.com/gpu for whole GPUs'* ]] ||
    { echo "unexpected rejection message"; return 1; }
  if kubectl_ -n "$S09_NS" get pod too-much >/dev/null 2>&1; then echo "too-much exists"; return 1; fi

  # 4. Two halves, created through the webhook, scheduled by muster on the 1-GPU node.
  s09_share_pod half-a 0.5 | kubectl_ create -f - >/dev/null
  s09_share_pod half-b 0.5 | kubectl_ create -f - >/dev/null
  kubectl_ -n "$S09_NS" get pods -o json > "$MUSTER_E2E_DIR/s09-admitted.json"
  python3 - "$MUSTER_E2E_DIR/s09-admitted.json" <<'PY'
import json, re, sys
pods = json.load(open(sys.argv[1]))["items"]
assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
ids = set()
for p in pods:
    name = p["metadata"]["name"]
    sid = p["metadata"].get("labels", {}).get("muster.dev/gpu-share-id")
    assert sid and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", sid) and len(sid) <= 63, (name, sid)
    ids.add(sid)
    assert p["spec"].get("runtimeClassName") == "nvidia", (name, p["spec"].get("runtimeClassName"))
    env = {e["name"]: e for e in p["spec"]["containers"][0].get("env", [])}
    for var in ("NVIDIA_VISIBLE_DEVICES", "GPU_FRACTION"):
        e = env.get(var)
        assert e and "value" not in e, (name, var, e)
        ref = e["valueFrom"]["configMapKeyRef"]
        assert ref["name"] == "muster-gpu-" + sid and ref["key"] == var and not ref.get("optional"), (name, ref)
    # The image's NVIDIA_VISIBLE_DEVICES=all was replaced in place, not left beside the reference.
    names = [e["name"] for e in p["spec"]["containers"][0]["env"]]
    assert names.count("NVIDIA_VISIBLE_DEVICES") == 1, (name, names)
assert len(ids) == 2, ids
print("admitted and mutated:", sorted(ids))
PY

  wait_for 120 "half-a and half-b bound" eval 's09_bound half-a && s09_bound half-b'
  [[ $(s09_node_of half-a) == "$S09_NODE" && $(s09_node_of half-b) == "$S09_NODE" ]]
  local ga gb
  ga=$(kubectl_ -n "$S09_NS" get pod half-a -o jsonpath='{.metadata.annotations.muster\.dev/gpu-group}')
  gb=$(kubectl_ -n "$S09_NS" get pod half-b -o jsonpath='{.metadata.annotations.muster\.dev/gpu-group}')
  [[ -n $ga && $ga == "$gb" ]] || { echo "not one group: half-a '$ga', half-b '$gb'"; return 1; }

  # 5. ONE reservation pod holds the device, on that node, for that group.
  local res rname rnode rgroup rgpu rdev
  res=$(s09_reservations)
  echo "reservation pods: $res"
  [[ $(grep -c . <<<"$res") -eq 1 ]] || { echo "want exactly one reservation pod"; return 1; }
  read -r rname rnode rgroup rgpu rdev <<<"$res"
  [[ $rnode == "$S09_NODE" && $rgroup == "$ga" && $rgpu == 1/1 && $rdev == "GPU-fake-$rname" ]] ||
    { echo "reservation pod $rname: node $rnode group $rgroup gpu $rgpu device $rdev"; return 1; }

  # 6. The hand-off: each pod's ConfigMap names the reservation pod's device, owned by the pod.
  local p sid uid cm
  for p in half-a half-b; do
    sid=$(kubectl_ -n "$S09_NS" get pod "$p" -o jsonpath='{.metadata.labels.muster\.dev/gpu-share-id}')
    uid=$(kubectl_ -n "$S09_NS" get pod "$p" -o jsonpath='{.metadata.uid}')
    cm=$(kubectl_ -n "$S09_NS" get configmap "muster-gpu-$sid" -o json)
    python3 -c '
import json, sys
cm, dev, uid = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
d = cm["data"]
assert d["NVIDIA_VISIBLE_DEVICES"] == dev, d
assert d["GPU_FRACTION"] == "0.5", d
owners = [o["uid"] for o in cm["metadata"].get("ownerReferences", [])]
assert owners == [uid], (owners, uid)
print(cm["metadata"]["name"], d)' "$cm" "$rdev" "$uid"
  done

  # 7. The default scheduler (its own kube-scheduler, default profile) sees the GPU as taken.
  e2e_scheduler "" default-scheduler
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: whole-gpu, namespace: $S09_NS}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: registry.invalid/cuda:0
    resources:
      limits: {nvidia.com/gpu: 1}
      requests: {cpu: 100m, memory: 64Mi, nvidia.com/gpu: 1}
EOF
  unschedulable() {
    kubectl_ -n "$S09_NS" get pod whole-gpu \
      -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason} {.status.conditions[?(@.type=="PodScheduled")].message}' |
      grep -q '^Unschedulable .*nvidia.com/gpu'
  }
  wait_for 90 "default-scheduler reports whole-gpu Unschedulable for nvidia.com/gpu" unschedulable
  kubectl_ -n "$S09_NS" get pod whole-gpu -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}'
  if s09_bound whole-gpu; then echo "whole-gpu took the shared device"; return 1; fi

  # 8. Both sharing pods gone -> muster deletes the reservation pod -> the GPU is free again,
  #    and the default scheduler gives it to whole-gpu.
  kubectl_ -n "$S09_NS" delete pod half-a half-b --grace-period=0 --force >/dev/null 2>&1
  wait_for 120 "muster deletes reservation pod $rname" s09_no_reservation
  grep -q "reservation pod deleted: its GPU group holds no pod.*$rname" "$MUSTER_E2E_DIR/logs/muster.log"
  # muster's delete leaves the pod Terminating (grace 5 s) until a kubelet confirms the
  # container is gone; no kubelet runs here, so the test plays that part too.
  kubectl_ -n muster-system delete pod "$rname" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1
  wait_for 120 "whole-gpu bound by default-scheduler once the device is free" s09_bound whole-gpu
  [[ $(s09_node_of whole-gpu) == "$S09_NODE" ]]

  # 9. KubeRay creates its pods with generateName: no pod name exists at admission, which is
  #    why the ConfigMap is named after the share-id label. Two 0.5 workers of a RayCluster on a
  #    second 1-GPU node get their ConfigMaps with that node's (fake) device.
  e2e_gpu_node gpu-share-2 1
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: halves, namespace: $S09_NS}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        schedulerName: muster
        containers:
        - {name: ray-head, image: registry.invalid/ray:0, resources: {requests: {cpu: "1", memory: 1Gi}}}
  workerGroupSpecs:
  - groupName: w
    replicas: 2
    minReplicas: 2
    maxReplicas: 2
    rayStartParams: {}
    template:
      metadata:
        annotations: {gpu-fraction: "0.5"}
      spec:
        schedulerName: muster
        containers:
        - {name: ray-worker, image: registry.invalid/ray:0, resources: {requests: {cpu: "1", memory: 1Gi}}}
EOF
  ray_bound() {
    [[ $(kubectl_ -n "$S09_NS" get pods -l ray.io/cluster=halves -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep -c .) -eq 3 ]]
  }
  wait_for 120 "RayCluster halves bound whole" ray_bound
  local res2
  res2=$(s09_reservations)
  echo "reservation pods: $res2"
  [[ $(grep -c . <<<"$res2") -eq 1 ]] && read -r rname rnode rgroup rgpu rdev <<<"$res2" &&
    [[ $rnode == gpu-share-2 && $rdev == "GPU-fake-$rname" ]] ||
    { echo "want one reservation pod on gpu-share-2"; return 1; }
  kubectl_ -n "$S09_NS" get pods -l ray.io/cluster=halves,ray.io/node-type=worker -o json > "$MUSTER_E2E_DIR/s09-ray.json"
  kubectl_ -n "$S09_NS" get configmaps -o json > "$MUSTER_E2E_DIR/s09-cms.json"
  python3 - "$MUSTER_E2E_DIR/s09-ray.json" "$MUSTER_E2E_DIR/s09-cms.json" "$rdev" <<'PY'
import json, sys
pods = json.load(open(sys.argv[1]))["items"]
cms = {c["metadata"]["name"]: c for c in json.load(open(sys.argv[2]))["items"]}
dev = sys.argv[3]
assert len(pods) == 2, len(pods)
for p in pods:
    m = p["metadata"]
    assert m.get("generateName"), m["name"]
    assert p["spec"]["nodeName"] == "gpu-share-2", (m["name"], p["spec"]["nodeName"])
    sid = m["labels"]["muster.dev/gpu-share-id"]
    env = {e["name"]: e for e in p["spec"]["containers"][0]["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["valueFrom"]["configMapKeyRef"]["name"] == "muster-gpu-" + sid
    cm = cms["muster-gpu-" + sid]
    assert cm["data"] == {"NVIDIA_VISIBLE_DEVICES": dev, "GPU_FRACTION": "0.5"}, cm["data"]
    assert [o["uid"] for o in cm["metadata"]["ownerReferences"]] == [m["uid"]]
    print(m["name"], "->", cm["metadata"]["name"], cm["data"])
PY

  # 10. muster restarts: it adopts the reservation pod whose group still holds the workers and
  #     deletes an orphan (a reservation pod for a group nobody uses). The orphan's deletion shows
  #     the reaper has run since the restart.
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: gpu-reservation-gpu-share-2-g7
  namespace: muster-system
  labels: {app.kubernetes.io/name: muster-gpu-reservation, muster.dev/gpu-group: g7, muster.dev/node: gpu-share-2}
spec:
  nodeName: gpu-share-2
  terminationGracePeriodSeconds: 0
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reserve
    image: registry.invalid/muster:0
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    resources: {limits: {cpu: 10m, memory: 16Mi}}
EOF
  e2e_muster_restart
  # What muster rebuilt from the API server: both workers bound on gpu-share-2 in group g0.
  # (Its reflectors list pods and nodes concurrently; the answer must not depend on which
  # list comes first.)
  workers_known() {
    curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
w = [p for p in json.load(sys.stdin)["pods"] if p["pod"].startswith("share-lab/halves-w-worker-")]
sys.exit(0 if len(w) == 2 and all(p["phase"] == "Bound" for p in w) else 1)'
  }
  wait_for 60 "restarted muster sees the workers bound" workers_known
  curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
w = [p for p in json.load(sys.stdin)["pods"] if p["pod"].startswith("share-lab/halves-w-worker-")]
for p in w:
    print("after restart:", p["pod"], p["phase"], p.get("node"), p.get("gpuGroups"))
bad = [p["pod"] for p in w if p.get("node") != "gpu-share-2" or p.get("gpuGroups") != "g0"]
assert not bad, f"restarted muster lost the GPU group of {bad} (want node gpu-share-2, gpuGroups g0)"'
  grep -E "listed resource=(pods|nodes)" "$MUSTER_E2E_DIR/logs/muster.log" | sed 's/^/  /'
  orphan_gone() { ! s09_reservations | grep -q '^gpu-reservation-gpu-share-2-g7 '; }
  wait_for 120 "restarted muster deletes the orphan reservation pod" orphan_gone
  [[ $(s09_reservations) == "$res2" ]] ||
    { echo "after the restart, reservation pods are '$(s09_reservations)', want '$res2'"; return 1; }
}
