#!/usr/bin/env bash
# muster's whole test suite, on a fresh machine as on a developer's:
#   1. unit and integration tests (Check, CTest) on the normal build
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. every libFuzzer target for a bounded time (FUZZ_SECONDS, default 15) and its kept reproducers
#   4. end to end: kube-apiserver, kube-scheduler, kube-controller-manager, etcd, kwok, the KubeRay
#      operator and helm built from the Go module proxy (cached in ~/.cache/muster), muster
#      deployed from manifests/ and from the Helm chart; on Kubernetes v1.37.2, then a smaller
#      leg on v1.36.3
# The last line counts every test: "N passed, M failed".
#   scripts/test.sh [--no-e2e] [--no-fuzz]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
E2E=1 FUZZ=1
for a in "$@"; do
  case $a in
    --no-e2e) E2E=0 ;;
    --no-fuzz) FUZZ=0 ;;
    *) echo "usage: scripts/test.sh [--no-e2e] [--no-fuzz]" >&2; exit 2 ;;
  esac
done

passed=0 failed=0 failures=()
stage() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# count <name> <log> <status>: add the stage's "N passed, M failed"-style totals; a stage
# that exited non-zero counts as one failure at least (e2e whose control plane never came up
# prints "0 passed, 0 failed")
count() {
  local name=$1 log=$2 status=$3 p f
  read -r p f < <(python3 - "$log" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
m = re.findall(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
if m:
    _, f, n = map(int, m[-1]); print(n - f, f); sys.exit()
m = re.findall(r"(\d+) passed, (\d+) failed", text)
print(*(map(int, m[-1])) if m else (0, 1))
PY
)
  ((status == 0 || f > 0)) || f=1
  passed=$((passed + p)) failed=$((failed + f))
  ((f == 0)) || failures+=("$name")
}

stage "dependencies"
scripts/deps.sh --test || exit 1

stage "build and unit tests"
log=$(mktemp)
{ scripts/build.sh build && ctest --test-dir build --output-on-failure; } 2>&1 | tee "$log"
count unit "$log" "${PIPESTATUS[0]}"

stage "sanitizers: ASan + UBSan"
{ scripts/build.sh build-asan -DMUSTER_SANITIZE=ON &&
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-asan --output-on-failure; } 2>&1 | tee "$log"
count asan "$log" "${PIPESTATUS[0]}"

if ((FUZZ)); then
  stage "fuzzing (${FUZZ_SECONDS:-15} s per target)"
  [[ -n ${CI:-} ]] && export FUZZ_SEED=${FUZZ_SEED:-1}
  scripts/fuzz.sh "${FUZZ_SECONDS:-15}" 2>&1 | tee "$log"
  count fuzz "$log" "${PIPESTATUS[0]}"
fi

if ((E2E)); then
  stage "end to end against real components: Kubernetes v1.37.2"
  { bash test/e2e/build-components.sh && bash test/e2e/run.sh build/extender/muster; } 2>&1 | tee "$log"
  count e2e "$log" "${PIPESTATUS[0]}"
  # The smaller leg: the scenarios whose "# legs:" line names 1.36 (test/e2e/run.sh).
  stage "end to end against real components: Kubernetes v1.36.3"
  K8S_VERSION=v1.36.3 bash test/e2e/run.sh build/extender/muster 2>&1 | tee "$log"
  count e2e-1.36 "$log" "${PIPESTATUS[0]}"
fi
rm -f "$log"

stage "summary"
((failed == 0)) || echo "failed stages: ${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
