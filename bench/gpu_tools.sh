#!/usr/bin/env bash
# Reading an N-GPU `nvidia-smi -q -x` (a real A100 fixture's <gpu> block repeated under new bus ids):
# cmax's parser and judge (build/bench/bench_gpu_tools) beside the anchor, Python's xml.etree
# (C-accelerated expat; what Python GPU exporters read the same document with), in the same run.
# Medians of 7. Prints one markdown table for docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=build/bench/bench_gpu_tools
[[ -x $bench ]] || { echo "build bench_gpu_tools first: cmake --build build --target bench_gpu_tools" >&2; exit 2; }
json=$($bench --benchmark_filter=SmiXml --benchmark_repetitions=7 --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null)
python3 - "$json" <<'PY'
import json, re, statistics, sys, time, xml.etree.ElementTree as ET
doc = open("tests/golden/gpu_tools/nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml").read()
b = doc.index("    <gpu id="); e = doc.index("</gpu>", b) + 7
block = doc[b:e]
ours = {}
for r in json.loads(sys.argv[1])["benchmarks"]:
    if r.get("aggregate_name") == "median":
        ours[int(r["run_name"].split("/")[1])] = r["real_time"] / 1e6 if r["time_unit"] == "ns" else r["real_time"]
print("| GPUs | bytes | cmax parse + judge, ms | Python xml.etree parse only, ms | ratio |")
print("|---|---|---|---|---|")
for n in (1, 8, 72):
    text = doc[:b] + "".join(block.replace("00000000:01:00.0", "00000000:%02X:00.0" % (i + 1)) for i in range(n)) + doc[e:]
    runs = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(20): ET.fromstring(text.encode())
        runs.append((time.perf_counter() - t) / 20 * 1000)
    py = statistics.median(runs)
    print(f"| {n} | {len(text):,} | {ours[n]:.3f} | {py:.3f} | {ours[n] / py:.2f} |")
PY
