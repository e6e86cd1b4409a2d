#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy and caches them outside the
# repository, keyed by version, so only the first build on a machine pays (~10 min on 2 cores).
# Prints the folder holding both binaries (usable as KUBEBUILDER_ASSETS).
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod points every k8s.io/*
# staging module at ./staging/... and requires them at v0.0.0. A throwaway module replaces each of
# those with the published module of the matching version, which is what the release tags hold.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
STAGING_VERSION="v0${KUBE_VERSION#v1}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/operator-sweeper/testbin/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"

log() { echo "hack/testbin.sh: $*" >&2; }
# quiet runs a command and shows its output only when it fails.
quiet() {
  if ! "$@" >"$work/log" 2>&1; then
    cat "$work/log" >&2
    log "failed: $*"
    exit 1
  fi
}

if [[ -x "$cache/kube-apiserver" && -x "$cache/etcd" ]]; then
  echo "$cache"
  exit 0
fi

command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 first"; exit 1; }
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod" GOWORK=off CGO_ENABLED=0

if [[ ! -x "$cache/etcd" ]]; then
  log "building etcd $ETCD_VERSION (about 1 minute)"
  mkdir -p "$work/etcd" && cd "$work/etcd"
  quiet go mod init testbin/etcd
  quiet go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  go build -trimpath -o "$cache/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$cache/etcd.tmp" "$cache/etcd"
fi

if [[ ! -x "$cache/kube-apiserver" ]]; then
  log "building kube-apiserver $KUBE_VERSION (about 10 minutes on 2 cores; cached afterwards)"
  mkdir -p "$work/kube" && cd "$work/kube"
  quiet go mod init testbin/kube
  gomod="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [[ -f "$gomod" ]] || { log "could not download k8s.io/kubernetes@${KUBE_VERSION}"; exit 1; }
  # Every staging module the apiserver can need; the sample-* modules are not published.
  awk '/=> \.\/staging\/src\//{print $1}' "$gomod" | grep -v '^k8s.io/sample-' | while read -r mod; do
    go mod edit -replace "${mod}=${mod}@${STAGING_VERSION}"
  done
  go mod edit -require "k8s.io/kubernetes@${KUBE_VERSION}" -tool k8s.io/kubernetes/cmd/kube-apiserver
  quiet go mod tidy
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  go build -trimpath \
    -ldflags "-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}" \
    -o "$cache/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
fi

echo "$cache"
