#!/usr/bin/env bash
# Builds Prometheus Alertmanager v0.35.0 (github.com/prometheus/alertmanager, cmd/alertmanager) from
# the Go module proxy for the FleetView Alertmanager test: the real Prometheus scrapes real cmaxd
# processes during a drill, evaluates deploy/prometheus/cmax-rules.yaml, and sends to this
# Alertmanager, which groups and delivers to the test's webhook.
#   tests/fleetview/build_alertmanager.sh OUTDIR
# Writes OUTDIR/alertmanager and OUTDIR/alertmanager.stamp; cached, or OUTDIR/alertmanager.unavailable
# saying why it could not build (tests/support/go_tool.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../support/go_tool.sh"
go_tool_setup alertmanager "${1:?usage: build_alertmanager.sh OUTDIR}" alertmanager.stamp alertmanager.unavailable \
  "the FleetView Alertmanager test" "$here/build_alertmanager.sh"
go_tool_cached "$out/alertmanager" && exit 0
version=v0.35.0
go_tool_find_go 24 Alertmanager
go_tool_building "Alertmanager $version"
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
go_tool_done "$("$out/alertmanager" --version 2>&1 | head -1)"
