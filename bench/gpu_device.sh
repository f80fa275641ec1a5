#!/usr/bin/env bash
# One command on a lent GPU machine (it has a driver and usually a CUDA toolkit; nothing outside it
# can be reached): builds what it needs, captures what the NVIDIA tools print, runs cmax's audit and
# active GPU checks, cmax-gpucheck, cmax-collbench all_reduce with NCCL on the local GPUs and
# `cmax nccl analyze` of that output, and writes one JSON (gpu_device.json, schema cmax.gpu_device/1)
# and a short text summary (summary.txt) under OUT. Every step is bounded by `timeout`; a step that
# cannot run says why and the next one runs. The whole script stays inside 8 minutes by default.
#
# usage: bench/gpu_device.sh [--dry-run] [--out DIR] [--build-dir DIR] [--budget-s N]
#   --dry-run      print every step (its command line and time limit) and run nothing; exit 0
#   --out DIR      where everything goes (default $OUT when set, else build-device/out)
#   --build-dir D  the build tree (default build-device; a tree carried from another machine is reused)
#   --budget-s N   the whole run's limit in seconds (default 470: 8 minutes less a margin)
# Exit: 0 every step ran (failed checks are findings inside the JSON, not a script failure);
#       1 a step could not run (see summary.txt); 2 usage.
set -uo pipefail
cd "$(dirname "$0")/.."

dry_run=0
out=${OUT:-build-device/out}
build=build-device
budget_s=470
while [[ $# -gt 0 ]]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --out) out=${2:?--out needs a directory}; shift ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift ;;
    --budget-s) budget_s=${2:?--budget-s needs seconds}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "gpu_device.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

start_all=$SECONDS
steps_tsv=$out/steps.tsv
if [[ $dry_run -eq 0 ]]; then
  mkdir -p "$out/tools"
  : >"$steps_tsv"
fi
failed_to_run=0

# step NAME LIMIT_S OUTFILE -- argv...   Runs argv under timeout with stdout to OUTFILE and stderr
# to OUTFILE.err; records name, exit code, seconds. Never stops the script. A dry run prints it.
step() {
  local name=$1 limit=$2 file=$3
  shift 4
  local left=$((budget_s - (SECONDS - start_all)))
  if [[ $dry_run -eq 1 ]]; then
    printf 'step %-16s limit %4ss  > %-28s %s\n' "$name" "$limit" "${file#"$out"/}" "$*"
    return 0
  fi
  if [[ $left -lt 10 ]]; then
    printf '%s\t%s\t%s\t%s\n' "$name" "skipped" 0 "the run's budget of ${budget_s} s is spent" >>"$steps_tsv"
    return 0
  fi
  [[ $limit -gt $left ]] && limit=$left
  local t0=$SECONDS rc
  echo "== $name (limit ${limit} s)" >&2
  timeout --kill-after=5 "$limit" "$@" >"$file" 2>"$file.err"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$*" >>"$steps_tsv"
  echo "   exit $rc after $((SECONDS - t0)) s" >&2
  return 0
}

# skip NAME WHY: a step that does not apply here, recorded with its reason.
skip() {
  if [[ $dry_run -eq 1 ]]; then
    printf 'step %-16s (only when %s)\n' "$1" "$2"
    return 0
  fi
  printf '%s\t%s\t%s\t%s\n' "$1" "skipped" 0 "$2" >>"$steps_tsv"
  echo "== $1: skipped ($2)" >&2
}

[[ -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null && export PATH=/usr/local/cuda/bin:$PATH
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc 2>/dev/null || echo 4)

# 1. Build: the whole project when its Debian dependencies are here (a GPU image often lacks them),
#    else cmax-gpucheck alone (it needs only the toolkit). The architectures: this GPU's only,
#    from nvidia-smi, to keep the build short; the full list is built by scripts/test.
arch=""
if [[ $dry_run -eq 0 ]] && command -v nvidia-smi >/dev/null; then
  cc=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  [[ $cc =~ ^[0-9]+$ ]] && arch="-DCMAX_CUDA_ARCHITECTURES=${cc}-real"
fi
if [[ -f $build/CMakeCache.txt ]]; then
  # A tree configured before (or carried here): its settings stand.
  step configure 120 "$out/build-configure.log" -- cmake -S . -B "$build" ${arch:+"$arch"}
else
  step configure 120 "$out/build-configure.log" -- cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAX_BUILD_TESTS=OFF -DCMAX_BUILD_BENCH=OFF ${arch:+"$arch"}
fi
step build 300 "$out/build.log" -- cmake --build "$build" --target cmax cmax-gpucheck cmax-collbench -j "$jobs"
cmax=$build/apps/cmax/cmax
gpucheck=$build/apps/cmax-gpucheck/cmax-gpucheck
collbench=$build/apps/cmax-collbench/cmax-collbench
if [[ $dry_run -eq 1 ]]; then
  skip build_gpucheck "the project does not configure here: cmake -S apps/cmax-gpucheck, the toolkit alone"
elif [[ ! -x $gpucheck ]]; then
  # The project did not configure (missing Debian packages): cmax-gpucheck on its own.
  step configure_gpucheck 60 "$out/build-gpucheck-configure.log" -- cmake -S apps/cmax-gpucheck -B "$build/gpucheck" \
    "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${arch:+"$arch"}
  step build_gpucheck 240 "$out/build-gpucheck.log" -- cmake --build "$build/gpucheck" -j "$jobs"
  gpucheck=$build/gpucheck/cmax-gpucheck
fi

# 2. What the NVIDIA tools print (cmax judges these too: cmax check --gpu-tool-output).
if [[ $dry_run -eq 1 ]] || command -v nvidia-smi >/dev/null; then
  step nvidia_smi_xml 60 "$out/tools/nvidia-smi-q.xml" -- nvidia-smi -q -x
  step nvidia_smi_csv 30 "$out/tools/nvidia-smi-query-gpu.csv" -- nvidia-smi \
    --query-gpu=index,name,pci.bus_id,driver_version,pstate,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active,ecc.errors.uncorrected.volatile.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,compute_cap \
    --format=csv
  step nvidia_smi_topo 30 "$out/tools/nvidia-smi-topo-m.txt" -- nvidia-smi topo -m
else
  skip nvidia_smi "nvidia-smi is on PATH"
fi
if [[ $dry_run -eq 1 ]] || command -v dcgmi >/dev/null; then
  step dcgmi_diag 150 "$out/tools/dcgmi-diag-r1.json" -- dcgmi diag -r 1 -j
else
  skip dcgmi_diag "dcgmi (DCGM) is installed"
fi
if [[ $dry_run -eq 1 ]] || command -v nvbandwidth >/dev/null; then
  step nvbandwidth 120 "$out/tools/nvbandwidth.json" -- nvbandwidth -j -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_to_device_memcpy_read_ce
else
  skip nvbandwidth "nvbandwidth is installed"
fi

# 3. cmax: the read-only audit, then the active GPU checks (cmax-gpucheck run and judged by cmax),
#    with the tool outputs above judged beside them.
tool_args=()
for f in "$out/tools/nvidia-smi-q.xml" "$out/tools/nvidia-smi-topo-m.txt" "$out/tools/dcgmi-diag-r1.json" "$out/tools/nvbandwidth.json"; do
  if [[ $dry_run -eq 1 || -s $f ]]; then tool_args+=(--gpu-tool-output "$f"); fi
done
if [[ $dry_run -eq 1 || -x $cmax ]]; then
  step audit 120 "$out/audit.json" -- "$cmax" audit --json
  step check_gpu 240 "$out/check.json" -- "$cmax" check --active --checks gpu --json "${tool_args[@]}"
else
  skip audit "cmax built (see $out/build.log)"
  skip check_gpu "cmax built (see $out/build.log)"
fi

# 4. cmax-gpucheck on its own: the raw numbers, as docs/PERFORMANCE.md records them.
if [[ $dry_run -eq 1 || -x $gpucheck ]]; then
  step gpucheck 180 "$out/gpucheck.json" -- "$gpucheck"
else
  skip gpucheck "cmax-gpucheck built (see $out/build.log)"
fi

# 5. all_reduce with NCCL on every local GPU, one rank per GPU (mpirun when there is more than one),
#    8 B to 1 GiB; then cmax's analysis of that output.
ngpu=1
if [[ $dry_run -eq 0 ]] && command -v nvidia-smi >/dev/null; then
  ngpu=$(timeout 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || echo 1)
  [[ $ngpu -lt 1 ]] && ngpu=1
fi
bench=("$collbench" --backend nccl --op all_reduce -b 8 -e 1G -f 2 -n 20 -w 5)
if [[ $dry_run -eq 1 || -x $collbench ]]; then
  if [[ $ngpu -gt 1 ]]; then
    step collbench 150 "$out/all_reduce.log" -- mpirun --allow-run-as-root -np "$ngpu" --bind-to none "${bench[@]}"
  else
    step collbench 150 "$out/all_reduce.log" -- "${bench[@]}"
  fi
  if [[ $dry_run -eq 1 || -x $cmax ]]; then
    step nccl_analyze 60 "$out/nccl-analyze.json" -- "$cmax" nccl analyze --json --out "$out/nccl" "$out/all_reduce.log"
  fi
else
  skip collbench "cmax-collbench built with its NCCL backend (MPI and NCCL found; see $out/build.log)"
fi

if [[ $dry_run -eq 1 ]]; then
  echo "dry run: nothing was run; the summary would go to $out/gpu_device.json and $out/summary.txt"
  exit 0
fi

# 6. One JSON and a short summary (python3 is on every CUDA image; without it the TSV stays).
python3 - "$out" "$((SECONDS - start_all))" "$budget_s" <<'PY' || { echo "gpu_device.sh: python3 missing; the steps are in $steps_tsv" >&2; }
import json, os, socket, sys
out, wall, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name):
    try:
        with open(os.path.join(out, name)) as f: return json.load(f)
    except Exception as e: return None
steps = []
for line in open(os.path.join(out, "steps.tsv")):
    name, rc, secs, what = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    steps.append({"name": name, "exit": int(rc) if rc.lstrip("-").isdigit() else None,
                  "status": "skipped" if rc == "skipped" else ("ok" if rc == "0" else "exit " + rc),
                  "seconds": int(secs or 0), "command": what})
doc = {"schema": "cmax.gpu_device/1", "host": socket.gethostname(), "wall_s": wall, "budget_s": budget,
       "steps": steps}
raw = load("gpucheck.json")
if raw:
    doc["gpucheck"] = {"status": raw.get("status"), "error": raw.get("error"), "runtime": raw.get("runtime_version"),
                       "driver": raw.get("driver_version"),
                       "devices": [{k: d.get(k) for k in ("index", "name", "pci_bus_id", "compute_capability")} |
                                   {s: (d.get(s) or {}).get("tflops", (d.get(s) or {}).get("gbps", (d.get(s) or {}).get("error")))
                                    for s in ("matmul", "membw", "pcie_h2d", "pcie_d2h")} |
                                   {"correctness": {k: (d.get("correctness") or {}).get(k) for k in ("kat_mismatches", "repeat_mismatches", "checksum")}}
                                   for d in raw.get("devices", [])]}
check = load("check.json")
if check:
    doc["check"] = [{k: r.get(k) for k in ("id", "target", "outcome", "summary", "reason")} for r in check.get("results", [])]
audit = load("audit.json")
if audit:
    counts = {}
    for r in audit.get("results", audit.get("findings", [])):
        counts[r.get("outcome", "?")] = counts.get(r.get("outcome", "?"), 0) + 1
    doc["audit"] = counts
nccl = load("nccl-analyze.json")
if nccl:
    doc["nccl"] = [{k: r.get(k) for k in ("collective", "ranks", "verdict", "peak_busbw_gbps", "avg_busbw_gbps")} for r in nccl.get("runs", [])]
with open(os.path.join(out, "gpu_device.json"), "w") as f: json.dump(doc, f, indent=2)
lines = [f"gpu_device.sh on {doc['host']}: {wall} s of {budget} s"]
for s in steps: lines.append(f"  {s['name']:<16} {s['status']:<8} {s['seconds']:>4} s")
for d in doc.get("gpucheck", {}).get("devices", []):
    lines.append(f"  gpu{d['index']} {d['name']} cc {d['compute_capability']}: matmul {d['matmul']} TFLOP/s, membw {d['membw']} GB/s, "
                 f"H2D {d['pcie_h2d']} D2H {d['pcie_d2h']} GB/s, known-answer mismatches {d['correctness']['kat_mismatches']}")
for r in doc.get("check", []):
    lines.append(f"  {r['id']:<18} {r.get('target') or '':<12} {r['outcome']:<15} {r.get('summary') or r.get('reason') or ''}")
for r in doc.get("nccl", []):
    lines.append(f"  nccl {r['collective']} x{r['ranks']}: {r['verdict']}, peak {r['peak_busbw_gbps']} GB/s busbw")
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
grep -q $'\tskipped\t.*budget' "$steps_tsv" && failed_to_run=1
awk -F'\t' '$1 ~ /^(build|configure)$/ && $2 != 0 {bad=1} END {exit bad ? 0 : 1}' "$steps_tsv" && failed_to_run=1
exit $failed_to_run
