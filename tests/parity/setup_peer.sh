#!/usr/bin/env bash
# Installs the peer the parity test runs beside cmax: the SemiAnalysis ClusterMAX CLI from PyPI,
# pinned, in a virtual environment under the build tree. Idempotent. When it cannot be installed
# (no python3-venv, no network to PyPI) it says so in one line and exits 0: the parity test then
# skips, and the unit tests' fixture expectations stand without it.
#   tests/parity/setup_peer.sh VENV_DIR
exec "$(dirname "$0")/../support/setup_pip_venv.sh" "${1:?usage: setup_peer.sh VENV_DIR}" clustermax 0.2.1 "the parity test"
