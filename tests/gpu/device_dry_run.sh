#!/usr/bin/env bash
# bench/gpu_device.sh --dry-run shows every step it would take on a GPU machine and runs none: each
# step named below must be listed with its command, nothing may be written but the listing, exit 0.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
listing=$("$root/bench/gpu_device.sh" --dry-run --out "$out/run") || { echo "FAIL: --dry-run exited $?"; exit 1; }
echo "$listing"
bad=0
for s in configure build build_gpucheck nvidia_smi_xml nvidia_smi_csv nvidia_smi_topo dcgmi_diag nvbandwidth audit check_gpu gpucheck collbench nccl_analyze; do
  grep -qE "^step $s " <<<"$listing" || { echo "FAIL: step $s is not listed"; bad=1; }
done
grep -q "cmax check --active --checks gpu --json --gpu-tool-output" <<<"$listing" || { echo "FAIL: the GPU check does not judge the tool outputs"; bad=1; }
grep -q -- "--backend nccl --op all_reduce" <<<"$listing" || { echo "FAIL: no NCCL all_reduce"; bad=1; }
[[ -e $out/run ]] && { echo "FAIL: a dry run wrote $out/run"; bad=1; }
exit $bad
