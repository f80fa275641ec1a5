#!/usr/bin/env bash
# 1,000 concurrent streaming requests against `cmax endpoint serve` on loopback (issue 7):
# how many complete correctly, and the client-side TTFT p50/p99. Real-time pacing (--time-scale 1)
# so streams overlap as they would in production; 16 replicas x 64 slots hold all 1,000 at once.
# Usage: bench/endpoint_serve_streams.sh [BUILD_DIR=build] [STREAMS=1000] [MAX_TOKENS=32]
set -euo pipefail
build=${1:-build}
streams=${2:-1000}
max_tokens=${3:-32}
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
"$build/apps/cmax/cmax" endpoint serve --listen 127.0.0.1:0 --replicas 16 --max-concurrent 64 \
  --time-scale 1 >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "${port:-}" ]] || { echo "endpoint_serve_streams: the server did not start:" >&2; cat "$log" >&2; exit 3; }
/usr/bin/time -f "loadgen: %e s wall, %M KiB max RSS" "$build/bench/endpoint_serve_load" "$port" "$streams" "$max_tokens" || true
echo "server: $(grep -E 'VmHWM|Threads' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' ')"
kill -TERM "$pid"
wait "$pid" || true
tail -1 "$log"
