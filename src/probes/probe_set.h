#pragma once
// The probes a node runs, built from one configuration: NVML when the driver's library loads,
// InfiniBand ports from sysfs, and the mounts to watch. Shared by cmaxd and `cmax check`.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "probes/gpu_probe.h"
#include "probes/probe.h"

namespace cmax::probes {

struct ProbeConfig {
  bool nvml = true;                          ///< load NVML when present
  std::string nvml_lib = "libnvidia-ml.so.1";
  GpuProbeOptions gpu;
  bool ib = true;                            ///< read InfiniBand ports
  std::string ib_root = "/sys/class/infiniband";
  std::vector<std::string> ib_expect;        ///< ports that must be up from the start ("mlx5_0/1")
  std::vector<std::string> mounts;           ///< mount points to check (absolute)
  std::chrono::milliseconds mount_timeout{5000};
};

struct ProbeSet {
  std::vector<std::unique_ptr<Probe>> probes;
  /// What was left out and why ("nvml: off: load libnvidia-ml.so.1: ...: no NVIDIA driver here").
  std::vector<std::string> notes;
};

/// Builds the probes. A missing NVML library is a note (most hosts of a mixed fleet have none),
/// unless `nvml_lib` names a file path, which the user meant: then it is an error, as is a bad
/// `ib_expect` entry or mount path.
Result<ProbeSet> make_probes(const ProbeConfig& config);

}  // namespace cmax::probes
