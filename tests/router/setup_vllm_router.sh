#!/usr/bin/env bash
# Installs vllm-router (vLLM's Rust router) from PyPI, pinned, in a virtual environment under the
# build tree, for the RealRouter tests. Skips in one line when it cannot (see the helper).
#   tests/router/setup_vllm_router.sh VENV_DIR
exec "$(dirname "$0")/../support/setup_pip_venv.sh" "${1:?usage: setup_vllm_router.sh VENV_DIR}" vllm-router 0.1.17 "the RealRouter vllm-router test"
