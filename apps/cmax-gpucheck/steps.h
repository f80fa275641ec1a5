#pragma once
// The measurements, one function per step. Each returns the step's JSON object; a failed CUDA call
// ends that step with an "error" string and leaves the others to run.

#include "json_out.h"
#include "options.h"

namespace gpucheck {

/// name, uuid, PCI bus id, compute capability, memory, SM count, ECC of one device.
Json device_info(int device);
/// FP16 tensor-core GEMM (FP32 accumulate) of options.matmul_n, timed with events: TFLOP/s.
Json run_matmul(int device, const Options& options);
/// Known-answer GEMM against an exact integer reference, then the same float GEMM repeated and
/// compared bit for bit; 64-bit checksums of the outputs for comparison across GPUs and nodes.
Json run_correctness(int device, const Options& options);
/// Device-to-device copy kernel over options.membw_bytes: GB/s counting read plus write.
Json run_membw(int device, const Options& options);
/// Pinned host <-> device cudaMemcpyAsync of options.transfer_bytes: GB/s.
Json run_pcie(int device, const Options& options, bool host_to_device);
/// cudaMemcpyPeerAsync src -> dst with peer access enabled both ways, when the pair can access.
Json run_peer(int src, int dst, const Options& options);

/// After a step failed: clears a non-sticky error, resets the device after a sticky one so that
/// the next step gets a fresh context.
void recover(int device);

}  // namespace gpucheck
