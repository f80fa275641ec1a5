#pragma once
// Where cmax-collbench (cmax's own collective benchmark, apps/cmax-collbench) is: beside this cmax
// (an install), in the build tree's apps/cmax-collbench/, else on PATH. Reads the file system.

#include <optional>
#include <string>

namespace cmax::nccl {

/// The absolute path of an executable cmax-collbench, or nullopt.
std::optional<std::string> find_collbench();

}  // namespace cmax::nccl
