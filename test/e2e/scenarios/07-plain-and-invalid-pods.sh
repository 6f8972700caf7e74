# Pods of the muster profile outside any gang (test/e2e/manifests/pods-plain-and-invalid.yaml):
# a plain Pod (1 CPU, 1 GPU) is scheduled normally; a Pod with gpu-fraction "1.5", and one
# asking both nvidia.com/gpu: 1 and gpu-fraction "0.5", stay Pending with muster's reason in
# their Events.
NS=default

show_pods() {
  kubectl_ -n "$NS" get pods -o custom-columns='NAME:.metadata.name,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,FRACTION:.metadata.annotations.gpu-fraction,NODE:.spec.nodeName,PHASE:.status.phase'
}
node_of() { kubectl_ -n "$NS" get pod "$1" -o jsonpath='{.spec.nodeName}'; }

# has_event <pod> <text>: the pod has a FailedScheduling (kube-scheduler, carrying the
# extender's answer) or GangWaiting (muster) Event whose message contains text.
has_event() {
  kubectl_ -n "$NS" get events --field-selector involvedObject.name="$1" \
    -o jsonpath='{range .items[?(@.reason=="FailedScheduling")]}{.message}{"\n"}{end}{range .items[?(@.reason=="GangWaiting")]}{.message}{"\n"}{end}' |
    grep -qF -- "$2"
}

scenario() {
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/pods-plain-and-invalid.yaml"

  plain_bound() { [[ $(node_of plain) == gpu-lab-worker ]]; }
  wait_for 90 "pod plain bound to gpu-lab-worker" plain_bound

  # The reasons as muster words them (extender/kube/decode.c, policy/model.c).
  local bad_why='gpu-fraction 1.5: share outside (0, 1)'
  local both_why='asks both whole GPUs (nvidia.com/gpu: 1) and a GPU share'
  bad_reason() { has_event bad-fraction "$bad_why"; }
  both_reason() { has_event gpu-and-share "$both_why"; }
  wait_for 90 "bad-fraction has an Event saying '$bad_why'" bad_reason
  wait_for 90 "gpu-and-share has an Event saying '$both_why'" both_reason

  # And they stay Pending (kube-scheduler keeps retrying them; muster keeps saying no).
  local end=$((SECONDS + 20)) p
  while ((SECONDS < end)); do
    for p in bad-fraction gpu-and-share; do
      [[ -z $(node_of $p) ]] || { show_pods; e2e_err "invalid pod $p was bound to $(node_of $p)"; return 1; }
    done
    sleep 1
  done
  [[ $(node_of plain) == gpu-lab-worker ]] || { show_pods; e2e_err "pod plain lost its node"; return 1; }
  show_pods
  echo "--- why they wait (Events):"
  kubectl_ -n "$NS" get events -o custom-columns='POD:.involvedObject.name,REASON:.reason,MESSAGE:.message' |
    awk 'NR == 1 || (/FailedScheduling|GangWaiting/ && !seen[$0]++)'
}
