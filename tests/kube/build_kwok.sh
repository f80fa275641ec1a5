#!/usr/bin/env bash
# Builds KWOK v0.8.0 (sigs.k8s.io/kwok, simulated nodes for a real API server) from the Go module
# proxy for the Fleet* tests and bench/fleet_scale.sh, and copies upstream's node Stages of the
# same version beside it.
#   tests/kube/build_kwok.sh OUTDIR
# Writes OUTDIR/kwok, OUTDIR/kwok-stages/{node-initialize,node-heartbeat-with-lease}.yaml and
# OUTDIR/kwok.stamp; a second call with the same script returns at once, and Go's caches keep a
# rebuild to seconds. When it cannot build here (no Go 1.24 or newer, the proxy unreachable, the
# build failing) it writes OUTDIR/kwok.unavailable with one line saying why and exits 0: the KWOK
# fleet tests then skip with that line, never pass silently.
set -uo pipefail
out=${1:?usage: build_kwok.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=v0.8.0

stamp=$(cat "$here/build_kwok.sh" "$here/find_go.sh" | sha256sum | cut -d' ' -f1)
if [[ -x "$out/kwok" && -s "$out/kwok-stages/node-initialize.yaml" && "$(cat "$out/kwok.stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi
rm -f "$out/kwok.unavailable" "$out/kwok.stamp"

unavailable() {
  echo "build_kwok: $1; the KWOK fleet tests will skip" >&2
  echo "$1" >"$out/kwok.unavailable"
  exit 0
}

# KWOK v0.8.0's go.mod says `go 1.24`.
source "$here/find_go.sh"
go=$(find_go 24)
[[ -n "$go" ]] || unavailable "no Go 1.24 or newer found (PATH, /usr/local/go); install it from go.dev/dl to build KWOK"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
log="$out/kwok-build.log"
: >"$log"
echo "build_kwok: building KWOK $version with $("$go" env GOVERSION) (first build: minutes; log $log)" >&2
start=$(date +%s)
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
echo "$stamp" >"$out/kwok.stamp"
echo "build_kwok: built in $(( $(date +%s) - start )) s: $("$out/kwok" --version 2>&1 | head -1)" >&2
