#pragma once
// cmax-gpucheck's output (schema cmax.gpucheck.raw/1, apps/cmax-gpucheck) as plain structs. The
// parser is pure: text in, value out. A step's key missing means it did not run; a step with an
// "error" failed with that CUDA error text. See docs/gpu-checks.md for the document.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::health {

/// One timed step (matmul, membw, pcie_h2d, pcie_d2h, a peer copy).
struct GpuRawStep {
  bool ran = false;    ///< the step's key was present
  std::string error;   ///< non-empty: the step failed with this CUDA error
  double value = 0;    ///< the headline number: "tflops" for matmul, "gbps" otherwise
  double best = 0;     ///< the fastest single rep, same unit
  int reps = 0;
  std::uint64_t bytes = 0;
  std::string kernel;  ///< matmul only: which GEMM kernel (thresholds are per kernel)
};

/// The bit-exact checks of one device.
struct GpuRawCorrectness {
  bool ran = false;
  std::string error;
  int n = 0;                        ///< square GEMM size
  std::uint64_t kat_mismatches = 0;  ///< outputs that differ from the exact int32 reference
  std::uint64_t kat_elements = 0;
  std::string kat_checksum;          ///< "0x..." of the known-answer output; equal on every GPU
  std::string checksum;              ///< "0x..." of the float GEMM; equal on every GPU of one model
  int repeats = 0;
  int repeat_mismatches = 0;         ///< runs whose checksum differs from the first run's
};

struct GpuRawDevice {
  int index = -1;
  std::string error;  ///< the device could not be queried at all
  std::string name;   ///< "NVIDIA H200"
  std::string uuid;
  std::string pci_bus_id;
  std::string compute_capability;
  std::uint64_t memory_bytes = 0;
  int sm_count = 0;
  GpuRawStep matmul, membw, pcie_h2d, pcie_d2h;
  GpuRawCorrectness correctness;
};

/// One direction of one device pair.
struct GpuRawPeer {
  int src = -1, dst = -1;
  bool can_access = false;
  std::optional<int> performance_rank;
  GpuRawStep copy;  ///< ran only when can_access
};

struct GpuRaw {
  std::string status;  ///< "ok", "no_device", "cuda_error"
  std::string error;   ///< why, when status is not ok
  std::string program, driver_version, runtime_version;
  int driver_gpus = 0;  ///< GPUs the NVIDIA kernel driver lists
  std::vector<GpuRawDevice> devices;
  std::vector<GpuRawPeer> peers;
};

/// Parses a cmax.gpucheck.raw/1 document. Errors name what is malformed (not JSON, wrong schema,
/// a field of the wrong type); unknown keys are ignored so the program may add fields.
Result<GpuRaw> parse_gpu_raw(std::string_view text);

}  // namespace cmax::health
