#!/usr/bin/env bash
# cmax on Slurm at fleet scale (issue 36): the FleetSlurm tests of
# tests/integration/test_fleet_slurm.cpp at the large sizes. For each node count (Debian's slurmd
# started once per node on this machine, under one slurmctld): how long the cluster takes to come
# up; `cmax run --stage audit` and `cmax check --submit --wait` (storage, small) wall time and per
# node; a burst of real cmaxd on a quarter of the nodes with the breaker's license at 10%: drained,
# refused, the most held at any moment, slurmctld RPCs per decision (sdiag).
# Usage: bench/fleet_scale_slurm.sh [NODES...]   (default: 64 128 256)   OUT=build/bench/fleet_scale_slurm
# Prints a markdown table; writes OUT/results.tsv and each run's log.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/tests/integration_tests
[[ -x "$bin" ]] || { echo "fleet_scale_slurm: build the tests first (cmake --build build --target integration_tests)" >&2; exit 3; }
nodes=("$@")
[[ ${#nodes[@]} -gt 0 ]] || nodes=(64 128 256)
out=${OUT:-build/bench/fleet_scale_slurm}
mkdir -p "$out"
tsv="$out/results.tsv"
printf 'nodes\tup_s\taudit_s\taudit_ms_node\taudit_ok\tchecks_s\tchecks_ms_node\tburst\tlimit\tdrained\trefused\tdecided_s\tmost_held\trpcs\trpc_per_decision\n' >"$tsv"

source bench/measure_lib.sh

for n in "${nodes[@]}"; do
  log="$out/run-$n.log"
  echo "fleet_scale_slurm: $n slurmd (log $log)" >&2
  t0=$(date +%s)
  CMAX_FLEET_SLURMD=$n CMAX_FLEET_CHECKS=1 timeout 3000 "$bin" --gtest_filter='FleetSlurm.*' >"$log" 2>&1
  rc=$?
  b=$(grep -m1 'agents at once, limit' "$log")
  a=$(grep -m1 'stage audit' "$log")
  c=$(grep -m1 'check --submit --wait' "$log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" \
    "$(num 'up in [0-9.]+' "$b")" "$(num 'audit [0-9.]+ s' "$a")" "$(num '\([0-9]+ ms a node' "$a")" "$(num '[0-9]+ nodes ok' "$a")" \
    "$(num 'wait [0-9.]+ s' "$c")" "$(num '\([0-9]+ ms a node' "$c")" \
    "$(num '; [0-9]+ agents at once' "$b")" "$(num 'limit [0-9]+' "$b")" "$(num '[0-9]+ drained' "$b")" \
    "$(num '[0-9]+ refused' "$b")" "$(num 'in [0-9.]+ s, most' "$b")" "$(num 'moment [0-9]+' "$b")" \
    "$(num 'RPCs [0-9]+' "$b")" "$(num '\([0-9.]+ per decision' "$b")" >>"$tsv"
  echo "fleet_scale_slurm: done in $(( $(date +%s) - t0 )) s (exit $rc)" >&2
done

echo
echo "| slurmd | up (s) | cmax run --stage audit: s (ms a node), nodes ok | cmax check --submit --wait: s (ms a node) | cmaxd burst: agents, limit, drained, refused, decided in (s), most held | slurmctld RPCs (per decision) |"
echo "|---:|---:|---|---|---|---|"
tail -n +2 "$tsv" | while IFS=$'\t' read -r n up as am ao cs cm bu li dr rf ds mh rp rpd; do
  echo "| $n | $up | $as ($am), $ao | $cs ($cm) | $bu, $li, $dr, $rf, $ds, $mh | $rp ($rpd) |"
done
