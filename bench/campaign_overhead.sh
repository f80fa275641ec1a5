#!/usr/bin/env bash
# The plan's own overhead in `cmax run` (issue 26: under 1 s on the six-node test cluster): the
# quick plan run by cmax run beside the same stage commands run one after another by hand (the
# anchor), medians of 3 in one test run. Needs the Slurm test cluster (scripts/setup-deps --test).
# Usage: bench/campaign_overhead.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ctest --test-dir "$build" -R 'Campaign.ThePlansOwnOverheadIsUnderOneSecond' --output-on-failure -V 2>&1 |
  grep -E 'measure|Passed|Failed|Skipped' | sed 's/^[0-9]*: //'
