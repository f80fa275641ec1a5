#!/usr/bin/env bash
# Builds Helm v3.22.1 (helm.sh/helm/v3/cmd/helm) from the Go module proxy for the FleetViewHelm
# tests of deploy/helm/cmaxd (lint, template, install onto the real kube-apiserver).
#   tests/kube/build_helm.sh OUTDIR
# Writes OUTDIR/helm and OUTDIR/helm.stamp; a second call with the same script returns at once, and
# Go's caches keep a rebuild to seconds. When it cannot build here (no Go 1.26 or newer, the proxy
# unreachable, the build failing) it writes OUTDIR/helm.unavailable with one line saying why and
# exits 0: the Helm tests then skip with that line, never pass silently.
set -uo pipefail
out=${1:?usage: build_helm.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=v3.22.1

stamp=$(cat "$here/build_helm.sh" "$here/find_go.sh" | sha256sum | cut -d' ' -f1)
if [[ -x "$out/helm" && "$(cat "$out/helm.stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi
rm -f "$out/helm.unavailable" "$out/helm.stamp"

unavailable() {
  echo "build_helm: $1; the Helm chart tests will skip" >&2
  echo "$1" >"$out/helm.unavailable"
  exit 0
}

# Helm v3.22.1's go.mod says `go 1.26.0`.
source "$here/find_go.sh"
go=$(find_go 26)
[[ -n "$go" ]] || unavailable "no Go 1.26 or newer found (PATH, /usr/local/go); install it from go.dev/dl to build Helm"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
log="$out/helm-build.log"
: >"$log"
echo "build_helm: building Helm $version with $("$go" env GOVERSION) (first build: minutes; log $log)" >&2
start=$(date +%s)
# Upstream's Makefile: -s -w, the release version, and the Kubernetes version of its client-go
# (v0.37.1: 1.37) as the default capabilities of `helm template` and `helm lint`.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags="$ldflags -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=37"
done
# go install MODULE@VERSION: the module's own go.mod and go.sum, checked against the checksum database.
if ! GOBIN="$out/helm-bin.new" timeout 1800 "$go" install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$version" >>"$log" 2>&1; then
  unavailable "go install helm.sh/helm/v3/cmd/helm@$version failed ($(tail -1 "$log"))"
fi
mv -f "$out/helm-bin.new/helm" "$out/helm"
rm -rf "$out/helm-bin.new"
echo "$stamp" >"$out/helm.stamp"
echo "build_helm: built in $(( $(date +%s) - start )) s: $("$out/helm" version --short 2>&1 | head -1)" >&2
