#!/usr/bin/env bash
# Installs the CUDA toolkit pieces and NCCL that the GPU programs build with (cmax-gpucheck, the
# NCCL backend of cmax-collbench), as pinned PyPI wheels in a virtual environment under the build
# tree, so that a machine with no CUDA toolkit still compiles and link-tests every line of GPU code.
# cmake/cmax_cuda.cmake finds them there (after a caller's or a system toolkit). No GPU is needed.
#   tests/gpu/setup_cuda_wheels.sh VENV_DIR
# Idempotent: an environment that already holds the pins is left alone; it is the cache (577 MB
# installed from about 260 MB of wheels; 6.5 s here from PyPI). When they cannot be installed (no python3-venv, no PyPI) it
# says so in one line and exits 0: the configure step then says the GPU programs are not built and
# the GpuBuild tests skip with that line.
set -uo pipefail
venv=${1:?usage: setup_cuda_wheels.sh VENV_DIR}
# nvcc and ptxas, cudart (shared and static) with its headers, libcu++/CCCL headers (nv/target,
# cuda/std: CUDA 13's cuda_fp16.h needs them; CCCL 3.5 is CUDA 13.5's), the NVVM/crt pieces nvcc
# pulls in by dependency, and NCCL 2.32 for CUDA 13.
pins=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6 nvidia-nccl-cu13==2.32.6)
stamp="$venv/.cmax-pins"
if [[ -f "$stamp" && "$(cat "$stamp")" == "${pins[*]}" ]] && compgen -G "$venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc" >/dev/null; then
  exit 0
fi
start=$(date +%s)
python=${PYTHON:-python3}
if ! "$python" -m venv --clear "$venv" >/dev/null 2>&1; then
  echo "setup_cuda_wheels: cannot create a virtual environment with $python (install python3-venv); the GPU programs will not be built and the GpuBuild tests skip"
  rm -rf "$venv"
  exit 0
fi
if ! timeout 900 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
     --no-input "${pins[@]}" >"$venv.log" 2>&1; then
  echo "setup_cuda_wheels: pip install ${pins[*]} failed ($(tail -1 "$venv.log")); the GPU programs will not be built and the GpuBuild tests skip"
  rm -rf "$venv"
  exit 0
fi
echo "${pins[*]}" >"$stamp"
size=$(du -sm "$venv" | cut -f1)
echo "setup_cuda_wheels: ${pins[*]} installed in $venv (${size} MB) in $(( $(date +%s) - start )) s"
