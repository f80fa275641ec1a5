#!/usr/bin/env bash
# Wall time of `cmax audit --json` on this machine, median of N runs (default 10), side by side
# in the same run with the anchor (bench/anchor/bash_collectors.sh: the same facts gathered
# the bash-collector way), and beside the SemiAnalysis ClusterMAX CLI's own live audit
# (`cmax audit --standalone -y` from the pinned PyPI package the parity test installs under
# build/peers/clustermax; offline: its minimums URL points at a closed local port, as in
# tests/parity/parity.py). Prints one line per command and the ratios; goal: cmax < 0.5 s.
# Usage: bench/audit_wall.sh [CMAX_BINARY] [RUNS] [PEER_VENV]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/apps/cmax/cmax}
runs=${2:-10}
peer_venv=${3:-build/peers/clustermax}
[[ -x "$bin" ]] || { echo "audit_wall: build cmax first (cmake --build build --target cmax)" >&2; exit 3; }

median_ms() {  # median_ms CMD...: runs the command $runs times, prints the median wall time in ms
  local times=()
  "$@" >/dev/null 2>&1 || true  # warm the page cache once
  for ((i = 0; i < runs; i++)); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f\n", m / 1000}'
}

cmax_ms=$(median_ms "$bin" audit --json)
anchor_ms=$(median_ms bash bench/anchor/bash_collectors.sh)
checks=$("$bin" audit --json 2>/dev/null | grep -c '"remediation"' || true)
peer_ms=""
if [[ -x "$peer_venv/bin/cmax" && -x "$peer_venv/bin/python" ]]; then
  pkg=$("$peer_venv/bin/python" -c 'import cmax, os; print(os.path.dirname(cmax.__file__))')
  peer_home=$(mktemp -d)
  trap 'rm -rf "$peer_home"' EXIT
  mkdir -p "$peer_home/shims"
  printf '#!/bin/sh\nexit 7\n' >"$peer_home/shims/curl" && chmod +x "$peer_home/shims/curl"
  peer() {
    env -u CLUSTERMAX_REPO_ROOT HOME="$peer_home" XDG_CACHE_HOME="$peer_home/.cache" CLUSTERMAX_REPO_ROOT="$pkg" \
      CLUSTERMAX_MINIMUM_VERSIONS="$pkg/scripts/1-audit/minimum-versions.json" \
      CLUSTERMAX_MINIMUMS_URL=http://127.0.0.1:9/minimum-versions.json CLUSTER_SLUG=bench \
      PATH="$peer_home/shims:$peer_venv/bin:$PATH" "$peer_venv/bin/cmax" audit --standalone -y
  }
  peer_ms=$(median_ms peer)
  peer_version=$("$peer_venv/bin/python" -c "import importlib.metadata as m; print(m.version('clustermax'))")
fi
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cmax audit --json ($checks checks)      median of $runs: ${cmax_ms} ms"
echo "anchor bash collectors (facts only)     median of $runs: ${anchor_ms} ms"
if [[ -n "$peer_ms" ]]; then
  echo "ClusterMAX CLI $peer_version audit --standalone median of $runs: ${peer_ms} ms"
else
  echo "ClusterMAX CLI: not installed at $peer_venv (run ctest -R parity.setup_clustermax); skipped"
fi
awk -v a="$cmax_ms" -v b="$anchor_ms" 'BEGIN {printf "ratio cmax/anchor: %.2f   goal cmax < 500 ms: %s\n", a / b, (a < 500 ? "met" : "NOT met")}'
[[ -z "$peer_ms" ]] || awk -v a="$cmax_ms" -v b="$peer_ms" 'BEGIN {printf "ratio cmax/ClusterMAX CLI: %.3f\n", a / b}'
