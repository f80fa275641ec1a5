# Sourced by bench/endpoint_bench_vs_*.sh: one fresh `cmax endpoint serve` per measured run.
# Needs $cmax and $work. Reads $interval (tokens a server write, 4) and $scale (wall seconds per
# model second, 1). Sets $port and $pid; a caller's EXIT trap kills $pid. Call start_server in the
# script's own shell, never inside $(...): the subshell's $pid would be lost and the server leak.
pid=

# 16 x 64 decode slots hold 1,000 streams at 60 tokens/s each; --stream-interval 4 writes four
# tokens (four SSE events) at a time, as vLLM can.
start_server() {
  [[ -n "$pid" ]] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
  "$cmax" endpoint serve --listen 127.0.0.1:0 --replicas 16 --max-concurrent 64 --batch-slowdown 0 \
    --decode-tokens-per-s 60 --stream-interval "${interval:-4}" --time-scale "${scale:-1}" >"$work/serve.log" 2>&1 &
  pid=$!
  port=
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
    [[ -n "$port" ]] && break
    sleep 0.1
  done
  [[ -n "$port" ]] || { cat "$work/serve.log" >&2; exit 3; }
}

cpu() { awk '{print $1 + $2}' "$1"; }  # user + sys seconds from /usr/bin/time -f "%U %S"
