#!/usr/bin/env bash
# Builds Prometheus Alertmanager v0.35.0 (github.com/prometheus/alertmanager, cmd/alertmanager) from
# the Go module proxy for the FleetView Alertmanager test: the real Prometheus scrapes real cmaxd
# processes during a drill, evaluates deploy/prometheus/cmax-rules.yaml, and sends to this
# Alertmanager, which groups and delivers to the test's webhook.
#   tests/fleetview/build_alertmanager.sh OUTDIR
# Writes OUTDIR/alertmanager and OUTDIR/alertmanager.stamp; a second call returns at once, and Go's
# caches keep a rebuild to seconds. When it cannot build here (no Go 1.24 or newer, the proxy
# unreachable, the build failing) it writes OUTDIR/alertmanager.unavailable with one line saying why
# and exits 0: the test then skips with that line, never passes silently.
set -uo pipefail
out=${1:?usage: build_alertmanager.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
version=v0.35.0

stamp=$(cat "$here/build_alertmanager.sh" "$here/../kube/find_go.sh" | sha256sum | cut -d' ' -f1)
if [[ -x "$out/alertmanager" && "$(cat "$out/alertmanager.stamp" 2>/dev/null)" == "$stamp" ]]; then
  exit 0
fi
rm -f "$out/alertmanager.unavailable" "$out/alertmanager.stamp"

unavailable() {
  echo "build_alertmanager: $1; the FleetView Alertmanager test will skip" >&2
  echo "$1" >"$out/alertmanager.unavailable"
  exit 0
}

source "$here/../kube/find_go.sh"
go=$(find_go 24)
[[ -n "$go" ]] || unavailable "no Go 1.24 or newer found (PATH, /usr/local/go); install it from go.dev/dl to build Alertmanager"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
log="$out/alertmanager-build.log"
: >"$log"
echo "build_alertmanager: building Alertmanager $version with $("$go" env GOVERSION) (first build: minutes; log $log)" >&2
start=$(date +%s)
# The module zip lacks the web UI's compiled assets (ui/app/dist, made by npm at release time), which
# ui/web.go embeds, so `go install @version` fails. Built instead from a copy of the module (its own
# go.mod and go.sum, checked against the checksum database) with one placeholder page per UI: the
# tests use Alertmanager's API and notifications, never its UI.
"$go" mod download -json "github.com/prometheus/alertmanager@$version" >"$out/alertmanager-mod.json" 2>>"$log" ||
  unavailable "go mod download github.com/prometheus/alertmanager@$version failed ($(tail -1 "$log"))"
src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$out/alertmanager-mod.json")
[[ -d "$src" ]] || unavailable "the module source of alertmanager@$version is not in Go's module cache"
work="$out/alertmanager-src"
rm -rf "$work"
cp -r "$src" "$work" && chmod -R u+w "$work"
for ui in elm mantine; do
  mkdir -p "$work/ui/app/dist/$ui"
  echo "<html><body>Alertmanager $version built by cmax's tests without its web UI</body></html>" >"$work/ui/app/dist/$ui/index.html"
done
if ! (cd "$work" && timeout 1800 "$go" build -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" -o "$out/alertmanager-bin.new/alertmanager" \
       ./cmd/alertmanager) >>"$log" 2>&1; then
  unavailable "go build of alertmanager $version failed ($(tail -1 "$log"))"
fi
rm -rf "$work"
mv -f "$out/alertmanager-bin.new/alertmanager" "$out/alertmanager"
rm -rf "$out/alertmanager-bin.new"
echo "$stamp" >"$out/alertmanager.stamp"
echo "build_alertmanager: built in $(( $(date +%s) - start )) s: $("$out/alertmanager" --version 2>&1 | head -1)" >&2
