#!/usr/bin/env bash
# Builds the real Kubernetes control plane the RealApiServer tests start: kube-apiserver v1.37.2 and
# etcd v3.7.3, from the Go module proxy (tests/kube/server/*: go.mod and go.sum pinned, main.go as
# upstream's), static (CGO_ENABLED=0), with upstream's release tags and version stamps.
#   tests/kube/build_server.sh OUTDIR
# Writes OUTDIR/kube-apiserver, OUTDIR/etcd and OUTDIR/stamp (the hash of what they were built
# from); a second call with the same sources returns at once. Go's own caches (GOMODCACHE,
# GOCACHE) keep a rebuild to seconds. When the build is impossible here (no Go 1.26 or newer, the
# module proxy unreachable, the build failing), it writes OUTDIR/unavailable with one line saying
# why and exits 0: the RealApiServer tests then skip with that line, never pass silently.
set -uo pipefail
out=${1:?usage: build_server.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

stamp=$(cat "$here/build_server.sh" "$here/find_go.sh" "$here"/server/*/go.mod "$here"/server/*/go.sum "$here"/server/*/main.go | sha256sum | cut -d' ' -f1)
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" && "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi
rm -f "$out/unavailable" "$out/stamp"

unavailable() {
  echo "build_server: $1; the RealApiServer tests will skip" >&2
  echo "$1" >"$out/unavailable"
  exit 0
}

# Go 1.26 or newer (k8s.io/kubernetes v1.37 says `go 1.26.0`): PATH first, then the usual install.
source "$here/find_go.sh"
go=$(find_go 26)
[[ -n "$go" ]] || unavailable "no Go 1.26 or newer found (PATH, /usr/local/go); install it from go.dev/dl to build kube-apiserver"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
log="$out/build.log"
: >"$log"
echo "build_server: building kube-apiserver v1.37.2 and etcd v3.7.3 with $("$go" env GOVERSION) (first build: minutes; log $log)" >&2

if ! (cd "$here/server/kube-apiserver" && timeout 900 "$go" mod download) >>"$log" 2>&1 ||
   ! (cd "$here/server/etcd" && timeout 600 "$go" mod download) >>"$log" 2>&1; then
  unavailable "cannot download the Go modules ($(tail -1 "$log"))"
fi

# Upstream's hack/lib/golang.sh: -trimpath, -s -w, tags selinux,notest,grpcnotrace, version stamps.
v=v1.37.2
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X '$p.gitVersion=$v' -X '$p.gitMajor=1' -X '$p.gitMinor=37' -X '$p.gitTreeState=clean' -X '$p.buildDate=1970-01-01T00:00:00Z'"
done
start=$(date +%s)
if ! (cd "$here/server/kube-apiserver" &&
      timeout 2400 "$go" build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$out/kube-apiserver.new" .) >>"$log" 2>&1; then
  unavailable "go build of kube-apiserver failed ($(tail -1 "$log"))"
fi
if ! (cd "$here/server/etcd" && timeout 900 "$go" build -trimpath -ldflags "-s -w" -o "$out/etcd.new" .) >>"$log" 2>&1; then
  unavailable "go build of etcd failed ($(tail -1 "$log"))"
fi
mv -f "$out/kube-apiserver.new" "$out/kube-apiserver"
mv -f "$out/etcd.new" "$out/etcd"
echo "$stamp" >"$out/stamp"
echo "build_server: built in $(( $(date +%s) - start )) s: $("$out/kube-apiserver" --version), etcd $("$out/etcd" --version | sed -n 's/^etcd Version: //p')" >&2
