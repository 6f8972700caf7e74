# The throughput harness of bench/e2e_throughput.sh, small, so it cannot rot: 50 fake GPU nodes
# (8 GPUs, 32 CPUs, 256Gi), then 200 pods created at once through (A) a stock kube-scheduler with
# its defaults, (B) kube-scheduler + muster as shipped, single one-GPU pods, (C) ten
# RayCluster-shaped gangs of 20 (a CPU head, 19 one-GPU workers) beside their RayCluster objects.
# (D) kube-scheduler's own gangs, no muster: a stock kube-scheduler with the GenericWorkload gate
# and ten v1beta1 Workloads of one PodGroup (minCount 20) with C's shapes, the pods naming it.
# Every pod must bind; the rates go to the log and are never checked. The load's watch reads the
# pods as protobuf (e2e_load.py decodes the frames), so this also keeps that decoder honest
# against the real API server. The KubeRay operator is stopped meanwhile (the gangs' pods are
# created directly, as the bench does); the next scenario's reset starts it again. C's pods
# stay, so the invariants check that every gang is bound whole.
load() { python3 "$E2E_REPO/bench/e2e_load.py" "$@"; }
rate() { python3 -c 'import json,sys; r=json.load(sys.stdin); print("%s: %d/%d pods bound, %.1f pods/s" % (sys.argv[1], r["bound"], r["pods"], r["rate"]))' "$1"; }

scenario() {
  load nodes 50 --prefix tput-node-
  e2e_stop kuberay-operator
  e2e_scheduler "" kube-scheduler-stock >/dev/null # its own default-scheduler profile
  load run --ns tput-a --pods 200 --scheduler default-scheduler --timeout 300 | rate "A stock"
  e2e_stop kube-scheduler-stock
  load delete --ns tput-a
  load run --ns tput-b --pods 200 --scheduler muster --timeout 300 | rate "B muster, single pods"
  load delete --ns tput-b
  load run --ns tput-c --pods 200 --gang 20 --scheduler muster --timeout 300 |
    rate "C muster, 10 gangs of 20"
  [[ $(load count --ns tput-c) == "200 200" ]] || { e2e_err "tput-c: $(load count --ns tput-c)"; return 1; }
  E2E_SCHEDULER_FLAGS="--feature-gates=GenericWorkload=true" \
    e2e_scheduler "" kube-scheduler-gang >/dev/null # default-scheduler, its own gang cycle
  load run --ns tput-d --pods 200 --gang 20 --workload --head --scheduler default-scheduler \
    --timeout 300 | rate "D kube-scheduler's own gangs (GenericWorkload), 10 Workloads of 20"
  e2e_stop kube-scheduler-gang
  [[ $(load count --ns tput-d) == "200 200" ]] || { e2e_err "tput-d: $(load count --ns tput-d)"; return 1; }
  load delete --ns tput-d
}
