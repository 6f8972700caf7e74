# `muster reserve` itself (the real binary, $MUSTER_BIN), as a reservation pod runs it, against
# the real API server with the identity reservation pods have: ServiceAccount
# muster-system/muster-reserve, whose only rights (manifests/rbac.yaml) are get/patch pods in
# muster-system. The device plugin's part is played by setting NVIDIA_VISIBLE_DEVICES=GPU-1234.
#  - it writes muster.dev/gpu-device=GPU-1234 on its own pod (POD_NAME/POD_NAMESPACE) and exits
#    0 with --once: the shipped RBAC is enough;
#  - the same identity is refused (403, exit 1, at once) on a pod outside muster-system: the RBAC
#    is no wider than that;
#  - values that do not name exactly one device ("all", unset) are refused with exit 2, and the
#    annotation is left alone.

S11_POD=reserve-probe

s11_pod() { # s11_pod NAME NAMESPACE: a pod shaped like a reservation pod that no scheduler takes
  kubectl_ apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $2
  labels: {app.kubernetes.io/name: muster-e2e-reserve-probe}
spec:
  schedulerName: muster-e2e-nobody
  serviceAccountName: muster-reserve
  terminationGracePeriodSeconds: 0
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reserve
    image: muster:0.1.0
    command: [muster, reserve]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    resources:
      limits: {cpu: 10m, memory: 16Mi}
EOF
}

s11_device() { kubectl_ -n "$2" get pod "$1" -o jsonpath='{.metadata.annotations.muster\.dev/gpu-device}'; }

# s11_reserve NAMESPACE POD [NVIDIA_VISIBLE_DEVICES value | -unset]: run the binary, print its
# output, return its exit status
s11_reserve() {
  local ns=$1 pod=$2 dev=${3:--unset} rc=0
  local -a env=(env -u NVIDIA_VISIBLE_DEVICES POD_NAME="$pod" POD_NAMESPACE="$ns")
  [[ $dev == -unset ]] || env+=(NVIDIA_VISIBLE_DEVICES="$dev")
  "${env[@]}" timeout 120 "$MUSTER_BIN" reserve --once --attempts 3 \
    --kubeconfig "$MUSTER_E2E_DIR/muster-reserve.kubeconfig" 2>&1 || rc=$?
  return "$rc"
}

scenario() {
  local token out rc
  token=$(kubectl_ -n muster-system create token muster-reserve --duration=1h)
  _e2e_kubeconfig "$MUSTER_E2E_DIR/muster-reserve.kubeconfig" muster-reserve "$token"
  s11_pod "$S11_POD" muster-system
  s11_pod "$S11_POD" default

  # Refusals first: nothing is written.
  rc=0; out=$(s11_reserve muster-system "$S11_POD" all) || rc=$?
  echo "NVIDIA_VISIBLE_DEVICES=all -> exit $rc: $out"
  [[ $rc -eq 2 ]] || { echo "want exit 2 for all"; return 1; }
  rc=0; out=$(s11_reserve muster-system "$S11_POD" -unset) || rc=$?
  echo "NVIDIA_VISIBLE_DEVICES unset -> exit $rc: $out"
  [[ $rc -eq 2 ]] || { echo "want exit 2 when unset"; return 1; }
  [[ -z $(s11_device "$S11_POD" muster-system) ]] || { echo "a refusal wrote an annotation"; return 1; }

  # The real write, with the reservation pods' identity.
  rc=0; out=$(s11_reserve muster-system "$S11_POD" GPU-1234) || rc=$?
  echo "NVIDIA_VISIBLE_DEVICES=GPU-1234 -> exit $rc: $out"
  [[ $rc -eq 0 ]] || { echo "muster reserve failed"; return 1; }
  local got
  got=$(s11_device "$S11_POD" muster-system)
  [[ $got == GPU-1234 ]] || { echo "annotation muster.dev/gpu-device is '$got', want GPU-1234"; return 1; }
  # No wider than muster-system: the same patch on a pod in default is forbidden, at once.
  rc=0; out=$(s11_reserve default "$S11_POD" GPU-1234) || rc=$?
  echo "pod in namespace default -> exit $rc: $out"
  [[ $rc -eq 1 && $out == *forbidden* ]] || { echo "want exit 1 with the API server's 403"; return 1; }
  [[ -z $(s11_device "$S11_POD" default) ]] || { echo "pod in default was annotated"; return 1; }
  # ...and get/patch are all it may do in muster-system.
  local as=system:serviceaccount:muster-system:muster-reserve verb
  for verb in "get pods" "patch pods"; do
    [[ $(kubectl_ auth can-i $verb -n muster-system --as "$as") == yes ]]
  done
  for verb in "list pods" "delete pods" "create pods" "get secrets" "patch nodes"; do
    if [[ $(kubectl_ auth can-i $verb -n muster-system --as "$as" 2>/dev/null) == yes ]]; then
      echo "muster-reserve may $verb"; return 1
    fi
  done
}
