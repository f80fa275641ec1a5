#!/usr/bin/env bash
# Installs the real router the RealRouter tests put in front of `cmax endpoint serve` workers: smg
# (Shepherd Model Gateway, the SGLang router's successor; a Rust wheel) from PyPI, pinned, in a
# virtual environment under the build tree. Idempotent. When it cannot be installed (no
# python3-venv, no PyPI) it says so in one line and exits 0: the RealRouter tests then skip.
#   tests/router/setup_smg.sh VENV_DIR
set -uo pipefail
venv=${1:?usage: setup_smg.sh VENV_DIR}
pin="smg==1.13.0"
if [[ -x "$venv/bin/smg" ]] && "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('smg') == '1.13.0'" 2>/dev/null; then
  exit 0
fi
python=${PYTHON:-python3}
if ! "$python" -m venv --clear "$venv" >/dev/null 2>&1; then
  echo "setup_smg: cannot create a virtual environment with $python (install python3-venv); the RealRouter tests will skip"
  rm -rf "$venv"
  exit 0
fi
if ! timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$pin" >"$venv.log" 2>&1; then
  echo "setup_smg: pip install $pin failed ($(tail -1 "$venv.log")); the RealRouter tests will skip"
  rm -rf "$venv"
  exit 0
fi
echo "setup_smg: $pin installed in $venv"
