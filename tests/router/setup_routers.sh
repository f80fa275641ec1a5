#!/usr/bin/env bash
# Installs both routers the RealRouter tests use (each skips in one line when it cannot).
#   tests/router/setup_routers.sh PEERS_DIR   (venvs PEERS_DIR/smg and PEERS_DIR/vllm-router)
here=$(dirname "$0")
peers=${1:?usage: setup_routers.sh PEERS_DIR}
"$here/setup_smg.sh" "$peers/smg"
"$here/setup_vllm_router.sh" "$peers/vllm-router"
