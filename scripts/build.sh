#!/usr/bin/env bash
# Build muster. The Dockerfile runs exactly this, so its steps are the ones CI proves.
#   scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$dir"
# kubectl finds plugins by name on PATH: a kubectl-muster beside the binary makes
# `PATH=$dir/extender:$PATH kubectl muster why lab/demo` work from the build tree.
ln -sfn muster "$dir/extender/kubectl-muster"
