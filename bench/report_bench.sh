#!/usr/bin/env bash
# `cmax report` on a full run (issue 10): builds one run directory with every stage document at
# fleet size, then, alternating, REPS times each:
#   anchor   cmax score DIR --json     (reads and scores the same evidence; renders nothing)
#   cmax     cmax report DIR --json    (reads, scores, renders the page with every chart, writes it)
# The run directory: results.json of `cmax run` on this machine repeated over NODES nodes as a
# cluster run's CHECK@NODE findings, with a cluster.json of NODES nodes; nccl.json and charts of
# `cmax nccl analyze` over every nccl-tests log in tests/golden/nccl; scan.json of `cmax scan` over
# a generated 200 MB kernel log; bench.json of `cmax endpoint bench` against `cmax endpoint serve`
# (three concurrency levels); sla.json of `cmax sla` over 1,000,000 state changes across 100,000
# nodes in a year; drill.json of a recorded four-node drill. Prints medians, the ratio, the page's
# size. Goal: cmax report < 1 s. Exit: 0 met, 1 not met, 3 cannot run.
# Usage: bench/report_bench.sh [BUILD=build] [REPS=5] [NODES=512]   (KEEP_DIR=DIR keeps a copy of the run)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
nodes=${3:-512}
die() { echo "report_bench: $*" >&2; exit 3; }
cmax=$(realpath "$build/apps/cmax/cmax")
for b in "$cmax" "$build/bench/gen_kernel_log" "$build/bench/gen_sla_events"; do
  [[ -x "$b" ]] || die "$b not found: cmake --build $build --target cmax gen_kernel_log gen_sla_events"
done
command -v python3 >/dev/null || die "python3 is needed to scale the run to $nodes nodes"
T=$(mktemp -d /tmp/cmax-report-bench.XXXXXX)
serve_pid=""
trap '[[ -n "$serve_pid" ]] && kill "$serve_pid" 2>/dev/null; rm -rf "$T"' EXIT INT TERM
D=$T/run

"$cmax" run --stage audit --harness standalone --out "$D" --json >/dev/null || true
[[ -f "$D/results.json" ]] || die "cmax run wrote no results.json"
python3 - "$D" "$nodes" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
r = json.load(open(f"{d}/results.json"))
base = r["findings"]
r["findings"] = [dict(f, id=f"{f['id']}@n{i:04d}") for i in range(n) for f in base]
json.dump(r, open(f"{d}/results.json", "w"), indent=1)
failing = [f["id"] for f in base if f.get("result") == "fail"]
count = lambda o: sum(1 for f in base if f.get("result") == o)
nodes = [{"node": f"n{i:04d}", "status": "ok" if i % 97 else "unreachable", "seconds": 0.6 + (i % 13) / 10,
          "findings": {"pass": count("pass"), "warn": count("warn"), "fail": count("fail"), "unverified": count("unverified")},
          "scan": {"ran": True, "incidents": i % 5, "actionable": i % 3, "worst_action": "reboot_node" if i % 3 else "monitor"},
          "failing": failing} for i in range(n)]
json.dump({"schema": "cmax.cluster/1", "harness": "slurm", "seconds": 4.2, "nodes": nodes, "cluster_findings": []},
          open(f"{d}/cluster.json", "w"), indent=1)
PY
"$cmax" nccl analyze --out "$D" tests/golden/nccl/*.txt >/dev/null 2>&1 || true
[[ -f "$D/nccl.json" ]] || die "cmax nccl analyze wrote no nccl.json"
"$build/bench/gen_kernel_log" "$T/kern.log" 200000000 7 2000 2>/dev/null
"$cmax" scan --json "$T/kern.log" >"$D/scan.json" || true
"$build/bench/gen_sla_events" "$T/events.csv" "$T/contract.json" 1000000 100000 1 2>/dev/null
"$cmax" sla --contract "$T/contract.json" --events-csv "$T/events.csv" --json >"$D/sla.json" || true
"$cmax" endpoint serve --listen 127.0.0.1:0 --time-scale 0 >"$T/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$T/serve.log" && break; sleep 0.1; done
url=$(grep -o 'http://127.0.0.1:[0-9]*' "$T/serve.log" | head -1)
[[ -n "$url" ]] || die "cmax endpoint serve did not start: $(cat "$T/serve.log")"
echo '{"schema":"cmax.prices/1","providers":{"bench":{"input_per_mtok":0.25,"cached_input_per_mtok":0.025,"output_per_mtok":1.0}}}' >"$T/prices.json"
"$cmax" endpoint bench --out "$D" --base-url "$url/v1" --provider bench --prices "$T/prices.json" --multiturn \
  --sessions 48 --turns 2 --concurrency 1,4,16 --requests-per-level 32 >/dev/null 2>&1 || die "cmax endpoint bench failed"
kill "$serve_pid"; serve_pid=""
cat >"$D/drill.json" <<'JSON'
{"schema": "cmax.drill/1", "drill_id": "b7e1", "scenario": "xid79", "title": "GPU fell off the bus", "expect": "reboot_node",
 "scheduler": "slurm", "nodes": [
  {"node": "n0001", "stages": [{"stage": "detected", "reached": true, "at_ms": 96.2, "lower_ms": 51.0, "verdict": "ok", "threshold_ms": 60000},
                               {"stage": "drained", "reached": true, "at_ms": 148.9, "lower_ms": 101.4, "verdict": "ok", "threshold_ms": 60000},
                               {"stage": "replaced", "reached": true, "at_ms": 1170.3, "lower_ms": 1118.0, "verdict": "ok", "how": "n0005 joined reservation drill"}]},
  {"node": "n0002", "stages": [{"stage": "detected", "reached": true, "at_ms": 101.1, "lower_ms": 57.3, "verdict": "ok", "threshold_ms": 60000},
                               {"stage": "drained", "reached": false, "verdict": "never", "threshold_ms": 10000}]}]}
JSON

[[ -n "${KEEP_DIR:-}" ]] && rm -rf "$KEEP_DIR" && cp -r "$D" "$KEEP_DIR"  # to profile by hand
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
now() { date +%s.%N; }
: >"$T/anchor.t"; : >"$T/cmax.t"
for ((i = 0; i < reps; i++)); do
  t0=$(now); "$cmax" score "$D" --json >/dev/null; t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$T/anchor.t"
  t0=$(now); "$cmax" report "$D" --json >"$T/report.json"; t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}' >>"$T/cmax.t"
done
an=$(median <"$T/anchor.t"); cm=$(median <"$T/cmax.t")
bytes=$(stat -c %s "$D/report.html")
charts=$(python3 -c "import json,sys; print(len(json.load(open('$T/report.json'))['charts']))")
inputs=$(du -sb "$D" | cut -f1)
ratio=$(awk -v a="$cm" -v b="$an" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
echo "run directory: $nodes nodes, $((inputs / 1000000)) MB of documents; page $((bytes / 1000)) KB, $charts charts"
printf "anchor  cmax score --json   median %.3f s\n" "$an"
printf "cmax    cmax report --json  median %.3f s   ratio %sx\n" "$cm" "$ratio"
awk -v c="$cm" 'BEGIN {exit !(c < 1.0)}' && { echo "goal < 1 s: met"; exit 0; }
echo "goal < 1 s: NOT met"; exit 1
