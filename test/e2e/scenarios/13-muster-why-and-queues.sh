# `muster why` and `muster queues` against the real kube-apiserver, run as the kubectl plugin
# (`kubectl muster ...`, found by the real kubectl on PATH as kubectl-muster). The walkthrough's
# second experiment gives them something to explain: RayCluster "frac" (a 1-GPU head and four
# 0.5-GPU workers, 3 GPUs) in queue team-a, whose GPU limit is 2, waits whole; `why` must say so
# in muster's words, from the objects alone and from muster's /debug/state, and `queues` must
# show team-a's limit and its pending gang. Raise the limit: `why` says bound, `queues` 3 GPUs.
NS=kuberay-lab
RC=frac
REASON="queue team-a: limit 2 GPUs, 0 GPUs in use, the gang needs 3 GPUs; never: more than the limit"

# kubectl muster ARGS...: through kubectl's plugin lookup, with the admin kubeconfig.
kubectl_muster() {
  PATH="$MUSTER_E2E_DIR/plugins:$PATH" "$E2E_KUBECTL" muster "$@" \
    --kubeconfig "$MUSTER_E2E_DIR/admin.kubeconfig"
}

# json_check FILE PYTHON-EXPR: the expression holds for j, the parsed file
json_check() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
if not eval(sys.argv[2]):
    print(json.dumps(j, indent=1), file=sys.stderr)
    sys.exit(1)
EOF
}

# expect_line FILE REGEX: a whole line of FILE matches
expect_line() {
  grep -qxE "$2" "$1" || { e2e_err "$1: no line matching /$2/"; return 1; }
}

pod_count() {
  kubectl_ -n "$NS" get pods -l ray.io/cluster=$RC -o name | grep -c .
}

scenario() {
  local out=$MUSTER_E2E_DIR/13 head rc
  mkdir -p "$out" "$MUSTER_E2E_DIR/plugins"
  ln -sfn "$MUSTER_BIN" "$MUSTER_E2E_DIR/plugins/kubectl-muster"
  e2e_gpu_node gpu-lab-worker 8
  kubectl_ apply -f "$E2E_MANIFESTS/samples/namespace-kuberay-lab.yaml" \
    -f "$E2E_MANIFESTS/samples/queues.yaml" -f "$E2E_MANIFESTS/samples/raycluster-fractional.yaml"
  five_pods() { [[ $(pod_count) -eq 5 ]]; }
  wait_for 90 "KubeRay creates the 5 pods of $RC" five_pods

  # From the objects alone: pending whole, muster's reason from its GangWaiting Event.
  why_says_waiting() {
    kubectl_muster why $NS/$RC -o json --events 100 > "$out/why.json" &&
      json_check "$out/why.json" 'j["state"] == "Pending" and j["reason"] == "'"$REASON"'" and j["reasonFrom"].startswith("muster\x27s Event GangWaiting")'
  }
  wait_for 90 "kubectl muster why: $RC waits for '$REASON'" why_says_waiting
  json_check "$out/why.json" 'j["kind"] == "RayCluster" and j["gang"] == "kuberay-lab/frac" and j["declaredBy"] == "RayCluster kuberay-lab/frac"'
  json_check "$out/why.json" 'j["minMembers"] == 5 and j["members"] == 5 and j["bound"] == 0'
  json_check "$out/why.json" 'j["composition"] == "head 0/1, halves 0/4"'
  json_check "$out/why.json" 'len(j["pods"]) == 5 and all(p["state"] == "Pending" and p["node"] is None for p in j["pods"])'
  json_check "$out/why.json" 'sorted(p["gpu"] for p in j["pods"]) == ["0.5", "0.5", "0.5", "0.5", "1"] and j["pods"][0]["group"] == "headgroup"'
  json_check "$out/why.json" 'j["queue"]["name"] == "team-a" and j["queue"]["exists"] and j["queue"]["gpu"]["limit"] == "2" and j["queue"]["parent"] == "org"'
  # muster's Event: the reason, then the gang's composition (docs/gangs.md); `why` shows the reason alone
  json_check "$out/why.json" 'any(e["reason"] == "GangWaiting" and e["message"] == "'"$REASON; composition: head 0/1, halves 0/4"'" for e in j["events"])'
  json_check "$out/why.json" 'not j["muster"]["asked"]'
  kubectl_muster why $NS/$RC > "$out/why.txt"
  cat "$out/why.txt"
  expect_line "$out/why.txt" "Gang: +Pending, 0 of 5 pods bound, minimum 5"
  expect_line "$out/why.txt" "Composition: +head 0/1, halves 0/4"
  expect_line "$out/why.txt" "Why: +$REASON"
  expect_line "$out/why.txt" "Queue: +team-a: .*quota 2, limit 2, .*"

  # A pod of the gang leads to its gang; muster asked directly says the same reason.
  head=$(kubectl_ -n $NS get pods -l ray.io/cluster=$RC,ray.io/node-type=head -o jsonpath='{.items[0].metadata.name}')
  kubectl_muster why -n $NS "$head" -o json --muster-url "$(e2e_muster_url muster)" > "$out/why-pod.json"
  json_check "$out/why-pod.json" 'j["kind"] == "Pod" and j["gang"] == "kuberay-lab/frac" and j["muster"]["asked"] and j["muster"]["error"] is None and j["muster"]["knowsGang"]'
  json_check "$out/why-pod.json" 'j["state"] == "Pending" and j["reason"] == "'"$REASON"'" and j["reasonFrom"] == "muster\x27s /debug/state"'

  # No such object: exit 1. No cluster: exit 2 and one line.
  rc=0
  kubectl_muster why $NS/no-such-thing > /dev/null 2> "$out/missing.err" || rc=$?
  [[ $rc == 1 ]] && grep -q "no RayCluster, PodGroup, Pod, RayJob or RayService named kuberay-lab/no-such-thing" "$out/missing.err" ||
    { e2e_err "why of a missing object: exit $rc: $(cat "$out/missing.err")"; return 1; }
  sed -E 's#(server: https?://[^:]+):[0-9]+#\1:1#' "$MUSTER_E2E_DIR/admin.kubeconfig" > "$out/dead.kubeconfig"
  rc=0
  "$MUSTER_BIN" queues --kubeconfig "$out/dead.kubeconfig" > /dev/null 2> "$out/dead.err" || rc=$?
  [[ $rc == 2 ]] && grep -q "^muster queues: cannot reach the cluster at https://127.0.0.1:1: " "$out/dead.err" ||
    { e2e_err "queues with no cluster: exit $rc: $(cat "$out/dead.err")"; return 1; }

  # The queue tree, once muster has written team-a's status: its limit and its pending gang.
  queues_say_pending() {
    kubectl_muster queues -o json > "$out/queues.json" &&
      json_check "$out/queues.json" '(lambda a: a["pendingGangs"] == 1 and a["gpu"]["recentUsage"] is not None)([q for q in j["queues"] if q["name"] == "team-a"][0])'
  }
  wait_for 60 "kubectl muster queues: team-a has 1 pending gang, and a recent use" queues_say_pending
  json_check "$out/queues.json" '[(q["name"], q["depth"]) for q in j["queues"]] == [("org", 0), ("default", 1), ("team-a", 1)]'
  json_check "$out/queues.json" '(lambda a: a["quota"] == "2" and a["limit"] == "2" and a["allocated"] == "0")([q for q in j["queues"] if q["name"] == "team-a"][0]["gpu"])'
  json_check "$out/queues.json" 'j["total"]["gpu"]["quota"] == "8" and j["total"]["gpu"]["limit"] == "8" and j["total"]["pendingGangs"] == 1'
  kubectl_muster queues > "$out/queues.txt"
  cat "$out/queues.txt"
  expect_line "$out/queues.txt" '└─ team-a +100 +2 +2 +[-0-9.]+ +0 +[-0-9.<]+% +0 +1'
  expect_line "$out/queues.txt" 'TOTAL +8 +8 +[-0-9.]+ +0 +[-0-9.<]+% +0 +1'
  # Fair over time's part of the status, through the real API server's schema (issue 25): the
  # Queue keeps what muster wrote, and `kubectl get queues` prints its columns.
  kubectl_ get queue team-a -o json > "$out/queue-a.json"
  json_check "$out/queue-a.json" 'set(j["status"]["recentUsage"]) == {"cpu", "memory", "gpu"} and j["status"]["fairShareWithoutRecentUsage"]["gpu"] == j["status"]["fairShare"]["gpu"]'
  kubectl_ get queues -o wide > "$out/get-queues.txt"
  cat "$out/get-queues.txt"
  grep -q "GPU RECENT USE" "$out/get-queues.txt" && grep -q "GPU FAIR SHARE WITHOUT RECENT USE" "$out/get-queues.txt" ||
    { e2e_err "kubectl get queues -o wide: no fair-over-time columns"; return 1; }

  # Raise the limit: the gang binds whole, and both commands say so.
  kubectl_ patch queue team-a --type merge -p '{"spec":{"resources":{"gpu":{"limit":3}}}}'
  why_says_bound() {
    kubectl_muster why $NS/$RC -o json > "$out/why-bound.json" &&
      json_check "$out/why-bound.json" 'j["state"] == "Bound" and j["bound"] == 5 and j["reason"] is None'
  }
  wait_for 120 "kubectl muster why: $RC bound" why_says_bound
  json_check "$out/why-bound.json" 'j["composition"] == "head 1/1, halves 4/4" and all(p["node"] == "gpu-lab-worker" for p in j["pods"])'
  json_check "$out/why-bound.json" 'sorted(p["gpuGroup"] or "-" for p in j["pods"])[0] == "-" and len({p["gpuGroup"] for p in j["pods"] if p["gpuGroup"]}) == 2'
  kubectl_muster why $NS/$RC > "$out/why-bound.txt"
  cat "$out/why-bound.txt"
  expect_line "$out/why-bound.txt" "Gang: +Bound, 5 of 5 pods bound, minimum 5"
  if grep -q "^Why:" "$out/why-bound.txt"; then
    e2e_err "a bound gang still has a reason"; return 1
  fi
  queues_say_bound() {
    kubectl_muster queues -o json > "$out/queues-bound.json" &&
      json_check "$out/queues-bound.json" '(lambda q: q["gpu"]["allocated"] == "3" and q["gpu"]["limit"] == "3" and q["pendingGangs"] == 0)([q for q in j["queues"] if q["name"] == "team-a"][0])'
  }
  wait_for 60 "kubectl muster queues: team-a holds 3 GPUs" queues_say_bound
  json_check "$out/queues-bound.json" 'j["total"]["gpu"]["allocated"] == "3"'
  kubectl_muster queues
}
