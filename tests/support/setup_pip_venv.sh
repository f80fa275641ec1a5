#!/usr/bin/env bash
# Installs one pinned PyPI package in a virtual environment under the build tree, for a test that
# runs a peer tool (the ClusterMAX CLI, a router). Idempotent: an environment that already holds the
# pin is left alone. When it cannot be installed (no python3-venv, no PyPI) it says so in one line,
# naming the tests that will skip, and exits 0.
#   tests/support/setup_pip_venv.sh VENV_DIR PACKAGE VERSION WHO_SKIPS
set -uo pipefail
venv=${1:?usage: setup_pip_venv.sh VENV_DIR PACKAGE VERSION WHO_SKIPS}
package=${2:?package}
version=${3:?version}
who=${4:-the tests that use it}
pin="$package==$version"
name=$(basename "$0" .sh)
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('$package') == '$version'" 2>/dev/null; then
  exit 0
fi
python=${PYTHON:-python3}
if ! "$python" -m venv --clear "$venv" >/dev/null 2>&1; then
  echo "$name: cannot create a virtual environment with $python (install python3-venv); $who will skip"
  rm -rf "$venv"
  exit 0
fi
if ! timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$pin" >"$venv.log" 2>&1; then
  echo "$name: pip install $pin failed ($(tail -1 "$venv.log")); $who will skip"
  rm -rf "$venv"
  exit 0
fi
echo "$name: $pin installed in $venv"
