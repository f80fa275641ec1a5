#!/usr/bin/env bash
# `cmax sla` over a year of node state changes (issue 10): bench/gen_sla_events writes CHANGES
# (default 10,000,000) state changes across 100,000 nodes (5,556 NVL72 racks) through 2026 as CSV,
# with its contract; this times `cmax sla --json` beside `wc -l` of the same file (the anchor: the
# cost of reading the bytes), alternating, medians of RUNS, peak RSS from /usr/bin/time.
# Goals: < 5 s and < 2 GB peak RSS. Exit: 0 both met, 1 not met, 3 cannot run.
# Usage: bench/sla_bench.sh [BUILD_DIR] [RUNS] [CHANGES]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
changes=${3:-10000000}
die() { echo "sla_bench: $*" >&2; exit 3; }
bin=$build/apps/cmax/cmax
gen=$build/bench/gen_sla_events
[[ -x "$bin" ]] || die "$bin not found: cmake --build $build --target cmax"
[[ -x "$gen" ]] || die "$gen not found: cmake --build $build --target gen_sla_events"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found: install the Debian package time"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sla_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
"$gen" "$tmp/events.csv" "$tmp/contract.json" "$changes" 100000 1
echo "sla_bench: $(stat -c %s "$tmp/events.csv") bytes of CSV" >&2
cat "$tmp/events.csv" >/dev/null  # page cache warm for both

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
: >"$tmp/cmax.t"; : >"$tmp/anchor.t"; : >"$tmp/cmax.rss"
for ((i = 0; i < runs; i++)); do
  rc=0
  /usr/bin/time -f "%e %M" -o "$tmp/one" "$bin" sla --contract "$tmp/contract.json" --events-csv "$tmp/events.csv" \
    --json >"$tmp/out.json" || rc=$?
  ((rc <= 1)) || die "cmax sla exited $rc"
  read -r s kb < <(tail -1 "$tmp/one")  # time prefixes a line when the exit status is not 0
  echo "$s" >>"$tmp/cmax.t"; echo "$kb" >>"$tmp/cmax.rss"
  /usr/bin/time -f "%e %M" -o "$tmp/one" wc -l "$tmp/events.csv" >/dev/null
  read -r s kb < <(tail -1 "$tmp/one")  # time prefixes a line when the exit status is not 0
  echo "$s" >>"$tmp/anchor.t"
done
cm=$(median <"$tmp/cmax.t"); an=$(median <"$tmp/anchor.t")
rss=$(sort -n "$tmp/cmax.rss" | tail -1)
ratio=$(awk -v a="$cm" -v b="$an" 'BEGIN {printf "%.1f", (b > 0 ? a / b : 0)}')
echo "cmax sla --json: median ${cm} s, peak RSS $((rss / 1024)) MB; anchor wc -l: ${an} s; ratio ${ratio}x"
python3 - "$tmp/out.json" <<'PY' || true
import json, sys
d = json.load(open(sys.argv[1]))
print("report: %d months, %d down intervals, credit %.2f %s, %d cancellation rights" % (
    len(d["months"]), d["input"]["down_intervals"], d["summary"]["credit_total"], d["summary"]["currency"],
    d["summary"]["cancellation_rights"]))
PY
awk -v t="$cm" -v r="$rss" 'BEGIN {exit !(t < 5 && r < 2 * 1024 * 1024)}'
