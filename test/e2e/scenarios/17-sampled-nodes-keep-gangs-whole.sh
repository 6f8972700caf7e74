# kube-scheduler offers a pod only a sample of the feasible nodes: the shipped config leaves
# percentageOfNodesToScore at its adaptive default, which at 300 nodes is 48% (144 nodes), and the
# sample's start moves on every cycle. muster plans each gang over all 300 nodes and moves a member
# whose planned node was not offered within the nodes that were. Twelve RayCluster-shaped gangs of
# 20 (a CPU head, 19 one-GPU workers), created at once, must all bind, and (the invariants after
# the scenario) none in part. The KubeRay operator is stopped meanwhile: the pods are created
# directly beside their RayCluster objects; the next reset starts it again.
load() { python3 "$E2E_REPO/bench/e2e_load.py" "$@"; }

scenario() {
  if grep -q '^percentageOfNodesToScore' "$E2E_MANIFESTS/scheduler-config.yaml"; then
    e2e_err "the shipped scheduler config sets percentageOfNodesToScore: no sample to test"
    return 1
  fi
  load nodes 300 --prefix sample-node-
  e2e_stop kuberay-operator
  load run --ns sampled --pods 240 --gang 20 --scheduler muster --timeout 600 |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("%d/%d pods bound in %.1f s" % (r["bound"], r["pods"], r["seconds"]))'
  [[ $(load count --ns sampled) == "240 240" ]] || { e2e_err "sampled: $(load count --ns sampled)"; return 1; }
  # For the log: binpack packs 228 one-GPU workers on 29 nodes when every node is offered;
  # members moved within their sample land on more.
  e2e_log "the gangs' pods are on $(kubectl_ -n sampled get pods -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -c .) nodes"
}
