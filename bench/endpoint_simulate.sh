#!/usr/bin/env bash
# Times `cmax endpoint simulate` replaying the Mooncake conversation trace (12,031 requests) under
# all six policies (issue 7: under 1 s). Prints the median of RUNS runs.
# Usage: bench/endpoint_simulate.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-5}
cmax=$build/apps/cmax/cmax
trace=tests/golden/traces/mooncake_conversation_trace.jsonl
times=()
for ((r = 0; r < runs; r++)); do
  start=$(date +%s.%N)
  "$cmax" endpoint simulate "$trace" --policies all --json >/dev/null
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc -l)")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
printf 'cmax endpoint simulate: %s (%d requests), 6 policies; runs: %s\n' "$trace" "$(wc -l <"$trace")" "${times[*]}"
printf 'median %.3f s (goal < 1 s)\n' "$median"
