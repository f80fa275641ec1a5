#!/usr/bin/env bash
# cmax endpoint bench side by side with the official `openai` npm client (issue 8), against
# `cmax endpoint serve` on loopback, on the same machine:
#  1. 1,000 concurrent streams: streamed tokens/s, and client CPU (user + sys) per streamed token
#     for cmax and for node + openai on the same request bodies (cmax --dry-run prints them),
#     alternating, REPS times each, a fresh server per run; medians and the ratio.
#  2. Agreement: both clients at concurrency 1 on fresh servers: tokens and cached tokens per request.
#  3. TTFT at concurrency 24: cmax's per-request TTFT against the server's own timestamps
#     (/cmax/requests), joined on the response id: median and p99 of |difference|.
# Usage: bench/endpoint_bench_vs_openai.sh [BUILD=build] [REPS=3] [REQUESTS=1000] [TOKENS=300]
# Needs node and <BUILD>/npm/node_modules/openai (test_endpoint_openai installs it there).
set -euo pipefail
build=${1:-build}
reps=${2:-3}
requests=${3:-1000}
tokens=${4:-300}
cmax="$build/apps/cmax/cmax"
npmdir="$build/npm"
[[ -f "$npmdir/node_modules/openai/package.json" ]] || { echo "no $npmdir/node_modules/openai: run test_endpoint_openai first" >&2; exit 3; }
cp "$(dirname "$0")/openai_bench_client.mjs" "$npmdir/"
work=$(mktemp -d)
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

source "$(dirname "$0")/endpoint_serve_lib.sh"

common=(--fixed --input-tokens 64 --output-tokens "$tokens" --ignore-eos --max-requests "$requests" --seed 1)  # --seed: the bodies --dry-run printed
"$cmax" endpoint bench --dry-run --model cmax-sim "${common[@]}" >"$work/bodies.jsonl"

echo "== 1. $requests concurrent streams of $tokens tokens, ${interval:-4} tokens a server write (REPS=$reps)"
for r in $(seq "$reps"); do
  start_server
  /usr/bin/time -f "%U %S" -o "$work/cmax.time" "$cmax" endpoint bench --base-url "http://127.0.0.1:$port/v1" \
    "${common[@]}" --concurrency "$requests" --requests-per-level "$requests" --out "$work/run$r" --json >"$work/cmax.json"
  ctok=$(node -e 'const j=require(process.argv[1]);console.log(j.overall.completion_tokens, j.overall.output_tokens_per_s.toFixed(0), j.overall.succeeded)' "$work/cmax.json")
  start_server
  /usr/bin/time -f "%U %S" -o "$work/node.time" node "$npmdir/openai_bench_client.mjs" "http://127.0.0.1:$port/v1" \
    "$work/bodies.jsonl" "$requests" >"$work/node.json"
  ntok=$(node -e 'const j=require(process.argv[1]);console.log(j.completion_tokens, (j.completion_tokens/j.wall_s).toFixed(0), j.ok)' "$work/node.json")
  read -r ct crate cok <<<"$ctok"
  read -r nt nrate nok <<<"$ntok"
  cc=$(cpu "$work/cmax.time"); nc=$(cpu "$work/node.time")
  awk -v r="$r" -v ct="$ct" -v cr="$crate" -v cok="$cok" -v cc="$cc" -v nt="$nt" -v nr="$nrate" -v nok="$nok" -v nc="$nc" 'BEGIN {
    cu = cc / ct * 1e6; nu = nc / nt * 1e6;
    printf "run %d: cmax %d ok, %d tokens, %d tok/s, %.2f s CPU = %.2f us/token | node+openai %d ok, %d tokens, %d tok/s, %.2f s CPU = %.2f us/token | ratio %.1fx\n", r, cok, ct, cr, cc, cu, nok, nt, nr, nc, nu, nu / cu }' | tee -a "$work/ratios"
done
awk '{ for (i = 1; i <= NF; i++) if ($i == "ratio") print $(i+1) }' "$work/ratios" | tr -d x | sort -n |
  awk '{ a[NR] = $1 } END { printf "median ratio (node CPU per token / cmax CPU per token): %.1fx over %d runs\n", a[int((NR + 1) / 2)], NR }'

n=$((requests < 50 ? requests : 50))
echo "== 2. agreement at concurrency 1 (fresh unpaced servers, the same $n bodies)"
# A shared 96-token prefix so that cached tokens are not all zero; cmax regenerates the bodies
# from the same seed, node reads them from --dry-run.
agree=(--fixed --input-tokens 200 --shared-prefix-tokens 96 --output-tokens 24 --max-requests "$n" --seed 1)
"$cmax" endpoint bench --dry-run --model cmax-sim "${agree[@]}" >"$work/bodies50.jsonl"
scale=0 start_server
"$cmax" endpoint bench --base-url "http://127.0.0.1:$port/v1" "${agree[@]}" \
  --concurrency 1 --requests-per-level "$n" --out "$work/agree" --json >/dev/null
scale=0 start_server
node "$npmdir/openai_bench_client.mjs" "http://127.0.0.1:$port/v1" "$work/bodies50.jsonl" 1 >"$work/agree-node.json"
node -e '
  const fs = require("fs");
  const mine = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).sort((a, b) => a.index - b.index);
  const theirs = require(process.argv[2]).per_request;
  let same = 0;
  for (let i = 0; i < mine.length; i++) {
    const m = mine[i].usage, t = theirs[i];
    if (m.prompt_tokens === t.prompt_tokens && m.cached_tokens === t.cached_tokens && m.completion_tokens === t.completion_tokens) same++;
    else console.log("differs:", i, JSON.stringify(m), JSON.stringify(t));
  }
  console.log(`${same} of ${mine.length} requests agree on prompt, cached and completion tokens`);
' "$work/agree/requests.jsonl" "$work/agree-node.json"

echo "== 3. TTFT against the server's own timestamps at concurrency 24"
interval=1 start_server
"$cmax" endpoint bench --base-url "http://127.0.0.1:$port/v1" --fixed --input-tokens 256 --shared-prefix-tokens 128 \
  --output-tokens 32 --ignore-eos --max-requests 480 --concurrency 24 --requests-per-level 480 --out "$work/ttft" --json >/dev/null
curl -s "http://127.0.0.1:$port/cmax/requests" >"$work/server.jsonl" 2>/dev/null || \
  node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => process.stdout.write(t))' "http://127.0.0.1:$port/cmax/requests" >"$work/server.jsonl"
node -e '
  const fs = require("fs");
  const srv = new Map(fs.readFileSync(process.argv[2], "utf8").trim().split("\n").map(JSON.parse).map(e => [e.id, e]));
  const d = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
    .filter(r => r.error === "ok").map(r => Math.abs(r.ttft_s * 1000 - srv.get(r.response_id).ttft_ms)).sort((a, b) => a - b);
  const q = (p) => d[Math.min(d.length - 1, Math.ceil(p / 100 * d.length) - 1)];
  console.log(`|cmax TTFT - server TTFT| over ${d.length} requests: median ${q(50).toFixed(3)} ms, p90 ${q(90).toFixed(3)} ms, p99 ${q(99).toFixed(3)} ms, max ${d[d.length - 1].toFixed(3)} ms; within 1 ms: ${(100 * d.filter(x => x <= 1).length / d.length).toFixed(1)}%`);
' "$work/ttft/requests.jsonl" "$work/server.jsonl"
