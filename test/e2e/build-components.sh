#!/usr/bin/env bash
# Build the local control-plane components used by the muster e2e tests from the
# Go module proxy (no release-binary downloads).  Results are cached, keyed by version:
#   ${MUSTER_CACHE:-$HOME/.cache/muster}/bin/<component>-<version>
#   ${MUSTER_CACHE:-$HOME/.cache/muster}/crds/kuberay-<version>/*.yaml
# A second run only prints "cached" lines.  Wrapper Go modules are generated under
# $MUSTER_CACHE/src (never in the repo).
#
#   build-components.sh [etcd] [k8s] [kuberay] [kwok] [helm]     (default: all of them)
#
# Kubernetes is built at every version of K8S_VERSIONS (default "v1.37.2 v1.36.3": the suite
# runs on the first, a smaller leg on the second, test/e2e/run.sh): kube-apiserver,
# kube-scheduler, kube-controller-manager (the Job controller and garbage collector a RayJob
# needs) and kubectl. A cold build takes about 10-30 min per version on 2 cores (docs/e2e.md).
#
# The KubeRay operator v1.7.0: the proxy serves its .info and .mod but refuses its zip (403,
# "This module version is not available", December 2026). When the zip is refused, the module
# is made from a git checkout of github.com/ray-project/kuberay (KUBERAY_GIT=<git dir>, else a
# clone from GitHub) at the commit the proxy's .info names, zipped as the proxy would
# (golang.org/x/mod/zip) and served to `go` from a file:// proxy in $MUSTER_CACHE/modproxy;
# `go` checks that zip against the checksum database (sum.golang.org), so what is built is
# byte for byte the published module or nothing.
#
# Env knobs: MUSTER_CACHE, GO (go binary), ETCD_VERSION, K8S_VERSIONS (or K8S_VERSION for one),
#            KUBERAY_VERSION, KUBERAY_GIT, KWOK_VERSION (MUSTER_SKIP_KWOK=1 skips kwok),
#            HELM_VERSION, MUSTER_SKIP_KUBECTL=1.
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
# K8S_VERSION alone (as before) builds that one version
K8S_VERSIONS=${K8S_VERSIONS:-${K8S_VERSION:-v1.37.2 v1.36.3}}
KUBERAY_VERSION=${KUBERAY_VERSION:-v1.7.0}
KWOK_VERSION=${KWOK_VERSION:-v0.7.0}
HELM_VERSION=${HELM_VERSION:-v3.22.0}

CACHE=${MUSTER_CACHE:-$HOME/.cache/muster}
BIN=$CACHE/bin
SRC=$CACHE/src
CRDS=$CACHE/crds

log()  { printf '[build-components] %s\n' "$*" >&2; }
die()  { printf '[build-components] ERROR: %s\n' "$*" >&2; exit 1; }

# ---- Go toolchain -----------------------------------------------------------
if [[ -z "${GO:-}" ]]; then
  if command -v go >/dev/null 2>&1; then GO=$(command -v go)
  elif [[ -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go
  else die "no Go toolchain found (install Go >= 1.26 or set GO=/path/to/go)"; fi
fi
export GOTOOLCHAIN=local          # never try to download another toolchain
export CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false"
LDFLAGS_BASE="-s -w"
log "using $("$GO" version) ; cache $CACHE"

mkdir -p "$BIN" "$SRC" "$CRDS"

# new_wrapper <dir> <module-name>: fresh wrapper module
new_wrapper() {
  local dir=$1 name=$2
  rm -rf "$dir"; mkdir -p "$dir"
  printf 'module %s\n\ngo 1.26\n' "$name" > "$dir/go.mod"
}

# install_bin <built-file> <component> <version>
install_bin() {
  install -m 0755 "$1" "$BIN/$2-$3.tmp" && mv -f "$BIN/$2-$3.tmp" "$BIN/$2-$3"
  log "built  $2 $3 -> $BIN/$2-$3 ($(du -h "$BIN/$2-$3" | cut -f1))"
}

cached() { # cached <component> <version>
  if [[ -x "$BIN/$1-$2" ]]; then log "cached $1 $2 ($BIN/$1-$2)"; return 0; fi
  return 1
}

# ---- etcd -------------------------------------------------------------------
build_etcd() {
  cached etcd "$ETCD_VERSION" && return 0
  log "building etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3) ..."
  local w=$SRC/etcd-$ETCD_VERSION
  new_wrapper "$w" muster-e2e/etcd
  ( cd "$w"
    # the module root of go.etcd.io/etcd/server/v3 is package main (calls etcdmain.Main)
    "$GO" get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    "$GO" build -ldflags="$LDFLAGS_BASE" -o "$w/etcd" go.etcd.io/etcd/server/v3
  ) || die "etcd build failed (see output above)"
  install_bin "$w/etcd" etcd "$ETCD_VERSION"
}

# ---- kubernetes (kube-apiserver, kube-scheduler, kube-controller-manager, kubectl) ----
build_k8s() {
  local K8S_VERSION
  for K8S_VERSION in $K8S_VERSIONS; do build_k8s_one || return 1; done
}
build_k8s_one() {
  # staging modules are tagged v0.<minor>.<patch> for kubernetes v1.<minor>.<patch>
  local K8S_STAGING_VERSION=v0.${K8S_VERSION#v1.}
  local comps=(kube-apiserver kube-scheduler kube-controller-manager)
  [[ "${MUSTER_SKIP_KUBECTL:-0}" == 1 ]] || comps+=(kubectl)
  local todo=() c
  for c in "${comps[@]}"; do cached "$c" "$K8S_VERSION" || todo+=("$c"); done
  ((${#todo[@]})) || return 0
  log "building ${todo[*]} $K8S_VERSION (k8s.io/kubernetes, staging $K8S_STAGING_VERSION) ... (slow: ~10-30 min on 2 cores)"
  local w=$SRC/kubernetes-$K8S_VERSION
  new_wrapper "$w" muster-e2e/kubernetes
  ( cd "$w"
    "$GO" mod download "k8s.io/kubernetes@$K8S_VERSION"
    local kmod
    kmod=$("$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
    [[ -f "$kmod" ]] || { echo "cannot locate go.mod of k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
    # Every staging module k8s.io/X => ./staging/src/k8s.io/X in kubernetes' go.mod
    # becomes: replace k8s.io/X => k8s.io/X v0.<minor>.<patch>
    local staging m n=0
    staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "$kmod" | sort -u)
    [[ -n "$staging" ]] || { echo "no staging replaces found in $kmod" >&2; exit 1; }
    { echo; echo "require k8s.io/kubernetes $K8S_VERSION"; echo; echo "replace ("; } >> go.mod
    for m in $staging; do
      # a few sample-* modules are not served by every proxy; they are never imported by
      # the binaries we build, so skip the ones the proxy does not have.
      # (checked from outside the wrapper: inside it the v0.0.0 pins would break `go list -m`)
      if (cd / && "$GO" list -m "$m@$K8S_STAGING_VERSION" >/dev/null 2>&1); then
        echo "	$m => $m $K8S_STAGING_VERSION" >> go.mod; n=$((n+1))
      else
        echo "[build-components] note: $m@$K8S_STAGING_VERSION not available from the proxy; no replace (unused by our binaries)" >&2
      fi
    done
    echo ")" >> go.mod
    echo "[build-components] wrapper go.mod: $n staging replaces" >&2
    local pkgs=()
    for c in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    "$GO" get "${pkgs[@]/%/@$K8S_VERSION}"
    local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    local ld="$LDFLAGS_BASE"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
      ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
    done
    mkdir -p out
    "$GO" build -ldflags="$ld" -o out/ "${pkgs[@]}"
  ) || die "kubernetes build failed (see output above)"
  for c in "${todo[@]}"; do install_bin "$w/out/$c" "$c" "$K8S_VERSION"; done
}

# ---- KubeRay operator + CRDs -------------------------------------------------
KUBERAY_MODULE=github.com/ray-project/kuberay/ray-operator
MODPROXY=$CACHE/modproxy

# modzip <dir> <module> <version> <out.zip>: a module zip as the proxy makes it
# (golang.org/x/mod/zip.CreateFromDir: the same file rules as cmd/go's)
modzip() {
  local t=$SRC/modzip
  if [[ ! -x $t/modzip ]]; then
    new_wrapper "$t" muster-e2e/modzip
    cat > "$t/main.go" <<'GO'
// modzip DIR MODULE VERSION OUT.zip: the module zip the Go module proxy would serve
package main

import (
	"fmt"
	"os"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	f, err := os.Create(os.Args[4])
	if err == nil {
		err = zip.CreateFromDir(f, module.Version{Path: os.Args[2], Version: os.Args[3]}, os.Args[1])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}
GO
    ( cd "$t" && "$GO" get golang.org/x/mod@v0.43.0 && "$GO" build -o modzip . ) || return 1
  fi
  "$t/modzip" "$@"
}

# kuberay_from_git: the module zip of $KUBERAY_MODULE@$KUBERAY_VERSION made from a git checkout
# into the file proxy $MODPROXY. The commit is the one the proxy's .info names; the zip is
# checked against the checksum database by `go` when it is downloaded from there.
kuberay_from_git() {
  local info hash git tree d=$MODPROXY/$KUBERAY_MODULE/@v
  info=$(cd "$SRC" && GOFLAGS=-mod=mod "$GO" list -m -json "$KUBERAY_MODULE@$KUBERAY_VERSION") || return 1
  hash=$(sed -n 's/^[[:space:]]*"Hash": "\([0-9a-f]\{40\}\)",\{0,1\}$/\1/p' <<<"$info")
  [[ -n $hash ]] || { log "the proxy names no commit for $KUBERAY_MODULE@$KUBERAY_VERSION"; return 1; }
  git=${KUBERAY_GIT:-$SRC/kuberay.git}
  if ! git --git-dir "$git" cat-file -e "$hash^{commit}" 2>/dev/null; then
    [[ -z ${KUBERAY_GIT:-} ]] || { log "KUBERAY_GIT=$KUBERAY_GIT has no commit $hash"; return 1; }
    log "cloning github.com/ray-project/kuberay (tag ray-operator/$KUBERAY_VERSION) into $git"
    rm -rf "$git"
    git clone --bare --filter=blob:none --single-branch --branch "ray-operator/$KUBERAY_VERSION" \
      https://github.com/ray-project/kuberay "$git" || return 1
  fi
  tree=$SRC/kuberay-tree-$KUBERAY_VERSION
  rm -rf "$tree"; mkdir -p "$tree"
  git --git-dir "$git" archive "$hash" ray-operator | tar -x -C "$tree" || return 1
  # cmd/go puts the repository's LICENSE into a module of a subdirectory that has none
  if [[ ! -e $tree/ray-operator/LICENSE ]] && git --git-dir "$git" cat-file -e "$hash:LICENSE" 2>/dev/null; then
    git --git-dir "$git" show "$hash:LICENSE" > "$tree/ray-operator/LICENSE" || return 1
  fi
  mkdir -p "$d"
  modzip "$tree/ray-operator" "$KUBERAY_MODULE" "$KUBERAY_VERSION" "$d/$KUBERAY_VERSION.zip.tmp" || return 1
  cp "$tree/ray-operator/go.mod" "$d/$KUBERAY_VERSION.mod"
  printf '{"Version":"%s","Time":"%s"}\n' "$KUBERAY_VERSION" \
    "$(sed -n 's/^[[:space:]]*"Time": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")" > "$d/$KUBERAY_VERSION.info"
  mv -f "$d/$KUBERAY_VERSION.zip.tmp" "$d/$KUBERAY_VERSION.zip"
  grep -qx "$KUBERAY_VERSION" "$d/list" 2>/dev/null || echo "$KUBERAY_VERSION" >> "$d/list"
  rm -rf "$tree"
  log "made $KUBERAY_MODULE@$KUBERAY_VERSION from git commit $hash into $MODPROXY"
}

# kuberay_dir: the module's directory in the module cache, downloading it first (from the
# proxy, else from git through the file proxy; `go` verifies the zip against sum.golang.org)
kuberay_dir() {
  local out
  if out=$(cd "$SRC" && "$GO" mod download -json "$KUBERAY_MODULE@$KUBERAY_VERSION" 2>&1) &&
     ! grep -q '"Error"' <<<"$out"; then
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out"; return 0
  fi
  log "the proxy refuses $KUBERAY_MODULE@$KUBERAY_VERSION: $(sed -n 's/.*"Error": "\(.*\)".*/\1/p' <<<"$out" | head -c 300)"
  if [[ ! -f $MODPROXY/$KUBERAY_MODULE/@v/$KUBERAY_VERSION.zip ]]; then
    kuberay_from_git >&2 || { log "could not make the module from git (set KUBERAY_GIT to a clone of github.com/ray-project/kuberay)"; return 1; }
  fi
  out=$(cd "$SRC" && GOPROXY="file://$MODPROXY,$("$GO" env GOPROXY)" \
        "$GO" mod download -json "$KUBERAY_MODULE@$KUBERAY_VERSION" 2>&1)
  if grep -q '"Error"' <<<"$out"; then
    log "$(sed -n 's/.*"Error": "\(.*\)".*/\1/p' <<<"$out")"; return 1
  fi
  log "$KUBERAY_MODULE@$KUBERAY_VERSION verified against the checksum database ($(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p' <<<"$out"))"
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out"
}

build_kuberay() {
  local crd_dir=$CRDS/kuberay-$KUBERAY_VERSION kdir
  kdir=$(kuberay_dir) && [[ -d $kdir ]] || die "$KUBERAY_MODULE@$KUBERAY_VERSION not available"
  if ! cached kuberay-operator "$KUBERAY_VERSION"; then
    log "building kuberay-operator $KUBERAY_VERSION ($KUBERAY_MODULE) ..."
    local w=$SRC/kuberay-$KUBERAY_VERSION
    new_wrapper "$w" muster-e2e/kuberay
    ( cd "$w"
      export GOPROXY="file://$MODPROXY,$("$GO" env GOPROXY)"
      "$GO" get "$KUBERAY_MODULE@$KUBERAY_VERSION"
      "$GO" build -ldflags="$LDFLAGS_BASE" -o "$w/kuberay-operator" "$KUBERAY_MODULE"
    ) || die "kuberay-operator build failed (see output above)"
    install_bin "$w/kuberay-operator" kuberay-operator "$KUBERAY_VERSION"
  fi
  if [[ -f "$crd_dir/ray.io_rayclusters.yaml" ]]; then
    log "cached kuberay CRDs $KUBERAY_VERSION ($crd_dir)"
  else
    local dir=$kdir
    [[ -d "$dir/config/crd/bases" ]] || die "kuberay CRDs not found in module dir '$dir'"
    rm -rf "$crd_dir.tmp"; mkdir -p "$crd_dir.tmp"
    cp "$dir"/config/crd/bases/*.yaml "$crd_dir.tmp/"; chmod 0644 "$crd_dir.tmp"/*.yaml
    rm -rf "$crd_dir"; mv "$crd_dir.tmp" "$crd_dir"
    log "copied kuberay CRDs $KUBERAY_VERSION -> $crd_dir ($(ls "$crd_dir" | tr '\n' ' '))"
  fi
  # PodGroup/ElasticQuota CRDs (scheduling.x-k8s.io) for --batch-scheduler=scheduler-plugins:
  # shipped in sigs.k8s.io/scheduler-plugins (config/crd/bases), at the version kuberay requires.
  local spver spdir
  spver=$(sed -n 's#^[[:space:]]*sigs\.k8s\.io/scheduler-plugins[[:space:]]\{1,\}\(v[^[:space:]]*\).*#\1#p' "$kdir/go.mod" | head -1)
  if [[ -n "$spver" ]]; then
    crd_dir=$CRDS/scheduler-plugins-$spver
    if [[ -f "$crd_dir/scheduling.x-k8s.io_podgroups.yaml" ]]; then
      log "cached scheduler-plugins CRDs $spver ($crd_dir)"
    else
      spdir=$(cd "$SRC" && "$GO" mod download -json "sigs.k8s.io/scheduler-plugins@$spver" \
              | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
      if [[ -f "$spdir/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" ]]; then
        rm -rf "$crd_dir"; mkdir -p "$crd_dir"
        cp "$spdir"/config/crd/bases/scheduling.x-k8s.io_*.yaml "$crd_dir/"; chmod 0644 "$crd_dir"/*.yaml
        log "copied scheduler-plugins CRDs $spver -> $crd_dir"
      else
        log "WARNING: scheduler-plugins $spver CRDs not found (PodGroup CRD unavailable)"
      fi
    fi
  fi
}

# ---- kwok (optional) ---------------------------------------------------------
build_kwok() {
  [[ "${MUSTER_SKIP_KWOK:-0}" == 1 ]] && { log "skip   kwok (MUSTER_SKIP_KWOK=1)"; return 0; }
  cached kwok "$KWOK_VERSION" && return 0
  log "building kwok $KWOK_VERSION (optional, sigs.k8s.io/kwok/cmd/kwok) ..."
  local w=$SRC/kwok-$KWOK_VERSION
  new_wrapper "$w" muster-e2e/kwok
  if ( cd "$w"
       "$GO" get "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" &&
       "$GO" build -ldflags="$LDFLAGS_BASE" -o "$w/kwok" sigs.k8s.io/kwok/cmd/kwok ); then
    install_bin "$w/kwok" kwok "$KWOK_VERSION"
  else
    log "WARNING: optional kwok $KWOK_VERSION did not build; continuing without it"
  fi
}

# ---- helm (the chart's lint, template and install tests) ---------------------
# helm.sh/helm/v3 has no replace directives, so a plain wrapper module builds it. The
# ldflags are those of helm's Makefile: its version, and the Kubernetes version that
# `helm template`/`helm lint` assume without a cluster (1.<client-go minor>; left unset
# helm would assume 1.20 and refuse a chart that needs 1.30).
build_helm() {
  cached helm "$HELM_VERSION" && return 0
  log "building helm $HELM_VERSION (helm.sh/helm/v3/cmd/helm) ..."
  local w=$SRC/helm-$HELM_VERSION
  new_wrapper "$w" muster-e2e/helm
  ( cd "$w"
    "$GO" get "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    local cg minor ld=$LDFLAGS_BASE p
    cg=$("$GO" list -m -f '{{.Version}}' k8s.io/client-go)   # v0.<minor>.<patch>
    minor=${cg#v0.}; minor=${minor%%.*}
    [[ $minor =~ ^[0-9]+$ ]] || { echo "cannot read k8s.io/client-go's version ($cg)" >&2; exit 1; }
    ld+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ld+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
    done
    "$GO" build -ldflags="$ld" -o "$w/helm" helm.sh/helm/v3/cmd/helm
  ) || die "helm build failed (see output above)"
  install_bin "$w/helm" helm "$HELM_VERSION"
}

want=${*:-etcd k8s kuberay kwok helm}
start=$SECONDS
for t in $want; do
  case $t in
    etcd) build_etcd ;;
    k8s|kubernetes) build_k8s ;;
    kuberay) build_kuberay ;;
    kwok) build_kwok ;;
    helm) build_helm ;;
    *) die "unknown component '$t' (known: etcd k8s kuberay kwok helm)" ;;
  esac
done
log "done in $((SECONDS-start))s; binaries in $BIN"
