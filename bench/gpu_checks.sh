#!/usr/bin/env bash
# Builds cmax-gpucheck (apps/cmax-gpucheck, needs only the CUDA toolkit, cmake and a C++ compiler),
# runs it on every GPU, and prints markdown for docs/PERFORMANCE.md with nvidia-smi context.
# Bounded: each stage runs under `timeout`; no network.
#
# usage: bench/gpu_checks.sh [RESULT_DIR] [-- cmax-gpucheck flags...]
#   RESULT_DIR  where raw.json, gpucheck.log, nvidia-smi.txt and table.md go (default build-gpucheck/results)
#   env: BUILD_DIR (default build-gpucheck), RUN_TIMEOUT_S (default 420), BUILD_TIMEOUT_S (default 480)
set -uo pipefail

cd "$(dirname "$0")/.."
RESULT_DIR=${1:-build-gpucheck/results}
[[ $# -gt 0 ]] && shift
[[ ${1:-} == "--" ]] && shift
BUILD_DIR=${BUILD_DIR:-build-gpucheck}
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-420}
BUILD_TIMEOUT_S=${BUILD_TIMEOUT_S:-480}
mkdir -p "$RESULT_DIR"

if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
echo "== nvcc: $(nvcc --version 2>/dev/null | tail -n 2 | head -n 1)" >&2

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
start=$(date +%s)
if ! timeout 120 cmake -S apps/cmax-gpucheck -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
     >"$RESULT_DIR/build.log" 2>&1 ||
   ! timeout "$BUILD_TIMEOUT_S" cmake --build "$BUILD_DIR" -j "$(nproc)" >>"$RESULT_DIR/build.log" 2>&1; then
  echo "gpu_checks.sh: building cmax-gpucheck failed; see $RESULT_DIR/build.log" >&2
  tail -n 30 "$RESULT_DIR/build.log" >&2
  exit 1
fi
echo "== built cmax-gpucheck in $(( $(date +%s) - start )) s" >&2
BIN=$BUILD_DIR/cmax-gpucheck

{
  echo "## nvidia-smi --query-gpu"
  timeout 30 nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,ecc.mode.current --format=csv 2>&1
  echo "## nvidia-smi topo -m"
  timeout 30 nvidia-smi topo -m 2>&1
  echo "## nvidia-smi -q (selected lines)"
  timeout 60 nvidia-smi -q 2>&1 | grep -E "Product Name|Product Architecture|Driver Version|CUDA Version|Bus Id|Current *: *[0-9]+x?$|Max *: *[0-9]+x?$|Persistence Mode|Performance State|Clocks Event Reasons|Active|Remapped|Pending|Volatile|Aggregate" | head -n 200
} >"$RESULT_DIR/nvidia-smi.txt" 2>&1

start=$(date +%s)
timeout --kill-after=10 "$RUN_TIMEOUT_S" "$BIN" "$@" >"$RESULT_DIR/raw.json" 2>"$RESULT_DIR/gpucheck.log"
rc=$?
echo "== cmax-gpucheck exit $rc after $(( $(date +%s) - start )) s (0 ok, 2 no CUDA device, 3 CUDA broken, 124 timeout)" >&2

python3 - "$RESULT_DIR" "$rc" <<'PY' | tee "$RESULT_DIR/table.md"
import json, sys, datetime, collections
out, rc = sys.argv[1], sys.argv[2]
try:
    doc = json.load(open(f"{out}/raw.json"))
except Exception as e:
    print(f"cmax-gpucheck printed no JSON (exit {rc}): {e}; see {out}/gpucheck.log")
    sys.exit(0)
def num(step, key, fmt="{:.1f}"):
    if not step: return "-"
    if step.get("error"): return "error"
    v = step.get(key)
    return fmt.format(v) if isinstance(v, (int, float)) else "-"
print(f"cmax-gpucheck exit {rc}, status {doc.get('status')}, CUDA runtime {doc.get('runtime_version')}, "
      f"driver (CUDA) {doc.get('driver_version')}, {doc.get('program')}, settings {json.dumps(doc.get('settings'))}")
if doc.get("error"): print(f"error: {doc['error']}")
print()
date = datetime.date.today().isoformat()
print("| date | GPU | device | PCI | matmul TFLOP/s (best) | known answer | repeat | checksum | device copy GB/s | H2D GB/s | D2H GB/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
groups = collections.defaultdict(list)
for d in doc.get("devices", []):
    if d.get("error"):
        print(f"| {date} | gpu{d['index']} | error: {d['error']} | | | | | | | | |"); continue
    c = d.get("correctness") or {}
    kat = "error" if c.get("error") else (f"{c.get('kat_mismatches')}/{c.get('kat_elements')} differ" if c else "-")
    rep = "error" if c.get("error") else (f"{c.get('repeat_mismatches')}/{c.get('repeats')} differ" if c else "-")
    if c.get("checksum"): groups[(d["name"], d.get("compute_capability"))].append(c["checksum"])
    mm = d.get("matmul")
    print(f"| {date} | gpu{d['index']} | {d['name']} (cc {d.get('compute_capability')}, {d.get('sm_count')} SMs) | "
          f"{d.get('pci_bus_id')} | {num(mm,'tflops')} ({num(mm,'best_tflops')}) | {kat} | {rep} | "
          f"{c.get('checksum','-')} | {num(d.get('membw'),'gbps')} | {num(d.get('pcie_h2d'),'gbps')} | "
          f"{num(d.get('pcie_d2h'),'gbps')} |")
print()
for (name, cc), sums in groups.items():
    agree = len(set(sums)) == 1
    print(f"Checksum agreement, {name} (cc {cc}): {len(sums)} GPUs, {'all equal' if agree else 'DIFFER: ' + ', '.join(sums)}")
kats = {(d.get('correctness') or {}).get('kat_checksum') for d in doc.get('devices', []) if (d.get('correctness') or {}).get('kat_checksum')}
if kats: print(f"Known-answer checksum(s): {', '.join(sorted(kats))} (must be one value on every GPU and node)")
peers = doc.get("peers", [])
if peers:
    print()
    print("| pair | peer access | rank | GB/s (best) |")
    print("|---|---|---|---|")
    for p in peers:
        gb = "error: " + p["error"] if p.get("error") else (f"{p['gbps']:.1f} ({p.get('best_gbps',0):.1f})" if "gbps" in p else "-")
        print(f"| gpu{p['src']}->gpu{p['dst']} | {p.get('can_access')} | {p.get('performance_rank','-')} | {gb} |")
else:
    print("\nNo peer pairs (one GPU, or --steps without peer).")
PY
echo
echo "== nvidia-smi context ($RESULT_DIR/nvidia-smi.txt)"
head -n 40 "$RESULT_DIR/nvidia-smi.txt"
echo "== cmax-gpucheck stderr"
tail -n 40 "$RESULT_DIR/gpucheck.log"
exit 0
