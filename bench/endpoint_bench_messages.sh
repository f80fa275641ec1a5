#!/usr/bin/env bash
# Anthropic's Messages API under load (issue 28): cmax endpoint bench --api messages beside --api
# chat and beside the official Anthropic SDK (@anthropic-ai/sdk, raw event stream), against
# `cmax endpoint serve` on loopback: REQUESTS concurrent streams of TOKENS tokens at 1 and at 4
# tokens a server write; client CPU (user + sys) per streamed token, alternating, REPS times each,
# a fresh server per run; medians and the ratios.
# Usage: bench/endpoint_bench_messages.sh [BUILD=build] [REPS=3] [REQUESTS=1000] [TOKENS=300]
# Needs node and <BUILD>/npm/node_modules/@anthropic-ai/sdk (test_endpoint_openai installs it).
set -euo pipefail
build=${1:-build}
reps=${2:-3}
requests=${3:-1000}
tokens=${4:-300}
cmax="$build/apps/cmax/cmax"
npmdir="$build/npm"
[[ -f "$npmdir/node_modules/@anthropic-ai/sdk/package.json" ]] || {
  echo "no $npmdir/node_modules/@anthropic-ai/sdk: run EndpointOpenAi.TheOfficialAnthropicClientReadsWhatTheServerAccounts first" >&2
  exit 3
}
cp "$(dirname "$0")/anthropic_bench_client.mjs" "$npmdir/"
work=$(mktemp -d)
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
source "$(dirname "$0")/endpoint_serve_lib.sh"

common=(--fixed --input-tokens 64 --output-tokens "$tokens" --ignore-eos --max-requests "$requests" --seed 1)  # --seed: the bodies --dry-run printed
"$cmax" endpoint bench --dry-run --api messages --model cmax-sim "${common[@]}" >"$work/bodies.jsonl"

us_per_token() {  # TIME_FILE TOKENS
  awk -v t="$2" '{ printf "%.2f", ($1 + $2) / t * 1e6 }' "$1"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

for interval in 1 4; do
  export interval
  echo "== $requests concurrent streams of $tokens tokens, $interval token(s) a server write (REPS=$reps)"
  : >"$work/chat"; : >"$work/messages"; : >"$work/sdk"
  for r in $(seq "$reps"); do
    for api in chat messages; do
      start_server
      /usr/bin/time -f "%U %S" -o "$work/$api.time" "$cmax" endpoint bench --base-url "http://127.0.0.1:$port/v1" \
        --api "$api" "${common[@]}" --concurrency "$requests" --requests-per-level "$requests" --out "$work/run-$api-$r" \
        --json >"$work/$api.json"
      read -r tok ok <<<"$(node -e 'const j=require(process.argv[1]);console.log(j.overall.completion_tokens, j.overall.succeeded)' "$work/$api.json")"
      us=$(us_per_token "$work/$api.time" "$tok")
      echo "$us" >>"$work/$api"
      echo "run $r: cmax --api $api: $ok ok, $tok tokens, $us us CPU/token"
    done
    start_server
    /usr/bin/time -f "%U %S" -o "$work/sdk.time" node "$npmdir/anthropic_bench_client.mjs" "http://127.0.0.1:$port" \
      "$work/bodies.jsonl" "$requests" >"$work/sdk.json"
    read -r tok ok <<<"$(node -e 'const j=require(process.argv[1]);console.log(j.completion_tokens, j.ok)' "$work/sdk.json")"
    us=$(us_per_token "$work/sdk.time" "$tok")
    echo "$us" >>"$work/sdk"
    echo "run $r: node + @anthropic-ai/sdk: $ok ok, $tok tokens, $us us CPU/token"
  done
  c=$(median <"$work/chat"); m=$(median <"$work/messages"); s=$(median <"$work/sdk")
  awk -v c="$c" -v m="$m" -v s="$s" -v i="$interval" 'BEGIN {
    printf "median us CPU/token at %d/write: cmax chat %.2f, cmax messages %.2f (%.2fx chat), anthropic sdk %.2f: sdk/cmax-messages %.1fx\n",
      i, c, m, m / c, s, s / m }'
done
