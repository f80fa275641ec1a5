#!/usr/bin/env bash
# Builds Helm v3.22.1 (helm.sh/helm/v3/cmd/helm) from the Go module proxy for the FleetViewHelm
# tests of deploy/helm/cmaxd (lint, template, install onto the real kube-apiserver).
#   tests/kube/build_helm.sh OUTDIR
# Writes OUTDIR/helm and OUTDIR/helm.stamp; cached, or OUTDIR/helm.unavailable saying why it could
# not build (tests/support/go_tool.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/go_tool.sh"
go_tool_setup helm "${1:?usage: build_helm.sh OUTDIR}" helm.stamp helm.unavailable "the Helm chart tests" "$here/build_helm.sh"
go_tool_cached "$out/helm" && exit 0
version=v3.22.1
# Helm v3.22.1's go.mod says `go 1.26.0`.
go_tool_find_go 26 Helm
go_tool_building "Helm $version"
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
go_tool_done "$("$out/helm" version --short 2>&1 | head -1)"
