#!/usr/bin/env bash
# Builds the real Kubernetes control plane the RealApiServer tests start: kube-apiserver v1.37.2 and
# etcd v3.7.3, from the Go module proxy (tests/kube/server/*: go.mod and go.sum pinned, main.go as
# upstream's), static (CGO_ENABLED=0), with upstream's release tags and version stamps.
#   tests/kube/build_server.sh OUTDIR
# Writes OUTDIR/kube-apiserver, OUTDIR/etcd and OUTDIR/stamp (the hash of what they were built
# from); cached, or OUTDIR/unavailable saying why it could not build (tests/support/go_tool.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/go_tool.sh"
go_tool_setup server "${1:?usage: build_server.sh OUTDIR}" stamp unavailable "the RealApiServer tests" \
  "$here/build_server.sh" "$here"/server/*/go.mod "$here"/server/*/go.sum "$here"/server/*/main.go
go_tool_cached "$out/kube-apiserver" "$out/etcd" && exit 0
# Go 1.26 or newer (k8s.io/kubernetes v1.37 says `go 1.26.0`).
go_tool_find_go 26 kube-apiserver
go_tool_building "kube-apiserver v1.37.2 and etcd v3.7.3"
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
if ! (cd "$here/server/kube-apiserver" &&
      timeout 2400 "$go" build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$out/kube-apiserver.new" .) >>"$log" 2>&1; then
  unavailable "go build of kube-apiserver failed ($(tail -1 "$log"))"
fi
if ! (cd "$here/server/etcd" && timeout 900 "$go" build -trimpath -ldflags "-s -w" -o "$out/etcd.new" .) >>"$log" 2>&1; then
  unavailable "go build of etcd failed ($(tail -1 "$log"))"
fi
mv -f "$out/kube-apiserver.new" "$out/kube-apiserver"
mv -f "$out/etcd.new" "$out/etcd"
go_tool_done "$("$out/kube-apiserver" --version), etcd $("$out/etcd" --version | sed -n 's/^etcd Version: //p')"
