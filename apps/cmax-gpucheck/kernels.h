#pragma once
// Launchers for cmax-gpucheck's kernels (kernels.cu). Plain C++ signatures over the CUDA runtime
// API so that the host code compiles with g++; half-precision buffers are passed as void*.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace gpucheck {

/// The GEMM kernel's name as reported in the JSON (thresholds are set for one kernel).
inline constexpr const char* kGemmKernel = "wmma_fp16_fp32acc_128x128x32";
/// gemm_fp16's size granularity: n must be a positive multiple of this.
inline constexpr int kGemmTile = 128;

/// Fills `count` halves with integers in [-2, 2] from a hash of (index, seed): exact in FP16,
/// and every dot product of length < 2^20 stays an exactly representable FP32 integer.
cudaError_t fill_integer_inputs(void* halves, std::size_t count, std::uint32_t seed, cudaStream_t s);
/// Fills `count` halves with values in [-1, 1) from a hash of (index, seed).
cudaError_t fill_uniform_inputs(void* halves, std::size_t count, std::uint32_t seed, cudaStream_t s);
/// c = a * b for square n x n row-major matrices: FP16 inputs, FP32 tensor-core accumulation.
cudaError_t gemm_fp16(const void* a, const void* b, float* c, int n, cudaStream_t s);
/// The same product computed with int32 arithmetic on the CUDA cores (exact for integer inputs).
cudaError_t gemm_int_reference(const void* a, const void* b, float* c, int n, cudaStream_t s);
/// Adds to *d_count the number of i where x[i] != y[i] (NaN counts as different).
cudaError_t count_mismatches(const float* x, const float* y, std::size_t count,
                             unsigned long long* d_count, cudaStream_t s);
/// Adds to *d_sum an order-independent 64-bit hash of every (index, bit pattern) of x.
cudaError_t checksum_floats(const float* x, std::size_t count, unsigned long long* d_sum, cudaStream_t s);
/// Copies `bytes` (a multiple of 16) from src to dst with a kernel: one 16-byte load and store per thread.
cudaError_t copy_kernel(const void* src, void* dst, std::size_t bytes, cudaStream_t s);

}  // namespace gpucheck
