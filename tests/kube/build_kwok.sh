#!/usr/bin/env bash
# Builds KWOK v0.8.0 (sigs.k8s.io/kwok, simulated nodes for a real API server) from the Go module
# proxy for the Fleet* tests and bench/fleet_scale.sh, and copies upstream's node Stages of the
# same version beside it.
#   tests/kube/build_kwok.sh OUTDIR
# Writes OUTDIR/kwok, OUTDIR/kwok-stages/{node-initialize,node-heartbeat-with-lease}.yaml and
# OUTDIR/kwok.stamp; cached, or OUTDIR/kwok.unavailable saying why it could not build
# (tests/support/go_tool.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/go_tool.sh"
go_tool_setup kwok "${1:?usage: build_kwok.sh OUTDIR}" kwok.stamp kwok.unavailable "the KWOK fleet tests" "$here/build_kwok.sh"
go_tool_cached "$out/kwok" "$out/kwok-stages/node-initialize.yaml" && exit 0
version=v0.8.0
# KWOK v0.8.0's go.mod says `go 1.24`.
go_tool_find_go 24 KWOK
go_tool_building "KWOK $version"
# go install MODULE@VERSION: the module's own go.mod and go.sum, checked against the checksum database.
if ! GOBIN="$out/kwok-bin.new" timeout 1800 "$go" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$version" >>"$log" 2>&1; then
  unavailable "go install sigs.k8s.io/kwok/cmd/kwok@$version failed ($(tail -1 "$log"))"
fi
src="$("$go" env GOMODCACHE)/sigs.k8s.io/kwok@$version/kustomize/stage/node"
mkdir -p "$out/kwok-stages"
cp "$src/fast/node-initialize.yaml" "$src/heartbeat-with-lease/node-heartbeat-with-lease.yaml" "$out/kwok-stages/" 2>>"$log" ||
  unavailable "KWOK's node Stages are not in $src"
mv -f "$out/kwok-bin.new/kwok" "$out/kwok"
rm -rf "$out/kwok-bin.new"
go_tool_done "$("$out/kwok" --version 2>&1 | head -1)"
