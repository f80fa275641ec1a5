#!/usr/bin/env bash
# Wall time of `cmax audit --json` on this machine, median of N runs (default 10), side by side
# in the same run with the anchor (bench/anchor/bash_collectors.sh: the same facts gathered
# the bash-collector way). Prints one line per command and the ratio; goal: cmax < 0.5 s.
# Usage: bench/audit_wall.sh [CMAX_BINARY] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/apps/cmax/cmax}
runs=${2:-10}
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
echo "machine: $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cmax audit --json ($checks checks)      median of $runs: ${cmax_ms} ms"
echo "anchor bash collectors (facts only)     median of $runs: ${anchor_ms} ms"
awk -v a="$cmax_ms" -v b="$anchor_ms" 'BEGIN {printf "ratio cmax/anchor: %.2f   goal cmax < 500 ms: %s\n", a / b, (a < 500 ? "met" : "NOT met")}'
