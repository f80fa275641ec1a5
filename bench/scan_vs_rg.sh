#!/usr/bin/env bash
# Throughput of `cmax scan --json FILE` against `rg -c 'NVRM: Xid' FILE` on one synthetic kernel log
# (bench/gen_kernel_log: kernel noise with one fault line per 10,000), side by side in one run,
# alternating, all pinned to one core, page cache warm. Goals (issue 3): cmax >= 1 GB/s,
# cmax/rg <= 1.5 (median wall time), cmax max RSS < 64 MB. Also checks that cmax found as many
# Xid lines as rg counted. For context, not judged: `rg --no-mmap` (rg reading as cmax does, with
# read(); on VMs where page faults are dear this is much faster than rg's default mmap) and cmax
# with its AVX2 prefilter (what a CPU without AVX-512 VBMI runs).
# Exit: 0 all goals met, 1 some not met or counts differ, 3 cannot run.
# Usage: bench/scan_vs_rg.sh [CMAX_BINARY] [SIZE_BYTES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/apps/cmax/cmax}
size=${2:-2000000000}
runs=${3:-5}
seed=1

die() { echo "scan_vs_rg: $*" >&2; exit 3; }
[[ "$size" =~ ^[0-9]+$ && "$runs" =~ ^[1-9][0-9]*$ ]] || die "usage: $0 [CMAX_BINARY] [SIZE_BYTES] [RUNS]"
command -v rg >/dev/null || die "rg not found: install the Debian package ripgrep"

gen=""  # the generator of cmax's own build tree first, then the usual build trees
for g in "${bin%/apps/cmax/*}/bench/gen_kernel_log" build/bench/gen_kernel_log \
         build-bench/bench/gen_kernel_log; do
  if [[ -x "$g" ]]; then gen=$g; break; fi
done
[[ -n "$gen" ]] || die "gen_kernel_log not found: build it (ninja -C build gen_kernel_log)"

have_cmax=1
if [[ ! -x "$bin" ]]; then
  echo "scan_vs_rg: $bin not found; measuring rg only (build cmax: ninja -C build cmax)" >&2
  have_cmax=0
elif ! "$bin" scan --help >/dev/null 2>&1; then
  echo "scan_vs_rg: $bin has no 'scan' subcommand yet; measuring rg only" >&2
  have_cmax=0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scan_vs_rg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
log=$tmp/kernel.log

avail=$(df --output=avail -B1 "$tmp" | tail -1 | tr -d ' ')
need=$((size + (64 << 20)))
if ((avail < need)); then
  die "need $((need >> 20)) MiB free in $tmp for the log, have $((avail >> 20)) MiB (set TMPDIR or pass a smaller SIZE_BYTES)"
fi
mem_avail=$(awk '/^MemAvailable:/ {printf "%d", $2 * 1024}' /proc/meminfo)
if ((mem_avail < size)); then
  echo "scan_vs_rg: warning: the log ($((size >> 20)) MiB) is larger than available memory ($((mem_avail >> 20)) MiB); runs will read from disk, not the page cache" >&2
fi

# One core: CPU 0 unless the cpuset forbids it, then the first CPU this shell may use.
pin=()
if command -v taskset >/dev/null; then
  cpu=0
  if ! taskset -c 0 true 2>/dev/null; then
    cpu=$(awk '/^Cpus_allowed_list:/ {split($2, a, "[,-]"); print a[1]}' /proc/self/status)
  fi
  pin=(taskset -c "$cpu")
  pinned="pinned to CPU $cpu (taskset)"
else
  pinned="NOT pinned (no taskset; install util-linux)"
fi

# Max RSS of the child in KiB into $tmp/rss: GNU time if present, else getrusage via python3.
if [[ -x /usr/bin/time ]]; then
  rss_how="/usr/bin/time -f %M"
  measure() { /usr/bin/time -f %M -o "$tmp/rss" "$@"; }
else
  rss_how="python3 getrusage(RUSAGE_CHILDREN).ru_maxrss"
  measure() {
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$tmp/rss" "$@"
  }
fi

t_gen0=$(date +%s%N)
gen_summary=$("$gen" "$log" "$size" "$seed" 2>&1 >/dev/null) || die "gen_kernel_log failed: $gen_summary"
t_gen1=$(date +%s%N)
bytes=$(stat -c %s "$log")
gen_xid=$(sed -n 's/.* xid=\([0-9]*\).*/\1/p' <<<"$gen_summary")
cat "$log" >/dev/null  # warm the page cache once

rg_ms=() cmax_ms=() rgread_ms=() avx2_ms=() cmax_rss_kb=0 rg_rss_kb=0 rgread_rss_kb=0 avx2_rss_kb=0 rg_count=""
run_one() {  # run_one NAME OUT CMD...: appends wall ms to NAME_ms, keeps the max RSS in NAME_rss_kb
  local name=$1 out=$2 t0 t1 rc=0 rss
  shift 2
  t0=$(date +%s%N)
  measure "${pin[@]}" "$@" >"$out" 2>"$tmp/err" || rc=$?
  t1=$(date +%s%N)
  # docs/exit-codes.md: 1 and 2 report findings, 3 and up (or a signal) is a failure; rg exits 1 on no match.
  if ((rc >= 3)) || [[ $name == rg && $rc -gt 1 ]]; then
    die "$* failed (exit $rc): $(head -c 500 "$tmp/err")"
  fi
  rss=$(tail -1 "$tmp/rss")
  local -n ms=${name}_ms peak=${name}_rss_kb
  ms+=($(((t1 - t0) / 1000000)))
  ((rss > peak)) && peak=$rss
  return 0
}
for ((i = 0; i < runs; i++)); do
  run_one rg "$tmp/out" rg -c 'NVRM: Xid' "$log"
  rg_count=$(head -1 "$tmp/out")
  rg_count=${rg_count:-0}
  run_one rgread /dev/null rg --no-mmap -c 'NVRM: Xid' "$log"
  if ((have_cmax)); then
    run_one cmax /dev/null "$bin" scan --json "$log"
    run_one avx2 /dev/null "$bin" scan --json --prefilter avx2 "$log"
  fi
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
rg_med=$(median "${rg_ms[@]}")

cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
echo "machine: ${cpu_model:-unknown CPU}, $(nproc) cores, $(uname -r), $(date -u +%Y-%m-%dT%H:%M:%SZ); $pinned"
echo "tools: $(rg --version | head -1); RSS via $rss_how"
awk -v b="$bytes" -v ms="$(((t_gen1 - t_gen0) / 1000000))" -v s="$gen_summary" 'BEGIN {
  printf "file: %d bytes (%.2f GB), generated in %.1f s (%.2f GB/s)\n%s\n", b, b / 1e9, ms / 1000, b / 1e6 / (ms + 1), s }'
awk -v b="$bytes" -v m="$rg_med" -v r="$runs" -v kb="$rg_rss_kb" 'BEGIN {
  printf "rg -c '\''NVRM: Xid'\''        median of %d: %8.0f ms  %6.2f GB/s  max RSS %.1f MB\n", r, m, b / 1e6 / m, kb / 1024 }'

if ((!have_cmax)); then
  echo "rg counted $rg_count Xid lines (generator wrote ${gen_xid:-?})"
  echo "cmax scan: not measured (see message above); goals: NOT MEASURED"
  exit 3
fi

cmax_med=$(median "${cmax_ms[@]}")
"$bin" scan --json "$log" >"$tmp/scan.json" 2>/dev/null || true
read -r cmax_xid prefilter < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
# Xid lines: the Xid incidents own lines, and the Xid lines folded into any incident ("Xid 154 x1").
own = sum(i.get("count", 0) for i in d.get("incidents", []) if i.get("kind") == "xid")
folded = sum(int(r.rsplit(" x", 1)[1]) for i in d.get("incidents", []) for r in i.get("related", []) if r.startswith("Xid "))
print(own + folded, d["stats"].get("prefilter", "?"))' \
  "$tmp/scan.json" 2>/dev/null || echo "unparsable ?")

awk -v b="$bytes" -v m="$cmax_med" -v r="$runs" -v kb="$cmax_rss_kb" -v p="$prefilter" 'BEGIN {
  printf "cmax scan --json     median of %d: %8.0f ms  %6.2f GB/s  max RSS %.1f MB  (prefilter %s)\n", r, m, b / 1e6 / m, kb / 1024, p }'
awk -v b="$bytes" -v m="$(median "${rgread_ms[@]}")" -v c="$cmax_med" -v r="$runs" 'BEGIN {
  printf "context, not judged: rg --no-mmap -c   median of %d: %8.0f ms  %6.2f GB/s  (cmax/this %.2f)\n", r, m, b / 1e6 / m, c / m }'
awk -v b="$bytes" -v m="$(median "${avx2_ms[@]}")" -v g="$rg_med" -v r="$runs" 'BEGIN {
  printf "context, not judged: cmax --prefilter avx2 median of %d: %8.0f ms  %6.2f GB/s  (/rg %.2f)\n", r, m, b / 1e6 / m, m / g }'
verdict=$(awk -v b="$bytes" -v c="$cmax_med" -v g="$rg_med" -v kb="$cmax_rss_kb" 'BEGIN {
  gbps = b / 1e6 / c; ratio = c / g; mb = kb / 1024
  ok = (gbps >= 1) + (ratio <= 1.5) + (mb < 64)
  printf "goal cmax >= 1 GB/s: %.2f GB/s %s\n", gbps, (gbps >= 1 ? "PASS" : "NOT MET")
  printf "goal cmax/rg <= 1.5: %.2f %s\n", ratio, (ratio <= 1.5 ? "PASS" : "NOT MET")
  printf "goal max RSS < 64 MB: %.1f MB %s\n", mb, (mb < 64 ? "PASS" : "NOT MET")
  printf "met=%d\n", ok }')
grep -v '^met=' <<<"$verdict"
status=0
[[ $(grep '^met=' <<<"$verdict") == met=3 ]] || status=1
if [[ "$cmax_xid" == "$rg_count" ]]; then
  echo "Xid lines: cmax $cmax_xid, rg $rg_count, generator ${gen_xid:-?}: same"
else
  echo "Xid lines: cmax $cmax_xid, rg $rg_count, generator ${gen_xid:-?}: DIFFERENT"
  status=1
fi
exit "$status"
