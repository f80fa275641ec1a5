#!/usr/bin/env bash
# A rater's first hour on a trial cluster (issue 22), as the docs tell it and with no workaround
# flag: the cluster run on a reservation, a fault drill, its cleanup, SLA accounting from cmaxd's
# database, the node's kernel log, an endpoint benchmark on the Mooncake trace, the score and the
# report, all into one run directory.
#
# The caller provides a running Slurm cluster (SLURM_CONF exported; nodes n1..n4 in a REPLACE_DOWN
# reservation "train", spares beside it) and: CMAX, CMAXD (binaries), OUT (the run directory,
# absent or empty), TRACE (a Mooncake JSONL trace), CONTRACT (an SLA contract naming the nodes).
# tests/integration/test_rater_run.cpp (RaterRun.TheWholeSequenceFromOneScript) does.
# Exits non-zero at the first step that fails.
set -euo pipefail
: "${CMAX:?}" "${CMAXD:?}" "${OUT:?}" "${TRACE:?}" "${CONTRACT:?}" "${SLURM_CONF:?}"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '== %s\n' "$*"; }
# cmax run and cmax audit exit 1 or 2 for findings, 3 when they could not run.
allow_findings() { local rc=0; "$@" || rc=$?; [[ $rc -le 2 ]] || { echo "failed ($rc): $*" >&2; exit "$rc"; }; }

step "cluster run on the reservation"
allow_findings "$CMAX" run --stage audit --harness slurm --out "$OUT" > "$work/run.txt"
grep -q -- "--reservation=train" "$OUT/fanout.log"

step "cmaxd on n1 (the rater's detector)"
"$CMAXD" --node n1 --db "$work/cmaxd.db" --from-now --metrics-listen "" --no-nvml --no-ib \
  --fleet-max-percent 50 > "$work/cmaxd.log" 2>&1 &
pids+=($!)
sleep 0.5

step "drill"
"$CMAX" drill run --scenario xid79 --nodes n1 --yes --reservation train --out "$OUT" | tee "$work/drill.txt"

step "cleanup"
"$CMAX" drill cleanup --run "$OUT" --yes | tee "$work/cleanup.txt"
grep -q "reservation train: restored" "$work/cleanup.txt"

step "the node's kernel log after the drill"
rc=0; "$CMAX" scan --json > "$OUT/scan.json" || rc=$?
[[ $rc -le 1 ]]

step "SLA from cmaxd's database"
rc=0; "$CMAX" sla --contract "$CONTRACT" --cmaxd-db "$work/cmaxd.db" --drill "$OUT" --json > "$OUT/sla.json" || rc=$?
[[ $rc -eq 0 ]] || { echo "cmax sla owes a credit or a cancellation right ($rc): the drill counted as downtime" >&2; exit 1; }

step "endpoint bench on the Mooncake trace"
"$CMAX" endpoint serve --listen 127.0.0.1:0 --time-scale 0 > "$work/serve.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log" | head -1)
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$work/serve.log" >&2; exit 1; }
"$CMAX" endpoint bench "$TRACE" --base-url "http://127.0.0.1:$port/v1" --out "$OUT" | tee "$work/bench.txt"

step "score and report"
"$CMAX" score "$OUT"
"$CMAX" report "$OUT"
