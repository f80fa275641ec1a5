#!/usr/bin/env bash
# cmax endpoint bench side by side with NVIDIA's AIPerf (issue 28), against `cmax endpoint serve`
# on loopback, on the same machine: client CPU (user + sys of the whole process tree) per streamed
# token at STREAMS concurrent streams of TOKENS tokens, INTERVAL tokens per server write, a fresh
# server per run, alternating, REPS times each; medians and the ratio.
# AIPerf is several Python processes whose start-up alone costs seconds of CPU, so each tool also
# runs a small baseline (STREAMS/10 streams of TOKENS/10 tokens) and the headline is the marginal
# cost: (CPU - baseline CPU) / (tokens - baseline tokens). The raw per-token figure is printed too.
# Agreement of the two tools' numbers is tested in tests/aiperf (ctest -R AiPerf).
# Usage: bench/endpoint_bench_vs_aiperf.sh [BUILD=build] [REPS=3] [STREAMS=1000] [TOKENS=300] [INTERVAL=4]
# Needs BUILD/peers/aiperf (tests/aiperf/setup_aiperf.sh BUILD/peers/aiperf).
set -euo pipefail
build=${1:-build}
reps=${2:-3}
streams=${3:-1000}
tokens=${4:-300}
interval=${5:-4}
cmax="$build/apps/cmax/cmax"
venv="$build/peers/aiperf"
[[ -x "$venv/bin/aiperf" ]] || { echo "no $venv/bin/aiperf: run tests/aiperf/setup_aiperf.sh $venv first" >&2; exit 3; }
export TIKTOKEN_CACHE_DIR="$venv/tiktoken-cache"
work=$(mktemp -d)
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

source "$(dirname "$0")/endpoint_serve_lib.sh"
# Completion tokens the server streamed (its own accounting).
served() {
  curl -s "http://127.0.0.1:$port/cmax/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["completion_tokens"])' ||
    { echo "the server on $port did not answer /cmax/stats; its log:" >&2; tail -20 "$work/serve.log" >&2; exit 1; }
}

# run_cmax N T: writes "cpu tokens" to $work/result (not echoed: start_server must run in this
# shell, not in a $(...) subshell, or the trap would not know the server to stop).
run_cmax() {
  start_server
  /usr/bin/time -f "%U %S" -o "$work/t" "$cmax" endpoint bench --base-url "http://127.0.0.1:$port/v1" --model cmax-sim \
    --fixed --input-tokens 64 --output-tokens "$2" --ignore-eos --concurrency "$1" --requests-per-level "$1" \
    --out "$work/cmax" --json >/dev/null
  echo "$(cpu "$work/t") $(served)" >"$work/result"
}
run_aiperf() {
  start_server
  rm -rf "$work/aiperf"
  /usr/bin/time -f "%U %S" -o "$work/t" "$venv/bin/aiperf" profile --model cmax-sim --tokenizer cl100k_base \
    --url "http://127.0.0.1:$port" --endpoint-type chat --streaming --use-server-token-count \
    --concurrency "$1" --request-count "$1" --isl 64 --isl-stddev 0 --osl "$2" --osl-stddev 0 \
    --extra-inputs ignore_eos:true --random-seed 1 --artifact-dir "$work/aiperf" --ui none \
    --no-server-metrics --no-gpu-telemetry >"$work/aiperf.log" 2>&1 ||
    { tail -20 "$work/aiperf.log" >&2; echo "server log:" >&2; tail -20 "$work/serve.log" >&2; exit 1; }
  echo "$(cpu "$work/t") $(served)" >"$work/result"
}

small_n=$(( streams / 10 > 0 ? streams / 10 : 1 )); small_t=$(( tokens / 10 > 0 ? tokens / 10 : 1 ))
echo "== $streams concurrent streams of $tokens tokens, $interval tokens a server write (REPS=$reps); baseline $small_n x $small_t"
for r in $(seq "$reps"); do
  run_cmax "$small_n" "$small_t"; read -r cb cbt <"$work/result"
  run_cmax "$streams" "$tokens"; read -r cc cct <"$work/result"
  run_aiperf "$small_n" "$small_t"; read -r ab abt <"$work/result"
  run_aiperf "$streams" "$tokens"; read -r ac act <"$work/result"
  awk -v r="$r" -v cb="$cb" -v cbt="$cbt" -v cc="$cc" -v cct="$cct" -v ab="$ab" -v abt="$abt" -v ac="$ac" -v act="$act" 'BEGIN {
    cm = (cc - cb) / (cct - cbt) * 1e6; am = (ac - ab) / (act - abt) * 1e6;
    printf "run %d: cmax %d tokens %.2f s CPU (%.2f us/token raw, %.2f marginal) | AIPerf %d tokens %.2f s CPU (%.2f us/token raw, %.2f marginal) | ratio %.1fx marginal, %.1fx raw\n",
      r, cct, cc, cc / cct * 1e6, cm, act, ac, ac / act * 1e6, am, am / cm, (ac / act) / (cc / cct) }' | tee -a "$work/ratios"
done
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
m=$(sed -n 's/.*ratio \([0-9.]*\)x marginal.*/\1/p' "$work/ratios" | med)
w=$(sed -n 's/.*marginal, \([0-9.]*\)x raw.*/\1/p' "$work/ratios" | med)
echo "median ratio: ${m}x marginal, ${w}x raw (AIPerf CPU per token / cmax CPU per token)"
