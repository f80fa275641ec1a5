#include "nccl/collbench_path.h"

#include <unistd.h>

#include <filesystem>

#include "core/process.h"

namespace cmax::nccl {

std::optional<std::string> find_collbench() {
  namespace fs = std::filesystem;
  if (auto self = core::self_executable()) {
    const fs::path beside = fs::path(*self).parent_path();
    for (const auto& candidate : {beside / "cmax-collbench", beside / ".." / "cmax-collbench" / "cmax-collbench"})
      if (::access(candidate.c_str(), X_OK) == 0) {
        std::error_code ec;
        return fs::weakly_canonical(candidate, ec).string();
      }
  }
  return core::find_program("cmax-collbench");
}

}  // namespace cmax::nccl
