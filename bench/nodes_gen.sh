#!/usr/bin/env bash
# nodes_gen.sh - a manifest of identical GPU Nodes for `muster serve --offline -f`.
#
#   bench/nodes_gen.sh [COUNT] [GPUS-PER-NODE] > nodes.yaml     (defaults 5000 and 8)
#
# Nodes are named node-00001 ... node-NNNNN, the names bench/wrk_extender.lua sends; each has
# 64 cores, 512Gi, 110 pods, GPUS nvidia.com/gpu and the GPU memory label (80 GiB devices).
set -euo pipefail

count=${1:-5000}
gpus=${2:-8}
[[ $count =~ ^[0-9]+$ && $gpus =~ ^[0-9]+$ ]] || { sed -n '2,7p' "$0" >&2; exit 2; }

awk -v n="$count" -v g="$gpus" 'BEGIN {
  for (i = 1; i <= n; i++) {
    printf "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%05d\n", i
    printf "  labels:\n    nvidia.com/gpu.present: \"true\"\n    nvidia.com/gpu.memory: \"81920\"\n"
    printf "status:\n  allocatable:\n    cpu: \"64\"\n    memory: 512Gi\n    pods: \"110\"\n"
    printf "    nvidia.com/gpu: \"%d\"\n", g
  }
}'
