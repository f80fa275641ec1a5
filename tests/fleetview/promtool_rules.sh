#!/bin/sh
# promtool over cmaxd's Prometheus rules (deploy/prometheus): `check` checks every rule file,
# `test` runs every unit test file. Exits 77 (CTest's skip) when promtool is not installed.
# Usage: promtool_rules.sh check|test [RULES_DIR]
set -u
mode=${1:?usage: promtool_rules.sh check|test [RULES_DIR]}
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not found on PATH (Debian: apt-get install prometheus)"
  exit 77
fi
dir=${2:-$(dirname "$0")/../../deploy/prometheus}
case $mode in
  check) set -- "$dir"/*.yaml ;;
  test) set -- "$dir"/tests/*.yaml ;;
  *) echo "usage: promtool_rules.sh check|test [RULES_DIR]" >&2; exit 2 ;;
esac
[ -e "$1" ] || { echo "FAIL: no files match $dir for promtool $mode"; exit 1; }
out=$(promtool "$mode" rules "$@" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
  echo "OK: promtool $mode rules passed on $# file(s) in $dir ($(promtool --version 2>&1 | head -n 1))"
else
  printf '%s\n' "$out"
  echo "FAIL: promtool $mode rules exited $rc on $# file(s) in $dir"
fi
exit $rc
