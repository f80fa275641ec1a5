# Where the CUDA toolkit and NCCL come from, for the GPU programs (apps/cmax-gpucheck, the NCCL
# backend of apps/cmax-collbench). Included by both, and by apps/cmax-gpucheck as a project of its own.
#
# In this order, the first that exists wins:
#   1. the caller's choice: -DCMAKE_CUDA_COMPILER=... or CUDACXX (and CUDAToolkit_ROOT);
#   2. a system toolkit: nvcc under CUDA_HOME, CUDA_PATH, /usr/local/cuda, or on PATH;
#   3. the pinned PyPI wheels that scripts/test installs under the build tree
#      (tests/gpu/setup_cuda_wheels.sh; CMAX_CUDA_WHEELS, default <build>/cuda-wheels).
# A machine with /usr/local/cuda keeps using it. When none exists the configure step says so in one
# line (never a silent skip) and the GPU programs are not built.
#
# Sets, in the including scope:
#   CMAX_CUDA_FOUND        TRUE when an nvcc was found
#   CMAX_CUDA_ORIGIN       "toolkit <root>" or "wheels <dir>"
#   CMAX_CUDA_ROOT         the toolkit root (bin/nvcc, include, lib)
#   CMAX_CUDA_NVCC         the nvcc path (also exported as CUDACXX for check_language)
#   CMAX_NCCL_INCLUDE_DIR / CMAX_NCCL_LIBRARY   NCCL, when found (the wheel has only libnccl.so.2)
#   CMAX_CUDA_EXTRA_INCLUDE_DIRS  include/cccl where the toolkit keeps libcu++ apart (wheels)
#   target cmax_cudart_static     the static CUDA runtime and its headers
include_guard(DIRECTORY)
find_package(Threads REQUIRED)

set(CMAX_CUDA_WHEELS "${CMAKE_BINARY_DIR}/cuda-wheels" CACHE PATH
    "A virtual environment holding the nvidia-cuda-* and nvidia-nccl-cu13 wheels (tests/gpu/setup_cuda_wheels.sh)")

set(CMAX_CUDA_FOUND FALSE)
set(CMAX_CUDA_ORIGIN "")
set(CMAX_CUDA_ROOT "")
set(CMAX_CUDA_NVCC "")
set(_cmax_nccl_hints "")

# A compiler cached by an earlier configure that found none (NOTFOUND), or whose file is gone (the
# wheels were removed), is searched again rather than trusted.
if(DEFINED CMAKE_CUDA_COMPILER AND (NOT CMAKE_CUDA_COMPILER OR NOT EXISTS "${CMAKE_CUDA_COMPILER}"))
  unset(CMAKE_CUDA_COMPILER CACHE)
  unset(CMAKE_CUDA_COMPILER)
endif()

file(GLOB _cmax_wheel_nvcc "${CMAX_CUDA_WHEELS}/lib/python3*/site-packages/nvidia/cu1[0-9]/bin/nvcc")
if(DEFINED CMAKE_CUDA_COMPILER)
  set(CMAX_CUDA_NVCC "${CMAKE_CUDA_COMPILER}")
elseif(DEFINED ENV{CUDACXX})
  set(CMAX_CUDA_NVCC "$ENV{CUDACXX}")
else()
  find_program(CMAX_SYSTEM_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
  if(CMAX_SYSTEM_NVCC)
    set(CMAX_CUDA_NVCC "${CMAX_SYSTEM_NVCC}")
  elseif(_cmax_wheel_nvcc)
    # The wheels' layout: <venv>/lib/python3.N/site-packages/nvidia/cu13/{bin,include,lib} and
    # nvidia/nccl/{include,lib}.
    list(GET _cmax_wheel_nvcc 0 CMAX_CUDA_NVCC)
  endif()
endif()
if(CMAX_CUDA_NVCC AND _cmax_wheel_nvcc AND CMAX_CUDA_NVCC IN_LIST _cmax_wheel_nvcc)
  set(CMAX_CUDA_ORIGIN "wheels ${CMAX_CUDA_WHEELS}")
  file(GLOB _cmax_nccl_hints "${CMAX_CUDA_WHEELS}/lib/python3*/site-packages/nvidia/nccl")
endif()

if(CMAX_CUDA_NVCC)
  get_filename_component(_cmax_bin "${CMAX_CUDA_NVCC}" DIRECTORY)
  get_filename_component(CMAX_CUDA_ROOT "${_cmax_bin}" DIRECTORY)
  if(NOT CMAX_CUDA_ORIGIN)
    set(CMAX_CUDA_ORIGIN "toolkit ${CMAX_CUDA_ROOT}")
  endif()
  set(CMAX_CUDA_FOUND TRUE)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    set(ENV{CUDACXX} "${CMAX_CUDA_NVCC}")
  endif()
  if(NOT DEFINED CUDAToolkit_ROOT)
    set(CUDAToolkit_ROOT "${CMAX_CUDA_ROOT}")
  endif()
  # The static CUDA runtime as a target of our own: FindCUDAToolkit (CMake 3.25) insists on a shared
  # libcudart.so, which the wheel lacks (only libcudart.so.13), and trips over the missing
  # nvToolsExt of a toolkit in pieces; the GPU programs need only cudart_static and the headers.
  find_path(CMAX_CUDA_INCLUDE_DIR cuda_runtime_api.h HINTS "${CMAX_CUDA_ROOT}"
            PATH_SUFFIXES include targets/x86_64-linux/include targets/sbsa-linux/include NO_DEFAULT_PATH)
  find_library(CMAX_CUDART_STATIC NAMES libcudart_static.a HINTS "${CMAX_CUDA_ROOT}"
               PATH_SUFFIXES lib64 lib targets/x86_64-linux/lib targets/sbsa-linux/lib NO_DEFAULT_PATH)
  if(CMAX_CUDA_INCLUDE_DIR AND CMAX_CUDART_STATIC AND NOT TARGET cmax_cudart_static)
    add_library(cmax_cudart_static INTERFACE IMPORTED GLOBAL)
    target_include_directories(cmax_cudart_static SYSTEM INTERFACE "${CMAX_CUDA_INCLUDE_DIR}")
    target_link_libraries(cmax_cudart_static INTERFACE "${CMAX_CUDART_STATIC}" Threads::Threads ${CMAKE_DL_LIBS} rt)
  endif()
  set(CMAX_CUDA_EXTRA_INCLUDE_DIRS "")
  if(EXISTS "${CMAX_CUDA_ROOT}/include/cccl")
    list(APPEND CMAX_CUDA_EXTRA_INCLUDE_DIRS "${CMAX_CUDA_ROOT}/include/cccl")
  endif()
  # NCCL: beside the toolkit (CUDA 13 images put it in lib/, not lib64/), or the nccl wheel.
  find_path(CMAX_NCCL_INCLUDE_DIR nccl.h HINTS ${_cmax_nccl_hints} "${CMAX_CUDA_ROOT}" PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_path(CMAX_NCCL_INCLUDE_DIR nccl.h)
  find_library(CMAX_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_cmax_nccl_hints} "${CMAX_CUDA_ROOT}"
               PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  find_library(CMAX_NCCL_LIBRARY NAMES nccl libnccl.so.2)
endif()

# The GPU architectures a rater meets, as far as this nvcc knows them: Ampere (sm_80), Hopper
# (sm_90), Blackwell (sm_100 data centre, sm_120 RTX PRO) as SASS, and PTX of the newest for GPUs
# that come later (the driver compiles it at load). CUDA before 12.8 has no Blackwell.
function(cmax_cuda_architectures out_var)
  set(archs 80-real 90-real)
  set(ptx 90-virtual)
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.8)
    list(APPEND archs 100-real 120-real)
    set(ptx 120-virtual)
  endif()
  list(APPEND archs ${ptx})
  set(${out_var} ${archs} PARENT_SCOPE)
endfunction()
