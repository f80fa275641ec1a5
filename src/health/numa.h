#pragma once
// NUMA topology as Linux exposes it: which CPUs belong to which node. The cpulist parser is pure;
// the reader goes through a HostRoot so tests (and audits of a mounted image) can supply the tree.

#include <string_view>
#include <vector>

#include "core/host.h"
#include "core/result.h"

namespace cmax::health {

/// Largest CPU number a cpulist may name; bounds memory for hostile input ("0-4294967295").
inline constexpr int kMaxCpuId = 65535;

/// Parses a Linux cpulist ("0-3,8-11,16", also "0-31:2" strides as in cpuset.cpus) into sorted,
/// unique CPU numbers. Empty or whitespace-only text is an empty list (a memory-only node).
/// Errors name the malformed piece. Pure; safe on any input.
Result<std::vector<int>> parse_cpulist(std::string_view text);

/// One NUMA node and its CPUs (possibly none: CXL or HBM memory-only nodes).
struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
};

/// The nodes under /sys/devices/system/node/node<N>/cpulist, sorted by id. A kernel without
/// NUMA (no such directory) gives one node 0 holding /sys/devices/system/cpu/online.
/// Errors name the file that could not be read or parsed.
Result<std::vector<NumaNode>> read_numa_nodes(const core::HostRoot& host);

/// The CPUs in /sys/devices/system/cpu/online.
Result<std::vector<int>> read_online_cpus(const core::HostRoot& host);

}  // namespace cmax::health
