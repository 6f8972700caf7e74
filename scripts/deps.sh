#!/usr/bin/env bash
# Install what muster builds and tests with, from Debian's packages; idempotent.
# Go (for the Kubernetes components the end-to-end tests run) comes with the machine.
#   scripts/deps.sh          what building and the unit tests need
#   scripts/deps.sh --test   also what only the test command needs: Chromium, which
#                            test/test_html.sh renders `muster simulate -o html` in
set -euo pipefail
packages=(cmake ninja-build gcc pkg-config libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev
          libssl-dev libprotobuf-c-dev protobuf-c-compiler
          libyaml-dev check openssl curl python3 python3-yaml wrk clang)
case ${1:-} in
  --test) packages+=(chromium) ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "[deps] installing: ${missing[*]}"
    if [[ $(id -u) != 0 ]]; then
        echo "[deps] not root: install them with: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v go >/dev/null 2>&1 || [[ -x /usr/local/go/bin/go ]] || {
    echo "[deps] Go is needed to build kube-apiserver, kube-scheduler, etcd and KubeRay for the" \
         "end-to-end tests" >&2
    exit 1
}
