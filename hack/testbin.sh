#!/usr/bin/env bash
# Builds the test control plane from the Go module proxy and caches it outside the repository,
# keyed by version, so only the first build on a machine pays. Prints the folder holding the
# binaries (usable as KUBEBUILDER_ASSETS).
#
#   hack/testbin.sh        kube-apiserver and etcd
#   hack/testbin.sh kubectl  and kubectl, for make bench (under a minute more once kube-apiserver is built)
#   hack/testbin.sh floor  kube-apiserver of KUBE_FLOOR_VERSION (the oldest minor docs/deploying.md
#                          supports) and etcd: the control plane of make test-compat
#   hack/testbin.sh controllers  and kube-controller-manager, kube-scheduler, kubectl, kwok, OLM v0's
#                          olm and catalog operators, and opm: what test/controllers runs
#   hack/testbin.sh controllers-newest  the same with OLM_NEWEST_VERSION, the newest OLM v0 the
#                          module proxy serves: what make test-controllers-newest-olm runs
#   hack/testbin.sh all    controllers, and prometheus-operator with its CRDs, Argo CD's
#                          application-controller with its CRDs, and Kyverno's admission controller
#                          with its CRDs: what test/operators runs too
#
# What each costs to build from empty caches, and the suites they serve: docs/testing.md#timings.
# What several of them share is built once: etcd (one for every Kubernetes version), kwok and opm
# (one for both OLM versions: opm only serves the demo catalog, over OLM's stable registry API).
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod points every k8s.io/*
# staging module at ./staging/... and requires them at v0.0.0. A throwaway module replaces each of
# those with the published module of the matching version, which is what the release tags hold.
# OLM, operator-registry, prometheus-operator and Argo CD are built as their own main modules, from
# their module directories.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
# The oldest Kubernetes minor docs/deploying.md supports, at its newest patch the proxy serves
# (v1.31.15 and later are refused).
KUBE_FLOOR_VERSION="${KUBE_FLOOR_VERSION:-v1.31.14}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
# v0.28.0 force-deletes evicted catalog pods (#3201) only when its health check fails, and the
# check counts a Terminating pod as healthy (fixed later by #3366): its catalog pods stay stuck on a
# lost node (F5), as test/controllers shows.
OLM_VERSION="${OLM_VERSION:-v0.28.0}"
# The newest OLM v0 the module proxy serves (v0.46.1 and v0.47.0 are refused). Since v0.29 it
# force-deletes its own registry pods on dead nodes (#3366).
OLM_NEWEST_VERSION="${OLM_NEWEST_VERSION:-v0.46.0}"
REGISTRY_VERSION="${REGISTRY_VERSION:-v1.41.0}" # what OLM v0.28.0 requires; it serves both OLMs
# kube-prometheus-stack's operator; the first with the status-cleanup finalizer (behind a gate).
PROMOP_VERSION="${PROMOP_VERSION:-v0.85.0}"
# The newest Argo CD that builds from the module proxy: v3.2.12 does not compile, and v3.3 and later
# need a gitops-engine module the proxy does not have.
ARGOCD_VERSION="${ARGOCD_VERSION:-v3.2.11}"
# Kyverno's admission controller: it registers its own webhook configurations at run time, and
# `helm uninstall` leaves them behind (kyverno#2623, #3039).
KYVERNO_VERSION="${KYVERNO_VERSION:-v1.19.1}"

mode="${1:-}"
case "$mode" in
"" | kubectl | controllers | all) ;;
floor) KUBE_VERSION="$KUBE_FLOOR_VERSION" ;;
controllers-newest) OLM_VERSION="$OLM_NEWEST_VERSION" ;;
*) echo "hack/testbin.sh: unknown argument $mode: give none, kubectl, floor, controllers, controllers-newest or all" >&2; exit 2 ;;
esac

STAGING_VERSION="v0${KUBE_VERSION#v1}"
root="${XDG_CACHE_HOME:-$HOME/.cache}/operator-sweeper/testbin"
kube="$root/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
etcd="$root/etcd-${ETCD_VERSION}"
kwok="$root/kwok-${KWOK_VERSION}"
olm="$root/olm-${OLM_VERSION}"
opm="$root/opm-${REGISTRY_VERSION}"
promop="$root/prometheus-operator-${PROMOP_VERSION}"
argocd="$root/argocd-${ARGOCD_VERSION}"
kyverno="$root/kyverno-${KYVERNO_VERSION}"

log() { echo "hack/testbin.sh: $*" >&2; }
# quiet runs a command and shows its output only when it fails. Each component's build runs in a
# subshell of its own, logging to $work/$component.log.
quiet() {
  if ! "$@" >>"$work/$component.log" 2>&1; then
    cat "$work/$component.log" >&2
    log "failed: $*"
    exit 1
  fi
}
# build_file builds one main package of the current module into the cache file $1, atomically,
# with the -ldflags $2 (the -X stamps of a version) beside -s -w: the test binaries need no
# debugging symbols, and a link without them takes about a quarter less CPU.
build_file() {
  local out="$1" stamp="$2"; shift 2
  go build -trimpath -ldflags "-s -w $stamp" -o "$out.tmp" "$@" || return 1
  mv "$out.tmp" "$out"
}
# build_into builds main packages of the current module into the cache folder $1, atomically, as
# build_file does. One go build for several main packages compiles what they share once and links
# them in parallel.
build_into() {
  local dir="$1" stamp="$2" tmp f; shift 2
  tmp="$(mktemp -d "$dir/build.XXXXXX")"
  go build -trimpath -ldflags "-s -w $stamp" -o "$tmp/" "$@" || { rm -rf "$tmp"; return 1; }
  for f in "$tmp"/*; do mv "$f" "$dir/"; done
  rmdir "$tmp"
}
# module_dir copies a module's directory out of the module cache, writable, without vendor/.
module_dir() {
  local dir
  dir="$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir" ]] || { log "could not download $1"; exit 1; }
  cp -r "$dir/." "$2" && chmod -R u+w "$2" && rm -rf "$2/vendor"
}

controllers=false all=false
[[ $mode == controllers || $mode == controllers-newest || $mode == all ]] && controllers=true
[[ $mode == all ]] && all=true
kube_binaries=(kube-apiserver)
# kubectl runs the kubectl plugin in the tests; make bench times the kubectl loop admins run. It is
# built like the control plane, from k8s.io/kubernetes/cmd/kubectl (k8s.io/kubectl is a library
# without a main).
$controllers && kube_binaries+=(kube-controller-manager kube-scheduler kubectl)
[[ $mode == kubectl ]] && kube_binaries+=(kubectl)
missing() {
  for f in "$@"; do [[ -x "$f" || -f "$f" ]] || return 0; done
  return 1
}

# Each component is fetched, then built. fetch_X downloads what building X needs (its module, and
# every module its packages import: go list -deps) into the module cache and prepares its main
# module in $work/X; build_X compiles it into the cache. They run in the folder of $work/X.

fetch_etcd() {
  quiet go mod init testbin/etcd
  quiet go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  quiet go list -deps go.etcd.io/etcd/server/v3
}
build_etcd() { mkdir -p "$etcd" && quiet build_file "$etcd/etcd" "" go.etcd.io/etcd/server/v3; }

fetch_kube() {
  quiet go mod init testbin/kube
  local gomod b
  gomod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [[ -f "$gomod" ]] || { log "could not download k8s.io/kubernetes@${KUBE_VERSION}"; exit 1; }
  # Every staging module the components can need; the sample-* modules are not published.
  awk '/=> \.\/staging\/src\//{print $1}' "$gomod" | grep -v '^k8s.io/sample-' | while read -r mod; do
    go mod edit -replace "${mod}=${mod}@${STAGING_VERSION}"
  done
  go mod edit -require "k8s.io/kubernetes@${KUBE_VERSION}"
  for b in "${kube_want[@]}"; do go mod edit -tool "k8s.io/kubernetes/cmd/$b"; done
  quiet go mod tidy
  quiet go list -deps "${kube_want[@]/#/k8s.io/kubernetes/cmd/}"
}
build_kube() {
  local minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  quiet build_into "$kube" "-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
    "${kube_want[@]/#/k8s.io/kubernetes/cmd/}"
}

fetch_kwok() {
  quiet go mod init testbin/kwok
  quiet go get "sigs.k8s.io/kwok@${KWOK_VERSION}"
  quiet go list -deps sigs.k8s.io/kwok/cmd/kwok
}
build_kwok() {
  mkdir -p "$kwok"
  quiet build_into "$kwok" "" sigs.k8s.io/kwok/cmd/kwok
  # The Stages that make kwok act as kubelets: nodes become Ready and renew their Leases, pods
  # run, and pods being deleted are confirmed gone.
  local stages f
  stages="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    cat "$stages/$f.yaml"; echo "---"
  done >"$kwok/stages.yaml.tmp"
  mv "$kwok/stages.yaml.tmp" "$kwok/stages.yaml"
}

fetch_olm() {
  module_dir "github.com/operator-framework/operator-lifecycle-manager@${OLM_VERSION}" .
  quiet go list -deps ./cmd/olm ./cmd/catalog
}
build_olm() { mkdir -p "$olm" && quiet build_into "$olm" "" ./cmd/olm ./cmd/catalog; }

fetch_opm() {
  module_dir "github.com/operator-framework/operator-registry@${REGISTRY_VERSION}" .
  quiet go list -deps ./cmd/opm
}
build_opm() { mkdir -p "$opm" && quiet build_into "$opm" "" ./cmd/opm; }

fetch_promop() {
  module_dir "github.com/prometheus-operator/prometheus-operator@${PROMOP_VERSION}" .
  # The module zip leaves out the nested modules its go.mod replaces with ./pkg/...: use the
  # published ones, of the same version.
  local m
  for m in pkg/apis/monitoring pkg/client; do
    go mod edit -dropreplace="github.com/prometheus-operator/prometheus-operator/$m" \
      -require="github.com/prometheus-operator/prometheus-operator/$m@${PROMOP_VERSION}"
  done
  quiet go list -deps ./cmd/operator
}
build_promop() {
  mkdir -p "$promop"
  # The version also makes the default config-reloader image's tag.
  quiet build_file "$promop/prometheus-operator" "-X github.com/prometheus/common/version.Version=${PROMOP_VERSION#v}" ./cmd/operator
  rm -rf "$promop/prometheus-operator-crds.tmp" && mkdir -p "$promop/prometheus-operator-crds.tmp"
  cp example/prometheus-operator-crd/*.yaml "$promop/prometheus-operator-crds.tmp/"
  rm -rf "$promop/prometheus-operator-crds" && mv "$promop/prometheus-operator-crds.tmp" "$promop/prometheus-operator-crds"
}

fetch_argocd() {
  module_dir "github.com/argoproj/argo-cd/v3@${ARGOCD_VERSION}" .
  # Upstream builds one binary for every component (./cmd); the application-controller's own
  # main, in the module so that its go.mod applies, compiles a third less. It needs Redis
  # (Debian's redis-server, from hack/debian-tools.sh), not the repo-server, to finalize deleted
  # Applications.
  mkdir -p hack/argocd-application-controller
  cat >hack/argocd-application-controller/main.go <<'GO'
package main

import (
	"os"

	"github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
)

func main() {
	if err := commands.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
GO
  quiet go list -deps ./hack/argocd-application-controller
}
build_argocd() {
  mkdir -p "$argocd"
  quiet build_into "$argocd" "-X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v}" ./hack/argocd-application-controller
  rm -rf "$argocd/argocd-crds.tmp" && mkdir -p "$argocd/argocd-crds.tmp"
  cp manifests/crds/*-crd.yaml "$argocd/argocd-crds.tmp/"
  rm -rf "$argocd/argocd-crds" && mv "$argocd/argocd-crds.tmp" "$argocd/argocd-crds"
}

fetch_kyverno() {
  module_dir "github.com/kyverno/kyverno@${KYVERNO_VERSION}" .
  quiet go list -deps ./cmd/kyverno
}
build_kyverno() {
  mkdir -p "$kyverno"
  # The admission controller only: it registers and serves the webhooks (the background, cleanup
  # and reports controllers are other binaries, not needed for them).
  quiet build_into "$kyverno" "-X github.com/kyverno/kyverno/pkg/version.BuildVersion=${KYVERNO_VERSION}" ./cmd/kyverno
  rm -rf "$kyverno/kyverno-crds.tmp" && mkdir -p "$kyverno/kyverno-crds.tmp"
  cp config/crds/*/*.yaml "$kyverno/kyverno-crds.tmp/"
  rm -rf "$kyverno/kyverno-crds" && mv "$kyverno/kyverno-crds.tmp" "$kyverno/kyverno-crds"
}

# etcd was once built into each Kubernetes version's folder: one built so is taken, not rebuilt.
if missing "$etcd/etcd"; then
  for f in "$root"/kube-*-etcd-"${ETCD_VERSION}"/etcd; do
    if [[ -f "$f" && ! -L "$f" ]]; then
      mkdir -p "$etcd" && cp "$f" "$etcd/etcd.tmp" && mv "$etcd/etcd.tmp" "$etcd/etcd"
      break
    fi
  done
fi
components=()
missing "$etcd/etcd" && components+=(etcd)
kube_want=()
for b in "${kube_binaries[@]}"; do missing "$kube/$b" && kube_want+=("$b"); done
[[ ${#kube_want[@]} -gt 0 ]] && components+=(kube)
if $controllers; then
  missing "$kwok/kwok" "$kwok/stages.yaml" && components+=(kwok)
  missing "$olm/olm" "$olm/catalog" && components+=(olm)
  missing "$opm/opm" && components+=(opm)
fi
if $all; then
  missing "$promop/prometheus-operator" "$promop/prometheus-operator-crds" && components+=(promop)
  missing "$argocd/argocd-application-controller" "$argocd/argocd-crds" && components+=(argocd)
  missing "$kyverno/kyverno" "$kyverno/kyverno-crds" && components+=(kyverno)
fi

if [[ ${#components[@]} -gt 0 ]]; then
  command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 first"; exit 1; }
  mkdir -p "$kube"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  export GOFLAGS="-mod=mod" GOWORK=off CGO_ENABLED=0
  # The downloads run at once, and the builds one after the other as their downloads end: a fresh
  # machine waits on the network and the compiler together. Builds at once would compile what
  # their modules share twice (the build cache dedupes only what is finished).
  log "building ${components[*]} from the Go module proxy (once: cached by version)"
  started=$SECONDS
  declare -A fetching
  for component in "${components[@]}"; do
    mkdir -p "$work/$component"
    (cd "$work/$component" && "fetch_$component") &
    fetching[$component]=$!
  done
  # (Each build is a background job too, waited for, so that set -e holds inside it.)
  failed=0
  for component in "${components[@]}"; do
    wait "${fetching[$component]}" || failed=1
    [[ $failed -eq 0 ]] || continue
    log "building $component"
    (cd "$work/$component" && "build_$component") &
    wait $! || failed=1
  done
  [[ $failed -eq 0 ]] || { log "a build failed (its output is above)"; exit 1; }
  log "built ${components[*]} in $((SECONDS - started))s"
fi

mkdir -p "$kube" && ln -sfn "$etcd/etcd" "$kube/etcd"
# Which Kubernetes the folder holds: test/cluster checks the API server it starts says so.
[[ -f "$kube/kube-version" ]] || echo "$KUBE_VERSION" >"$kube/kube-version"
if ! $controllers; then
  echo "$kube"
  exit 0
fi
# Which OLM the folder holds, for the tests whose expectations differ by version.
[[ -f "$olm/olm-version" ]] || echo "$OLM_VERSION" >"$olm/olm-version"
# One folder with every binary of the mode, for KUBEBUILDER_ASSETS and test/cluster.
bin="$root/controllers-kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}-olm-${OLM_VERSION}-opm-${REGISTRY_VERSION}"
folders=("$kube" "$kwok" "$olm" "$opm")
if $all; then
  bin="$root/all-kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}-olm-${OLM_VERSION}-opm-${REGISTRY_VERSION}-promop-${PROMOP_VERSION}-argocd-${ARGOCD_VERSION}-kyverno-${KYVERNO_VERSION}"
  folders+=("$promop" "$argocd" "$kyverno")
fi
mkdir -p "$bin"
for dir in "${folders[@]}"; do
  for f in "$dir"/*; do ln -sfn "$f" "$bin/$(basename "$f")"; done
done
echo "$bin"
