# Two RayClusters each needing 6 of the 8 GPUs (test/e2e/manifests/rayclusters-competing.yaml:
# a CPU-only head plus six 1-GPU workers each), created together -> exactly one bound whole,
# the other Pending whole; delete the first -> the second binds whole.
NS=kuberay-lab

show_pods() {
  kubectl_ -n "$NS" get pods -o custom-columns='NAME:.metadata.name,CLUSTER:.metadata.labels.ray\.io/cluster,GPU:.spec.containers[0].resources.limits.nvidia\.com/gpu,NODE:.spec.nodeName,PHASE:.status.phase' --sort-by=.metadata.name
}
# count_pods <cluster> [bound]: pods of a RayCluster (only those with a nodeName with "bound")
count_pods() {
  local filter='{range .items[*]}{.metadata.name}{"\n"}{end}'
  [[ ${2:-} == bound ]] && filter='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}'
  kubectl_ -n "$NS" get pods -l ray.io/cluster="$1" -o jsonpath="$filter" | grep -c . || true
}

scenario() {
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml"
  # Both in one request: the operator creates the two gangs' pods interleaved.
  kubectl_ apply -f "$E2E_LIB_DIR/manifests/rayclusters-competing.yaml"

  all_pods() { [[ $(count_pods six-a) -eq 7 && $(count_pods six-b) -eq 7 ]]; }
  wait_for 90 "KubeRay creates 7 pods for each of six-a and six-b" all_pods
  one_whole() { [[ $(count_pods six-a bound) -eq 7 || $(count_pods six-b bound) -eq 7 ]]; }
  wait_for 120 "one of six-a / six-b bound whole" one_whole
  if [[ $(count_pods six-a bound) -eq 7 ]]; then first=six-a second=six-b; else first=six-b second=six-a; fi
  e2e_log "$first was bound whole; $second must wait whole"

  # For a while: the first stays whole, the second has no pod bound (its 6 GPUs are not there).
  local end=$((SECONDS + 20)) a b
  while ((SECONDS < end)); do
    a=$(count_pods $first bound) b=$(count_pods $second bound)
    if ((a != 7 || b != 0)); then
      show_pods
      e2e_err "want $first 7 bound and $second 0 bound, have $a and $b"
      return 1
    fi
    sleep 1
  done
  show_pods
  echo "--- why $second waits (muster's Events):"
  # (each distinct message once; "k of 7 members exist" ones are from while KubeRay was creating)
  kubectl_ -n "$NS" get events --field-selector reason=GangWaiting \
    -o custom-columns='POD:.involvedObject.name,MESSAGE:.message' |
    awk -v c="$second" 'NR == 1 { print; next } index($1, c) == 1 { m = $0; sub(/^[^ ]+ +/, "", m); if (!seen[m]++) print }'
  curl -sf "$(e2e_muster_url muster)/debug/state" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["gangs"]:
    if g["gang"].startswith("kuberay-lab/"):
        print("muster: gang %s %s (%s of %s bound)%s" % (g["gang"], g["state"], g.get("bound"), g.get("minMembers"),
              " - " + g["reason"] if g.get("reason") else ""))' || true

  # Delete the first. No kube-controller-manager runs here, so the garbage collector will not
  # delete the pods the RayCluster owns: delete the RayCluster first (so the operator does not
  # re-create them), then force-delete its pods (no kubelet runs to finish a graceful delete).
  kubectl_ -n "$NS" delete raycluster "$first" --wait=true --timeout=60s
  kubectl_ -n "$NS" delete pods -l ray.io/cluster="$first" --grace-period=0 --force
  first_gone() { [[ $(count_pods $first) -eq 0 ]]; }
  wait_for 60 "pods of $first deleted" first_gone

  second_whole() { [[ $(count_pods $second bound) -eq 7 ]]; }
  wait_for 120 "$second bound whole (7 pods) after $first was deleted" second_whole
  show_pods
  nodes=$(kubectl_ -n "$NS" get pods -l ray.io/cluster="$second" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u)
  [[ $nodes == gpu-lab-worker ]] || { e2e_err "$second bound to '$nodes', want gpu-lab-worker"; return 1; }
}
