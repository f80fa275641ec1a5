#!/usr/bin/env bash
# Installs the peer the parity test runs beside cmax: the SemiAnalysis ClusterMAX CLI from PyPI,
# pinned, in a virtual environment under the build tree. Idempotent. When it cannot be installed
# (no python3-venv, no network to PyPI) it says so in one line and exits 0: the parity test then
# skips, and the unit tests' fixture expectations stand without it.
#   tests/parity/setup_peer.sh VENV_DIR
set -uo pipefail
venv=${1:?usage: setup_peer.sh VENV_DIR}
pin="clustermax==0.2.1"
if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('clustermax') == '0.2.1'" 2>/dev/null; then
  exit 0
fi
python=${PYTHON:-python3}
if ! "$python" -m venv --clear "$venv" >/dev/null 2>&1; then
  echo "setup_peer: cannot create a virtual environment with $python (install python3-venv); the parity test will skip"
  rm -rf "$venv"
  exit 0
fi
if ! timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$pin" >"$venv.log" 2>&1; then
  echo "setup_peer: pip install $pin failed ($(tail -1 "$venv.log")); the parity test will skip"
  rm -rf "$venv"
  exit 0
fi
echo "setup_peer: $pin installed in $venv"
