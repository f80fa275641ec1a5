#!/usr/bin/env bash
# Installs the real router the RealRouter tests put in front of `cmax endpoint serve` workers: smg
# (Shepherd Model Gateway, the SGLang router's successor; a Rust wheel) from PyPI, pinned, in a
# virtual environment under the build tree. Skips in one line when it cannot (see the helper).
#   tests/router/setup_smg.sh VENV_DIR
exec "$(dirname "$0")/../support/setup_pip_venv.sh" "${1:?usage: setup_smg.sh VENV_DIR}" smg 1.13.0 "the RealRouter tests"
