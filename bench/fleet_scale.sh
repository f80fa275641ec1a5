#!/usr/bin/env bash
# cmaxd at fleet scale on the real control plane (issue 36): the FleetKwok tests of
# tests/kube/test_fleet_kwok.cpp at the large sizes. For each fleet size N (KWOK nodes on the tests'
# kube-apiserver v1.37 + etcd) and each burst K (real cmaxd processes faulting in the same instant):
# fault -> cordoned+tainted as a watch on the API server sees it (P50 / P99 / max), the API requests
# each drain cost (from the server's audit log), the CPU each drain cost the API server, etcd and the
# agent, the breaker at 1% under the burst, and the requests idle and holding agents send in a
# window. The anchor is NVIDIA NVSentinel's published KWOK scale test (PR #1789; it cannot run
# here: it needs its MongoDB and a cluster), printed in the same table.
# Usage: bench/fleet_scale.sh [NODES...]   (default: 1000 5000 10000)
#   BURSTS="10 100 200" IDLE_SECONDS=120 OUT=build/bench/fleet_scale
# Prints a markdown table; writes OUT/results.tsv and each run's log. Needs the tests built
# (cmake --build build --target kube_tests) and tests/kube/build_{server,kwok}.sh run.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/tests/kube_tests
[[ -x "$bin" ]] || { echo "fleet_scale: build the tests first (cmake --build build --target kube_tests)" >&2; exit 3; }
tests/kube/build_server.sh build/kube && tests/kube/build_kwok.sh build/kube
for f in build/kube/unavailable build/kube/kwok.unavailable; do
  [[ -s "$f" ]] && { echo "fleet_scale: cannot run: $(cat "$f")" >&2; exit 3; }
done
nodes=("$@")
[[ ${#nodes[@]} -gt 0 ]] || nodes=(1000 5000 10000)
read -r -a bursts <<<"${BURSTS:-10 100 200}"
idle=${IDLE_SECONDS:-120}
out=${OUT:-build/bench/fleet_scale}
mkdir -p "$out"
tsv="$out/results.tsv"
printf 'nodes\tburst\tlease_renew_s\tapi_bg_pct\tregister_s\tready_s\tp50_ms\tp99_ms\tmax_ms\treq_p50\treq_max\tapi_cpu_ms\tetcd_cpu_ms\tagent_cpu_ms\tapi_rss\tetcd_rss\tkwok_rss\tagent_rss\tlimit\tdrained\trefused\tmax_held\tidle_agents\tidle_requests\tidle_window_s\n' >"$tsv"

source bench/measure_lib.sh

for n in "${nodes[@]}"; do
  for k in "${bursts[@]}"; do
    log="$out/run-$n-$k.log"
    echo "fleet_scale: $n KWOK nodes, $k agents at once (log $log)" >&2
    t0=$(date +%s)
    # Node Leases renewed at about 40 writes a second whatever the size (the kubelet's 10 s period
    # would be 1,000 a second at 10,000 nodes, more than two cores carry beside the measurement).
    lease=$(( n / 10 > 240 ? n / 10 : 240 ))
    CMAX_FLEET_NODES=$n CMAX_FLEET_BURST=$k CMAX_FLEET_IDLE_SECONDS=$idle CMAX_FLEET_LEASE_SECONDS=$lease \
      timeout 3000 "$bin" --gtest_filter='FleetKwok.*' >"$log" 2>&1
    rc=$?
    fleet=$(grep -m1 'KWOK fleet:' "$log")
    burst=$(grep -m1 'faulted at once' "$log")
    breaker=$(grep -m1 'breaker, ' "$log")
    idle_line=$(grep -m1 'holding, ' "$log")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$k" \
      "$(num 'renewed every [0-9]+' "$fleet")" "$(num 'background kube-apiserver [0-9]+' "$burst")" \
      "$(num 'registered in [0-9.]+' "$fleet")" "$(num '\) [0-9.]+ s later' "$fleet")" \
      "$(num 'P50 [0-9.]+' "$burst")" "$(num 'P99 [0-9.]+' "$burst")" "$(num 'max [0-9.]+ ms' "$burst")" \
      "$(num 'drain P50 [0-9.]+' "$burst")" "$(num 'max [0-9]+; CPU' "$burst")" \
      "$(num 'off\) kube-apiserver [0-9.]+ ms' "$burst")" "$(num 'etcd [0-9.]+ ms' "$burst")" "$(num 'cmaxd [0-9.]+ ms' "$burst")" \
      "$(num 'RSS kube-apiserver [0-9.]+' "$burst")" "$(num 'etcd [0-9.]+ MiB' "$burst")" "$(num 'KWOK [0-9.]+' "$burst")" \
      "$(num 'one cmaxd [0-9.]+' "$burst")" \
      "$(num 'limit 1% \([0-9]+' "$breaker")" "$(num '[0-9]+ drained' "$breaker")" "$(num '[0-9]+ refused' "$breaker")" \
      "$(num 'moment [0-9]+' "$breaker")" \
      "$(num '^[^0-9]*[0-9]+ agents' "$idle_line")" "$(num '[0-9]+ requests in' "$idle_line")" "$idle" >>"$tsv"
    echo "fleet_scale: done in $(( $(date +%s) - t0 )) s (exit $rc); $(grep -cE '^\[       OK' "$log") passed, $(grep -cE '^\[  FAILED  \] Fleet' "$log") failed" >&2
  done
done

echo
echo "| nodes (Lease renewal) | agents at once | fault -> cordoned P50 / P99 / max (ms) | API requests per drain (P50 / max) | CPU per drain: apiserver / etcd / cmaxd (ms) | breaker 1%: limit, drained, refused, most held | idle+holding agents: requests in window |"
echo "|---:|---:|---|---|---|---|---|"
tail -n +2 "$tsv" | while IFS=$'\t' read -r n k renew bg reg ready p50 p99 max rq rqm api etcd ag arss erss krss crss lim dr rf mh ia ir iw; do
  echo "| $n (${renew} s; apiserver busy ${bg}% idle) | $k | $p50 / $p99 / $max | $rq / $rqm | $api / $etcd / $ag | $lim, $dr, $rf, $mh | $ir in $iw s ($ia agents) |"
done
echo "| NVSentinel (PR #1789, KWOK) 50,000 | 200-node burst | event -> cordon P50 26 / P99 165 | n/a | n/a | n/a | n/a |"
echo
echo "Fleet setup per size (register Nodes / KWOK Ready; RSS kube-apiserver, etcd, KWOK, one cmaxd, MiB):"
tail -n +2 "$tsv" | awk -F'\t' '!seen[$1]++ {printf "- %s nodes: %s s / %s s; %s, %s, %s, %s\n", $1, $5, $6, $15, $16, $17, $18}'
