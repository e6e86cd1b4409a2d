#!/usr/bin/env bash
# Builds helm, pinned, from the Go module proxy and caches it outside the repository, keyed by
# version, so only the first build on a machine pays (under 2 minutes on 2 cores). Prints the
# binary's path; once it is built, prints it and does nothing else.
#
#   "$(hack/helm.sh)" lint charts/operator-sweeper
#
# No downloaded release binary: the module proxy's checksum database vouches for the source, as it
# does for every other tool the tests build (hack/testbin.sh). helm.sh/helm/v3 is built as its own
# main module, from its module directory, so that its go.mod and go.sum pick every dependency's
# version, not ours.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
dir="${XDG_CACHE_HOME:-$HOME/.cache}/operator-sweeper/tools/helm-${HELM_VERSION}"
helm="$dir/helm"

log() { echo "hack/helm.sh: $*" >&2; }

if [[ ! -x "$helm" ]]; then
  command -v go >/dev/null || { log "go is not on PATH; install Go 1.26 first"; exit 1; }
  log "building helm $HELM_VERSION (about 2 minutes on 2 cores the first time; cached afterwards)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # The module's own go.mod and go.sum decide; a go.work or -mod=vendor of the caller must not.
  export GOFLAGS="-mod=mod" GOWORK=off CGO_ENABLED=0
  src="$(go mod download -json "helm.sh/helm/v3@${HELM_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$src" ]] || { log "could not download helm.sh/helm/v3@${HELM_VERSION}"; exit 1; }
  # The module cache is read-only; the build works on a writable copy, without a vendor/.
  cp -r "$src" "$work/helm" && chmod -R u+w "$work/helm" && rm -rf "$work/helm/vendor"
  cd "$work/helm"
  # What helm's Makefile stamps. The Kubernetes version helm template and helm lint assume (their
  # .Capabilities.KubeVersion, checked against Chart.yaml's kubeVersion) is that of the client-go
  # helm is built with; unstamped, it is 1.20.
  client_go="$(go list -m -f '{{.Version}}' k8s.io/client-go)" # v0.MINOR.PATCH: Kubernetes 1.MINOR
  kube_minor="${client_go#v0.}"; kube_minor="${kube_minor%%.*}"
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in pkg/chartutil pkg/lint/rules; do
    ldflags+=" -X helm.sh/helm/v3/${pkg}.k8sVersionMajor=1 -X helm.sh/helm/v3/${pkg}.k8sVersionMinor=${kube_minor}"
  done
  # Atomic: built in a folder of its own next to the cache entry (the same filesystem), then
  # renamed, so that a concurrent caller sees no binary or a whole one.
  mkdir -p "$dir"
  out="$(mktemp -d "$dir/build.XXXXXX")"
  trap 'rm -rf "$work" "$out"' EXIT
  if ! go build -trimpath -ldflags "$ldflags" -o "$out/helm" ./cmd/helm >"$work/log" 2>&1; then
    cat "$work/log" >&2
    log "failed to build helm $HELM_VERSION"
    exit 1
  fi
  mv "$out/helm" "$helm"
fi
echo "$helm"
