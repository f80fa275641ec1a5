#!/usr/bin/env bash
# Times `cmax nccl analyze` on 1,000 real-size nccl-tests logs, charts included (issue 6: under 2 s).
# The logs are the golden files (tests/golden/nccl, 10-75 lines each) copied round-robin; each copy
# is analysed and charted in full. Prints the median of RUNS runs and the per-log cost.
# Usage: bench/nccl_analyze.sh [BUILD_DIR] [LOGS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
logs=${2:-1000}
runs=${3:-5}
cmax=$build/apps/cmax/cmax
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/logs"
golden=(tests/golden/nccl/*.txt)
for ((i = 0; i < logs; i++)); do cp "${golden[i % ${#golden[@]}]}" "$work/logs/$(printf '%04d' "$i").txt"; done
bytes=$(cat "$work"/logs/*.txt | wc -c)
times=()
for ((r = 0; r < runs; r++)); do
  rm -rf "$work/out"
  start=$(date +%s.%N)
  "$cmax" nccl analyze --out "$work/out" "$work"/logs/*.txt >/dev/null || true  # 1: anomalies found
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc -l)")
done
charts=$(ls "$work/out"/*.svg | wc -l)
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'cmax nccl analyze: %d logs (%d bytes), %d charts; runs: %s\n' "$logs" "$bytes" "$charts" "${times[*]}"
printf 'median %.3f s (goal < 2 s), %.3f ms per log\n' "$median" "$(echo "$median * 1000 / $logs" | bc -l)"
