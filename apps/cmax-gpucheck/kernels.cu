#include "kernels.h"

#include <cuda_fp16.h>
#include <mma.h>

namespace gpucheck {
namespace {

using namespace nvcuda;

// Block tile 128x128, K step 32; 8 warps as 2 (rows) x 4 (columns), each warp 64x32 of C as
// 4 x 2 WMMA 16x16x16 fragments. Shared rows are padded by 8 halves (16 bytes) against bank
// conflicts; WMMA needs ldm a multiple of 8 halves and fragment pointers 32-byte aligned, which
// the 80-byte and 272-byte row strides and 16-element offsets keep.
constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kLdA = kBK + 8;  // 40 halves
constexpr int kLdB = kBN + 8;  // 136 halves
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    gemm_wmma_kernel(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int n) {
  __shared__ __align__(128) half as[kBM * kLdA];
  __shared__ __align__(128) half bs[kBK * kLdB];
  const int warp = threadIdx.x / 32;
  const int warp_row = warp / 4;  // 0..1: 64 rows each
  const int warp_col = warp % 4;  // 0..3: 32 columns each
  const std::size_t row0 = static_cast<std::size_t>(blockIdx.y) * kBM;
  const std::size_t col0 = static_cast<std::size_t>(blockIdx.x) * kBN;
  const std::size_t ld = static_cast<std::size_t>(n);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < n; k0 += kBK) {
    // A tile 128 x 32 and B tile 32 x 128: 512 16-byte vectors each, two per thread.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int idx = threadIdx.x + r * kThreads;
      const int arow = idx / 4, acol = (idx % 4) * 8;
      *reinterpret_cast<uint4*>(&as[arow * kLdA + acol]) =
          *reinterpret_cast<const uint4*>(&a[(row0 + arow) * ld + k0 + acol]);
      const int brow = idx / 16, bcol = (idx % 16) * 8;
      *reinterpret_cast<uint4*>(&bs[brow * kLdB + bcol]) =
          *reinterpret_cast<const uint4*>(&b[(k0 + brow) * ld + col0 + bcol]);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(fa[i], &as[(warp_row * 64 + i * 16) * kLdA + kk], kLdA);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &bs[kk * kLdB + warp_col * 32 + j * 16], kLdB);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float* out = c + (row0 + warp_row * 64 + i * 16) * ld + col0 + warp_col * 32 + j * 16;
      wmma::store_matrix_sync(out, acc[i][j], n, wmma::mem_row_major);
    }
}

__global__ void gemm_int_kernel(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int n) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= n || col >= n) return;
  const std::size_t ld = static_cast<std::size_t>(n);
  int sum = 0;
  for (int k = 0; k < n; ++k) sum += __half2int_rn(a[row * ld + k]) * __half2int_rn(b[k * ld + col]);
  c[row * ld + col] = static_cast<float>(sum);
}

__device__ std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__device__ std::uint32_t hash_index(std::size_t i, std::uint32_t seed) {
  return mix32(static_cast<std::uint32_t>(i) ^ mix32(static_cast<std::uint32_t>(i >> 32) ^ (seed * 0x9e3779b9U)));
}

__global__ void fill_integer_kernel(half* p, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __int2half_rn(static_cast<int>(hash_index(i, seed) % 5U) - 2);
}

__global__ void fill_uniform_kernel(half* p, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = __float2half_rn(static_cast<float>(hash_index(i, seed) >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

__global__ void mismatch_kernel(const float* x, const float* y, std::size_t count, unsigned long long* out) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += !(x[i] == y[i]);
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffU, local, off);
  if ((threadIdx.x & 31) == 0 && local) atomicAdd(out, local);
}

__device__ unsigned long long splitmix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A sum (mod 2^64) of per-element hashes does not depend on the order threads add them in.
__global__ void checksum_kernel(const float* x, std::size_t count, unsigned long long* out) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    local += splitmix64((static_cast<unsigned long long>(i) << 32) ^ __float_as_uint(x[i]));
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffU, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, local);
}

__global__ void copy_kernel_f4(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t count) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < count) dst[i] = src[i];
}

// Grid-stride kernels: enough blocks to fill any current GPU, few enough to stay cheap.
constexpr unsigned kStrideBlocks = 4096;
constexpr unsigned kStrideThreads = 256;

}  // namespace

cudaError_t fill_integer_inputs(void* halves, std::size_t count, std::uint32_t seed, cudaStream_t s) {
  fill_integer_kernel<<<kStrideBlocks, kStrideThreads, 0, s>>>(static_cast<half*>(halves), count, seed);
  return cudaGetLastError();
}

cudaError_t fill_uniform_inputs(void* halves, std::size_t count, std::uint32_t seed, cudaStream_t s) {
  fill_uniform_kernel<<<kStrideBlocks, kStrideThreads, 0, s>>>(static_cast<half*>(halves), count, seed);
  return cudaGetLastError();
}

cudaError_t gemm_fp16(const void* a, const void* b, float* c, int n, cudaStream_t s) {
  if (n <= 0 || n % kGemmTile != 0) return cudaErrorInvalidValue;
  const dim3 grid(n / kBN, n / kBM);
  gemm_wmma_kernel<<<grid, kThreads, 0, s>>>(static_cast<const half*>(a), static_cast<const half*>(b), c, n);
  return cudaGetLastError();
}

cudaError_t gemm_int_reference(const void* a, const void* b, float* c, int n, cudaStream_t s) {
  if (n <= 0) return cudaErrorInvalidValue;
  const dim3 block(32, 8);
  const dim3 grid((n + 31) / 32, (n + 7) / 8);
  gemm_int_kernel<<<grid, block, 0, s>>>(static_cast<const half*>(a), static_cast<const half*>(b), c, n);
  return cudaGetLastError();
}

cudaError_t count_mismatches(const float* x, const float* y, std::size_t count, unsigned long long* d_count,
                             cudaStream_t s) {
  mismatch_kernel<<<kStrideBlocks, kStrideThreads, 0, s>>>(x, y, count, d_count);
  return cudaGetLastError();
}

cudaError_t checksum_floats(const float* x, std::size_t count, unsigned long long* d_sum, cudaStream_t s) {
  checksum_kernel<<<kStrideBlocks, kStrideThreads, 0, s>>>(x, count, d_sum);
  return cudaGetLastError();
}

cudaError_t copy_kernel(const void* src, void* dst, std::size_t bytes, cudaStream_t s) {
  if (bytes == 0 || bytes % 16 != 0) return cudaErrorInvalidValue;
  const std::size_t count = bytes / 16;
  const std::size_t blocks = (count + 255) / 256;
  if (blocks > 0x7fffffffULL) return cudaErrorInvalidValue;
  copy_kernel_f4<<<static_cast<unsigned>(blocks), 256, 0, s>>>(static_cast<const float4*>(src),
                                                                static_cast<float4*>(dst), count);
  return cudaGetLastError();
}

}  // namespace gpucheck
